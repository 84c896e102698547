package routing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func newTestRouter(t *testing.T, f *fakeCluster, mod func(*Options)) *Router {
	t.Helper()
	o := Options{Client: f.srv.Client(), Seeds: []string{f.srv.URL}, StatsInterval: -1}
	if mod != nil {
		mod(&o)
	}
	r, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// threeNodes: index "logs" with 3 shards (R 768) one primary per node, and
// a data stream with two backing indices whose last one is the write index.
func threeNodes(t *testing.T) *fakeCluster {
	f := newFakeCluster(t, "n0", "n1", "n2")
	f.indices["logs"] = &fakeIndex{N: 3, R: 768, P: 1, Primary: []string{"n0", "n1", "n2"},
		Replicas: [][]string{{"n1"}, {"n2"}, {"n0"}}}
	f.indices[".ds-ss4o_logs-default-namespace-000001"] = &fakeIndex{N: 1, R: 1024, P: 1, Primary: []string{"n0"}}
	f.indices[".ds-ss4o_logs-default-namespace-000002"] = &fakeIndex{N: 2, R: 1024, P: 1, Primary: []string{"n1", "n2"}}
	f.streams["ss4o_logs-default-namespace"] = []string{".ds-ss4o_logs-default-namespace-000001", ".ds-ss4o_logs-default-namespace-000002"}
	return f
}

func TestDiscoveryAndLocate(t *testing.T) {
	f := threeNodes(t)
	r := newTestRouter(t, f, nil)
	ctx := context.Background()

	// Before discovery: no topology; the name is remembered.
	if n, why := r.Locate("logs", "a", ""); n != nil || why != ReasonNoTopology {
		t.Fatalf("before discovery: %v %v", n, why)
	}
	r.Locate("ss4o_logs-default-namespace", "a", "")
	r.Locate("alias-or-missing", "a", "")
	if err := r.Refresh(ctx, TriggerStart); err != nil {
		t.Fatal(err)
	}
	topo := r.Topology()
	if len(topo.Nodes) != 3 {
		t.Fatalf("nodes: %d", len(topo.Nodes))
	}
	info := topo.Nodes[0].Info()
	if info.ID != "id-n0" || info.Name != "n0" || info.Zone != "a" || info.URL != f.srv.URL || info.WriteThreads != 2 || info.Processors != 2 || info.MaxContentLength != 104857600 {
		t.Fatalf("node info: %+v", info)
	}
	if _, _, c, _ := topo.Nodes[0].Window().State(); c != 2 {
		t.Fatalf("window ceiling from thread_pool.write.size: %d", c)
	}
	for i := 0; i < 300; i++ {
		id := fmt.Sprintf("doc-%d", i)
		n, why := r.Locate("logs", id, "")
		want, _ := ShardFor(id, "", 3, 768, 1)
		if why != Routed || n.Name() != fmt.Sprintf("n%d", want) {
			t.Fatalf("Locate(logs, %s) = %v %v, want n%d", id, n, why, want)
		}
		// Data stream → write index (-000002, 2 shards on n1, n2).
		n, why = r.Locate("ss4o_logs-default-namespace", id, "")
		want, _ = ShardFor(id, "", 2, 1024, 1)
		if why != Routed || n.Name() != fmt.Sprintf("n%d", want+1) {
			t.Fatalf("Locate(stream, %s) = %v %v, want n%d", id, n, why, want+1)
		}
	}
	if wi, ok := topo.WriteIndex("ss4o_logs-default-namespace"); !ok || wi.Name != ".ds-ss4o_logs-default-namespace-000002" || !topo.IsDataStream("ss4o_logs-default-namespace") {
		t.Fatalf("write index: %v %v", wi, ok)
	}
	if _, why := r.Locate("alias-or-missing", "a", ""); why != ReasonUnknownIndex {
		t.Fatalf("alias: %v", why)
	}
	if _, why := r.Locate("logs", "", ""); why != ReasonNoID {
		t.Fatalf("no id: %v", why)
	}
	// Replicas are known too.
	idx := topo.Indices["logs"]
	if len(idx.Shards[0].Replicas) != 1 || idx.Shards[0].Replicas[0].Node.Name() != "n1" {
		t.Fatalf("replicas: %+v", idx.Shards[0])
	}
}

func TestNewNameRoutableAfterNextRefresh(t *testing.T) {
	f := threeNodes(t)
	r := newTestRouter(t, f, nil)
	if err := r.Refresh(context.Background(), TriggerStart); err != nil {
		t.Fatal(err)
	}
	if _, why := r.Locate("logs", "x", ""); why != ReasonUnknownIndex {
		t.Fatalf("first sight: %v", why)
	}
	select {
	case reason := <-r.trigger:
		if reason != TriggerUnknown {
			t.Fatalf("trigger reason %q", reason)
		}
	default:
		t.Fatal("an unknown name must trigger a refresh")
	}
	if err := r.Refresh(context.Background(), TriggerUnknown); err != nil {
		t.Fatal(err)
	}
	if _, why := r.Locate("logs", "x", ""); why != Routed {
		t.Fatalf("after refresh: %v", why)
	}
}

func TestShardStates(t *testing.T) {
	f := newFakeCluster(t, "n0", "n1")
	f.indices["i"] = &fakeIndex{N: 4, R: 8, P: 1,
		Primary: []string{"n0", "", "n0 -> 127.0.0.1 id-n1 n1", "n1"},
		State:   []string{"", "", "RELOCATING", "INITIALIZING"}}
	f.indices["part"] = &fakeIndex{N: 4, R: 8, P: 3, Primary: []string{"n0", "n1", "n0", "n1"}}
	r := newTestRouter(t, f, nil)
	r.want("i")
	r.want("part")
	if err := r.Refresh(context.Background(), TriggerStart); err != nil {
		t.Fatal(err)
	}
	// Find one id per shard.
	seen := map[int]Reason{}
	for i := 0; len(seen) < 4 && i < 1000; i++ {
		id := fmt.Sprint(i)
		s, _ := ShardFor(id, "", 4, 8, 1)
		_, why := r.Locate("i", id, "")
		seen[s] = why
	}
	want := map[int]Reason{0: Routed, 1: ReasonUnassigned, 2: ReasonPrimaryMoving, 3: ReasonPrimaryMoving}
	for s, w := range want {
		if seen[s] != w {
			t.Errorf("shard %d: %v, want %v", s, seen[s], w)
		}
	}
	// One refresh is asked for per snapshot while primaries move.
	if err := r.Refresh(context.Background(), TriggerPeriodic); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.trigger: // what the Locates above asked for
	default:
	}
	trig := 0
	for i := 0; i < 3; i++ {
		select {
		case reason := <-r.trigger:
			if reason != TriggerMoved {
				t.Errorf("trigger %q", reason)
			}
			trig++
		default:
		}
		r.Locate("i", "moving-probe", "")
		for k := 0; k < 50; k++ {
			id := fmt.Sprint("m", k)
			r.Locate("i", id, "")
		}
	}
	if trig != 1 {
		t.Errorf("moving primaries asked for %d refreshes on one snapshot, want 1", trig)
	}
	// The relocating source is parsed from "src -> ip id name".
	if n := r.Topology().Indices["i"].Shards[2].Primary.Node; n == nil || n.Name() != "n0" {
		t.Errorf("relocating source: %v", n)
	}
	if _, why := r.Locate("part", "a_1", ""); why != ReasonRoutingRequired {
		t.Errorf("partitioned without routing: %v", why)
	}
	n, why := r.Locate("part", "a_1", "a")
	if why != Routed || n.Name() != "n0" { // vector: a_1 a 4 8 3 → shard 2
		t.Errorf("partitioned with routing: %v %v", n, why)
	}
}

func TestSplitIndexKeepsRoutingShards(t *testing.T) {
	// _split and _shrink keep the source's R, so R is read from the
	// cluster state, never recomputed from N: here R = 96 where the default
	// for 6 shards would be 768.
	f := newFakeCluster(t, "n0", "n1", "n2")
	f.indices["split"] = &fakeIndex{N: 6, R: 96, P: 1, Primary: []string{"n0", "n1", "n2", "n0", "n1", "n2"}}
	r := newTestRouter(t, f, nil)
	r.want("split")
	if err := r.Refresh(context.Background(), TriggerStart); err != nil {
		t.Fatal(err)
	}
	if l := r.Topology().Indices["split"].Layout; l != (Layout{6, 96, 1}) {
		t.Fatalf("layout read from metadata: %+v (default R would be %d)", l, DefaultRoutingShards(6))
	}
	for i := 0; i < 100; i++ {
		id := fmt.Sprint("d", i)
		s, _ := ShardFor(id, "", 6, 96, 1)
		n, _ := r.Locate("split", id, "")
		if n.Name() != fmt.Sprintf("n%d", s%3) {
			t.Fatalf("%s: %s, want shard %d", id, n.Name(), s)
		}
	}
}

func TestPublishAddressForms(t *testing.T) {
	for in, want := range map[string][2]string{ // http (the ip), https (the name when there is one)
		"127.0.0.1:9200":                       {"127.0.0.1:9200", "127.0.0.1:9200"},
		"localhost/127.0.0.1:9201":             {"127.0.0.1:9201", "localhost:9201"},
		"node-1.example/10.0.0.7:9200":         {"10.0.0.7:9200", "node-1.example:9200"},
		"[::1]:9200":                           {"[::1]:9200", "[::1]:9200"},
		"ip6-localhost/[0:0:0:0:0:0:0:1]:9200": {"[0:0:0:0:0:0:0:1]:9200", "ip6-localhost:9200"},
	} {
		for i, byName := range []bool{false, true} {
			got, err := publishHostPort(in, byName)
			if err != nil || got != want[i] {
				t.Errorf("publishHostPort(%q, %v) = %q, %v; want %q", in, byName, got, err, want[i])
			}
		}
	}
	var ni nodesInfoResponse
	if err := json.Unmarshal([]byte(`{"nodes":{"x":{"name":"n","http":{"publish_address":"node-1.example/10.0.0.7:9200"}}}}`), &ni); err != nil {
		t.Fatal(err)
	}
	for scheme, want := range map[string]string{"http": "http://10.0.0.7:9200", "https": "https://node-1.example:9200"} {
		if infos, err := parseNodes(&ni, scheme); err != nil || infos[0].URL != want {
			t.Errorf("%s: %v %v, want %s", scheme, infos, err, want)
		}
	}
	for _, bad := range []string{"", "nohost", "host/", "1.2.3.4", "name/1.2.3.4"} {
		for _, byName := range []bool{false, true} {
			if _, err := publishHostPort(bad, byName); err == nil {
				t.Errorf("publishHostPort(%q, %v) accepted", bad, byName)
			}
		}
	}
}

func TestForbiddenKeepsWorkingUnrouted(t *testing.T) {
	f := threeNodes(t)
	f.status["nodes"] = http.StatusForbidden
	core, logs := observer.New(zap.WarnLevel)
	var outcomes []string
	r := newTestRouter(t, f, func(o *Options) {
		o.Logger = zap.New(core)
		o.OnRefresh = func(_, outcome string) { outcomes = append(outcomes, outcome) }
	})
	for i := 0; i < 3; i++ {
		err := r.Refresh(context.Background(), TriggerPeriodic)
		if !isForbidden(err) {
			t.Fatalf("refresh %d: %v", i, err)
		}
	}
	if r.Forbidden.Load() != 3 || logs.Len() != 1 {
		t.Fatalf("forbidden count %d, warnings %d (want 3, 1)", r.Forbidden.Load(), logs.Len())
	}
	entry := logs.All()[0]
	if entry.ContextMap()["missing_privilege"] != "cluster:monitor/nodes/info" {
		t.Fatalf("warning does not name the privilege: %v", entry.ContextMap())
	}
	if strings.Join(outcomes, ",") != "forbidden,forbidden,forbidden" {
		t.Fatalf("outcomes %v", outcomes)
	}
	if _, why := r.Locate("logs", "a", ""); why != ReasonNoTopology {
		t.Fatalf("locate: %v", why)
	}
	if n := r.Pick(); n == nil || n.URL() != f.srv.URL {
		t.Fatalf("pick must fall back to the seed: %v", n)
	}

	// Forbidden data streams only: plain indices still route.
	f.set(func(f *fakeCluster) { delete(f.status, "nodes"); f.status["data_streams"] = http.StatusForbidden })
	r.want("logs")
	if err := r.Refresh(context.Background(), TriggerPeriodic); err != nil {
		t.Fatal(err)
	}
	if _, why := r.Locate("logs", "a", ""); why != Routed {
		t.Fatalf("plain index with data streams forbidden: %v", why)
	}
	if _, why := r.Locate("ss4o_logs-default-namespace", "a", ""); why != ReasonUnknownIndex {
		t.Fatalf("data stream with data streams forbidden: %v", why)
	}
}

func TestMalformedKeepsPreviousSnapshot(t *testing.T) {
	f := threeNodes(t)
	r := newTestRouter(t, f, nil)
	r.want("logs")
	if err := r.Refresh(context.Background(), TriggerStart); err != nil {
		t.Fatal(err)
	}
	good := r.Topology()
	cases := map[string]string{
		"nodes":    `{"nodes":`,
		"metadata": `{"metadata":{"indices":{"logs":{"routing_num_shards":768,"settings":{"index":{"number_of_shards":"three"}}}}}}`,
		"shards":   `[{"index":"logs","shard":"7","prirep":"p","state":"STARTED","node":"n0"}]`,
	}
	for call, body := range cases {
		f.set(func(f *fakeCluster) { f.raw = map[string]string{call: body} })
		errsBefore := r.RefreshErrors.Load()
		if err := r.Refresh(context.Background(), TriggerPeriodic); err == nil || !errors.Is(err, errMalformed) {
			t.Errorf("%s: err = %v", call, err)
		}
		if r.Topology() != good {
			t.Errorf("%s: snapshot replaced by a malformed response", call)
		}
		if r.RefreshErrors.Load() != errsBefore+1 {
			t.Errorf("%s: error not counted", call)
		}
	}
	f.set(func(f *fakeCluster) {
		f.raw = map[string]string{"metadata": `{"metadata":{"indices":{"logs":{"routing_num_shards":10,"settings":{"index":{"number_of_shards":"3"}}}}}}`}
	})
	if err := r.Refresh(context.Background(), TriggerPeriodic); err == nil || !strings.Contains(err.Error(), "routing_num_shards 10 must be a multiple of number_of_shards 3") {
		t.Errorf("impossible layout: %v", err)
	}
}

func TestNamesFetchedInShortBatches(t *testing.T) {
	f := newFakeCluster(t, "n0")
	r := newTestRouter(t, f, nil)
	for i := 0; i < 200; i++ {
		name := fmt.Sprintf("index-with-a-rather-long-name-%03d", i)
		f.indices[name] = &fakeIndex{N: 1, R: 1024, P: 1, Primary: []string{"n0"}}
		r.want(name)
	}
	if err := r.Refresh(context.Background(), TriggerStart); err != nil {
		t.Fatal(err)
	}
	if len(f.metadataURL) < 3 {
		t.Fatalf("200 names in %d metadata calls", len(f.metadataURL))
	}
	for _, u := range f.metadataURL {
		if len(u) > maxNamesLen+400 {
			t.Errorf("URL of %d bytes", len(u))
		}
	}
	if len(r.Topology().Indices) != 200 {
		t.Fatalf("indices: %d", len(r.Topology().Indices))
	}
}

func TestTriggerCoalescesAndRateLimits(t *testing.T) {
	f := threeNodes(t)
	r := newTestRouter(t, f, func(o *Options) {
		o.MinRefreshInterval = 300 * time.Millisecond
		o.RefreshInterval = time.Hour
	})
	r.Start()
	deadline := time.Now().Add(5 * time.Second)
	for f.callCount("nodes") < 1 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	start := time.Now()
	for time.Since(start) < 700*time.Millisecond {
		r.Trigger(TriggerRollover)
		time.Sleep(time.Millisecond)
	}
	time.Sleep(350 * time.Millisecond)
	n := f.callCount("nodes")
	// 1 at start, then at most one per 300 ms over ~1 s.
	if n < 2 || n > 5 {
		t.Fatalf("%d refreshes for hundreds of triggers in ~1s with a 300ms minimum interval", n)
	}
	if r.Coalesced.Load() == 0 {
		t.Fatal("no trigger was coalesced")
	}
}

// syncTimers makes resurrection timers controllable by the test.
type syncTimers struct {
	mu  sync.Mutex
	fns []func()
	ds  []time.Duration
}

func (s *syncTimers) after(d time.Duration, f func()) *time.Timer {
	s.mu.Lock()
	s.fns = append(s.fns, f)
	s.ds = append(s.ds, d)
	s.mu.Unlock()
	return time.NewTimer(time.Hour) // stoppable stand-in
}

func (s *syncTimers) fire() int {
	s.mu.Lock()
	fns := s.fns
	s.fns = nil
	s.mu.Unlock()
	for _, f := range fns {
		f()
	}
	return len(fns)
}

// TestFiredProbeTimerLeavesNewerTimer: a resurrection timer fires, and
// before its callback runs the node is marked alive and dead again, which
// arms a newer timer. The late callback must neither probe nor forget the
// newer timer: Close stops it (and does not wait for it to fire).
func TestFiredProbeTimerLeavesNewerTimer(t *testing.T) {
	f := threeNodes(t)
	r := newTestRouter(t, f, nil)
	var mu sync.Mutex
	var fns []func()
	r.afterDur = func(d time.Duration, fn func()) *time.Timer {
		mu.Lock()
		defer mu.Unlock()
		fns = append(fns, fn)
		if len(fns) == 1 { // the first timer has fired already: Stop fails
			tm := time.NewTimer(0)
			<-tm.C
			return tm
		}
		return time.NewTimer(time.Hour)
	}
	r.jitter = func() float64 { return 0 }
	if err := r.Refresh(context.Background(), TriggerStart); err != nil {
		t.Fatal(err)
	}
	n := r.Topology().Nodes[1]
	r.MarkDead(n, errors.New("refused")) // arms the first timer, which fires
	r.MarkAlive(n)                       // its Stop fails: the callback is on its way
	r.MarkDead(n, errors.New("refused")) // arms the second timer
	f.set(func(f *fakeCluster) { f.raw["ping"] = ""; f.status["ping"] = 503 })
	fns[0]() // the first timer's callback, late
	mu.Lock()
	armed := len(fns)
	mu.Unlock()
	if armed != 2 {
		t.Errorf("%d timers armed: the late callback probed (and armed another)", armed)
	}
	done := make(chan struct{})
	go func() { r.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		fns[1]()
		<-done
		t.Fatal("Close waited for a resurrection timer it did not know about")
	}
}

func TestDeadNodeAndResurrection(t *testing.T) {
	f := threeNodes(t)
	var states []string
	var smu sync.Mutex
	r := newTestRouter(t, f, func(o *Options) {
		o.OnNodeState = func(n *Node, s NodeState) { smu.Lock(); states = append(states, n.Name()+":"+s.String()); smu.Unlock() }
	})
	timers := discoverWithTimers(t, r)
	var id string
	for i := 0; ; i++ {
		id = fmt.Sprint(i)
		if s, _ := ShardFor(id, "", 3, 768, 1); s == 1 {
			break
		}
	}
	n1, _ := r.Locate("logs", id, "")
	r.MarkDead(n1, errors.New("connection refused"))
	if _, why := r.Locate("logs", id, ""); why != ReasonNodeUnhealthy {
		t.Fatalf("dead primary node: %v", why)
	}
	for i := 0; i < 10; i++ {
		if p := r.Pick(); p == n1 {
			t.Fatal("Pick chose a dead node")
		}
	}
	// 2 of 3 alive, first failure: 5s × 2/3.
	if timers.ds[0] != 5*time.Second*2/3 {
		t.Fatalf("first resurrection timeout %v", timers.ds[0])
	}
	// Health check fails (5xx): stays dead, backs off further.
	f.set(func(f *fakeCluster) { f.raw["ping"] = ""; f.status["ping"] = 503 })
	if timers.fire() != 1 || n1.Alive() {
		t.Fatal("a failing health check must keep the node dead")
	}
	if len(timers.ds) != 2 || timers.ds[1] != 10*time.Second*2/3 {
		t.Fatalf("second timeout %v", timers.ds)
	}
	f.set(func(f *fakeCluster) { delete(f.status, "ping"); delete(f.raw, "ping") })
	timers.fire()
	if !n1.Alive() {
		t.Fatal("a passing health check must bring the node back")
	}
	if _, why := r.Locate("logs", id, ""); why != Routed {
		t.Fatalf("after resurrection: %v", why)
	}
	smu.Lock()
	got := strings.Join(states, ",")
	smu.Unlock()
	if got != "n1:dead,n1:alive" {
		t.Fatalf("state changes %q", got)
	}
}

func TestResurrectTimeoutTable(t *testing.T) {
	cases := []struct {
		failures, live, total int
		want                  time.Duration
	}{
		{1, 0, 3, 500 * time.Millisecond},
		{1, 2, 3, 5 * time.Second * 2 / 3},
		{2, 2, 3, 10 * time.Second * 2 / 3},
		{3, 2, 3, 20 * time.Second * 2 / 3},
		{4, 2, 3, 30 * time.Second * 2 / 3},
		{9, 2, 3, 30 * time.Second * 2 / 3},
		{9, 1, 3, 10 * time.Second},
		{9, 10, 150, 2500 * time.Millisecond},
		{9, 50, 150, 12500 * time.Millisecond},
		{9, 149, 150, 30 * time.Second},
	}
	for _, c := range cases {
		if got := ResurrectTimeout(c.failures, c.live, c.total, 8, 0); got != c.want {
			t.Errorf("ResurrectTimeout(%d, %d/%d) = %v, want %v", c.failures, c.live, c.total, got, c.want)
		}
	}
	if got := ResurrectTimeout(1, 2, 3, 8, 0.999); got <= 5*time.Second*2/3 || got > 5*time.Second {
		t.Errorf("jitter: %v", got)
	}
}

func TestPollStats(t *testing.T) {
	f := threeNodes(t)
	r := newTestRouter(t, f, nil)
	if err := r.Refresh(context.Background(), TriggerStart); err != nil {
		t.Fatal(err)
	}
	nodes := r.Topology().Nodes
	// Grow every window a little first.
	for _, n := range nodes {
		for i := 0; i < 2; i++ {
			tk, _ := n.Window().Acquire(context.Background())
			n.Window().Release(tk, Success)
		}
	}
	f.set(func(f *fakeCluster) { f.rejected["n0"] = 7 })
	if err := r.PollStats(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c, _, _, _ := nodes[0].Window().State(); c != 2 {
		t.Fatalf("the first poll is only a baseline: cwnd %d", c)
	}
	f.set(func(f *fakeCluster) { f.rejected["n0"] = 9; f.heap["n1"] = 91; f.breaker["n2"] = [2]int64{950, 1000} })
	if err := r.PollStats(context.Background()); err != nil {
		t.Fatal(err)
	}
	if c, _, _, _ := nodes[0].Window().State(); c != 1 {
		t.Fatalf("growing write.rejected must shrink the window: cwnd %d", c)
	}
	if nodes[0].State() != NodeAlive || nodes[1].State() != NodeOverloaded || nodes[2].State() != NodeOverloaded {
		t.Fatalf("states %v %v %v", nodes[0].State(), nodes[1].State(), nodes[2].State())
	}
	// Unrouted traffic avoids overloaded nodes.
	for i := 0; i < 10; i++ {
		if p := r.Pick(); p != nodes[0] {
			t.Fatalf("Pick chose %s", p.Name())
		}
	}
	// Routed traffic still goes to its primary on an overloaded node.
	var id string
	for i := 0; ; i++ {
		id = fmt.Sprint(i)
		if s, _ := ShardFor(id, "", 3, 768, 1); s == 1 {
			break
		}
	}
	r.want("logs")
	_ = r.Refresh(context.Background(), TriggerPeriodic)
	if n, why := r.Locate("logs", id, ""); why != Routed || n != nodes[1] {
		t.Fatalf("routed to overloaded primary: %v %v", n, why)
	}
	f.set(func(f *fakeCluster) { f.heap["n1"] = 40; f.breaker["n2"] = [2]int64{10, 1000} })
	_ = r.PollStats(context.Background())
	if nodes[1].State() != NodeAlive || nodes[2].State() != NodeAlive {
		t.Fatal("overload must clear")
	}
}

func TestPickScoresAndRotates(t *testing.T) {
	f := threeNodes(t)
	r := newTestRouter(t, f, nil)
	if err := r.Refresh(context.Background(), TriggerStart); err != nil {
		t.Fatal(err)
	}
	nodes := r.Topology().Nodes
	// Equal scores: ties rotate over all three.
	seen := map[*Node]int{}
	for i := 0; i < 30; i++ {
		seen[r.Pick()]++
	}
	if len(seen) != 3 {
		t.Fatalf("ties must rotate: %v", seen)
	}
	// A node with a request in flight (load 2/1) loses to idle ones.
	tk, _ := nodes[0].Window().Acquire(context.Background())
	for i := 0; i < 10; i++ {
		if r.Pick() == nodes[0] {
			t.Fatal("busy node picked over idle ones")
		}
	}
	nodes[0].Window().Release(tk, Success)
	// A far node (RTT bucket 11, ~2ms) loses to near ones at equal load.
	for i := 0; i < 8; i++ {
		nodes[1].observeRTT(2500 * time.Microsecond)
		nodes[2].observeRTT(100 * time.Microsecond)
	}
	if b := nodes[1].RTTBucket(); b != 11 {
		t.Fatalf("bucket of 2.5ms = %d", b)
	}
	if b := nodes[2].RTTBucket(); b != 8 {
		t.Fatalf("bucket of 100µs = %d (floor 8)", b)
	}
	for i := 0; i < 10; i++ {
		if r.Pick() == nodes[1] {
			t.Fatal("far node picked over near ones")
		}
	}
	// Every node dead: still returns one (zombie fallback).
	for _, n := range nodes {
		n.dead.Store(true)
	}
	if r.Pick() == nil {
		t.Fatal("nil pick")
	}
}

func TestDisabledIsRoundRobin(t *testing.T) {
	f := threeNodes(t)
	seeds := []string{f.srv.URL}
	for i := 0; i < 2; i++ {
		o := httptest.NewServer(http.NotFoundHandler())
		t.Cleanup(o.Close)
		seeds = append(seeds, o.URL)
	}
	r := newTestRouter(t, f, func(o *Options) { o.Disabled = true; o.Seeds = seeds })
	if err := r.Refresh(context.Background(), TriggerStart); err != nil {
		t.Fatal(err)
	}
	if _, why := r.Locate("logs", "a", ""); why != ReasonDisabled {
		t.Fatalf("locate with routing disabled: %v", why)
	}
	counts := map[*Node]int{}
	for i := 0; i < 300; i++ {
		counts[r.Pick()]++
	}
	for n, c := range counts {
		if c != 100 {
			t.Fatalf("round robin: %s got %d of 300", n.Name(), c)
		}
	}
}

func TestNewRejectsBadOptions(t *testing.T) {
	c := http.DefaultClient
	for _, o := range []Options{
		{Seeds: []string{"http://x:9200"}},
		{Client: c},
		{Client: c, Seeds: []string{"x:9200"}},
		{Client: c, Seeds: []string{"ftp://x"}},
		{Client: c, Seeds: []string{"http://a:1", "https://b:2"}},
		{Client: c, Seeds: []string{"http://a:1"}, WindowCeiling: -1},
	} {
		if _, err := New(o); err == nil {
			t.Errorf("New(%+v) accepted", o)
		}
	}
}

func TestCloseStopsEverything(t *testing.T) {
	f := threeNodes(t)
	r := newTestRouter(t, f, func(o *Options) { o.StatsInterval = 10 * time.Millisecond })
	r.Start()
	time.Sleep(50 * time.Millisecond)
	for _, n := range r.Nodes() {
		r.MarkDead(n, errors.New("x"))
	}
	done := make(chan struct{})
	go func() { r.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	// A request sent just before Close may reach the server just after it.
	time.Sleep(100 * time.Millisecond)
	var pings atomic.Int64
	pings.Store(f.pings.Load())
	time.Sleep(200 * time.Millisecond)
	if f.pings.Load() != pings.Load() {
		t.Fatal("requests after Close")
	}
}

func BenchmarkLocate(b *testing.B) {
	f := newFakeCluster(b, "n0", "n1", "n2")
	f.indices["logs"] = &fakeIndex{N: 6, R: 768, P: 1, Primary: []string{"n0", "n1", "n2", "n0", "n1", "n2"}}
	r, _ := New(Options{Client: f.srv.Client(), Seeds: []string{f.srv.URL}, StatsInterval: -1})
	defer r.Close()
	r.want("logs")
	if err := r.Refresh(context.Background(), TriggerStart); err != nil {
		b.Fatal(err)
	}
	ids := make([]string, 1024)
	for i := range ids {
		ids[i] = fmt.Sprintf("%032x", i*7919)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, why := r.Locate("logs", ids[i&1023], ""); why != Routed {
			b.Fatal(why)
		}
	}
}

func TestSeenRefreshesForNewNamesWithBackoff(t *testing.T) {
	f := threeNodes(t)
	r := newTestRouter(t, f, func(o *Options) { o.MinRefreshInterval = time.Second; o.RefreshInterval = 8 * time.Second })
	now := time.Unix(1000, 0)
	r.now = func() time.Time { return now }
	if err := r.Refresh(context.Background(), TriggerStart); err != nil {
		t.Fatal(err)
	}
	drain := func() bool {
		select {
		case <-r.trigger:
			return true
		default:
			return false
		}
	}
	r.Seen("alias-x")
	if !drain() {
		t.Fatal("a write to an unknown name must trigger a refresh")
	}
	r.Seen("alias-x")
	if drain() {
		t.Fatal("a second write right after must not trigger again")
	}
	for _, step := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 8 * time.Second} {
		now = now.Add(step - time.Millisecond)
		r.Seen("alias-x")
		if drain() {
			t.Fatalf("triggered before the %v backoff passed", step)
		}
		now = now.Add(time.Millisecond)
		r.Seen("alias-x")
		if !drain() {
			t.Fatalf("no trigger after the %v backoff", step)
		}
	}
	// A name the topology knows never triggers.
	r.want("logs")
	_ = r.Refresh(context.Background(), TriggerPeriodic)
	drain()
	r.Seen("logs")
	if drain() {
		t.Fatal("a known name triggered a refresh")
	}
}

// TestClosedIndexLeftOut: a name written to once is then closed. Metadata
// still describes it (state "close"), but naming it to _cat/shards fails
// the whole call with 400, as the real server does: it is left out, and
// refreshes keep working for everything else.
func TestClosedIndexLeftOut(t *testing.T) {
	f := threeNodes(t)
	f.indices["old"] = &fakeIndex{N: 1, R: 1024, P: 1, Primary: []string{"n0"}, Closed: true}
	r := newTestRouter(t, f, nil)
	r.want("logs")
	r.want("old")
	for i := 0; i < 2; i++ {
		if err := r.Refresh(context.Background(), TriggerPeriodic); err != nil {
			t.Fatalf("refresh %d: %v", i, err)
		}
	}
	if _, why := r.Locate("old", "a", ""); why != ReasonUnknownIndex {
		t.Errorf("closed index: %v, want unknown_index", why)
	}
	if n, why := r.Locate("logs", "a", ""); n == nil || why != Routed {
		t.Errorf("open index: %v %v", n, why)
	}
}

// TestShardCopiesMatchedByNodeID: two nodes report the same name (two
// nodes on one host with the default name); each shard copy is matched to
// its node by id, not by name.
func TestShardCopiesMatchedByNodeID(t *testing.T) {
	f := threeNodes(t)
	f.shown["n1"], f.shown["n2"] = "host-a", "host-a"
	r := newTestRouter(t, f, nil)
	r.want("logs")
	if err := r.Refresh(context.Background(), TriggerStart); err != nil {
		t.Fatal(err)
	}
	idx := r.Topology().Indices["logs"]
	for s, want := range []string{"id-n0", "id-n1", "id-n2"} {
		if n := idx.Shards[s].Primary.Node; n == nil || n.ID() != want {
			t.Errorf("shard %d primary on %v, want %s", s, n, want)
		}
	}
}

// TestFailedRefreshKeepsNodes: a node dies and, while it restarts, a
// refresh sees _nodes without it, then fails further on (a 503). The
// snapshot in use still has the node: it must stay registered with its
// resurrection timer, so that it comes back when the health check passes.
func TestFailedRefreshKeepsNodes(t *testing.T) {
	r, f, timers, n1 := deadNode(t)
	f.set(func(f *fakeCluster) { f.nodes = []string{"n0", "n2"}; f.status["data_streams"] = 503 })
	if err := r.Refresh(context.Background(), TriggerNodeFailure); err == nil {
		t.Fatal("the refresh should have failed")
	}
	n1.mu.Lock()
	retired, armed := n1.retired, n1.timer != nil
	n1.mu.Unlock()
	if retired || !armed {
		t.Fatalf("after a failed refresh: retired %v, timer armed %v", retired, armed)
	}
	f.set(func(f *fakeCluster) { f.nodes = []string{"n0", "n1", "n2"}; delete(f.status, "data_streams") })
	if timers.fire() != 1 || !n1.Alive() {
		t.Fatal("the health check did not bring the node back")
	}
	// A refresh that succeeds without a node does retire it.
	f.set(func(f *fakeCluster) { f.nodes = []string{"n0", "n2"} })
	if err := r.Refresh(context.Background(), TriggerPeriodic); err != nil {
		t.Fatal(err)
	}
	n1.mu.Lock()
	retired = n1.retired
	n1.mu.Unlock()
	if !retired || len(r.Topology().Nodes) != 2 {
		t.Fatalf("after a refresh without it: retired %v, %d nodes", retired, len(r.Topology().Nodes))
	}
}

// TestIdleTargetsForgotten: a target name nothing is located to for
// wantedIdle is no longer fetched by refreshes (nor routed); a document for
// it asks for it again. Names in use stay, however old.
func TestIdleTargetsForgotten(t *testing.T) {
	f := threeNodes(t)
	f.indices["old"] = &fakeIndex{N: 1, R: 1024, P: 1, Primary: []string{"n1"}}
	r := newTestRouter(t, f, func(o *Options) { o.RefreshInterval = 30 * time.Second })
	now := time.Unix(1000, 0)
	r.now = func() time.Time { return now }
	if err := r.Refresh(context.Background(), TriggerStart); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"logs", "old"} {
		if _, why := r.Locate(name, "a", ""); why != ReasonUnknownIndex {
			t.Fatalf("%s before any refresh: %v", name, why)
		}
	}
	refresh := func() string {
		t.Helper()
		f.mu.Lock()
		f.metadataURL = nil
		f.mu.Unlock()
		if err := r.Refresh(context.Background(), TriggerPeriodic); err != nil {
			t.Fatal(err)
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		return strings.Join(f.metadataURL, " ")
	}
	if got := refresh(); !strings.Contains(got, "old") || !strings.Contains(got, "logs") {
		t.Fatalf("first refresh fetched %q", got)
	}
	// Only "logs" is written to from now on, for 25 minutes, a refresh
	// every 30 s.
	var forgotten time.Duration
	for step := time.Duration(0); step < 25*time.Minute; step += 30 * time.Second {
		now = now.Add(30 * time.Second)
		if _, why := r.Locate("logs", "a", ""); why != Routed {
			t.Fatalf("logs after %v: %v", step, why)
		}
		if got := refresh(); !strings.Contains(got, "old") && forgotten == 0 {
			forgotten = step + 30*time.Second
		}
	}
	if forgotten <= wantedIdle || forgotten > wantedIdle+time.Minute {
		t.Fatalf("old was forgotten after %v idle; want just after %v", forgotten, wantedIdle)
	}
	if _, ok := r.Topology().WriteIndex("old"); ok {
		t.Fatal("a forgotten name is still in the topology")
	}
	if n := wantedCount(r); n != 1 {
		t.Fatalf("%d names wanted, want 1", n)
	}
	// Written to again: asked for, routed after the next refresh.
	if _, why := r.Locate("old", "a", ""); why != ReasonUnknownIndex {
		t.Fatalf("old when forgotten: %v", why)
	}
	if got := refresh(); !strings.Contains(got, "old") {
		t.Fatalf("old asked for again but not fetched: %q", got)
	}
	if n, why := r.Locate("old", "a", ""); why != Routed || n.Name() != "n1" {
		t.Fatalf("old after it was asked for again: %v %v", n, why)
	}
}

// wantedCount is how many names r fetches at a refresh.
func wantedCount(r *Router) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.wanted)
}

// fullRouter is a router on threeNodes, its clock reading *now, that
// wants maxWanted names (none of them an index).
func fullRouter(t *testing.T, now *time.Time) *Router {
	r := newTestRouter(t, threeNodes(t), nil)
	r.now = func() time.Time { return *now }
	for i := 0; i < maxWanted; i++ {
		r.want(fmt.Sprintf("busy-%d", i))
	}
	return r
}

// TestWantedCapFreedByIdleNames: once maxWanted names have been asked for,
// a new name is not; when the others fall idle it is.
func TestWantedCapFreedByIdleNames(t *testing.T) {
	now := time.Unix(1000, 0)
	r := fullRouter(t, &now)
	r.Locate("logs", "a", "")
	r.mu.Lock()
	_, ok := r.wanted["logs"]
	r.mu.Unlock()
	if ok {
		t.Fatal("a name beyond maxWanted was taken")
	}
	now = now.Add(wantedIdle + time.Second)
	r.mu.Lock()
	r.pruneWanted(now) // marks seen since the last refresh count as use
	r.mu.Unlock()
	now = now.Add(wantedIdle + time.Second)
	if err := r.Refresh(context.Background(), TriggerPeriodic); err != nil {
		t.Fatal(err)
	}
	if n := wantedCount(r); n != 0 {
		t.Fatalf("%d names wanted after they were idle, want 0", n)
	}
	r.Locate("logs", "a", "") // asks for it: there is room now
	if err := r.Refresh(context.Background(), TriggerPeriodic); err != nil {
		t.Fatal(err)
	}
	if _, why := r.Locate("logs", "a", ""); why != Routed {
		t.Fatalf("logs once the idle names were forgotten: %v", why)
	}
	if n := wantedCount(r); n != 1 {
		t.Fatalf("%d names wanted, want 1", n)
	}
}

// TestPinnedNamesKept: a pinned name (the backfill receiver's indices,
// read through the topology, never located) is fetched by every refresh
// however long nothing is located to it.
func TestPinnedNamesKept(t *testing.T) {
	f := threeNodes(t)
	r := newTestRouter(t, f, nil)
	now := time.Unix(1000, 0)
	r.now = func() time.Time { return now }
	if !r.Pin("logs") {
		t.Fatal("Pin refused a name")
	}
	r.want("ss4o_logs-default-namespace")
	for step := 0; step < 40; step++ { // 40 minutes, a refresh a minute
		now = now.Add(time.Minute)
		if err := r.Refresh(context.Background(), TriggerPeriodic); err != nil {
			t.Fatal(err)
		}
		if _, ok := r.Topology().WriteIndex("logs"); !ok {
			t.Fatalf("the pinned name was forgotten after %d minutes", step+1)
		}
	}
	if _, ok := r.Topology().WriteIndex("ss4o_logs-default-namespace"); ok {
		t.Fatal("an unpinned idle name was kept for 40 minutes")
	}
}

// TestSeenBackoffAtCap: with maxWanted names wanted, a write to one more
// name asks for no refresh (want cannot take it), however often it is
// seen and refreshes run; before, its Seen state was dropped by every
// refresh and each one fired again.
func TestSeenBackoffAtCap(t *testing.T) {
	now := time.Unix(1000, 0)
	r := fullRouter(t, &now)
	drain := func() int {
		n := 0
		for {
			select {
			case <-r.trigger:
				n++
			default:
				return n
			}
		}
	}
	drain()
	// A minute of ten writes a second to "over", pruning as each refresh
	// would, every second; the refreshes asked for.
	minute := func() int {
		triggers := 0
		for sec := 0; sec < 60; sec++ {
			now = now.Add(time.Second)
			r.mu.Lock()
			r.pruneWanted(now)
			r.mu.Unlock()
			for range 10 {
				r.Seen("over")
			}
			triggers += drain()
		}
		return triggers
	}
	if triggers := minute(); triggers != 0 {
		t.Fatalf("%d refreshes asked for a name the cap refuses", triggers)
	}
	// Below the cap, the same name is asked for once and then backs off.
	r.mu.Lock()
	delete(r.wanted, "busy-0")
	r.mu.Unlock()
	if triggers := minute(); triggers == 0 || triggers > 7 {
		t.Fatalf("%d refreshes asked for in 60 s; want the backoff's (1, 2, 4, 8, 16, 30 s)", triggers)
	}
}

// TestNodeStatsRefusalReported: a node stats poll the server refuses (a
// user without cluster:monitor/nodes/stats) is counted, reported to
// OnRefresh as trigger node_stats, outcome forbidden (what the exporter
// exports), and warned about once; one that fails otherwise as error.
func TestNodeStatsRefusalReported(t *testing.T) {
	f := threeNodes(t)
	core, logs := observer.New(zap.WarnLevel)
	var got []string
	r := newTestRouter(t, f, func(o *Options) {
		o.Logger = zap.New(core)
		o.OnRefresh = func(trigger, outcome string) { got = append(got, trigger+":"+outcome) }
	})
	if err := r.Refresh(context.Background(), TriggerStart); err != nil {
		t.Fatal(err)
	}
	f.set(func(f *fakeCluster) { f.status["node_stats"] = http.StatusForbidden })
	for i := 0; i < 2; i++ {
		if err := r.PollStats(context.Background()); !isForbidden(err) {
			t.Fatalf("poll %d: %v", i, err)
		}
	}
	f.set(func(f *fakeCluster) { f.status["node_stats"] = http.StatusInternalServerError })
	if err := r.PollStats(context.Background()); err == nil {
		t.Fatal("a failed poll returned no error")
	}
	if want := "start:ok,node_stats:forbidden,node_stats:forbidden,node_stats:error"; strings.Join(got, ",") != want {
		t.Fatalf("reported %v, want %s", got, want)
	}
	if r.Forbidden.Load() != 2 || logs.FilterField(zap.String("call", "node_stats")).Len() != 1 {
		t.Fatalf("forbidden %d, warnings %d", r.Forbidden.Load(), logs.FilterField(zap.String("call", "node_stats")).Len())
	}
}
