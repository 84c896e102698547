package opensearchrouted

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/opensearchrouted/opensearchrouted/exporter/opensearchrouted/internal/metadata"
	"github.com/opensearchrouted/opensearchrouted/internal/routing"
	"github.com/opensearchrouted/opensearchrouted/testbed/ossim"
)

// steerLogs is n distinct log records (attribute seq from on) dated at.
func steerLogs(from, n int, at time.Time) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "steer")
	sl := rl.ScopeLogs().AppendEmpty()
	for i := from; i < from+n; i++ {
		lr := sl.LogRecords().AppendEmpty()
		lr.SetTimestamp(pcommon.NewTimestampFromTime(at))
		lr.Body().SetStr("steered record " + strconv.Itoa(i))
		lr.Attributes().PutInt("seq", int64(i))
	}
	return ld
}

// shardCopies reads _cat/shards of index: the primary's document count per
// shard (after a refresh) and, per node name, the shards it has a copy of.
func shardCopies(t testing.TB, base, index string) (docs map[int]int, byNode map[string][]int) {
	docs, byNode, _ = shardTable(t, base, index)
	return docs, byNode
}

// shardTable is shardCopies and the node of each shard's primary.
func shardTable(t testing.TB, base, index string) (docs map[int]int, byNode map[string][]int, primary map[int]string) {
	t.Helper()
	httpJSON(t, "POST", base+"/"+index+"/_refresh", "", nil)
	var rows []struct {
		Shard, Prirep, Docs, Node, State string
	}
	if st := httpJSON(t, "GET", base+"/_cat/shards/"+index+"?format=json&h=shard,prirep,docs,node,state", "", &rows); st != 200 {
		t.Fatalf("_cat/shards: HTTP %d", st)
	}
	docs, byNode, primary = map[int]int{}, map[string][]int{}, map[int]string{}
	for _, r := range rows {
		s, _ := strconv.Atoi(r.Shard)
		if r.State != "STARTED" {
			t.Fatalf("shard %d %s is %s", s, r.Prirep, r.State)
		}
		byNode[r.Node] = append(byNode[r.Node], s)
		if r.Prirep == "p" {
			d, _ := strconv.Atoi(r.Docs)
			docs[s] = d
			primary[s] = r.Node
		}
	}
	return docs, byNode, primary
}

// seqCounts counts index's documents by attribute seq (at most 10,000).
func seqCounts(t testing.TB, base, index string) (bySeq map[int64]int, steered int) {
	bySeq, ids := storedSeqs(t, base, index)
	for id := range ids {
		if strings.IndexByte(id, routing.SaltSep) >= 0 {
			steered++
		}
	}
	return bySeq, steered
}

// storedSeqs is index's documents by attribute seq, and the seq of each
// id.
func storedSeqs(t testing.TB, base, index string) (bySeq map[int64]int, ids map[string]int64) {
	t.Helper()
	httpJSON(t, "POST", base+"/"+index+"/_refresh", "", nil)
	var res struct {
		Hits struct {
			Hits []struct {
				ID     string `json:"_id"`
				Source struct {
					Attributes map[string]any `json:"attributes"`
				} `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
	if st := httpJSON(t, "POST", base+"/"+index+"/_search", `{"size":10000,"query":{"match_all":{}}}`, &res); st != 200 {
		t.Fatalf("_search: HTTP %d", st)
	}
	bySeq, ids = map[int64]int{}, map[string]int64{}
	for _, h := range res.Hits.Hits {
		seq, ok := h.Source.Attributes["seq"].(float64)
		if !ok {
			t.Fatalf("document %s without seq", h.ID)
		}
		bySeq[int64(seq)]++
		ids[h.ID] = int64(seq)
	}
	return bySeq, ids
}

// checkOnceIn is checkOnce for the records seq [from, from+n) among
// others.
func checkOnceIn(t testing.TB, bySeq map[int64]int, from, n int) {
	t.Helper()
	in := map[int64]int{}
	for s, k := range bySeq {
		if s >= int64(from) && s < int64(from+n) {
			in[s] = k
		}
	}
	checkOnce(t, in, from, n)
}

// routerNode is the router's node named name.
func routerNode(t testing.TB, r *routing.Router, name string) *routing.Node {
	t.Helper()
	for _, n := range r.Topology().Nodes {
		if n.Name() == name {
			return n
		}
	}
	t.Fatalf("the router knows no node %s", name)
	return nil
}

// waitSteering waits until the steering history of e's router tracks
// target with a set that steers (a call after a node was marked degraded
// starts tracking it).
func waitSteering(t testing.TB, st *routing.Steering, target string) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		v := st.View()
		if h := v.History(target); h != nil && v.Set(h, v.Now()).Steers() {
			return
		}
	}
	t.Fatalf("steering never tracked %s", target)
}

// checkAvoided fails unless the n documents written between the
// per-shard counts before and after went to the shards other than those
// avoided (the two with a copy on degraded node slow), each getting some.
func checkAvoided(t testing.TB, before, after map[int]int, avoided []int, slow string, n int) {
	t.Helper()
	total := 0
	for s := range after {
		d := after[s] - before[s]
		total += d
		bad := s == avoided[0] || s == avoided[1]
		if bad && d != 0 {
			t.Fatalf("shard %d has a copy on degraded %s and got %d documents", s, slow, d)
		}
		if !bad && d == 0 {
			t.Fatalf("free shard %d got no document", s)
		}
	}
	if total != n {
		t.Fatalf("%d documents written, want %d", total, n)
	}
}

// ints formats a set of shards.
func ints(s []int) string {
	s = append([]int(nil), s...)
	sort.Ints(s)
	return fmt.Sprint(s)
}

// TestSteeringAvoidsDegradedShardsEmulator: 6 nodes, 6 primaries + 1
// replica. With no node degraded nothing is steered and every shard gets
// documents; with one node degraded, the documents written after the
// steering set starts land only in shards without a copy on it (the
// server's per-shard counts; the node itself writes nothing), each stored
// once.
func TestSteeringAvoidsDegradedShardsEmulator(t *testing.T) {
	const index, n = "steer-avoid", 3000
	sim := ossim.StartT(t, ossim.Options{Nodes: 6, NoHopLatency: true, DefaultShards: 6, DefaultReplicas: 1})
	cfg := testConfig(sim.Addrs())
	cfg.LogsIndex = index
	e, reader := startExporter(t, cfg, signalLogs)
	if err := e.pushLogs(context.Background(), steerLogs(0, 1, time.Now())); err != nil {
		t.Fatal(err)
	}
	waitRouted(t, e, index)
	base := sim.Addr(0)

	before, byNode := shardCopies(t, base, index)
	if err := e.pushLogs(context.Background(), steerLogs(1, n, time.Now())); err != nil {
		t.Fatal(err)
	}
	after, _ := shardCopies(t, base, index)
	for s := 0; s < 6; s++ {
		if after[s]-before[s] < n/20 {
			t.Fatalf("nothing degraded: shard %d got %d of %d documents", s, after[s]-before[s], n)
		}
	}
	if got := sumMetric(t, reader, "otelcol.opensearchrouted.documents.steered", nil); got != 0 {
		t.Fatalf("nothing degraded, %d documents steered", got)
	}

	// Degrade the first node with copies of two shards.
	var slow string
	for name, shards := range byNode {
		if len(shards) == 2 && shards[0] != shards[1] && (slow == "" || name < slow) {
			slow = name
		}
	}
	if slow == "" {
		t.Fatalf("no node with copies of two shards: %v", byNode)
	}
	avoided := byNode[slow]
	e.router.SetDegraded(routerNode(t, e.router, slow), true)
	if err := e.pushLogs(context.Background(), steerLogs(100_000, 1, time.Now())); err != nil {
		t.Fatal(err)
	}
	waitSteering(t, e.steering, index)
	slowIdx := -1
	for i := 0; i < sim.Len(); i++ {
		if sim.Node(i).Name() == slow {
			slowIdx = i
		}
	}
	sim.ResetStats()
	before, _ = shardCopies(t, base, index)
	if err := e.pushLogs(context.Background(), steerLogs(200_000, n, time.Now())); err != nil {
		t.Fatal(err)
	}
	after, _ = shardCopies(t, base, index)
	checkAvoided(t, before, after, avoided, slow, n)
	if st := sim.NodeStats(slowIdx); st.ItemsPrimary+st.ItemsReplica != 0 {
		t.Fatalf("degraded %s wrote %d primary and %d replica items", slow, st.ItemsPrimary, st.ItemsReplica)
	}
	bySeq, steeredIDs := seqCounts(t, base, index)
	checkOnceIn(t, bySeq, 200_000, n)
	got := sumMetric(t, reader, "otelcol.opensearchrouted.documents.steered", nil)
	if got != int64(steeredIDs) || got < n/6 {
		t.Fatalf("documents.steered %d, stored steered ids %d (of %d)", got, steeredIDs, n)
	}
	t.Logf("degraded %s (copies of shards %s): %d of %d documents steered, none written to those shards", slow, ints(avoided), got, n)
}

// dropProxy stands for a node's HTTP address: it forwards every request
// to the node and, while drops is positive, swallows the answer of a
// _bulk request the node answered 200 (its items are stored): it calls
// onDrop, then holds the request until the client gives up (its
// timeout), as an answer lost on the way does.
type dropProxy struct {
	backend string
	srv     *httptest.Server
	drops   atomic.Int32
	dropped atomic.Int32
	onDrop  atomic.Pointer[func()]
}

var dropProxyClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, DisableCompression: true}}

func newDropProxy(t testing.TB, backend string) *dropProxy {
	p := &dropProxy{backend: backend}
	p.srv = httptest.NewServer(p)
	t.Cleanup(p.srv.Close)
	return p
}

func (p *dropProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	req, err := http.NewRequestWithContext(context.Background(), r.Method, p.backend+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	req.Header = r.Header.Clone()
	resp, err := dropProxyClient.Do(req)
	if err != nil {
		w.WriteHeader(http.StatusBadGateway)
		return
	}
	data, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.HasSuffix(r.URL.Path, "/_bulk") && resp.StatusCode == 200 && p.drops.Add(-1) >= 0 {
		p.dropped.Add(1)
		if f := p.onDrop.Load(); f != nil {
			(*f)()
		}
		<-r.Context().Done()
		return
	}
	for _, h := range []string{"Content-Type", "Content-Encoding"} {
		if v := resp.Header.Get(h); v != "" {
			w.Header().Set(h, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(data)
}

// steerRig is a 6-node emulator (6 primaries + 1 replica per index) whose
// nodes publish the addresses of drop proxies, and its index with one
// record, routed.
type steerRig struct {
	sim     *ossim.Cluster
	proxies []*dropProxy
	index   string
	// first and then: two nodes with copies of disjoint pairs of shards;
	// drop: another node holding the primary of a shard neither has a
	// copy of.
	first, then, drop string
}

func newSteerRig(t *testing.T, index string) *steerRig {
	rig := &steerRig{index: index}
	rig.sim = ossim.StartT(t, ossim.Options{Nodes: 6, NoHopLatency: true, DefaultShards: 6, DefaultReplicas: 1})
	for i := 0; i < rig.sim.Len(); i++ {
		p := newDropProxy(t, rig.sim.Addr(i))
		rig.proxies = append(rig.proxies, p)
		if err := rig.sim.SetPublishAddress(i, strings.TrimPrefix(p.srv.URL, "http://")); err != nil {
			t.Fatal(err)
		}
	}
	return rig
}

func (rig *steerRig) urls() []string {
	var out []string
	for _, p := range rig.proxies {
		out = append(out, p.srv.URL)
	}
	return out
}

// plan picks first, then and drop once the index exists.
func (rig *steerRig) plan(t *testing.T) {
	_, byNode, primary := shardTable(t, rig.sim.Addr(0), rig.index)
	var names []string
	for n := range byNode {
		names = append(names, n)
	}
	sort.Strings(names)
	has := func(name string, s int) bool {
		for _, x := range byNode[name] {
			if x == s {
				return true
			}
		}
		return false
	}
	for _, a := range names {
		for _, b := range names {
			if a == b || len(byNode[a]) != 2 || len(byNode[b]) != 2 || has(b, byNode[a][0]) || has(b, byNode[a][1]) {
				continue
			}
			for s := 0; s < 6; s++ {
				if p := primary[s]; !has(a, s) && !has(b, s) && p != a && p != b {
					rig.first, rig.then, rig.drop = a, b, p
					return
				}
			}
		}
	}
	t.Fatalf("no two nodes with disjoint copies: %v", byNode)
}

// proxy is the drop proxy of the node named name.
func (rig *steerRig) proxy(t *testing.T, name string) *dropProxy {
	for i := 0; i < rig.sim.Len(); i++ {
		if rig.sim.Node(i).Name() == name {
			return rig.proxies[i]
		}
	}
	t.Fatalf("no node %s", name)
	return nil
}

// decidedOtherwise counts the stored documents of index whose id the
// steering set in force now would choose otherwise than the set at ts
// did: the records a resend decided by the current set would store twice.
func decidedOtherwise(t *testing.T, st *routing.Steering, ids map[string]int64, index string, ts time.Time) int {
	v := st.View()
	h := v.History(index)
	now, then := v.Set(h, v.Now()), v.Set(h, ts.UnixNano())
	n := 0
	for id := range ids {
		if i := strings.IndexByte(id, routing.SaltSep); i >= 0 {
			id = id[:i]
		}
		if now.Salt(id) != then.Salt(id) {
			n++
		}
	}
	return n
}

// TestSteeringExactlyOnceEmulator: the steering set changes between a
// record's first attempt, stored but its answer lost (timed out), and the
// next one: in the call's own retry, in exporterhelper's retry of the
// subset handed back (re-encoded), and in a client's resend of the same
// records. Every record is stored exactly once (counted by its seq); the
// later attempts are answered 409.
func TestSteeringExactlyOnceEmulator(t *testing.T) {
	const n = 2000
	for _, mode := range []string{"in_call", "exporterhelper", "resend"} {
		t.Run(mode, func(t *testing.T) {
			index := "steer-once-" + strings.ReplaceAll(mode, "_", "")
			rig := newSteerRig(t, index)
			cfg := testConfig(rig.urls())
			cfg.LogsIndex = index
			cfg.Timeout = 3 * time.Second // the dropped answer's wait; above a request's time under the race detector
			reader := sdkmetric.NewManualReader()
			var push func(plog.Logs) error
			if mode == "exporterhelper" {
				cfg.Bulk.MaxAttempts = 1
				cfg.QueueConfig = configoptional.None[exporterhelper.QueueBatchConfig]()
				cfg.RetryConfig.InitialInterval = 10 * time.Millisecond
				cfg.RetryConfig.MaxElapsedTime = 30 * time.Second
				mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
				t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
				set := exportertest.NewNopSettings(metadata.Type)
				set.MeterProvider = mp
				le, err := NewFactory().CreateLogs(context.Background(), set, cfg)
				if err != nil {
					t.Fatal(err)
				}
				if err := le.Start(context.Background(), componenttest.NewNopHost()); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = le.Shutdown(context.Background()) })
				push = func(ld plog.Logs) error { return le.ConsumeLogs(context.Background(), ld) }
			} else {
				var e *osExporter
				e, reader = startExporter(t, cfg, signalLogs)
				push = func(ld plog.Logs) error { return e.pushLogs(context.Background(), ld) }
			}
			sharedMu.Lock()
			sh := shareds[cfg]
			sharedMu.Unlock()
			router, st := sh.router, sh.steering

			if err := push(steerLogs(0, 1, time.Now())); err != nil {
				t.Fatal(err)
			}
			waitRoutedRouter(t, router, index)
			rig.plan(t)
			router.SetDegraded(routerNode(t, router, rig.first), true)
			if err := push(steerLogs(1, 1, time.Now())); err != nil {
				t.Fatal(err)
			}
			waitSteering(t, st, index)
			flip := func() {
				router.SetDegraded(routerNode(t, router, rig.first), false)
				router.SetDegraded(routerNode(t, router, rig.then), true)
			}

			at := time.Now()
			data := steerLogs(1000, n, at)
			if mode == "resend" {
				if err := push(data); err != nil {
					t.Fatal(err)
				}
				flip()
				if err := push(data); err != nil {
					t.Fatal(err)
				}
			} else {
				p := rig.proxy(t, rig.drop)
				p.onDrop.Store(&flip)
				p.drops.Store(1)
				if err := push(data); err != nil {
					t.Fatal(err)
				}
				if p.dropped.Load() != 1 {
					t.Fatalf("%d answers dropped, want 1", p.dropped.Load())
				}
			}
			bySeq, ids := storedSeqs(t, rig.sim.Addr(0), index)
			checkOnceIn(t, bySeq, 1000, n)
			if len(ids) != n+2 {
				t.Fatalf("%d documents stored, want %d", len(ids), n+2)
			}
			dups := sumMetric(t, reader, "otelcol.opensearchrouted.documents", map[string]string{"outcome": "duplicate"})
			steered := sumMetric(t, reader, "otelcol.opensearchrouted.documents.steered", nil)
			differ := decidedOtherwise(t, st, ids, index, at)
			if dups == 0 || steered == 0 || differ == 0 {
				t.Fatalf("%d answered 409, %d steered, %d decided otherwise by the new set: the test proves nothing", dups, steered, differ)
			}
			if mode == "resend" && dups != n {
				t.Fatalf("resend: %d answered 409, want %d", dups, n)
			}
			if mode == "exporterhelper" {
				if r := sumMetric(t, reader, "otelcol.opensearchrouted.documents", map[string]string{"outcome": "retried"}); r == 0 {
					t.Fatal("nothing was handed back to exporterhelper")
				}
			}
			t.Logf("%s: degraded %s, then %s; %d steered, %d answered 409, %d records the new set would decide otherwise; each stored once",
				mode, rig.first, rig.then, steered, dups, differ)
		})
	}
}

// waitRoutedRouter is waitRouted for a router.
func waitRoutedRouter(t testing.TB, r *routing.Router, target string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, why := r.Locate(target, "probe-id", ""); why == routing.Routed {
			return
		}
	}
	t.Fatalf("topology never learnt %s", target)
}

// degradedExporter starts an exporter of sig (cfg's index, on sim) after
// one record created the index, marks degraded the first node (by name)
// with copies of two shards, and waits until the steering set is in
// force. It returns the exporter, its metrics and the avoided shards.
func degradedExporter(t *testing.T, sim *ossim.Cluster, cfg *Config, sig signal, index string) (*osExporter, *sdkmetric.ManualReader, []int) {
	t.Helper()
	e, reader := startExporter(t, cfg, sig)
	one := func() {
		var err error
		if sig == signalTraces {
			td := makeSpans(int(time.Now().UnixNano()%1_000_000_000), 1)
			err = e.pushTraces(context.Background(), td)
		} else {
			err = e.pushLogs(context.Background(), steerLogs(-1, 1, time.Now()))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	one()
	waitRouted(t, e, index)
	_, byNode := shardCopies(t, sim.Addr(0), index)
	var names []string
	for name, shards := range byNode {
		if len(shards) == 2 && shards[0] != shards[1] {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		t.Fatalf("no node with copies of two shards: %v", byNode)
	}
	e.router.SetDegraded(routerNode(t, e.router, names[0]), true)
	one()
	waitSteering(t, e.steering, index)
	return e, reader, byNode[names[0]]
}

// storedShards is the shard of each stored document of index by id, and
// how many ids are steered.
func storedShards(t *testing.T, sim *ossim.Cluster, index string) (map[string]int, int) {
	t.Helper()
	ids, _, err := sim.StoredShardOf(index)
	if err != nil {
		t.Fatal(err)
	}
	steered := 0
	for id := range ids {
		if strings.IndexByte(id, routing.SaltSep) >= 0 {
			steered++
		}
	}
	return ids, steered
}

// TestSteeringWhichRecordsEmulator: with one node of 6 degraded, exact
// repeats are steered under their occurrence ids; records dated after now
// are decided by the latest set and counted at risk, records dated before
// the exporter started are not steered and counted; attribute ids, random
// ids and span ids are never steered, spans with content ids are; with
// routing.steering.enabled false nothing is.
func TestSteeringWhichRecordsEmulator(t *testing.T) {
	sim := ossim.StartT(t, ossim.Options{Nodes: 6, NoHopLatency: true, DefaultShards: 6, DefaultReplicas: 1})
	avoids := func(avoided []int, shard int) bool { return shard == avoided[0] || shard == avoided[1] }

	t.Run("repeats", func(t *testing.T) {
		const index = "steer-repeats"
		cfg := testConfig(sim.Addrs())
		cfg.LogsIndex = index
		e, reader, avoided := degradedExporter(t, sim, cfg, signalLogs, index)
		ld := steerLogs(0, 300, time.Now())
		lrs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
		for k := 0; k < 2; k++ { // each record twice more, exact repeats
			for i := 0; i < 300; i++ {
				lrs.At(i).CopyTo(lrs.AppendEmpty())
			}
		}
		if err := e.pushLogs(context.Background(), ld); err != nil {
			t.Fatal(err)
		}
		ids, steered := storedShards(t, sim, index)
		_, seqs := storedSeqs(t, sim.Addr(0), index)
		repeatsSteered := 0
		for id, sh := range ids {
			if avoids(avoided, sh) && seqs[id] >= 0 { // the two set-up records were not steered
				t.Fatalf("%s stored in avoided shard %d", id, sh)
			}
			if strings.Contains(id, "-") && strings.IndexByte(id, routing.SaltSep) > strings.LastIndexByte(id, '-') {
				repeatsSteered++
			}
		}
		if len(ids) != 902 || repeatsSteered == 0 {
			t.Fatalf("%d stored (want 902), %d repeats steered", len(ids), repeatsSteered)
		}
		if got := sumMetric(t, reader, "otelcol.opensearchrouted.documents.steered", nil); got != int64(steered) {
			t.Fatalf("documents.steered %d, %d steered ids stored", got, steered)
		}
	})

	t.Run("dated after now or before the start", func(t *testing.T) {
		const index = "steer-dates"
		cfg := testConfig(sim.Addrs())
		cfg.LogsIndex = index
		e, reader, avoided := degradedExporter(t, sim, cfg, signalLogs, index)
		if err := e.pushLogs(context.Background(), steerLogs(0, 300, time.Now().Add(time.Hour))); err != nil {
			t.Fatal(err)
		}
		if err := e.pushLogs(context.Background(), steerLogs(1000, 300, time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC))); err != nil {
			t.Fatal(err)
		}
		bySeq, ids := storedSeqs(t, sim.Addr(0), index)
		checkOnceIn(t, bySeq, 0, 300)
		checkOnceIn(t, bySeq, 1000, 300)
		shards, steered := storedShards(t, sim, index)
		onAvoided := 0
		for id, seq := range ids {
			if seq >= 0 && avoids(avoided, shards[id]) {
				onAvoided++
			}
		}
		// The future-dated records are steered (the latest set); the old
		// ones are not: about a third of them land in avoided shards.
		if steered < 50 || onAvoided < 50 || onAvoided > 200 {
			t.Fatalf("%d steered, %d in avoided shards", steered, onAvoided)
		}
		if got := sumMetric(t, reader, "otelcol.opensearchrouted.steering.at_risk", map[string]string{"risk": "future_dated"}); got != 300 {
			t.Fatalf("future_dated %d, want 300", got)
		}
		if got := sumMetric(t, reader, "otelcol.opensearchrouted.steering.at_risk", map[string]string{"risk": "before_start"}); got != 300 {
			t.Fatalf("before_start %d, want 300", got)
		}
	})

	t.Run("attribute and random ids", func(t *testing.T) {
		for _, mode := range []string{DocumentIDAttribute, DocumentIDRandom} {
			index := "steer-" + mode
			cfg := testConfig(sim.Addrs())
			cfg.LogsIndex = index
			cfg.DocumentID, cfg.DocumentIDAttribute = mode, "event.id"
			e, reader, _ := degradedExporter(t, sim, cfg, signalLogs, index)
			ld := steerLogs(0, 300, time.Now())
			lrs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
			for i := 0; i < lrs.Len(); i++ {
				lrs.At(i).Attributes().PutStr("event.id", "ev-"+strconv.Itoa(i))
			}
			if err := e.pushLogs(context.Background(), ld); err != nil {
				t.Fatal(err)
			}
			if _, steered := storedShards(t, sim, index); steered != 0 {
				t.Fatalf("%s: %d ids steered", mode, steered)
			}
			if got := sumMetric(t, reader, "otelcol.opensearchrouted.documents.steered", nil); got != 0 {
				t.Fatalf("%s: documents.steered %d", mode, got)
			}
		}
	})

	t.Run("steering off", func(t *testing.T) {
		const index = "steer-off"
		cfg := testConfig(sim.Addrs())
		cfg.LogsIndex = index
		cfg.Routing.Steering.Enabled = false
		e, reader := startExporter(t, cfg, signalLogs)
		if err := e.pushLogs(context.Background(), steerLogs(-1, 1, time.Now())); err != nil {
			t.Fatal(err)
		}
		waitRouted(t, e, index)
		e.router.SetDegraded(e.router.Topology().Nodes[0], true)
		for k := 0; k < 2; k++ {
			if err := e.pushLogs(context.Background(), steerLogs(k*300, 300, time.Now())); err != nil {
				t.Fatal(err)
			}
		}
		if _, steered := storedShards(t, sim, index); steered != 0 || e.steering != nil {
			t.Fatalf("steering off: %d ids steered", steered)
		}
		if got := sumMetric(t, reader, "otelcol.opensearchrouted.documents.steered", nil); got != 0 {
			t.Fatalf("steering off: documents.steered %d", got)
		}
	})

	t.Run("spans", func(t *testing.T) {
		const index = "steer-spans"
		cfg := testConfig(sim.Addrs())
		cfg.TracesIndex = index
		e, reader, _ := degradedExporter(t, sim, cfg, signalTraces, index)
		td := makeSpans(0, 600)
		now := pcommon.NewTimestampFromTime(time.Now())
		for r := 0; r < td.ResourceSpans().Len(); r++ {
			spans := td.ResourceSpans().At(r).ScopeSpans().At(0).Spans()
			for i := 0; i < spans.Len(); i++ {
				spans.At(i).SetStartTimestamp(now)
				if i%2 == 0 {
					spans.At(i).SetTraceID(pcommon.TraceID{}) // not an id: a content id instead
				}
			}
		}
		if err := e.pushTraces(context.Background(), td); err != nil {
			t.Fatal(err)
		}
		ids, steered := storedShards(t, sim, index)
		for id := range ids {
			if strings.IndexByte(id, routing.SaltSep) >= 0 && len(id) > 40 {
				t.Fatalf("a span id steered: %s", id)
			}
		}
		if steered < 50 || steered > 200 {
			t.Fatalf("%d of 300 spans with content ids steered", steered)
		}
		if got := sumMetric(t, reader, "otelcol.opensearchrouted.documents.steered", nil); got != int64(steered) {
			t.Fatalf("documents.steered %d, %d steered ids", got, steered)
		}
	})
}
