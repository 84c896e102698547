package opensearchrouted

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/exporter"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/opensearchrouted/opensearchrouted/testbed/ossim"
	"github.com/opensearchrouted/opensearchrouted/testbed/tcpproxy"
)

// behindProxy is a cluster reached through one proxy address, with node i
// publishing traps[i] (nil: its own address) as its HTTP publish address.
type behindProxy struct {
	proxy *tcpproxy.Proxy
	traps []*tcpproxy.Trap
}

func hostPort(u string) string {
	return strings.TrimPrefix(strings.TrimPrefix(u, "http://"), "https://")
}

// newBehindProxy puts a proxy in front of addrs (base URLs) and a trap for
// each index in trapped.
func newBehindProxy(t testing.TB, addrs []string, trapped ...int) *behindProxy {
	t.Helper()
	var hps []string
	for _, a := range addrs {
		hps = append(hps, hostPort(a))
	}
	p, err := tcpproxy.New(hps...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	b := &behindProxy{proxy: p, traps: make([]*tcpproxy.Trap, len(addrs))}
	for _, i := range trapped {
		tr, err := tcpproxy.NewTrap()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tr.Close() })
		b.traps[i] = tr
	}
	return b
}

// trapConns sums the connections every trap accepted.
func (b *behindProxy) trapConns() int64 {
	var n int64
	for _, tr := range b.traps {
		if tr != nil {
			n += tr.Conns.Load()
		}
	}
	return n
}

// startObserved starts an exporter whose warnings are recorded.
func startObserved(t testing.TB, cfg *Config, sig signal) (*osExporter, *sdkmetric.ManualReader, *observer.ObservedLogs) {
	core, logs := observer.New(zap.WarnLevel)
	e, reader := startExporterTelemetry(t, cfg, sig, false, func(s *exporter.Settings) { s.Logger = zap.New(core) })
	return e, reader, logs
}

// waitKnown waits until the router's topology knows target.
func waitKnown(t testing.TB, e *osExporter, target string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, ok := e.router.Topology().WriteIndex(target); ok {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("topology never learnt %s", target)
}

func unreachableWarnings(logs *observer.ObservedLogs) []observer.LoggedEntry {
	return logs.FilterMessageSnippet("cannot reach").All()
}

// TestBehindProxyEmulator: every node publishes an address that leads
// nowhere; the exporter knows only a proxy in front of the cluster. With
// routing on, everything goes through the proxy (reason unreachable once
// the topology is known) and one warning names the addresses; with
// routing off, not one connection goes anywhere but the proxy. Both store
// every record exactly once. Mixed: node 0 alone is unreachable; the other
// two get their primaries' documents directly.
func TestBehindProxyEmulator(t *testing.T) {
	sim := ossim.StartT(t, ossim.Options{Nodes: 3, NoHopLatency: true})
	const n = 3000
	run := func(t *testing.T, index string, enabled bool, trapped ...int) (*behindProxy, *sdkmetric.ManualReader, *observer.ObservedLogs) {
		bp := newBehindProxy(t, sim.Addrs(), trapped...)
		for i := range 3 {
			pub := ""
			if bp.traps[i] != nil {
				pub = bp.traps[i].Addr()
			}
			if err := sim.SetPublishAddress(i, pub); err != nil {
				t.Fatal(err)
			}
		}
		createIndex(t, sim.Addr(0), index, 6, 0)
		cfg := testConfig([]string{bp.proxy.URL()})
		cfg.LogsIndex = index
		cfg.Routing.Enabled = enabled
		e, reader, logs := startObserved(t, cfg, signalLogs)
		if err := e.pushLogs(context.Background(), makeLogs(0, 100)); err != nil {
			t.Fatal(err)
		}
		if enabled {
			waitKnown(t, e, index)
		}
		for k := range 2 {
			if err := e.pushLogs(context.Background(), makeLogs(100+k*n, n)); err != nil {
				t.Fatal(err)
			}
		}
		if got := count(t, sim.Addr(0), index); got != 100+2*n {
			t.Fatalf("stored %d, want %d", got, 100+2*n)
		}
		return bp, reader, logs
	}
	routed := func(r *sdkmetric.ManualReader, path, reason string) int64 {
		return sumMetric(t, r, "otelcol.opensearchrouted.documents.routed", map[string]string{"path": path, "reason": reason})
	}

	t.Run("routing on", func(t *testing.T) {
		bp, reader, logs := run(t, "logs-proxy-on", true, 0, 1, 2)
		if d := routed(reader, "direct", "routed"); d != 0 {
			t.Fatalf("%d documents sent direct to unreachable nodes", d)
		}
		if u := routed(reader, "unrouted", "unreachable"); u != 2*n {
			t.Fatalf("unreachable counted %d, want %d", u, 2*n)
		}
		// Only the reachability probes (one per node) touched the traps.
		if c := bp.trapConns(); c < 3 || c > 6 {
			t.Fatalf("%d connections to the published addresses, want the 3 probes", c)
		}
		w := unreachableWarnings(logs)
		if len(w) != 1 {
			t.Fatalf("%d unreachable warnings, want 1: %v", len(w), logs.All())
		}
		got := w[0].ContextMap()["unreachable"]
		for _, tr := range bp.traps {
			if !strings.Contains(fmt.Sprint(got), tr.Addr()) {
				t.Fatalf("warning %v does not name %s", got, tr.Addr())
			}
		}
	})
	t.Run("routing off", func(t *testing.T) {
		bp, reader, logs := run(t, "logs-proxy-off", false, 0, 1, 2)
		if c := bp.trapConns(); c != 0 {
			t.Fatalf("%d connections to published addresses with routing off", c)
		}
		if d := routed(reader, "unrouted", "disabled"); d != 100+2*n {
			t.Fatalf("disabled counted %d", d)
		}
		if len(unreachableWarnings(logs)) != 0 {
			t.Fatal("unreachable warning with routing off")
		}
	})
	t.Run("mixed", func(t *testing.T) {
		bp, reader, logs := run(t, "logs-proxy-mixed", true, 0)
		d, u := routed(reader, "direct", "routed"), routed(reader, "unrouted", "unreachable")
		// 6 primaries, 2 per node: a third of the documents are node 0's.
		if d+u != 2*n || u < 2*n/3-300 || u > 2*n/3+300 {
			t.Fatalf("direct %d, unreachable %d of %d", d, u, 2*n)
		}
		if c := bp.trapConns(); c < 1 || c > 2 {
			t.Fatalf("%d connections to node 0's published address, want its probe", c)
		}
		if len(unreachableWarnings(logs)) != 1 {
			t.Fatalf("warnings: %v", logs.All())
		}
	})
}
