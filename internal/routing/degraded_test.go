package routing

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// degradedRouter: threeNodes (logs: shard s primary on n<s>, its replica on
// n<s+1>) with the write detector on and a fake clock.
func degradedRouter(t *testing.T, mod func(*Options)) (*Router, *fakeClock, map[string]*Node, *[]string) {
	t.Helper()
	r, clk, nodes, changes, _ := degradedRouterOn(t, threeNodes(t), mod)
	return r, clk, nodes, changes
}

func degradedRouterOn(t *testing.T, f *fakeCluster, mod func(*Options)) (*Router, *fakeClock, map[string]*Node, *[]string, *fakeCluster) {
	t.Helper()
	clk := &fakeClock{t: time.Now()} // the detector's first evaluation is due a second after New
	var mu sync.Mutex
	changes := []string{}
	r := newTestRouter(t, f, func(o *Options) {
		o.Degraded.Enabled = true
		o.OnNodeState = func(n *Node, s NodeState) {
			mu.Lock()
			changes = append(changes, n.Name()+":"+s.String())
			mu.Unlock()
		}
		if mod != nil {
			mod(o)
		}
	})
	r.now = clk.now
	r.want("logs")
	if err := r.Refresh(context.Background(), TriggerStart); err != nil {
		t.Fatal(err)
	}
	nodes := map[string]*Node{}
	for _, n := range r.Topology().Nodes {
		nodes[n.Name()] = n
	}
	return r, clk, nodes, &changes, f
}

// writes feeds rounds of one sub-bulk of 100 items per node, each node's
// taking lat[name], 100ms of clock apart.
func writes(r *Router, clk *fakeClock, nodes map[string]*Node, rounds int, lat map[string]time.Duration) {
	for range rounds {
		for name, d := range lat {
			r.ObserveWrite(nodes[name], d, 100, 100*512)
		}
		clk.add(100 * time.Millisecond)
	}
}

func degradedSet(nodes map[string]*Node) string {
	var out []string
	for _, name := range []string{"n0", "n1", "n2"} {
		if nodes[name].State() == NodeDegraded {
			out = append(out, name)
		}
	}
	return fmt.Sprint(out)
}

// A slow node slows the sub-bulks of the node whose primary it holds a
// replica of as well (n1 holds shard 0's replica: n0's sub-bulks wait for
// it). Only n1 is marked degraded: n0 also takes part in n2's fast stream.
// It returns to service once it is fast again; nodes equally slow are not
// marked.
func TestWriteDetectorMarksTheSlowNodeNotItsPartners(t *testing.T) {
	r, clk, nodes, changes := degradedRouter(t, nil)
	slow := map[string]time.Duration{"n0": 5 * time.Millisecond, "n1": 5 * time.Millisecond, "n2": time.Millisecond}
	writes(r, clk, nodes, 50, slow)
	if got := degradedSet(nodes); got != "[n1]" {
		t.Fatalf("degraded %s, want [n1] (n0 is only slowed by its replica on n1)", got)
	}
	if fmt.Sprint(*changes) != "[n1:degraded]" {
		t.Fatalf("state changes %v", *changes)
	}
	for range 20 {
		if r.Pick() == nodes["n1"] {
			t.Fatal("Pick chose the degraded node")
		}
	}
	// Still slow after the ejection time: stays degraded.
	writes(r, clk, nodes, 400, slow)
	if nodes["n1"].State() != NodeDegraded {
		t.Fatal("a node still slow after its ejection time returned")
	}
	// Recovered: back within a few seconds of fast writes.
	fast := map[string]time.Duration{"n0": time.Millisecond, "n1": time.Millisecond, "n2": time.Millisecond}
	writes(r, clk, nodes, 60, fast)
	if got := degradedSet(nodes); got != "[]" {
		t.Fatalf("after recovery degraded %s", got)
	}
	if fmt.Sprint(*changes) != "[n1:degraded n1:alive]" {
		t.Fatalf("state changes %v", *changes)
	}
	// Everyone equally slow: nothing is an outlier.
	writes(r, clk, nodes, 300, map[string]time.Duration{"n0": 9 * time.Millisecond, "n1": 9 * time.Millisecond, "n2": 9 * time.Millisecond})
	if got := degradedSet(nodes); got != "[]" {
		t.Fatalf("all equally slow: degraded %s", got)
	}
}

// Without blame, per destination, the partner would be marked too (here in
// 6 nodes, the slow one and the one whose replica it holds).
func TestWriteDetectorPerDestinationWouldMarkThePartner(t *testing.T) {
	o, clk := newTestOutliers(OutlierConfig{MinExcess: float64(10 * time.Microsecond)})
	m := members(o, 6)
	lat := map[*OutlierMember]time.Duration{}
	for i, x := range m {
		lat[x] = 10 * time.Microsecond
		if i < 2 {
			lat[x] = 50 * time.Microsecond
		}
	}
	feed(o, clk, 300, lat)
	if !o.Ejected(m[0]) || !o.Ejected(m[1]) {
		t.Fatalf("per destination: ejected n0 %v n1 %v", o.Ejected(m[0]), o.Ejected(m[1]))
	}
}

// Guardrails: too little volume judges nobody; a dead node coming back is
// judged afresh and loses its mark.
func TestWriteDetectorGuardrails(t *testing.T) {
	r, clk, nodes, _ := degradedRouter(t, func(o *Options) { o.Degraded.Outliers.MinRequests = 30 })
	slow := map[string]time.Duration{"n0": 5 * time.Millisecond, "n1": 5 * time.Millisecond, "n2": time.Millisecond}
	writes(r, clk, nodes, 29, slow)
	if got := degradedSet(nodes); got != "[]" {
		t.Fatalf("below min_requests: degraded %s", got)
	}
	writes(r, clk, nodes, 30, slow)
	if got := degradedSet(nodes); got != "[n1]" {
		t.Fatalf("degraded %s, want [n1]", got)
	}
	r.MarkDead(nodes["n1"], errors.New("connection refused"))
	r.MarkAlive(nodes["n1"])
	if nodes["n1"].Degraded() || r.WriteLatency(nodes["n1"]) != 0 {
		t.Fatalf("back from dead: degraded %v, latency %v", nodes["n1"].Degraded(), r.WriteLatency(nodes["n1"]))
	}
}

// With detection off, ObserveWrite does nothing.
func TestWriteDetectorOff(t *testing.T) {
	f := threeNodes(t)
	r := newTestRouter(t, f, nil)
	r.want("logs")
	if err := r.Refresh(context.Background(), TriggerStart); err != nil {
		t.Fatal(err)
	}
	n := r.Topology().Nodes[0]
	for range 100 {
		r.ObserveWrite(n, time.Second, 1, 1)
	}
	if r.WriteLatency(n) != 0 || n.Degraded() {
		t.Fatal("detection off, yet observed")
	}
}

// Sticky members keep their average while ejected and return only when no
// longer outliers; OnChange reports both changes.
func TestOutlierSticky(t *testing.T) {
	var got []string
	o, clk := newTestOutliers(OutlierConfig{Sticky: true, OnChange: func(k string, e bool) { got = append(got, fmt.Sprintf("%s %v", k, e)) }})
	m := members(o, 3)
	slow := map[*OutlierMember]time.Duration{m[0]: time.Millisecond, m[1]: time.Millisecond, m[2]: 9 * time.Millisecond}
	feed(o, clk, 300, slow)
	if !o.Ejected(m[2]) {
		t.Fatal("not ejected")
	}
	feed(o, clk, 3100, slow) // past the 30s ejection time
	if !o.Ejected(m[2]) || m[2].Average() < float64(5*time.Millisecond) {
		t.Fatalf("sticky: ejected %v, average %v", o.Ejected(m[2]), time.Duration(m[2].Average()))
	}
	feed(o, clk, 300, map[*OutlierMember]time.Duration{m[0]: time.Millisecond, m[1]: time.Millisecond, m[2]: time.Millisecond})
	if o.Ejected(m[2]) {
		t.Fatal("recovered, still ejected")
	}
	if fmt.Sprint(got) != "[n2 true n2 false]" {
		t.Fatalf("changes %v", got)
	}
	// A member with no samples for 10 intervals returns (nothing judges it).
	feed(o, clk, 300, slow)
	if !o.Ejected(m[2]) {
		t.Fatal("not ejected again")
	}
	clk.add(10 * time.Minute)
	feed(o, clk, 150, map[*OutlierMember]time.Duration{m[0]: time.Millisecond, m[1]: time.Millisecond})
	if o.Ejected(m[2]) {
		t.Fatal("a member without samples stays ejected")
	}
}

// A node slow only where the exporter meets it (its HTTP path; its replica
// writes unaffected) slows its own stream alone: no replica's node
// explains it, so it is marked.
func TestWriteDetectorMarksAClientPathSlowNode(t *testing.T) {
	r, clk, nodes, _ := degradedRouter(t, nil)
	writes(r, clk, nodes, 50, map[string]time.Duration{"n0": time.Millisecond, "n1": 5 * time.Millisecond, "n2": time.Millisecond})
	if got := degradedSet(nodes); got != "[n1]" {
		t.Fatalf("degraded %s, want [n1]", got)
	}
}

// A sticky member marked again soon after its return stays out at least
// twice the base ejection time: the count grows on repeat.
func TestOutlierStickyEjectionTimeGrows(t *testing.T) {
	o, clk := newTestOutliers(OutlierConfig{Sticky: true, BaseEjectionTime: 10 * time.Second})
	m := members(o, 3)
	slow := map[*OutlierMember]time.Duration{m[0]: time.Millisecond, m[1]: time.Millisecond, m[2]: 9 * time.Millisecond}
	fast := map[*OutlierMember]time.Duration{m[0]: time.Millisecond, m[1]: time.Millisecond, m[2]: time.Millisecond}
	feed(o, clk, 300, slow)
	if !o.Ejected(m[2]) {
		t.Fatal("not ejected")
	}
	feed(o, clk, 1100, fast) // 11s: past 10s, recovered
	if o.Ejected(m[2]) {
		t.Fatal("not returned after the base ejection time")
	}
	feed(o, clk, 300, slow)
	if !o.Ejected(m[2]) {
		t.Fatal("not ejected again")
	}
	feed(o, clk, 1500, fast) // 15s: past one base time, not two
	if !o.Ejected(m[2]) {
		t.Fatal("a repeat ejection lasted only the base time")
	}
	feed(o, clk, 700, fast) // 22s in all: past two
	if o.Ejected(m[2]) {
		t.Fatal("still ejected after twice the base time")
	}
}

// A node that leaves the cluster and comes back under its id (a restart)
// is a new Node; the detector marks that one, not the retired one it
// observed before, and judges it afresh.
func TestWriteDetectorMarksTheReturnedNode(t *testing.T) {
	r, clk, nodes, _, f := degradedRouterOn(t, threeNodes(t), nil)
	even := map[string]time.Duration{"n0": time.Millisecond, "n1": time.Millisecond, "n2": time.Millisecond}
	writes(r, clk, nodes, 30, even)
	f.set(func(f *fakeCluster) { f.nodes = []string{"n0", "n2"} })
	if err := r.Refresh(context.Background(), TriggerNodeFailure); err != nil {
		t.Fatal(err)
	}
	f.set(func(f *fakeCluster) { f.nodes = []string{"n0", "n1", "n2"} })
	if err := r.Refresh(context.Background(), TriggerPeriodic); err != nil {
		t.Fatal(err)
	}
	back := map[string]*Node{}
	for _, n := range r.Topology().Nodes {
		back[n.Name()] = n
	}
	if back["n1"] == nodes["n1"] {
		t.Fatal("the returned node is the retired Node: the test does not retire it")
	}
	writes(r, clk, back, 50, map[string]time.Duration{"n0": time.Millisecond, "n1": 5 * time.Millisecond, "n2": time.Millisecond})
	if got := degradedSet(back); got != "[n1]" {
		t.Fatalf("degraded %s, want [n1] (the returned node)", got)
	}
	if nodes["n1"].State() == NodeDegraded {
		t.Error("the retired node was marked")
	}
}

// subBulkLatency is a sub-bulk's latency on a healthy node: a fixed part
// and a part per item.
func subBulkLatency(items int) time.Duration {
	return time.Millisecond + time.Duration(items)*10*time.Microsecond
}

// markedN1: degradedRouter with the exporter's ratio (1.5), n1 marked
// degraded after sub-bulks of 100 items 4ms slower than the others'.
func markedN1(t *testing.T) (*Router, *fakeClock, map[string]*Node, *[]string) {
	t.Helper()
	r, clk, nodes, changes := degradedRouter(t, func(o *Options) { o.Degraded.Outliers.Ratio = 1.5 })
	for range 50 {
		for _, name := range []string{"n0", "n1", "n2"} {
			d := subBulkLatency(100)
			if name == "n1" {
				d += 4 * time.Millisecond
			}
			r.ObserveWrite(nodes[name], d, 100, 100*512)
		}
		clk.add(100 * time.Millisecond)
	}
	if got := degradedSet(nodes); got != "[n1]" {
		t.Fatalf("degraded %s, want [n1]", got)
	}
	return r, clk, nodes, changes
}

// A sub-bulk's latency has a fixed part, so small ones cost more per item.
// Once a node is marked, steering sends it only what cannot be steered
// (small sub-bulks of span-id documents) while the others also take the
// large ones: judged per item alone, the recovered node would look slow
// for good. Its latency is compared with the others' for sub-bulks of its
// size: it returns once it is fast again.
func TestWriteDetectorReturnsANodeSentOnlySmallSubBulks(t *testing.T) {
	r, clk, nodes, changes := markedN1(t)
	// Recovered, but sent only small sub-bulks; the others take both. For
	// longer than the ejection time (30s).
	for range 350 {
		for _, name := range []string{"n0", "n2"} {
			r.ObserveWrite(nodes[name], subBulkLatency(100), 100, 100*512)
			r.ObserveWrite(nodes[name], subBulkLatency(10), 10, 10*512)
		}
		r.ObserveWrite(nodes["n1"], subBulkLatency(10), 10, 10*512)
		clk.add(100 * time.Millisecond)
	}
	if got := degradedSet(nodes); got != "[]" {
		t.Fatalf("recovered, sent small sub-bulks only: degraded %s; latencies n0 %v n1 %v n2 %v", got,
			time.Duration(r.WriteLatency(nodes["n0"])), time.Duration(r.WriteLatency(nodes["n1"])), time.Duration(r.WriteLatency(nodes["n2"])))
	}
	if fmt.Sprint(*changes) != "[n1:degraded n1:alive]" {
		t.Fatalf("state changes %v", *changes)
	}
}

// A degraded node still slow, sent sub-bulks of a size no other node gets
// (only what steering cannot move): its own samples do not make their
// size class look normal; it stays degraded.
func TestWriteDetectorKeepsASlowNodeOfItsOwnSizeClass(t *testing.T) {
	r, clk, nodes, _ := markedN1(t)
	for range 350 {
		r.ObserveWrite(nodes["n0"], subBulkLatency(100), 100, 100*512)
		r.ObserveWrite(nodes["n2"], subBulkLatency(100), 100, 100*512)
		r.ObserveWrite(nodes["n1"], subBulkLatency(10)+4*time.Millisecond, 10, 10*512)
		clk.add(100 * time.Millisecond)
	}
	if got := degradedSet(nodes); got != "[n1]" {
		t.Fatalf("still slow, in a size class of its own: degraded %s, want [n1]", got)
	}
}
