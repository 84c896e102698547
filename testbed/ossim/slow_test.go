package ossim

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/opensearchrouted/opensearchrouted/internal/routing"
)

// idOnPrimary returns an id of index (shards primaries, no custom
// routing) whose primary is on node.
func idOnPrimary(t *testing.T, c *Cluster, index string, shards, node int) string {
	t.Helper()
	layout, err := routing.NewLayout(shards, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10000; i++ {
		cand := fmt.Sprint("s", i)
		if s, _ := layout.Shard(cand, ""); primaryNodeOf(t, c, index, s) == node {
			return cand
		}
	}
	t.Fatalf("no id with its primary on node %d", node)
	return ""
}

// timedWrite indexes one document with this id through node via and
// returns how long the bulk took.
func timedWrite(t *testing.T, c *Cluster, via int, index, id string) time.Duration {
	t.Helper()
	start := time.Now()
	m := mustOK(t, "POST", c.Addr(via)+"/_bulk", bulkBody(fmt.Sprintf(`{"index":{"_index":%q,"_id":%q}}`, index, id), `{"a":1}`))
	if m["errors"] != false {
		t.Fatalf("bulk failed: %v", m)
	}
	return time.Since(start)
}

func TestSetSlownessMultipliesPrimaryAndReplicaServiceTime(t *testing.T) {
	const base = 20 * time.Millisecond
	c := StartT(t, Options{Nodes: 2, NoHopLatency: true, ServiceBase: base})
	createIndex(t, c.Addr(0), "s", 2, 1, "")
	if err := c.WaitGreen(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	onSlow, onOther := idOnPrimary(t, c, "s", 2, 1), idOnPrimary(t, c, "s", 2, 0)
	if err := c.SetSlowness(1, 4); err != nil {
		t.Fatal(err)
	}
	if k := c.Node(1).Slowness(); k != 4 {
		t.Fatalf("Slowness() = %v, want 4", k)
	}
	// Primary on the slowed node (4 × 20ms), replica on the other (20ms).
	if d := timedWrite(t, c, 0, "s", onSlow); d < 95*time.Millisecond {
		t.Errorf("write with its primary on the slowed node took %v, want ≥ 100ms", d)
	}
	// Primary on the healthy node (20ms), its replica write on the slowed
	// one (4 × 20ms): replication is synchronous, the bulk waits for it.
	if d := timedWrite(t, c, 0, "s", onOther); d < 95*time.Millisecond {
		t.Errorf("write replicated to the slowed node took %v, want ≥ 100ms", d)
	}
	if sn := c.NodeStats(1).ServiceNanos; sn < int64(8*base) {
		t.Errorf("slowed node's ServiceNanos %v, want ≥ %v (a primary and a replica write at 4×)", time.Duration(sn), 8*base)
	}
	// The factor scales only the node it is set on, and 1 restores it.
	if got := c.Node(0).serviceTime(10); got != base {
		t.Errorf("healthy node's service time %v, want %v", got, base)
	}
	if got := c.Node(1).serviceTime(10); got != 4*base {
		t.Errorf("slowed node's service time %v, want %v", got, 4*base)
	}
	if err := c.SetSlowness(1, 1); err != nil {
		t.Fatal(err)
	}
	if got := c.Node(1).serviceTime(10); got != base || c.Node(1).Slowness() != 1 {
		t.Errorf("after SetSlowness(1, 1): service time %v, factor %v", got, c.Node(1).Slowness())
	}
	for _, bad := range []float64{0, 0.5, -1, posInf(), nan()} {
		if err := c.SetSlowness(1, bad); err == nil {
			t.Errorf("SetSlowness(1, %v) accepted", bad)
		}
	}
	if err := c.SetSlowness(7, 2); err == nil {
		t.Error("SetSlowness on a node that does not exist accepted")
	}
	// Through HTTP.
	mustOK(t, "POST", c.Addr(0)+"/_ossim/nodes/1/slowness?k=2.5", "")
	if k := c.Node(1).Slowness(); k != 2.5 {
		t.Errorf("after POST slowness?k=2.5: factor %v", k)
	}
	if st, _ := do(t, "POST", c.Addr(0)+"/_ossim/nodes/1/slowness?k=0.5", ""); st != 400 {
		t.Errorf("slowness?k=0.5: status %d, want 400", st)
	}
}

func TestServicePerItemScalesWithItems(t *testing.T) {
	c := StartT(t, Options{Nodes: 1, NoHopLatency: true, ServiceBase: time.Millisecond, ServicePerItem: 100 * time.Microsecond, DefaultReplicas: -1})
	if err := c.SetSlowness(0, 3); err != nil {
		t.Fatal(err)
	}
	if got, want := c.Node(0).serviceTime(100), 3*(time.Millisecond+100*100*time.Microsecond); got != want {
		t.Errorf("service time of 100 items at 3×: %v, want %v", got, want)
	}
}

func TestSetLatencyDelaysReplicationHopsToTheNode(t *testing.T) {
	c := StartT(t, Options{Nodes: 2, NoHopLatency: true})
	createIndex(t, c.Addr(0), "lr", 2, 1, "")
	if err := c.WaitGreen(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	id := idOnPrimary(t, c, "lr", 2, 0)
	if err := c.SetLatency(1, 40*time.Millisecond, 10*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	// Received and executed on node 0; only its replica is on node 1.
	if d := timedWrite(t, c, 0, "lr", id); d < 30*time.Millisecond {
		t.Errorf("write replicated to the delayed node took %v, want ≥ 30ms", d)
	}
}

func TestShardCopiesCountPrimaryAndReplicaOperations(t *testing.T) {
	c := StartT(t, Options{Nodes: 3, NoHopLatency: true})
	createIndex(t, c.Addr(0), "cnt", 3, 1, "")
	if err := c.WaitGreen(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for i := 0; i < 60; i++ {
		lines = append(lines, fmt.Sprintf(`{"index":{"_index":"cnt","_id":"d%d"}}`, i), `{"a":1}`)
	}
	lines = append(lines, `{"delete":{"_index":"cnt","_id":"d0"}}`, `{"create":{"_index":"cnt","_id":"d1"}}`, `{"a":2}`)
	mustOK(t, "POST", c.Addr(1)+"/_bulk", bulkBody(lines...))
	sh, err := c.Shards("cnt")
	if err != nil {
		t.Fatal(err)
	}
	var prim, repl int64
	perShard := map[int][2]int64{}
	for _, s := range sh {
		p := perShard[s.Shard]
		if s.Primary {
			if s.IndexedReplica != 0 {
				t.Errorf("primary copy of shard %d applied %d replica operations", s.Shard, s.IndexedReplica)
			}
			p[0] = s.IndexedPrimary
		} else {
			if s.IndexedPrimary != 0 {
				t.Errorf("replica copy of shard %d executed %d primary operations", s.Shard, s.IndexedPrimary)
			}
			p[1] = s.IndexedReplica
		}
		perShard[s.Shard] = p
		prim += s.IndexedPrimary
		repl += s.IndexedReplica
	}
	// 60 index operations; the delete and the refused create (409) are
	// not indexing operations.
	if prim != 60 || repl != 60 {
		t.Errorf("indexed as primary %d, as replica %d; want 60 and 60", prim, repl)
	}
	for s, p := range perShard {
		if p[0] != p[1] {
			t.Errorf("shard %d: primary indexed %d, its replica %d", s, p[0], p[1])
		}
	}
	var nodePrim, nodeRepl int64
	for _, ns := range c.Stats() {
		nodePrim += ns.IndexedPrimary
		nodeRepl += ns.IndexedReplica
	}
	if nodePrim != 60 || nodeRepl != 60 {
		t.Errorf("node counters: indexed as primary %d, as replica %d; want 60 and 60", nodePrim, nodeRepl)
	}
	// The server's per-copy field: GET /<index>/_stats?level=shards.
	is := mustOK(t, "GET", c.Addr(2)+"/cnt/_stats/indexing,docs?level=shards", "")
	if p, tot := get(is, "_all", "primaries", "indexing", "index_total"), get(is, "_all", "total", "indexing", "index_total"); p != 60.0 || tot != 120.0 {
		t.Errorf("_stats: primaries index_total %v, total %v; want 60 and 120", p, tot)
	}
	for _, s := range sh {
		found := false
		for _, row := range asList(get(is, "indices", "cnt", "shards", fmt.Sprint(s.Shard))) {
			if get(row, "routing", "primary") == s.Primary && get(row, "routing", "node") == c.Node(s.Node).ID() {
				found = true
				if got := get(row, "indexing", "index_total"); got != float64(s.IndexedPrimary+s.IndexedReplica) {
					t.Errorf("shard %d primary=%v: index_total %v, want %d", s.Shard, s.Primary, got, s.IndexedPrimary+s.IndexedReplica)
				}
			}
		}
		if !found {
			t.Errorf("shard %d primary=%v on node %d missing from _stats: %v", s.Shard, s.Primary, s.Node, get(is, "indices", "cnt", "shards"))
		}
	}
	// The server's per-node field: indices.indexing.index_total counts
	// primary and replica operations alike.
	if d := mustOK(t, "GET", c.Addr(0)+"/_nodes/stats/indices/docs", ""); get(d, "nodes", c.Node(0).ID(), "indices", "indexing") != nil ||
		get(d, "nodes", c.Node(0).ID(), "indices", "docs", "count") == nil {
		t.Errorf("_nodes/stats/indices/docs: %v", d)
	}
	ns := mustOK(t, "GET", c.Addr(0)+"/_nodes/stats/indices/indexing", "")
	var total float64
	for _, st := range c.Stats() {
		got := get(ns, "nodes", st.ID, "indices", "indexing", "index_total")
		if got != float64(st.IndexedPrimary+st.IndexedReplica) {
			t.Errorf("node %d index_total %v, want %d", st.Index, got, st.IndexedPrimary+st.IndexedReplica)
		}
		total += got.(float64)
	}
	if total != 120 {
		t.Errorf("index_total over the nodes %v, want 120", total)
	}
}

func posInf() float64 { return math.Inf(1) }
func nan() float64    { return math.NaN() }

func TestClusterHealthOfIndices(t *testing.T) {
	c := StartT(t, Options{Nodes: 1})
	createIndex(t, c.Addr(0), "g", 2, 0, "")
	createIndex(t, c.Addr(0), "y", 1, 1, "") // its replica has no second node
	if h := mustOK(t, "GET", c.Addr(0)+"/_cluster/health", ""); h["status"] != "yellow" || h["active_shards"] != 3.0 {
		t.Errorf("cluster health %v", h)
	}
	h := mustOK(t, "GET", c.Addr(0)+"/_cluster/health/g?local=true&wait_for_status=green&timeout=1s", "")
	if h["status"] != "green" || h["active_shards"] != 2.0 || h["unassigned_shards"] != 0.0 || h["timed_out"] != false {
		t.Errorf("health of g %v", h)
	}
	if h := mustOK(t, "GET", c.Addr(0)+"/_cluster/health/y", ""); h["status"] != "yellow" || h["active_shards"] != 1.0 || h["unassigned_shards"] != 1.0 {
		t.Errorf("health of y %v", h)
	}
	if h := mustOK(t, "GET", c.Addr(0)+"/_cluster/health/g,y", ""); h["status"] != "yellow" || h["active_shards"] != 3.0 {
		t.Errorf("health of g,y %v", h)
	}
}

func TestDelayedUnassignedReplicas(t *testing.T) {
	c := StartT(t, Options{Nodes: 3, NodeLeftDelay: 300 * time.Millisecond, DetectionDelay: 10 * time.Millisecond, RecoveryTime: 10 * time.Millisecond})
	createIndex(t, c.Addr(0), "dl", 1, 2, "") // a copy on every node
	if err := c.WaitGreen(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if err := c.StopNode(2); err != nil {
		t.Fatal(err)
	}
	var h map[string]any
	if err := WaitFor(2*time.Second, func() bool {
		h = mustOK(t, "GET", c.Addr(0)+"/_cluster/health/dl", "")
		return h["number_of_nodes"] == 2.0
	}); err != nil {
		t.Fatalf("node never left: %v", h)
	}
	if h["unassigned_shards"] != 1.0 || h["delayed_unassigned_shards"] != 1.0 {
		t.Errorf("right after the node left: %v, want 1 unassigned, delayed", h)
	}
	time.Sleep(400 * time.Millisecond) // past NodeLeftDelay: no node to take it, no longer delayed
	if h := mustOK(t, "GET", c.Addr(0)+"/_cluster/health/dl", ""); h["unassigned_shards"] != 1.0 || h["delayed_unassigned_shards"] != 0.0 {
		t.Errorf("after NodeLeftDelay: %v, want 1 unassigned, not delayed", h)
	}
	if err := c.RestartNode(2); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitGreen(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	if h := mustOK(t, "GET", c.Addr(0)+"/_cluster/health/dl", ""); h["delayed_unassigned_shards"] != 0.0 {
		t.Errorf("green again: %v", h)
	}
}
