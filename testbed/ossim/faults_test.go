package ossim

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/opensearchrouted/opensearchrouted/internal/routing"
)

func docsLines(index, prefix string, n int) []string {
	var lines []string
	for i := 0; i < n; i++ {
		lines = append(lines, fmt.Sprintf(`{"create":{"_index":%q,"_id":"%s%d"}}`, index, prefix, i), `{"m":"x"}`)
	}
	return lines
}

func TestStopNodePromotesReplicasAndKeepsAckedWrites(t *testing.T) {
	c := StartT(t, Options{Nodes: 3, NoHopLatency: true, DetectionDelay: 50 * time.Millisecond, RecoveryTime: 600 * time.Millisecond})
	createIndex(t, c.Addr(0), "s", 3, 1, "")
	m := mustOK(t, "POST", c.Addr(0)+"/_bulk", bulkBody(docsLines("s", "a", 200)...))
	if m["errors"] != false {
		t.Fatal(m)
	}
	before, _ := c.Shards("s")
	victim := 1
	if err := c.StopNode(victim); err != nil {
		t.Fatal(err)
	}
	_, err := http.Get(c.Addr(victim) + "/")
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("stopped node: %v, want connection refused", err)
	}
	// Writes sent right away wait for the promotion and succeed.
	m = mustOK(t, "POST", c.Addr(0)+"/_bulk", bulkBody(docsLines("s", "b", 100)...))
	if m["errors"] != false {
		t.Fatalf("writes during failover: %v", m)
	}
	sawInit := false
	if err := WaitFor(5*time.Second, func() bool {
		for _, r := range catShards(t, c.Addr(0), "s") {
			if r["state"] == "INITIALIZING" {
				sawInit = true
			}
		}
		return c.health().status == "green"
	}); err != nil {
		t.Fatalf("not green again: %+v", c.health())
	}
	if !sawInit {
		t.Errorf("replacement replicas never INITIALIZING")
	}
	after, _ := c.Shards("s")
	meta := mustOK(t, "GET", c.Addr(0)+"/_cluster/state/metadata/s", "")
	for _, s := range before {
		if s.Primary && s.Node == victim {
			for _, a := range after {
				if a.Shard == s.Shard && a.Primary && a.Node == victim {
					t.Errorf("shard %d primary still on the stopped node", s.Shard)
				}
			}
			if term := get(meta, "metadata", "indices", "s", "primary_terms", fmt.Sprint(s.Shard)); term != 2.0 {
				t.Errorf("shard %d primary term %v after promotion, want 2", s.Shard, term)
			}
		}
	}
	for _, a := range after {
		if a.Node == victim {
			t.Errorf("copy still on the stopped node: %+v", a)
		}
	}
	cnt := mustOK(t, "GET", c.Addr(2)+"/s/_count", "")
	if cnt["count"] != 300.0 {
		t.Errorf("count after failover %v, want 300 (acknowledged writes survive)", cnt["count"])
	}
	h := mustOK(t, "GET", c.Addr(0)+"/_cluster/health", "")
	if h["number_of_nodes"] != 2.0 {
		t.Errorf("nodes after stop: %v", h["number_of_nodes"])
	}
}

func TestRestartNodeComesBackEmptyAndGetsReplicas(t *testing.T) {
	c := StartT(t, Options{Nodes: 2, NoHopLatency: true, DetectionDelay: 20 * time.Millisecond, RecoveryTime: 20 * time.Millisecond})
	createIndex(t, c.Addr(0), "r", 2, 1, "")
	mustOK(t, "POST", c.Addr(0)+"/_bulk", bulkBody(docsLines("r", "a", 100)...))
	if err := c.RestartNode(1); err != nil {
		t.Fatal(err)
	}
	if !c.Node(1).Running() {
		t.Fatal("not running after restart")
	}
	mustOK(t, "GET", c.Addr(1)+"/", "")
	if err := c.WaitGreen(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if d := c.NodeStats(1).Docs; d != 100 {
		t.Errorf("restarted node holds %d docs after recovery, want 100 (replicas of both shards)", d)
	}
	cnt := mustOK(t, "GET", c.Addr(1)+"/r/_count", "")
	if cnt["count"] != 100.0 {
		t.Errorf("count %v", cnt["count"])
	}
}

func TestSetLatencyDelaysEverythingANodeServes(t *testing.T) {
	c := StartT(t, Options{Nodes: 2, NoHopLatency: true, DefaultReplicas: -1})
	createIndex(t, c.Addr(0), "l", 2, 0, "")
	if err := c.SetLatency(1, 40*time.Millisecond, 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	mustOK(t, "GET", c.Addr(1)+"/", "")
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("request to the slowed node took %v, want ≥ 30ms", d)
	}
	// An item whose primary is on node 1, sent to node 0, pays it on the hop.
	layout, _ := routing.NewLayout(2, 0, 1)
	id := ""
	for i := 0; id == ""; i++ {
		cand := fmt.Sprint("x", i)
		if s, _ := layout.Shard(cand, ""); primaryNodeOf(t, c, "l", s) == 1 {
			id = cand
		}
	}
	start = time.Now()
	mustOK(t, "POST", c.Addr(0)+"/_bulk", bulkBody(fmt.Sprintf(`{"index":{"_index":"l","_id":%q}}`, id), `{}`))
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Errorf("forwarded write took %v, want ≥ 30ms", d)
	}
	if err := c.SetLatency(1, 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := c.SetLatency(1, time.Millisecond, 5*time.Millisecond); err == nil {
		t.Error("jitter above mean accepted")
	}
}

func TestFullQueueRejectsShardGroupWith429(t *testing.T) {
	c := StartT(t, Options{NoHopLatency: true, WriteThreads: 1, ServiceBase: 150 * time.Millisecond, DefaultReplicas: -1})
	createIndex(t, c.Addr(0), "q", 1, 0, "")
	if err := c.SetQueue(0, 0); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	res := make([]map[string]any, 2)
	for i := range res {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if i == 1 {
				time.Sleep(40 * time.Millisecond)
			}
			res[i] = mustOK(t, "POST", c.Addr(0)+"/_bulk", bulkBody(docsLines("q", fmt.Sprint("w", i, "-"), 3)...))
		}()
	}
	wg.Wait()
	// One bulk holds the only worker for 150ms; the other, arriving while
	// it does, finds no queue. Under heavy load either may come first.
	ok, rej := res[0], res[1]
	if ok["errors"] != false {
		ok, rej = rej, ok
	}
	if ok["errors"] != false {
		t.Fatalf("neither bulk succeeded: %v / %v", res[0], res[1])
	}
	if rej["errors"] != true {
		t.Fatalf("no bulk rejected: %v", rej)
	}
	for _, it := range items(rej) {
		if it["status"] != 429.0 || get(it, "error", "type") != "rejected_execution_exception" {
			t.Errorf("rejected item: %v", it)
		}
	}
	s := c.NodeStats(0)
	if s.RejectedGroups != 1 || s.RejectedItems != 3 || s.WriteRejected != 1 {
		t.Errorf("counters: groups %d items %d pool %d", s.RejectedGroups, s.RejectedItems, s.WriteRejected)
	}
	tp := mustOK(t, "GET", c.Addr(0)+"/_nodes/_local/stats/thread_pool", "")
	for _, n := range get(tp, "nodes").(map[string]any) {
		if get(n, "thread_pool", "write", "rejected") != 1.0 || get(n, "thread_pool", "write", "completed") != 1.0 {
			t.Errorf("thread_pool stats: %v", get(n, "thread_pool", "write"))
		}
	}
	info := mustOK(t, "GET", c.Addr(0)+"/_nodes/_local/http,os,thread_pool", "")
	for _, n := range get(info, "nodes").(map[string]any) {
		if get(n, "thread_pool", "write", "size") != 1.0 || get(n, "thread_pool", "write", "queue_size") != 0.0 || get(n, "os", "allocated_processors") == nil {
			t.Errorf("nodes info: %v", n)
		}
	}
}

func TestRejectNext(t *testing.T) {
	c := StartT(t, Options{NoHopLatency: true, DefaultReplicas: -1})
	createIndex(t, c.Addr(0), "j", 1, 0, "")
	if err := c.RejectNext(0, 2); err != nil {
		t.Fatal(err)
	}
	for i, want := range []float64{429, 429, 201, 201} {
		m := mustOK(t, "POST", c.Addr(0)+"/_bulk", bulkBody(docsLines("j", fmt.Sprint("k", i, "-"), 2)...))
		for _, it := range items(m) {
			if it["status"] != want {
				t.Errorf("bulk %d: status %v, want %v", i, it["status"], want)
			}
		}
	}
	if s := c.NodeStats(0); s.RejectedGroups != 2 || s.RejectedItems != 4 {
		t.Errorf("rejected groups %d items %d, want 2 and 4", s.RejectedGroups, s.RejectedItems)
	}
}

func TestRejectNextBulksRefusesWholeRequests(t *testing.T) {
	c := StartT(t, Options{NoHopLatency: true, DefaultReplicas: -1})
	createIndex(t, c.Addr(0), "wb", 1, 0, "")
	mustOK(t, "POST", c.Addr(0)+"/_ossim/nodes/0/reject_next_bulks?k=1", "")
	st, m := do(t, "POST", c.Addr(0)+"/_bulk", bulkBody(docsLines("wb", "a", 3)...))
	if st != 429 || get(m, "error", "type") != "rejected_execution_exception" || m["status"] != 429.0 ||
		get(m, "error", "root_cause", 0, "type") != "rejected_execution_exception" {
		t.Errorf("whole-request rejection: %d %v", st, m)
	}
	m = mustOK(t, "POST", c.Addr(0)+"/_bulk", bulkBody(docsLines("wb", "a", 3)...))
	if m["errors"] != false {
		t.Errorf("next bulk: %v", m)
	}
	if s := c.NodeStats(0); s.RejectedBulks != 1 || s.ItemsPrimary != 3 || s.WriteRejected != 1 {
		t.Errorf("counters: %+v", s)
	}
	if err := c.RejectNextBulks(0, -1); err == nil {
		t.Error("negative k accepted")
	}
}

func TestBlackholeAcceptsButNeverAnswers(t *testing.T) {
	c := StartT(t, Options{Nodes: 2, NoHopLatency: true})
	if err := c.Blackhole(1, true); err != nil {
		t.Fatal(err)
	}
	cl := &http.Client{Timeout: 150 * time.Millisecond}
	_, err := cl.Get(c.Addr(1) + "/")
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("blackholed node: %v, want a timeout", err)
	}
	if _, err := cl.Get(c.Addr(0) + "/"); err != nil {
		t.Errorf("other node: %v", err)
	}
	if err := c.Blackhole(1, false); err != nil {
		t.Fatal(err)
	}
	mustOK(t, "GET", c.Addr(1)+"/", "")
}

func TestRelocateShowsRelocatingThenMoves(t *testing.T) {
	c := StartT(t, Options{Nodes: 3, NoHopLatency: true, RecoveryTime: 800 * time.Millisecond, DefaultReplicas: -1})
	createIndex(t, c.Addr(0), "m", 1, 0, "")
	mustOK(t, "POST", c.Addr(0)+"/_bulk", bulkBody(docsLines("m", "a", 50)...))
	from := primaryNodeOf(t, c, "m", 0)
	to := (from + 1) % 3
	if err := c.Relocate("m", 0, to); err != nil {
		t.Fatal(err)
	}
	rows := catShards(t, c.Addr(0), "m")
	want := fmt.Sprintf("%s -> 127.0.0.1 %s %s", c.Node(from).Name(), c.Node(to).ID(), c.Node(to).Name())
	if len(rows) != 1 || rows[0]["state"] != "RELOCATING" || rows[0]["node"] != want {
		t.Errorf("during relocation: %v, want node %q", rows, want)
	}
	h := mustOK(t, "GET", c.Addr(0)+"/_cluster/health", "")
	if h["relocating_shards"] != 1.0 {
		t.Errorf("health relocating_shards %v", h["relocating_shards"])
	}
	// Writes during the relocation reach both copies.
	mustOK(t, "POST", c.Addr(0)+"/_bulk", bulkBody(docsLines("m", "b", 50)...))
	mustOK(t, "GET", c.Addr(0)+"/_cluster/health?wait_for_no_relocating_shards=true&timeout=5s", "")
	if n := primaryNodeOf(t, c, "m", 0); n != to {
		t.Fatalf("primary on node %d after relocation, want %d", n, to)
	}
	rows = catShards(t, c.Addr(0), "m")
	if rows[0]["state"] != "STARTED" || rows[0]["node"] != c.Node(to).Name() {
		t.Errorf("after relocation: %v", rows)
	}
	if d := c.NodeStats(to).Docs; d != 100 {
		t.Errorf("target holds %d docs, want 100", d)
	}
	if d := c.NodeStats(from).Docs; d != 0 {
		t.Errorf("source still holds %d docs", d)
	}
	if err := c.Relocate("m", 0, to); err == nil {
		t.Error("relocating onto the node that holds the copy accepted")
	}
}

func TestAdminEndpoints(t *testing.T) {
	c := StartT(t, Options{Nodes: 3, NoHopLatency: true, DetectionDelay: 20 * time.Millisecond, RecoveryTime: 20 * time.Millisecond})
	a := c.Addr(0)
	createIndex(t, a, "ad", 1, 1, "")
	mustOK(t, "POST", a+"/_ossim/nodes/1/latency?mean=5ms&jitter=1ms", "")
	if c.Node(1).latMean.Load() != int64(5*time.Millisecond) {
		t.Error("latency not set")
	}
	mustOK(t, "POST", a+"/_ossim/nodes/1/queue?size=7", "")
	if c.NodeStats(1).WriteQueueSize != 7 {
		t.Error("queue not set")
	}
	mustOK(t, "POST", a+"/_ossim/nodes/2/reject_next?k=3", "")
	if c.Node(2).rejectNext.Load() != 3 {
		t.Error("reject_next not set")
	}
	mustOK(t, "POST", a+"/_ossim/nodes/2/blackhole?on=true", "")
	if c.Node(2).blackhole() == nil {
		t.Error("blackhole not set")
	}
	mustOK(t, "POST", a+"/_ossim/nodes/2/blackhole?on=false", "")
	p := primaryNodeOf(t, c, "ad", 0)
	to := 0
	for _, s := range mustShards(t, c, "ad") {
		_ = s
	}
	for i := 0; i < 3; i++ {
		busy := false
		for _, s := range mustShards(t, c, "ad") {
			busy = busy || s.Node == i
		}
		if !busy {
			to = i
		}
	}
	mustOK(t, "POST", fmt.Sprintf("%s/_ossim/relocate?index=ad&shard=0&to=%d", a, to), "")
	if err := WaitFor(3*time.Second, func() bool { return primaryNodeOf(t, c, "ad", 0) == to }); err != nil {
		t.Errorf("relocate via admin: primary still on %d (was %d)", primaryNodeOf(t, c, "ad", 0), p)
	}
	mustOK(t, "POST", c.Addr(2)+"/_ossim/nodes/2/stop", "")
	if err := WaitFor(2*time.Second, func() bool { return !c.Node(2).Running() }); err != nil {
		t.Error("self-stop via admin did not stop")
	}
	mustOK(t, "POST", a+"/_ossim/nodes/2/restart", "")
	if !c.Node(2).Running() {
		t.Error("restart via admin")
	}
	code, raw := doRaw(t, "GET", a+"/_ossim/shards/ad", "", nil)
	var sh []map[string]any
	if err := jsonUnmarshal(raw, &sh); code != 200 || err != nil || len(sh) != 2 || sh[0]["primary"] != true {
		t.Errorf("admin shards: %d %s", code, raw)
	}
	st := mustOK(t, "GET", a+"/_ossim/stats", "")
	if n := get(st, "nodes").([]any); len(n) != 3 || get(n[0], "name") != "node-0" {
		t.Errorf("stats: %v", st)
	}
	mustOK(t, "POST", a+"/_ossim/stats/_reset", "")
	if code, _ := do(t, "POST", a+"/_ossim/nodes/9/stop", ""); code != 400 {
		t.Errorf("bad node index: %d", code)
	}
	if code, m := do(t, "POST", a+"/_ossim/nodes/1/latency?mean=bogus", ""); code != 400 || !strings.Contains(str(get(m, "error", "reason")), "bogus") {
		t.Errorf("bad duration: %d %v", code, m)
	}
}

func mustShards(t *testing.T, c *Cluster, index string) []ShardCopy {
	t.Helper()
	s, err := c.Shards(index)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestOptionsValidation(t *testing.T) {
	for _, o := range []Options{{Nodes: -1}, {WriteQueue: -1}, {HopLatency: -1}, {Zones: []string{""}}, {Nodes: 101}} {
		if _, err := Start(o); err == nil {
			t.Errorf("Start(%+v) accepted", o)
		}
	}
}
