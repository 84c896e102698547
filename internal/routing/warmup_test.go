package routing

import (
	"context"
	"errors"
	"testing"
)

// A dead node whose GET / answers again is not brought back before its
// readiness check passes (its local cluster state has an elected cluster
// manager); then its window starts again from 1.
func TestResurrectionWaitsForReadiness(t *testing.T) {
	r, f, timers, n1 := deadNode(t)
	w := n1.Window()
	for range 40 { // grow the window
		tk, _ := w.Acquire(context.Background())
		w.Release(tk, Success)
	}
	if cwnd, _, _, _ := w.State(); cwnd < 2 {
		t.Fatalf("window %d after 40 successes", cwnd)
	}

	// Answers GET /, but has not joined: stays dead, probed again later.
	f.set(func(f *fakeCluster) {
		f.raw["ready"] = `{"discovered_master":false,"discovered_cluster_manager":false}`
	})
	for i := range 3 {
		if timers.fire() != 1 {
			t.Fatal("no probe armed")
		}
		if n1.Alive() {
			t.Fatalf("probe %d: brought back before it joined", i)
		}
		for range 10 {
			if r.Pick() == n1 {
				t.Fatal("Pick chose a node that is not ready")
			}
		}
	}
	// The health call failing (503) is no readiness either.
	f.set(func(f *fakeCluster) { delete(f.raw, "ready"); f.status["ready"] = 503 })
	timers.fire()
	if n1.Alive() {
		t.Fatal("brought back while its health call fails")
	}
	f.set(func(f *fakeCluster) { delete(f.status, "ready") })
	timers.fire()
	if !n1.Alive() {
		t.Fatal("ready, yet still dead")
	}
	if cwnd, ssthresh, _, _ := w.State(); cwnd != 1 || ssthresh < 2 {
		t.Fatalf("back from dead: cwnd %d ssthresh %d, want slow start from 1", cwnd, ssthresh)
	}
	f.mu.Lock()
	readyCalls := f.calls["ready"]
	f.mu.Unlock()
	if readyCalls != 5 {
		t.Fatalf("%d readiness checks, want 5", readyCalls)
	}
}

// Credentials without cluster:monitor/health: GET / answering is all that
// can be checked; the node comes back.
func TestReadinessForbiddenCountsAsReady(t *testing.T) {
	_, f, timers, n1 := deadNode(t)
	f.set(func(f *fakeCluster) { f.status["ready"] = 403 })
	timers.fire()
	if !n1.Alive() {
		t.Fatal("403 on the readiness check kept the node dead")
	}
}

func TestWindowRestart(t *testing.T) {
	w := NewWindow(32)
	for range 100 {
		tk, _ := w.Acquire(context.Background())
		w.Release(tk, Success)
	}
	before, _, _, _ := w.State()
	w.Restart()
	cwnd, ssthresh, ceiling, _ := w.State()
	if cwnd != 1 || ssthresh != before/2 || ceiling != 32 {
		t.Fatalf("restart of a %d window: cwnd %d ssthresh %d ceiling %d", before, cwnd, ssthresh, ceiling)
	}
	small := NewWindow(1)
	small.Restart()
	if c, s, _, _ := small.State(); c != 1 || s != 1 {
		t.Fatalf("ceiling 1: cwnd %d ssthresh %d", c, s)
	}
}

// deadNode: threeNodes discovered by a router whose resurrection timers
// are the test's (fired by hand, no jitter), node 1 marked dead.
func deadNode(t *testing.T) (*Router, *fakeCluster, *syncTimers, *Node) {
	t.Helper()
	f := threeNodes(t)
	r := newTestRouter(t, f, nil)
	timers := discoverWithTimers(t, r)
	n1 := r.Topology().Nodes[1]
	r.MarkDead(n1, errors.New("connection refused"))
	return r, f, timers, n1
}

// discoverWithTimers makes r's resurrection timers the test's (fired by
// hand, no jitter) and discovers the index logs.
func discoverWithTimers(t *testing.T, r *Router) *syncTimers {
	t.Helper()
	timers := &syncTimers{}
	r.afterDur = timers.after
	r.jitter = func() float64 { return 0 }
	r.want("logs")
	if err := r.Refresh(context.Background(), TriggerStart); err != nil {
		t.Fatal(err)
	}
	return timers
}
