package routing

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
)

// steerTopo is a topology of six nodes n0..n5 and the index "logs" with
// six primaries (shard s on node s) and one replica each (on node s+1).
func steerTopo(t *testing.T) (*Topology, []*Node) {
	t.Helper()
	var nodes []*Node
	for i := 0; i < 6; i++ {
		nodes = append(nodes, newNode(&NodeInfo{ID: fmt.Sprintf("id%d", i), Name: fmt.Sprintf("n%d", i)}, 8, false))
	}
	l, err := NewLayout(6, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	idx := &Index{Name: "logs", Layout: l, Shards: make([]Shard, 6)}
	for s := range idx.Shards {
		idx.Shards[s] = Shard{
			Primary:  ShardCopy{Node: nodes[s], State: StateStarted},
			Replicas: []ShardCopy{{Node: nodes[(s+1)%6], State: StateStarted}},
		}
	}
	topo := &Topology{
		Nodes:   nodes,
		Indices: map[string]*Index{"logs": idx},
		targets: map[string]target{
			"logs":    {index: idx},
			"routed":  {index: idx, alias: true, routing: "r1"},
			"viaName": {index: idx, alias: true},
		},
	}
	return topo, nodes
}

// newTestSteering is a history over steerTopo's topology, with a fake
// clock and a horizon of 1h. *topo may be replaced: the router's current
// topology is wherever it points.
func newTestSteering(t *testing.T) (*Steering, *fakeClock, **Topology, []*Node) {
	first, nodes := steerTopo(t)
	topo := &first
	clk := &fakeClock{t: time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)}
	st := newSteering(func() *Topology { return *topo }, clk.now, time.Hour)
	return st, clk, topo, nodes
}

func TestSteerSetSalt(t *testing.T) {
	l, _ := NewLayout(6, 0, 0)
	bad := &SteerSet{Layout: l, bad: []uint64{1<<1 | 1<<2}, good: 4}
	steered, kept := 0, 0
	for i := 0; i < 3000; i++ {
		id := fmt.Sprintf("Zm9vYmFy%014d", i)
		own, _ := l.Shard(id, "")
		k := bad.Salt(id)
		if !bad.Bad(own) {
			if k != 0 {
				t.Fatalf("%s: own shard %d is free, salt %d", id, own, k)
			}
			kept++
			continue
		}
		if k == 0 {
			t.Fatalf("%s: shard %d avoided, no salt found", id, own)
		}
		for j := 1; j <= k; j++ {
			salted := string(AppendSalt([]byte(id), j))
			sh, _ := l.Shard(salted, "")
			if j < k && !bad.Bad(sh) {
				t.Fatalf("%s: salt %d already free (shard %d), chose %d", id, j, sh, k)
			}
			if j == k && bad.Bad(sh) {
				t.Fatalf("%s: salt %d lands in avoided shard %d", id, k, sh)
			}
			if !strings.Contains(salted, "~") || salted == id {
				t.Fatalf("salted id %q", salted)
			}
		}
		steered++
	}
	if steered < 800 || kept < 1600 {
		t.Fatalf("%d steered, %d kept of 3000: the shards are not uniform", steered, kept)
	}
	// Fewer than half of the shards free: nothing is steered.
	four := &SteerSet{Layout: l, bad: []uint64{0b1111}, good: 2}
	for i := 0; i < 200; i++ {
		if k := four.Salt(fmt.Sprintf("id-%d", i)); k != 0 {
			t.Fatalf("salt %d with 2 of 6 shards free", k)
		}
	}
	var none *SteerSet
	if none.Salt("x") != 0 || !none.Empty() || none.Bad(0) {
		t.Fatal("the nil set steers")
	}
}

// TestSteeringHistory: the set a record is decided by is the one in force
// at its timestamp, whatever changed since; a target is tracked from the
// first view after a node is degraded on.
func TestSteeringHistory(t *testing.T) {
	st, clk, topo, nodes := newTestSteering(t)
	v := st.View()
	if !v.Idle() {
		t.Fatal("not idle with nothing degraded")
	}
	if h := v.History("logs"); h != nil {
		t.Fatal("a history with nothing degraded")
	}
	t0 := v.Now()

	clk.add(time.Second)
	nodes[2].degraded.Store(true) // primary of 2, replica of 1
	v = st.View()
	if v.Idle() {
		t.Fatal("idle with a node degraded")
	}
	if h := v.History("logs"); h != nil {
		t.Fatal("the first view after the change already has the history; its records could be decided by a set that starts after them")
	}
	clk.add(time.Second)
	v1 := st.View()
	h := v1.History("logs")
	if h == nil {
		t.Fatal("target not tracked")
	}
	s1 := v1.Set(h, v1.Now())
	if got := fmt.Sprint(shardsOf(s1)); got != "[1 2]" {
		t.Fatalf("avoided shards %s, want [1 2]", got)
	}
	if v1.Set(h, v.Now()) != nil || v1.Set(h, t0) != nil {
		t.Fatal("records dated before the set started are decided by it")
	}
	if v1.History("routed") != nil {
		t.Fatal("an alias with index_routing is steered")
	}

	// The degraded node changes: records of the first period keep their set.
	clk.add(time.Second)
	nodes[2].degraded.Store(false)
	nodes[4].degraded.Store(true)
	v2 := st.View()
	h2 := v2.History("logs")
	if v2.Set(h2, v1.Now()) != s1 {
		t.Fatal("a record of the first period is decided by another set")
	}
	if s := v2.Set(h2, v2.Now()); fmt.Sprint(shardsOf(s)) != "[3 4]" {
		t.Fatalf("second period avoids %v, want [3 4]", shardsOf(s))
	}
	// Future-dated: the latest set, and the risk is said.
	if v2.Risk(v2.Now()+1) != RiskFutureDated || v2.Set(h2, v2.Now()+int64(time.Hour)) != v2.Set(h2, v2.Now()) {
		t.Fatal("future-dated records")
	}
	if v2.Risk(st.start-1) != RiskBeforeStart || v2.Risk(v1.Now()) != RiskNone {
		t.Fatalf("risks of past records: %v %v", v2.Risk(st.start-1), v2.Risk(v1.Now()))
	}

	// Nothing degraded any more: the history still decides old records.
	clk.add(time.Second)
	nodes[4].degraded.Store(false)
	v3 := st.View()
	if v3.Idle() {
		t.Fatal("idle while the history still avoids shards")
	}
	h3 := v3.History("logs")
	if v3.Set(h3, v1.Now()) != s1 || !v3.Set(h3, v3.Now()).Empty() {
		t.Fatal("after recovery")
	}

	// Beyond the horizon (1h) after the last change: forgotten, and said.
	clk.add(2 * time.Hour)
	nodes[0].degraded.Store(true)
	v4 := st.View()
	h4 := v4.History("logs")
	if v4.Set(h4, v1.Now()) != nil || v4.Risk(v1.Now()) != RiskForgotten {
		t.Fatalf("a forgotten record: set %v, risk %v", v4.Set(h4, v1.Now()), v4.Risk(v1.Now()))
	}
	if v4.Risk(v4.Now()) != RiskNone {
		t.Fatal("a current record at risk")
	}

	// Recovered, then a horizon without change: the next topology refresh
	// drops the history and calls are idle again.
	clk.add(time.Second)
	nodes[0].degraded.Store(false)
	if st.View().Idle() {
		t.Fatal("idle right after recovery")
	}
	clk.add(2 * time.Hour)
	old := *topo
	*topo = &Topology{Nodes: old.Nodes, Indices: old.Indices, targets: old.targets} // a refresh: a new snapshot
	if !st.View().Idle() {
		t.Fatal("still steering a horizon after the last change")
	}
}

func shardsOf(s *SteerSet) []int {
	var out []int
	for i := 0; i < 64*len(s.bad); i++ {
		if s.Bad(i) {
			out = append(out, i)
		}
	}
	return out
}

// TestSteeringClockStepsBack: a set added after the wall clock went back
// still starts after every now handed out before.
func TestSteeringClockStepsBack(t *testing.T) {
	st, clk, _, nodes := newTestSteering(t)
	nodes[1].degraded.Store(true)
	st.View().History("logs")
	v1 := st.View()
	clk.add(-time.Minute)
	nodes[1].degraded.Store(false)
	nodes[3].degraded.Store(true)
	v2 := st.View()
	h2 := v2.History("logs")
	if v2.Set(h2, v1.Now()) != v1.Set(v1.History("logs"), v1.Now()) {
		t.Fatal("the clock went back and a record decided before is decided by the new set")
	}
	if v2.Now() < v1.Now() {
		t.Fatal("a view's now went back")
	}
}

// TestSteeringConcurrentViewsAgree: while the degraded nodes flip, every
// record decided by a view (its timestamp at or before the view's now) is
// decided the same by every later view.
func TestSteeringConcurrentViewsAgree(t *testing.T) {
	topo, nodes := steerTopo(t)
	st := newSteering(func() *Topology { return topo }, time.Now, time.Hour)
	type decision struct {
		ts  int64
		set *SteerSet
	}
	var mu sync.Mutex
	var seen []decision
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for g := 0; g < 3; g++ {
		wg.Add(1)
		go func(seed uint64) {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, 1))
			for i := 0; i < 20000; i++ {
				select {
				case <-stop:
					return
				default:
				}
				v := st.View()
				h := v.History("logs")
				ts := v.Now() - rng.Int64N(int64(2*time.Millisecond))
				d := decision{ts, v.Set(h, ts)}
				mu.Lock()
				seen = append(seen, d)
				mu.Unlock()
			}
		}(uint64(g))
	}
	for i := 0; i < 300; i++ {
		n := nodes[i%6]
		n.degraded.Store(!n.degraded.Load())
		time.Sleep(50 * time.Microsecond)
	}
	close(stop)
	wg.Wait()
	v := st.View()
	h := v.History("logs")
	changed := 0
	for _, d := range seen {
		if got := v.Set(h, d.ts); !got.same(d.set) {
			t.Fatalf("a record at %d was decided by %v, now by %v", d.ts, shardsOf(d.set), shardsOf(got))
		}
		if !d.set.Empty() {
			changed++
		}
	}
	if changed == 0 || len(h.sets) < 10 {
		t.Fatalf("the test never saw a set (%d decisions, %d sets)", len(seen), len(h.sets))
	}
	t.Logf("%d decisions, %d steered sets, %d sets in the history", len(seen), changed, len(h.sets))
}

// TestShardsOnDegraded covers the diagnostic listing.
func TestShardsOnDegraded(t *testing.T) {
	topo, nodes := steerTopo(t)
	nodes[5].degraded.Store(true)
	if got := fmt.Sprint(topo.ShardsOnDegraded("logs")); got != "[4 5]" {
		t.Fatalf("got %s", got)
	}
	if got := topo.ShardsOnDegraded("routed"); got != nil {
		t.Fatalf("index_routing alias: %v", got)
	}
}

// BenchmarkSteerSalt is the decision for one content id under a set that
// avoids 2 of 6 shards: a third of the ids need a salt (two tries on
// average), the others one shard computation.
func BenchmarkSteerSalt(b *testing.B) {
	l, _ := NewLayout(6, 0, 0)
	s := &SteerSet{Layout: l, bad: []uint64{1<<1 | 1<<4}, good: 4}
	ids := make([]string, 1024)
	for i := range ids {
		ids[i] = fmt.Sprintf("Ab3dEf6hIj9lMn2pQr%04d", i)
	}
	b.ResetTimer()
	steered := 0
	for i := 0; i < b.N; i++ {
		if s.Salt(ids[i%len(ids)]) > 0 {
			steered++
		}
	}
	b.ReportMetric(float64(steered)/float64(b.N), "steered/id")
}

// BenchmarkSteerView is the per-call cost of a view while nothing changes.
func BenchmarkSteerView(b *testing.B) {
	topo, nodes := steerTopo(&testing.T{})
	st := newSteering(func() *Topology { return topo }, time.Now, time.Hour)
	b.Run("idle", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			_ = st.View()
		}
	})
	nodes[3].degraded.Store(true)
	st.View().History("logs")
	b.Run("degraded", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			v := st.View()
			_ = v.Set(v.History("logs"), v.Now())
		}
	})
}

// TestSaltHasherMatchesHash: the piecewise hash of an ASCII string is
// Hash's, whatever the pieces, and a view's Span agrees with Set.
func TestSaltHasherMatchesHash(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 5000; i++ {
		b := make([]byte, rng.IntN(40))
		for j := range b {
			b[j] = byte(32 + rng.IntN(95))
		}
		s := string(b)
		var m saltHasher
		cut := 0
		if len(s) > 0 {
			cut = rng.IntN(len(s) + 1)
		}
		m.writeString(s[:cut])
		x := m
		x.writeString(s[cut:])
		if got, want := x.sum(), Hash(s); got != want {
			t.Fatalf("%q cut at %d: %d, want %d", s, cut, got, want)
		}
	}
	st, clk, _, nodes := newTestSteering(t)
	nodes[1].degraded.Store(true)
	st.View().History("logs")
	for i := 0; i < 4; i++ {
		clk.add(time.Second)
		nodes[i].degraded.Store(!nodes[i].degraded.Load())
		st.View().History("logs")
	}
	v := st.View()
	h := v.History("logs")
	for ts := st.start - int64(time.Second); ts < v.Now()+int64(2*time.Second); ts += int64(time.Second) / 7 {
		s, from, to := v.Span(h, ts)
		if s != v.Set(h, ts) || ts < from || ts > to || v.Set(h, from) != s || v.Set(h, to) != s {
			t.Fatalf("Span(%d) = %v [%d, %d], Set %v", ts, s, from, to, v.Set(h, ts))
		}
	}
}
