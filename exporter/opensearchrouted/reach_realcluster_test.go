package opensearchrouted

import (
	"net"
	"strconv"
	"testing"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/opensearchrouted/opensearchrouted/testbed/cluster"
	"github.com/opensearchrouted/opensearchrouted/testbed/tcpproxy"
)

// TestBehindProxyRealCluster: real OpenSearch, 3 data nodes whose
// http.publish_port is a proxy of the test's (refusing every connection
// until told to forward to its node), the cluster reached through one
// front proxy. With routing on and off, 50,000 records stored exactly once;
// with routing off not one connection reached a published address; the
// unreachable warning is logged once. Mixed: node 0's address refuses, the
// other two forward: their primaries' documents go to them directly, node
// 0's through the front proxy. Then with every address forwarding, the
// server's gzip answers to a user's Accept-Encoding: gzip header, and
// write aliases (rollover followed, index_routing applied).
func TestBehindProxyRealCluster(t *testing.T) {
	pub := make([]*tcpproxy.Proxy, 3)
	var per []cluster.NodeOptions
	for i := range pub {
		p, err := tcpproxy.New("127.0.0.1:9") // replaced by the node's own address below
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { p.Close() })
		p.Refuse.Store(true)
		pub[i] = p
		_, port, _ := net.SplitHostPort(p.Addr())
		n, _ := strconv.Atoi(port)
		per = append(per, cluster.NodeOptions{HTTPPublishPort: n})
	}
	c := cluster.Start(t, cluster.Options{Nodes: 3, PerNode: per})
	for i, p := range pub {
		if err := p.SetBackends(hostPort(c.Addr(i))); err != nil {
			t.Fatal(err)
		}
	}
	front := newBehindProxy(t, c.Addrs())
	pubConns := func() (n int64) {
		for _, p := range pub {
			n += p.Conns.Load()
		}
		return n
	}
	const n = 50_000
	run := func(t *testing.T, index string, enabled bool, records int) (*osExporter, *sdkmetric.ManualReader, int) {
		createIndex(t, c.Addr(0), index, 6, 0)
		cfg := testConfig([]string{front.proxy.URL()})
		cfg.LogsIndex = index
		cfg.Routing.Enabled = enabled
		e, reader, logs := startObserved(t, cfg, signalLogs)
		exportAll(t, e, 0, 100)
		if enabled {
			waitKnown(t, e, index)
		}
		for from := 100; from < 100+records; from += 5000 {
			exportAll(t, e, from, min(5000, 100+records-from))
		}
		if got := count(t, c.Addr(0), index); got != 100+records {
			t.Fatalf("stored %d, want %d", got, 100+records)
		}
		return e, reader, len(unreachableWarnings(logs))
	}
	routed := func(r *sdkmetric.ManualReader, path, reason string) int64 {
		return sumMetric(t, r, "otelcol.opensearchrouted.documents.routed", map[string]string{"path": path, "reason": reason})
	}

	t.Run("routing off", func(t *testing.T) {
		before := pubConns()
		_, _, warns := run(t, "logs-lb-off", false, n)
		if d := pubConns() - before; d != 0 {
			t.Fatalf("%d connections to published addresses with routing off", d)
		}
		if warns != 0 {
			t.Fatalf("%d unreachable warnings with routing off", warns)
		}
	})
	t.Run("routing on", func(t *testing.T) {
		_, reader, warns := run(t, "logs-lb-on", true, n)
		if d := routed(reader, "direct", "routed"); d != 0 {
			t.Fatalf("%d documents sent direct", d)
		}
		if u := routed(reader, "unrouted", "unreachable"); u < n {
			t.Fatalf("unreachable counted %d, want ≥ %d", u, n)
		}
		for i, p := range pub {
			if p.Conns.Load() != p.Refused.Load() || p.Refused.Load() < 1 || p.Refused.Load() > 2 {
				t.Fatalf("node %d's published address: %d connections, %d refused (want the probe only)", i, p.Conns.Load(), p.Refused.Load())
			}
		}
		if warns != 1 {
			t.Fatalf("%d unreachable warnings, want 1", warns)
		}
	})
	t.Run("mixed", func(t *testing.T) {
		pub[1].Refuse.Store(false)
		pub[2].Refuse.Store(false)
		const m = 20_000
		e, reader, warns := run(t, "logs-lb-mixed", true, m)
		d, u := routed(reader, "direct", "routed"), routed(reader, "unrouted", "unreachable")
		idx, _ := e.router.Topology().WriteIndex("logs-lb-mixed")
		on0 := 0
		for _, s := range idx.Shards {
			if s.Primary.Node != nil && s.Primary.Node.Name() == c.NodeName(0) {
				on0++
			}
		}
		// Node 0's share of the primaries is its share of the documents.
		want := m * on0 / len(idx.Shards)
		if u < int64(want)-1500 || u > int64(want)+1500 || d+u < m || (on0 < len(idx.Shards) && d == 0) {
			t.Fatalf("direct %d, unreachable %d of %d; node 0 holds %d of %d primaries", d, u, m, on0, len(idx.Shards))
		}
		if pub[1].PerBackend[0].Load() == 0 || pub[2].PerBackend[0].Load() == 0 {
			t.Fatal("the reachable nodes got no connection at their published addresses")
		}
		if pub[0].Conns.Load() != pub[0].Refused.Load() {
			t.Fatal("node 0's refusing address relayed a connection")
		}
		if warns != 1 {
			t.Fatalf("%d unreachable warnings, want 1", warns)
		}
	})
	// Every published address forwards now: Accept-Encoding: gzip in the
	// user's headers, the real server's gzip answers, both transports.
	t.Run("gzip answers", func(t *testing.T) {
		pub[0].Refuse.Store(false)
		gzipAnswers(t, c.Addr(0), []string{front.proxy.URL()})
	})
	// Write aliases, every address still forwarding.
	t.Run("alias rollover", func(t *testing.T) { aliasRollover(t, c.Addr(0), []string{front.proxy.URL()}) })
	t.Run("alias index_routing", func(t *testing.T) { aliasIndexRouting(t, c.Addr(0), []string{front.proxy.URL()}) })
}
