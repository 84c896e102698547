package opensearchrouted

import (
	"context"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/goleak"

	"github.com/opensearchrouted/opensearchrouted/internal/routing"
	"github.com/opensearchrouted/opensearchrouted/testbed/ossim"
)

// TestSixNodesExactlyOnceEmulator is proof 1 of the exporter issue on the
// emulator: 6 nodes, 6 primaries + 1 replica, 60,000 log records and 20,000
// spans; every record stored exactly once; at most 0.5 % of items
// forwarded between nodes when routed, about 5/6 with routing disabled.
func TestSixNodesExactlyOnceEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("long scenario")
	}
	for _, routed := range []bool{true, false} {
		t.Run(fmt.Sprintf("routing=%v", routed), func(t *testing.T) {
			sim := ossim.StartT(t, ossim.Options{Nodes: 6, NoHopLatency: true, DefaultShards: 6, DefaultReplicas: 1})
			cfg := testConfig(sim.Addrs()[:2])
			cfg.InstallTemplates = true
			cfg.Routing.Enabled = routed
			le, _ := startExporter(t, cfg, signalLogs)
			te, _ := startExporter(t, cfg, signalTraces)
			// Create both data streams first so the whole export is routed.
			if err := le.pushLogs(context.Background(), makeLogs(1_000_000, 1)); err != nil {
				t.Fatal(err)
			}
			if err := te.pushTraces(context.Background(), makeSpans(1_000_000, 1)); err != nil {
				t.Fatal(err)
			}
			if routed {
				waitRouted(t, le, "ss4o_logs-default-namespace")
				waitRouted(t, te, "ss4o_traces-default-namespace")
			}
			sim.ResetStats()
			for k := 0; k < 60; k++ {
				if err := le.pushLogs(context.Background(), makeLogs(k*1000, 1000)); err != nil {
					t.Fatal(err)
				}
				if k%3 == 0 {
					if err := te.pushTraces(context.Background(), makeSpans(k/3*1000, 1000)); err != nil {
						t.Fatal(err)
					}
				}
			}
			received, forwarded, _ := simTotals(sim)
			if received != 80_000 {
				t.Fatalf("items received %d", received)
			}
			ratio := float64(forwarded) / float64(received)
			t.Logf("routing=%v: %d of %d items forwarded between nodes (%.2f%%)", routed, forwarded, received, 100*ratio)
			if routed && ratio > 0.005 {
				t.Fatalf("routed: %.2f%% forwarded, want ≤ 0.5%%", 100*ratio)
			}
			if !routed && (ratio < 0.75 || ratio > 0.92) {
				t.Fatalf("round-robin: %.2f%% forwarded, want about 5/6", 100*ratio)
			}
			if got := count(t, sim.Addr(0), "ss4o_logs-default-namespace"); got != 60_001 {
				t.Fatalf("logs stored %d", got)
			}
			if got := count(t, sim.Addr(0), "ss4o_traces-default-namespace"); got != 20_001 {
				t.Fatalf("spans stored %d", got)
			}
			ids, _, err := sim.StoredShardOf(".ds-ss4o_logs-default-namespace-000001")
			if err != nil || len(ids) != 60_001 {
				t.Fatalf("distinct stored ids %d (%v)", len(ids), err)
			}
		})
	}
}

// TestRolloverEmulator: a rollover mid-export; items follow the new write
// index and the direct ratio recovers within 2 s.
func TestRolloverEmulator(t *testing.T) {
	sim := ossim.StartT(t, ossim.Options{Nodes: 3, NoHopLatency: true, DefaultShards: 3, DefaultReplicas: 0})
	cfg := testConfig(sim.Addrs())
	cfg.InstallTemplates = true
	e, _ := startExporter(t, cfg, signalLogs)
	const ds = "ss4o_logs-default-namespace"
	if err := e.pushLogs(context.Background(), makeLogs(0, 100)); err != nil {
		t.Fatal(err)
	}
	waitRouted(t, e, ds)
	if st := httpJSON(t, "POST", sim.Addr(0)+"/"+ds+"/_rollover", "", nil); st != 200 {
		t.Fatalf("rollover: HTTP %d", st)
	}
	start := time.Now()
	var recovered time.Duration
	for k := 1; k <= 60 && recovered == 0; k++ {
		sim.ResetStats()
		if err := e.pushLogs(context.Background(), makeLogs(k*1000, 1000)); err != nil {
			t.Fatal(err)
		}
		_, forwarded, _ := simTotals(sim)
		if wi, ok := e.router.Topology().WriteIndex(ds); ok && wi.Name == ".ds-"+ds+"-000002" && forwarded == 0 {
			recovered = time.Since(start)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if recovered == 0 || recovered > 2*time.Second {
		t.Fatalf("direct routing did not recover within 2s after the rollover (%v)", recovered)
	}
	t.Logf("direct again %v after the rollover", recovered)
	if n := count(t, sim.Addr(0), ".ds-"+ds+"-000002"); n == 0 {
		t.Fatal("nothing landed in the new write index")
	}
	if _, why := e.router.Locate(ds, "x", ""); why != routing.Routed {
		t.Fatalf("after rollover: %v", why)
	}
}

// TestShutdownLeavesNoGoroutines starts, uses and stops both exporters:
// every goroutine they started (discovery, stats polling, resurrection
// probes, sub-bulk senders) is gone after shutdown. Idle keep-alive
// connections belong to the collector's HTTP transport, which closes them
// after keepalive.idle_conn_timeout (confighttp's otelhttp wrapper does not
// pass CloseIdleConnections through), so their reader/writer goroutines and
// the emulator's server side of them are not counted.
func TestShutdownLeavesNoGoroutines(t *testing.T) {
	sim := ossim.StartT(t, ossim.Options{Nodes: 2, NoHopLatency: true})
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent(),
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"))
	cfg := testConfig(sim.Addrs())
	cfg.InstallTemplates = true
	cfg.Routing.NodeStatsInterval = 20 * time.Millisecond
	for _, sig := range []signal{signalLogs, signalTraces} {
		e, err := newExporter(cfg, exportertestSettings(), sig)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.start(context.Background(), nopHost()); err != nil {
			t.Fatal(err)
		}
		if sig == signalLogs {
			_ = e.pushLogs(context.Background(), makeLogs(0, 500))
		} else {
			_ = e.pushTraces(context.Background(), makeSpans(0, 500))
		}
		e.router.MarkDead(e.router.Nodes()[0], fmt.Errorf("test"))
		if err := e.shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRepeatsRoutedEmulator pushes one call with exact repeats within each
// resource, large enough to be encoded in shares: every record is stored
// (the repeats under their own numbered ids) and every item, the
// re-identified repeats included, goes straight to its primary's node.
func TestRepeatsRoutedEmulator(t *testing.T) {
	sim, e := startRoutedEmulator(t, signalLogs, "repeats")
	sim.ResetStats()
	ld := makeLogs(0, 1000)  // 4 resources of 250 records
	for r := 0; r < 4; r++ { // each resource's first 100 records twice more
		lrs := ld.ResourceLogs().At(r).ScopeLogs().At(0).LogRecords()
		for k := 0; k < 200; k++ {
			lrs.At(k % 100).CopyTo(lrs.AppendEmpty())
		}
	}
	if err := e.pushLogs(context.Background(), ld); err != nil {
		t.Fatal(err)
	}
	received, forwarded, _ := simTotals(sim)
	if received != 1800 || forwarded != 0 {
		t.Fatalf("%d items received, %d forwarded; want 1800, 0", received, forwarded)
	}
	if got := count(t, sim.Addr(0), "repeats"); got != 1801 { // and startRoutedEmulator's probe
		t.Fatalf("stored %d, want 1801", got)
	}
}

// TestResendMergedIntoOneCall: a client that resends a request (its answer
// lost) within the batcher's flush window gets both copies merged into one
// call, the copy's resources appended after the original's. The copy must
// get the original's ids (stored once, the copy counted as duplicates),
// for logs in shares and alone, and for spans; a later resend answers 409
// too, and so does an exporterhelper retry of a subset of the merged call.
func TestResendMergedIntoOneCall(t *testing.T) {
	for _, n := range []int{10, 1000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			sim, e := startRoutedEmulator(t, signalLogs, "resend")
			req := makeLogs(0, n)
			merged := plog.NewLogs()
			req.ResourceLogs().CopyTo(merged.ResourceLogs())
			req.ResourceLogs().MoveAndAppendTo(merged.ResourceLogs()) // as the batcher merges
			if err := e.pushLogs(context.Background(), merged); err != nil {
				t.Fatal(err)
			}
			if got := count(t, sim.Addr(0), "resend"); got != n+1 {
				t.Fatalf("stored %d, want %d", got, n+1)
			}
			again := plog.NewLogs()
			merged.ResourceLogs().At(0).CopyTo(again.ResourceLogs().AppendEmpty())
			if err := e.pushLogs(context.Background(), again); err != nil {
				t.Fatal(err)
			}
			if got := count(t, sim.Addr(0), "resend"); got != n+1 {
				t.Fatalf("after a resend of one resource: stored %d, want %d", got, n+1)
			}
		})
	}
	t.Run("spans", func(t *testing.T) {
		sim, e := startRoutedEmulator(t, signalTraces, "resend-spans")
		req := makeSpans(0, 300)
		merged := ptrace.NewTraces()
		req.ResourceSpans().CopyTo(merged.ResourceSpans())
		req.ResourceSpans().MoveAndAppendTo(merged.ResourceSpans())
		if err := e.pushTraces(context.Background(), merged); err != nil {
			t.Fatal(err)
		}
		if got := count(t, sim.Addr(0), "resend-spans"); got != 301 {
			t.Fatalf("stored %d, want 301", got)
		}
	})
}
