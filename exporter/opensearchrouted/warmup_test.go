package opensearchrouted

import (
	"context"
	"testing"
	"time"

	"github.com/opensearchrouted/opensearchrouted/testbed/ossim"
)

// A node that died and comes back is sent nothing before its readiness
// check passes: restarted outside the cluster, it answers GET / (and the
// exporter's probes reach it) but receives no bulk request while its local
// cluster state has no cluster manager; once it joins it is back, its
// window starting again from 1. Routing is off, so that every call would
// send the node a sub-bulk the moment it counted as alive. Every record is
// stored once.
func TestResurrectedNodeWaitsForReadinessEmulator(t *testing.T) {
	sim := ossim.StartT(t, ossim.Options{Nodes: 3, NoHopLatency: true, DefaultShards: 3, DefaultReplicas: 1})
	cfg := testConfig(sim.Addrs())
	cfg.LogsIndex = slowIndex
	cfg.Routing.Enabled = false
	e, _ := startExporter(t, cfg, signalLogs)
	total := 0
	push := func() {
		t.Helper()
		if err := e.pushLogs(context.Background(), makeLogs(total, 90)); err != nil {
			t.Fatalf("push: %v", err)
		}
		total += 90
	}
	push()
	if err := sim.WaitGreen(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	seed := e.router.Seeds()[1]
	if seed.URL() != sim.Addr(1) {
		t.Fatalf("seed 1 is %s, want %s", seed.URL(), sim.Addr(1))
	}

	if err := sim.StopNode(1); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); seed.Alive(); {
		if time.Now().After(deadline) {
			t.Fatal("the stopped node was never marked dead")
		}
		push()
	}
	if err := sim.RestartNodeDetached(1); err != nil {
		t.Fatal(err)
	}
	base := sim.NodeStats(1)
	for deadline := time.Now().Add(15 * time.Second); ; {
		push()
		st := sim.NodeStats(1)
		if st.BulkRequests != base.BulkRequests {
			t.Fatalf("a node that has not joined got %d bulk requests", st.BulkRequests-base.BulkRequests)
		}
		if st.HTTPRequests-base.HTTPRequests >= 2 { // GET / and the readiness check
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the restarted node was never probed")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for range 10 {
		push()
	}
	if seed.Alive() || sim.NodeStats(1).BulkRequests != base.BulkRequests {
		t.Fatalf("probed but not joined: alive %v, bulk requests %d", seed.Alive(), sim.NodeStats(1).BulkRequests-base.BulkRequests)
	}

	if err := sim.JoinNode(1); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(20 * time.Second); !seed.Alive(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the joined node never came back")
		}
	}
	if cwnd, _, _, inFlight := seed.Window().State(); cwnd != 1 || inFlight != 0 {
		t.Fatalf("back from dead: window %d, %d in flight; want 1 and 0", cwnd, inFlight)
	}
	for range 10 {
		push()
	}
	if sim.NodeStats(1).BulkRequests == base.BulkRequests {
		t.Fatal("the node is back but got no bulk request")
	}
	if got := count(t, sim.Addr(0), slowIndex); got != total {
		t.Fatalf("stored %d, want %d", got, total)
	}
}
