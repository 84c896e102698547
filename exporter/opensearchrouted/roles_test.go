package opensearchrouted

import (
	"context"
	"testing"
	"time"

	"github.com/opensearchrouted/opensearchrouted/testbed/ossim"
)

// waitTopology waits until the router has discovered the nodes.
func waitTopology(t testing.TB, e *osExporter) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for e.router.Topology() == nil {
		if time.Now().After(deadline) {
			t.Fatal("no topology")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRolesEmulator: 3 data nodes, a cluster-manager-only node and a
// coordinating-only node. Routed documents go to their primaries; unrouted
// ones (server-assigned ids) to the coordinating node; not one request of
// any kind reaches the cluster-manager-only node.
func TestRolesEmulator(t *testing.T) {
	sim := ossim.StartT(t, ossim.Options{Nodes: 5, NoHopLatency: true,
		Roles: [][]string{nil, nil, nil, {"cluster_manager"}, {}}})
	createIndex(t, sim.Addr(0), "logs-roles", 6, 0)
	cfg := testConfig([]string{sim.Addr(0)})
	cfg.LogsIndex = "logs-roles"
	e, reader := startExporter(t, cfg, signalLogs)
	if err := e.pushLogs(context.Background(), makeLogs(0, 100)); err != nil {
		t.Fatal(err)
	}
	waitRouted(t, e, "logs-roles")
	if err := e.pushLogs(context.Background(), makeLogs(100, 3000)); err != nil {
		t.Fatal(err)
	}
	if d := sumMetric(t, reader, "otelcol.opensearchrouted.documents.routed", map[string]string{"path": "direct"}); d != 3000 {
		t.Fatalf("direct %d, want 3000", d)
	}

	ncfg := testConfig([]string{sim.Addr(0)})
	ncfg.LogsIndex = "logs-roles"
	ncfg.DocumentID = DocumentIDNone
	ne, _ := startExporter(t, ncfg, signalLogs)
	waitTopology(t, ne)
	coordBefore := sim.NodeStats(4).ItemsReceived
	if err := ne.pushLogs(context.Background(), makeLogs(10_000, 2000)); err != nil {
		t.Fatal(err)
	}
	if got := sim.NodeStats(4).ItemsReceived - coordBefore; got != 2000 {
		t.Fatalf("the coordinating-only node received %d of 2000 unrouted items", got)
	}
	if got := count(t, sim.Addr(0), "logs-roles"); got != 5100 {
		t.Fatalf("stored %d, want 5100", got)
	}
	if st := sim.NodeStats(3); st.HTTPRequests != 0 || st.BulkRequests != 0 {
		t.Fatalf("the cluster-manager-only node served %d requests (%d bulk)", st.HTTPRequests, st.BulkRequests)
	}
}
