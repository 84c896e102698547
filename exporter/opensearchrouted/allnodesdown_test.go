package opensearchrouted

import (
	"testing"

	"github.com/opensearchrouted/opensearchrouted/testbed/ossim"
	"github.com/opensearchrouted/opensearchrouted/testbed/tcpproxy"
)

// TestAllNodesDownEmulator: the nodes publish addresses (proxies of the
// test's) that answer at discovery, then refuse every connection while the
// configured endpoint (a proxy in front of the cluster) still works. The
// documents of the call that finds the nodes down, and of every later one,
// go through the endpoint, counted all_nodes_down (not unreachable or
// node_unhealthy); every record is stored exactly once.
func TestAllNodesDownEmulator(t *testing.T) {
	sim := ossim.StartT(t, ossim.Options{Nodes: 3, NoHopLatency: true})
	pub := make([]*tcpproxy.Proxy, 3)
	for i := range pub {
		p, err := tcpproxy.New(hostPort(sim.Addr(i)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		pub[i] = p
		if err := sim.SetPublishAddress(i, p.Addr()); err != nil {
			t.Fatal(err)
		}
	}
	front := newBehindProxy(t, sim.Addrs())
	const index = "logs-all-down"
	createIndex(t, sim.Addr(0), index, 6, 0)
	cfg := testConfig([]string{front.proxy.URL()})
	cfg.LogsIndex = index
	e, reader := startExporter(t, cfg, signalLogs)
	exportAll(t, e, 0, 100)
	waitKnown(t, e, index)
	exportAll(t, e, 100, 1000)
	if d := routedCount(t, reader, "direct", "routed"); d < 1000 {
		t.Fatalf("direct %d of 1000 while the nodes answer", d)
	}
	for _, p := range pub {
		p.Close() // its connections too: the address refuses from now on
	}
	exportAll(t, e, 1100, 2000) // finds every node down, resends through the endpoint
	down := routedCount(t, reader, "unrouted", "all_nodes_down")
	if down < 2000 {
		t.Fatalf("all_nodes_down counted %d, want ≥ 2000", down)
	}
	d0, h0, u0 := routedCount(t, reader, "direct", "routed"), routedCount(t, reader, "unrouted", "node_unhealthy"), routedCount(t, reader, "unrouted", "unreachable")
	exportAll(t, e, 3100, 1000)
	if d := routedCount(t, reader, "unrouted", "all_nodes_down") - down; d != 1000 {
		t.Fatalf("all_nodes_down counted %d of the next 1000", d)
	}
	if d, h, u := routedCount(t, reader, "direct", "routed")-d0, routedCount(t, reader, "unrouted", "node_unhealthy")-h0, routedCount(t, reader, "unrouted", "unreachable")-u0; d+h+u != 0 {
		t.Fatalf("with every node down: %d direct, %d node_unhealthy, %d unreachable", d, h, u)
	}
	if got := count(t, sim.Addr(0), index); got != 4100 {
		t.Fatalf("stored %d, want 4100", got)
	}
}
