package demo

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

const sampleScrape = `# HELP otelcol_opensearchrouted_documents Documents by final outcome.
# TYPE otelcol_opensearchrouted_documents counter
otelcol_opensearchrouted_documents{outcome="indexed",signal="logs"} 900
otelcol_opensearchrouted_documents{outcome="indexed",signal="traces"} 100
otelcol_opensearchrouted_documents{outcome="duplicate",signal="logs"} 7
otelcol_opensearchrouted_documents{outcome="retried",signal="traces"} 3
otelcol_opensearchrouted_documents_routed{path="direct",reason="routed"} 990
otelcol_opensearchrouted_documents_routed{path="unrouted",reason="unknown_index"} 10
otelcol_opensearchrouted_documents_routed{path="unrouted",reason="no_id"} 0
otelcol_opensearchrouted_node_window{node="node-0"} 4
otelcol_opensearchrouted_node_window{node="node-0"} 6
otelcol_opensearchrouted_node_window{node="node-1"} 8
otelcol_opensearchrouted_bulk_request_duration_bucket{node="node-0",le="0.001"} 10
otelcol_opensearchrouted_bulk_request_duration_bucket{node="node-0",le="0.01"} 50
otelcol_opensearchrouted_bulk_request_duration_bucket{node="node-0",le="+Inf"} 50
otelcol_opensearchrouted_bulk_request_duration_bucket{node="node-1",le="0.001"} 10
otelcol_opensearchrouted_bulk_request_duration_bucket{node="node-1",le="0.01"} 40
otelcol_opensearchrouted_bulk_request_duration_bucket{node="node-1",le="+Inf"} 50
weird_name{path="a \"quoted\" \\ value",x="1"} 2.5e+00 1700000000000
`

func TestParseMetrics(t *testing.T) {
	m, err := ParseMetrics(strings.NewReader(sampleScrape))
	if err != nil {
		t.Fatal(err)
	}
	if len(m) != 17 {
		t.Fatalf("%d samples, want 17", len(m))
	}
	last := m[len(m)-1]
	if last.Name != "weird_name" || last.Labels["path"] != `a "quoted" \ value` || last.Labels["x"] != "1" || last.Value != 2.5 {
		t.Errorf("escaped sample parsed as %+v", last)
	}
	if got := m.Sum("otelcol_opensearchrouted_documents", map[string]string{"outcome": "indexed"}); got != 1000 {
		t.Errorf("indexed = %v, want 1000", got)
	}
	if got := m.ByLabel("otelcol_opensearchrouted_documents", "signal"); got["logs"] != 907 || got["traces"] != 103 {
		t.Errorf("by signal = %v", got)
	}
	for _, bad := range []string{"novalue", `x{a="1" 3`, `x{a=1} 3`, "x notanumber"} {
		if _, err := ParseMetrics(strings.NewReader(bad + "\n")); err == nil {
			t.Errorf("%q parsed without error", bad)
		}
	}
}

func TestQuantile(t *testing.T) {
	m, err := ParseMetrics(strings.NewReader(sampleScrape))
	if err != nil {
		t.Fatal(err)
	}
	// Merged buckets: ≤1ms: 20, ≤10ms: 90, +Inf: 100.
	// p50: rank 50, in (1ms, 10ms]: 1ms + 9ms × (50−20)/(90−20).
	p50, ok := m.Quantile("otelcol_opensearchrouted_bulk_request_duration", 0.5)
	if want := 0.001 + 0.009*30.0/70.0; !ok || math.Abs(p50-want) > 1e-12 {
		t.Errorf("p50 = %v %v, want %v", p50, ok, want)
	}
	// p10: rank 10, in [0, 1ms]: 0.5ms.
	if p10, _ := m.Quantile("otelcol_opensearchrouted_bulk_request_duration", 0.1); math.Abs(p10-0.0005) > 1e-12 {
		t.Errorf("p10 = %v, want 0.0005", p10)
	}
	// p99: rank 99 lies in +Inf: the largest finite bound.
	if p99, ok := m.Quantile("otelcol_opensearchrouted_bulk_request_duration", 0.99); !ok || p99 != 0.01 {
		t.Errorf("p99 = %v %v, want 0.01", p99, ok)
	}
	if _, ok := m.Quantile("absent", 0.5); ok {
		t.Error("quantile of an absent histogram")
	}
	if _, ok := bucketQuantile(0.5, map[float64]float64{0.1: 0, math.Inf(1): 0}); ok {
		t.Error("quantile of an empty histogram")
	}
}

func TestDiffAndTotals(t *testing.T) {
	before := []NodeCounts{
		{Name: "node-1", Received: 10, Forwarded: 5, Primary: 7, TransportTxBytes: 100},
		{Name: "node-0", Received: 1, Forwarded: 0, Primary: 1, TransportTxBytes: 0},
	}
	after := []NodeCounts{
		{Name: "node-0", Received: 101, Forwarded: 60, Primary: 41, TransportTxBytes: 5000},
		{Name: "node-1", Received: 110, Forwarded: 65, Primary: 47, TransportTxBytes: 6100},
		{Name: "node-2", Received: 100, Forwarded: 70, Primary: 30, TransportTxBytes: 4000},
	}
	d := Diff(before, after)
	want := []NodeCounts{
		{Name: "node-0", Received: 100, Forwarded: 60, Primary: 40, TransportTxBytes: 5000},
		{Name: "node-1", Received: 100, Forwarded: 60, Primary: 40, TransportTxBytes: 6000},
		{Name: "node-2", Received: 100, Forwarded: 70, Primary: 30, TransportTxBytes: 4000},
	}
	for i := range want {
		if d[i] != want[i] {
			t.Errorf("diff[%d] = %+v, want %+v", i, d[i], want[i])
		}
	}
	r := Run{Nodes: d}
	if r.Forwarded() != 190 || r.Received() != 300 || r.TransportBytes() != 15000 {
		t.Errorf("totals forwarded %d received %d bytes %d", r.Forwarded(), r.Received(), r.TransportBytes())
	}
	// Real OpenSearch: no item counters.
	r.Nodes = Diff(nil, []NodeCounts{{Name: "n", Received: -1, Forwarded: -1, Primary: 3, TransportTxBytes: 9}})
	if r.Forwarded() != -1 || r.Received() != -1 || r.TransportBytes() != 9 {
		t.Errorf("unknown counters: forwarded %d received %d", r.Forwarded(), r.Received())
	}
}

func TestRunOutcome(t *testing.T) {
	r := Run{LogsSent: 100, SpansSent: 50, LogsStored: 100, SpansStored: 50}
	if !r.Ok() || r.Missing() != 0 || r.DuplicatesStored() != 0 {
		t.Errorf("exact run: ok %v missing %d dup %d", r.Ok(), r.Missing(), r.DuplicatesStored())
	}
	// A missing log and a duplicated span must not cancel out.
	r = Run{LogsSent: 100, SpansSent: 50, LogsStored: 99, SpansStored: 51}
	if r.Ok() || r.Missing() != 1 || r.DuplicatesStored() != 1 {
		t.Errorf("mixed run: ok %v missing %d dup %d", r.Ok(), r.Missing(), r.DuplicatesStored())
	}
	if (Run{}).Ok() {
		t.Error("a run that sent nothing is not a success")
	}
}

func TestFromMetricsAndFormat(t *testing.T) {
	m, err := ParseMetrics(strings.NewReader(sampleScrape))
	if err != nil {
		t.Fatal(err)
	}
	routed := Run{Label: "routing on", Routing: true, LogsSent: 900, SpansSent: 100, LogsStored: 900, SpansStored: 100,
		Measured: 1000, Elapsed: 2 * time.Second,
		Nodes: []NodeCounts{
			{Name: "node-0", Received: 500, Forwarded: 0, Primary: 500, TransportTxBytes: 1000},
			{Name: "node-1", Received: 500, Forwarded: 0, Primary: 500, TransportTxBytes: 1000},
		}}
	routed.FromMetrics(m)
	if routed.Conflicts != 7 || routed.Retried != 3 || routed.Failed != 0 {
		t.Errorf("conflicts %d retried %d failed %d", routed.Conflicts, routed.Retried, routed.Failed)
	}
	if routed.Windows["node-0"] != 6 || routed.Windows["node-1"] != 8 {
		t.Errorf("windows %v (the larger of the two exporters' values)", routed.Windows)
	}
	if !routed.HasLatency || routed.P99 != 0.01 {
		t.Errorf("latency %v %v", routed.HasLatency, routed.P99)
	}
	rr := routed
	rr.Label, rr.Routing = "routing off", false
	rr.Nodes = []NodeCounts{
		{Name: "node-0", Received: 500, Forwarded: 250, Primary: 500, TransportTxBytes: 5000},
		{Name: "node-1", Received: 500, Forwarded: 250, Primary: 500, TransportTxBytes: 5000},
	}
	rr.P99 = 0.02
	var out strings.Builder
	if err := Format(&out, "title", routed, rr); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, want := range []string{
		"records sent (logs + spans)", "1000 (900 + 100)",
		"items forwarded node→node", "0 (0.0% of received)", "500 (50.0% of received)",
		"node-0 received / written", "500 / 500",
		"windows at the end (per node)", "6 / 8",
		"bulk request p50 / p99", "10.0ms", "20.0ms",
		"exactly once", "yes",
		"routing removed 100.0% of the node-to-node forwards (500 → 0 items)",
		"transport bytes 10000 B → 2000 B (-80%)",
		"(500 rec/s)", "2000 B (2 B/doc)",
		"sent to the primary's node", "990 (99.0%)", "unknown_index 10",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q:\n%s", want, s)
		}
	}
	// Every row has a cell per run.
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "stored") && strings.Count(line, "1000") != 2 {
			t.Errorf("stored row %q should show both runs", line)
		}
	}
	missing := routed
	missing.LogsStored = 890
	out.Reset()
	_ = Format(&out, "t", missing)
	if !strings.Contains(out.String(), "(10 MISSING)") || !strings.Contains(out.String(), "NO") {
		t.Errorf("missing documents not shown:\n%s", out.String())
	}
}

// The exporter counts a call when it returns, after its documents are
// stored: the run reads the metrics only once every record sent is counted.
func TestWaitCountedWaitsForTheLastCalls(t *testing.T) {
	var scrapes atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := int64(56200)
		if scrapes.Add(1) > 3 {
			n = 60200
		}
		fmt.Fprintf(w, "otelcol_opensearchrouted_documents{outcome=\"indexed\",signal=\"logs\"} %d\n", n)
		fmt.Fprintf(w, "otelcol_opensearchrouted_documents_routed{path=\"unrouted\",reason=\"disabled\"} %d\n", n)
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	m, err := waitCounted(context.Background(), port, 60200, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var r Run
	r.LogsSent = 60200
	r.FromMetrics(m)
	if r.unrouted() != 60200 || r.Resent() != 0 {
		t.Errorf("unrouted %d, resent %d after %d scrapes: want 60200 and 0", r.unrouted(), r.Resent(), scrapes.Load())
	}
	// Bounded: a count that never arrives returns the last scrape.
	start := time.Now()
	if _, err := waitCounted(context.Background(), port, 70000, 200*time.Millisecond); err != nil || time.Since(start) > 5*time.Second {
		t.Errorf("waitCounted past its limit: %v after %v", err, time.Since(start))
	}
}

// Every record is in exactly one of the routed and unrouted rows; the sends
// of retried records beyond their first are shown on a row of their own.
func TestRoutedRowsAddUp(t *testing.T) {
	r := Run{Label: "routing on", LogsSent: 1000, SpansSent: 500, LogsStored: 1000, SpansStored: 500,
		Direct: 1400, Unrouted: map[string]int64{"unknown_index": 130}}
	var b strings.Builder
	if err := Format(&b, "t", r); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"1400 (91.5%)", "unknown_index 130", "of these, sent again (retries)   30"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if got := r.Direct + r.unrouted() - r.Resent(); got != r.Sent() {
		t.Errorf("rows add up to %d, want %d", got, r.Sent())
	}
}
