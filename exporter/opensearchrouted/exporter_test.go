package opensearchrouted

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/opensearchrouted/opensearchrouted/internal/bulk"
	"github.com/opensearchrouted/opensearchrouted/testbed/ossim"
)

func simTotals(c *ossim.Cluster) (received, forwarded, primary int64) {
	for _, s := range c.Stats() {
		received += s.ItemsReceived
		forwarded += s.ItemsForwarded
		primary += s.ItemsPrimary
	}
	return
}

// createIndex makes a plain index with the given shards and replicas.
func createIndex(t *testing.T, base, name string, shards, replicas int) {
	t.Helper()
	body := fmt.Sprintf(`{"settings":{"index":{"number_of_shards":%d,"number_of_replicas":%d}}}`, shards, replicas)
	if st := httpJSON(t, "PUT", base+"/"+name, body, nil); st != 200 {
		t.Fatalf("create %s: HTTP %d", name, st)
	}
}

func TestLogsRoutedExactlyOnceEmulator(t *testing.T) {
	sim := ossim.StartT(t, ossim.Options{Nodes: 3, NoHopLatency: true})
	createIndex(t, sim.Addr(0), "logs-direct", 6, 1)
	cfg := testConfig(sim.Addrs()[:1])
	cfg.LogsIndex = "logs-direct"
	e, reader := startExporter(t, cfg, signalLogs)

	// The first call meets an unknown index: sent unrouted, correct anyway.
	if err := e.pushLogs(context.Background(), makeLogs(0, 500)); err != nil {
		t.Fatal(err)
	}
	waitRouted(t, e, "logs-direct")
	sim.ResetStats()
	for k := 0; k < 6; k++ {
		if err := e.pushLogs(context.Background(), makeLogs(500+k*1000, 1000)); err != nil {
			t.Fatal(err)
		}
	}
	received, forwarded, _ := simTotals(sim)
	if received != 6000 || forwarded != 0 {
		t.Fatalf("routed: %d items received, %d forwarded between nodes (want 6000, 0)", received, forwarded)
	}
	// Exactly once, by count and by id; a resend of the same data is
	// stored once more as nothing: every item comes back 409.
	if got := count(t, sim.Addr(0), "logs-direct"); got != 6500 {
		t.Fatalf("stored %d, want 6500", got)
	}
	if err := e.pushLogs(context.Background(), makeLogs(500, 1000)); err != nil {
		t.Fatal(err)
	}
	if got := count(t, sim.Addr(0), "logs-direct"); got != 6500 {
		t.Fatalf("after a resend: stored %d, want 6500", got)
	}
	if d := sumMetric(t, reader, "otelcol.opensearchrouted.documents", map[string]string{"outcome": "duplicate", "signal": "logs"}); d != 1000 {
		t.Fatalf("duplicates counted: %d", d)
	}
	if d := sumMetric(t, reader, "otelcol.opensearchrouted.documents", map[string]string{"outcome": "indexed"}); d != 6500 {
		t.Fatalf("indexed counted: %d", d)
	}
	if d := sumMetric(t, reader, "otelcol.opensearchrouted.documents.routed", map[string]string{"path": "direct"}); d != 7000 {
		t.Fatalf("direct counted: %d", d)
	}
	if d := sumMetric(t, reader, "otelcol.opensearchrouted.documents.routed", map[string]string{"path": "unrouted", "reason": "no_topology"}) +
		sumMetric(t, reader, "otelcol.opensearchrouted.documents.routed", map[string]string{"path": "unrouted", "reason": "unknown_index"}); d != 500 {
		t.Fatalf("unrouted counted: %d", d)
	}
	if n := sumMetric(t, reader, "otelcol.opensearchrouted.node.window", nil); n < 3 {
		t.Fatalf("node.window gauges: %d", n)
	}
}

func TestRoutingDisabledForwardsEmulator(t *testing.T) {
	sim := ossim.StartT(t, ossim.Options{Nodes: 3, NoHopLatency: true})
	createIndex(t, sim.Addr(0), "logs-rr", 6, 1)
	cfg := testConfig(sim.Addrs())
	cfg.LogsIndex = "logs-rr"
	cfg.Routing.Enabled = false
	e, _ := startExporter(t, cfg, signalLogs)
	for k := 0; k < 3; k++ {
		if err := e.pushLogs(context.Background(), makeLogs(k*1000, 1000)); err != nil {
			t.Fatal(err)
		}
	}
	received, forwarded, _ := simTotals(sim)
	if received != 3000 || forwarded < 1700 || forwarded > 2300 {
		t.Fatalf("round-robin: %d received, %d forwarded (want about 2/3)", received, forwarded)
	}
	if got := count(t, sim.Addr(0), "logs-rr"); got != 3000 {
		t.Fatalf("stored %d", got)
	}
}

func TestDataStreamTracesAndRepeats(t *testing.T) {
	sim := ossim.StartT(t, ossim.Options{Nodes: 3, NoHopLatency: true})
	cfg := testConfig(sim.Addrs())
	cfg.InstallTemplates = true
	e, _ := startExporter(t, cfg, signalTraces)
	if err := e.pushTraces(context.Background(), makeSpans(0, 2000)); err != nil {
		t.Fatal(err)
	}
	if got := count(t, sim.Addr(0), "ss4o_traces-default-namespace"); got != 2000 {
		t.Fatalf("spans stored %d", got)
	}
	if err := e.pushTraces(context.Background(), makeSpans(0, 2000)); err != nil {
		t.Fatal(err)
	}
	if got := count(t, sim.Addr(0), "ss4o_traces-default-namespace"); got != 2000 {
		t.Fatalf("spans resent: stored %d", got)
	}

	// Logs: exact repeats within a call are all kept; attributes pick the
	// data stream.
	lcfg := testConfig(sim.Addrs())
	lcfg.InstallTemplates = true
	le, _ := startExporter(t, lcfg, signalLogs)
	ld := makeLogs(0, 10)
	sl := ld.ResourceLogs().At(0).ScopeLogs().At(0)
	sl.LogRecords().At(0).CopyTo(sl.LogRecords().AppendEmpty())
	sl.LogRecords().At(0).CopyTo(sl.LogRecords().AppendEmpty())
	other := sl.LogRecords().AppendEmpty()
	sl.LogRecords().At(1).CopyTo(other)
	other.Attributes().PutStr("data_stream.dataset", "nginx")
	bad := sl.LogRecords().AppendEmpty()
	sl.LogRecords().At(2).CopyTo(bad)
	bad.Attributes().PutStr("data_stream.namespace", "Not-Valid*")
	if err := le.pushLogs(context.Background(), ld); err != nil {
		t.Fatal(err)
	}
	if got := count(t, sim.Addr(0), "ss4o_logs-default-namespace"); got != 13 {
		t.Fatalf("stored %d in the default stream, want 10 + 2 repeats + 1 with an invalid namespace", got)
	}
	if got := count(t, sim.Addr(0), "ss4o_logs-nginx-namespace"); got != 1 {
		t.Fatalf("stored %d in the nginx stream", got)
	}
	if err := le.pushLogs(context.Background(), ld); err != nil {
		t.Fatal(err)
	}
	if got := count(t, sim.Addr(0), "ss4o_logs-default-namespace"); got != 13 {
		t.Fatalf("resend with repeats stored %d", got)
	}
}

func TestRejectionsShrinkWindowEmulator(t *testing.T) {
	sim := ossim.StartT(t, ossim.Options{Nodes: 3, NoHopLatency: true})
	createIndex(t, sim.Addr(0), "logs-429", 3, 0)
	cfg := testConfig(sim.Addrs())
	cfg.LogsIndex = "logs-429"
	cfg.Bulk.MaxBytes = 16 << 10 // many sub-bulks per node
	e, reader := startExporter(t, cfg, signalLogs)
	if err := e.pushLogs(context.Background(), makeLogs(0, 300)); err != nil {
		t.Fatal(err)
	}
	waitRouted(t, e, "logs-429")
	// Grow the windows, then reject the next shard writes on node 1.
	for k := 1; k < 4; k++ {
		if err := e.pushLogs(context.Background(), makeLogs(k*1000, 1000)); err != nil {
			t.Fatal(err)
		}
	}
	n1 := e.router.Topology().NodeByID(sim.Node(1).ID())
	before := n1.Window().Decreases()
	if err := sim.RejectNext(1, 6); err != nil {
		t.Fatal(err)
	}
	if err := e.pushLogs(context.Background(), makeLogs(10000, 2000)); err != nil {
		t.Fatal(err)
	}
	if after := n1.Window().Decreases(); after <= before {
		t.Fatalf("the rejecting node's window never shrank (%d decreases before, %d after)", before, after)
	}
	if got := count(t, sim.Addr(0), "logs-429"); got != 5300 {
		t.Fatalf("stored %d, want 5300", got)
	}
	var rejected int64
	for _, s := range sim.Stats() {
		rejected += s.RejectedItems
	}
	if rejected == 0 {
		t.Fatal("no rejection happened")
	}
	if r := sumMetric(t, reader, "otelcol.opensearchrouted.bulk_requests", map[string]string{"outcome": "throttled"}); r == 0 {
		t.Fatal("rejected sub-bulks not counted")
	}
}

func TestNodeStoppedAndRestartedEmulator(t *testing.T) {
	sim := ossim.StartT(t, ossim.Options{Nodes: 3, NoHopLatency: true, DetectionDelay: 50 * time.Millisecond})
	createIndex(t, sim.Addr(0), "logs-kill", 6, 1)
	cfg := testConfig(sim.Addrs())
	cfg.LogsIndex = "logs-kill"
	cfg.Bulk.MaxAttempts = 10
	cfg.Bulk.RetryBackoff = 50 * time.Millisecond
	e, _ := startExporter(t, cfg, signalLogs)
	if err := e.pushLogs(context.Background(), makeLogs(0, 1000)); err != nil {
		t.Fatal(err)
	}
	waitRouted(t, e, "logs-kill")
	total := 1000
	for k := 1; k < 8; k++ {
		if k == 3 {
			if err := sim.StopNode(2); err != nil {
				t.Fatal(err)
			}
		}
		if k == 6 {
			if err := sim.RestartNode(2); err != nil {
				t.Fatal(err)
			}
		}
		ld := makeLogs(k*1000, 1000)
		err := e.pushLogs(context.Background(), ld)
		for err != nil {
			// Hand-back for retry: resend exactly what the exporter returned,
			// as the collector's retry would.
			var le consumererror.Logs
			if !errors.As(err, &le) {
				t.Fatalf("call %d: %v", k, err)
			}
			err = e.pushLogs(context.Background(), le.Data())
		}
		total += 1000
	}
	if got := count(t, sim.Addr(0), "logs-kill"); got != total {
		t.Fatalf("stored %d, want %d", got, total)
	}
}

// TestQueuedSubBulksSkipNodeThatDied: a node goes silent while several
// calls' sub-bulks for it wait on its congestion window (ceiling 1). The
// first one times out and marks the node dead; the others, admitted after
// that, are not sent to it (each would wait a whole request timeout) but
// handed back, and resent they are stored exactly once.
func TestQueuedSubBulksSkipNodeThatDied(t *testing.T) {
	sim := ossim.StartT(t, ossim.Options{Nodes: 2, NoHopLatency: true})
	createIndex(t, sim.Addr(0), "logs-silent", 2, 0)
	cfg := testConfig(sim.Addrs())
	cfg.LogsIndex = "logs-silent"
	cfg.Routing.WindowCeiling = 1
	cfg.Timeout = 300 * time.Millisecond
	cfg.Bulk.MaxAttempts = 1
	e, reader := startExporter(t, cfg, signalLogs)
	if err := e.pushLogs(context.Background(), makeLogs(0, 100)); err != nil {
		t.Fatal(err)
	}
	waitRouted(t, e, "logs-silent")
	if err := sim.Blackhole(1, true); err != nil {
		t.Fatal(err)
	}
	const calls, per = 6, 200
	errs := make([]error, calls)
	var wg sync.WaitGroup
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = e.pushLogs(context.Background(), makeLogs(1000*(i+1), per))
		}()
	}
	wg.Wait()
	node1 := sim.Node(1).Name()
	down := sumMetric(t, reader, "otelcol.opensearchrouted.bulk_requests", map[string]string{"node": node1, "outcome": "node_down"})
	if down != 1 {
		t.Errorf("%d requests to the silent node failed; want 1 (the others were admitted after it was marked dead)", down)
	}
	if err := sim.Blackhole(1, false); err != nil {
		t.Fatal(err)
	}
	handedBack := 0
	for i, err := range errs {
		for err != nil {
			var le consumererror.Logs
			if !errors.As(err, &le) {
				t.Fatalf("call %d: %v", i, err)
			}
			handedBack += le.Data().LogRecordCount()
			err = e.pushLogs(context.Background(), le.Data())
		}
	}
	if handedBack < calls*per/4 {
		t.Errorf("only %d records handed back; the silent node's share of %d should be", handedBack, calls*per)
	}
	if got, want := count(t, sim.Addr(0), "logs-silent"), 100+calls*per; got != want {
		t.Fatalf("stored %d, want %d", got, want)
	}
}

// TestRefusedDocumentsReshapedOrDeadLettered: records the server refuses
// for their shape are stored in the unmapped shape; refused in that shape
// too, they go to the dead-letter index; with the dead-letter index off (or
// refusing), they are counted failed and reported permanent, the error and
// the log naming the cause but no document contents. Refused credentials
// (401) keep the records for the collector's retry, without in-call
// resends, and are never dead-lettered.
func TestRefusedDocumentsReshapedOrDeadLettered(t *testing.T) {
	fs := &shapeServer{stored: map[string]string{}}
	srv := httptest.NewServer(fs)
	defer srv.Close()
	mu := &fs.mu
	stored := fs.stored
	unauthorized, refuseUnmapped, refuseDeadLetter := &fs.unauthorized, &fs.refuseUnmapped, &fs.refuseDeadLetter
	logs := func() plog.Logs { return badLogs(0, 9) }
	count := func(prefix, marker string) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for k, src := range stored {
			if strings.HasPrefix(k, prefix) && strings.Contains(src, marker) {
				n++
			}
		}
		return n
	}

	cfg := testConfig([]string{srv.URL})
	cfg.LogsIndex = "x"
	e, reader := startExporter(t, cfg, signalLogs)
	if err := e.pushLogs(context.Background(), logs()); err != nil {
		t.Fatalf("refused for their shape: %v", err)
	}
	if n := count("x/", `"unmapped":`); n != 3 {
		t.Fatalf("%d stored in the unmapped shape, want 3", n)
	}
	if f := sumMetric(t, reader, "otelcol.opensearchrouted.documents.fallback", map[string]string{"fallback": "unmapped_shape"}); f != 3 {
		t.Fatalf("unmapped_shape counted %d", f)
	}

	mu.Lock()
	*refuseUnmapped = true
	clear(stored)
	mu.Unlock()
	if err := e.pushLogs(context.Background(), logs()); err != nil {
		t.Fatalf("refused in both shapes: %v", err)
	}
	if n := count(defaultDeadLetterLogs+"/", `"document":`); n != 3 {
		t.Fatalf("%d dead-lettered, want 3", n)
	}
	if n := count("x/", ""); n != 6 {
		t.Fatalf("%d stored in x, want 6", n)
	}
	if f := sumMetric(t, reader, "otelcol.opensearchrouted.documents", map[string]string{"outcome": "dead_lettered"}); f != 3 {
		t.Fatalf("dead_lettered counted %d", f)
	}

	mu.Lock()
	*refuseDeadLetter = true
	mu.Unlock()
	err := e.pushLogs(context.Background(), makeLogs(100, 3)) // distinct records, all good
	if err != nil {
		t.Fatal(err)
	}
	err = e.pushLogs(context.Background(), logs())
	if !consumererror.IsPermanent(err) || !strings.Contains(err.Error(), "3 log records dropped") || !strings.Contains(err.Error(), "3 × mapper_parsing_exception") {
		t.Fatalf("dead-letter refused too: %v", err)
	}
	if strings.Contains(err.Error(), "secret") {
		t.Fatal("document contents in the error")
	}
	if f := sumMetric(t, reader, "otelcol.opensearchrouted.documents", map[string]string{"outcome": "failed"}); f != 3 {
		t.Fatalf("failed counted %d", f)
	}
	mu.Lock()
	*unauthorized = true
	mu.Unlock()
	err = e.pushLogs(context.Background(), makeLogs(0, 4))
	var le consumererror.Logs
	if consumererror.IsPermanent(err) || !errors.As(err, &le) || le.Data().LogRecordCount() != 4 ||
		!strings.Contains(err.Error(), "authentication failed") {
		t.Fatalf("401: %v", err)
	}
	if fs.unauthorizedBulks != 1 {
		t.Fatalf("%d bulk requests with refused credentials in one call, want 1", fs.unauthorizedBulks)
	}
	if f := sumMetric(t, reader, "otelcol.opensearchrouted.documents", map[string]string{"outcome": "dead_lettered"}); f != 3 {
		t.Fatalf("dead_lettered counted %d after a 401", f)
	}
	if f := sumMetric(t, reader, "otelcol.opensearchrouted.documents", map[string]string{"outcome": "failed"}); f != 3 {
		t.Fatalf("failed counted %d after the 401", f)
	}
}

// TestRetrySummaryNamesCauses: the error of a call that hands records back
// counts them by cause: the server's error type for items it refused for
// now, "canceled" for items no request reached.
func TestRetrySummaryNamesCauses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "/_bulk") {
			w.WriteHeader(403)
			return
		}
		var items []string
		body, _ := io.ReadAll(r.Body)
		for i := 0; i < strings.Count(string(body), "\n")/2; i++ {
			if i%3 == 0 {
				items = append(items, `{"create":{"_index":"x","status":429,"error":{"type":"rejected_execution_exception","reason":"queue full"}}}`)
			} else {
				items = append(items, `{"create":{"_index":"x","status":201}}`)
			}
		}
		fmt.Fprintf(w, `{"took":1,"errors":true,"items":[%s]}`, strings.Join(items, ","))
	}))
	defer srv.Close()
	cfg := testConfig([]string{srv.URL})
	cfg.LogsIndex = "x"
	cfg.Bulk.MaxAttempts = 1
	e, _ := startExporter(t, cfg, signalLogs)

	err := e.pushLogs(context.Background(), makeLogs(0, 9))
	var le consumererror.Logs
	if !errors.As(err, &le) || le.Data().LogRecordCount() != 3 || !strings.Contains(err.Error(), "3 of 9 log records not stored yet (3 × rejected_execution_exception)") {
		t.Fatalf("429s: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err = e.pushLogs(ctx, makeLogs(0, 9))
	if !errors.As(err, &le) || le.Data().LogRecordCount() != 9 || !strings.Contains(err.Error(), "9 of 9 log records not stored yet (9 × canceled)") {
		t.Fatalf("canceled call: %v", err)
	}
}

func TestRetrySetKeepsRepeatNumbering(t *testing.T) {
	c := &call{}
	h1, h2 := [16]byte{1}, [16]byte{2}
	// items: h1#0 h2#0 h1#1 h1#2 h2#1
	c.hashes = [][16]byte{h1, h2, h1, h1, h2}
	c.occ = []int32{0, 0, 1, 2, 1}
	c.refs = make([]ref, 5)
	c.class = make([]bulk.Class, 5)
	c.class[2] = bulk.Retry // h1#1 failed → resend h1#0 too, so it is numbered 1 again
	got := c.retrySet(nil)
	if fmt.Sprint(got) != "[0 2]" {
		t.Fatalf("retry set %v", got)
	}
	c.class[2] = bulk.Done
	c.class[4] = bulk.Retry
	if got := c.retrySet(nil); fmt.Sprint(got) != "[1 4]" {
		t.Fatalf("retry set %v", got)
	}
}

func TestRetryWait(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		first   time.Duration
		attempt int
		want    time.Duration
	}{
		{100 * ms, 2, 100 * ms},
		{100 * ms, 3, 200 * ms},
		{100 * ms, 10, 25600 * ms},
		{100 * ms, 11, maxRetryWait},
		{100 * ms, 100, maxRetryWait}, // a shift would have overflowed
		{100 * ms, 1 << 30, maxRetryWait},
		{time.Minute, 2, time.Minute}, // a longer first wait is kept
		{time.Minute, 5, time.Minute},
		{0, 50, 0},
	} {
		if got := retryWait(c.first, c.attempt); got != c.want {
			t.Errorf("retryWait(%v, %d) = %v, want %v", c.first, c.attempt, got, c.want)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	cases := map[string]func(*Config){
		"endpoints: at least one endpoint":             func(c *Config) { c.Endpoints = nil },
		`endpoints: "localhost:9200" is not an http`:   func(c *Config) { c.Endpoints = []string{"localhost:9200"} },
		"carries credentials":                          func(c *Config) { c.Endpoints = []string{"http://u:p@h:9200"} },
		"same scheme":                                  func(c *Config) { c.Endpoints = []string{"http://a:1", "https://b:2"} },
		"endpoint and endpoints: set one":              func(c *Config) { c.Endpoint = "http://c:3" },
		`document_id: "uuid" is not one of`:            func(c *Config) { c.DocumentID = "uuid" },
		"document_id_attribute: required":              func(c *Config) { c.DocumentID = DocumentIDAttribute },
		"dataset: \"my-set\" must not contain '-'":     func(c *Config) { c.Dataset = "my-set" },
		"namespace: must not be empty":                 func(c *Config) { c.Namespace = "" },
		"is longer than 100 bytes":                     func(c *Config) { c.Dataset = strings.Repeat("a", 101) },
		"logs_index: \"Logs\" must be lowercase":       func(c *Config) { c.LogsIndex = "Logs" },
		"bulk.max_bytes: must be at least 1024":        func(c *Config) { c.Bulk.MaxBytes = 10 },
		"bulk.max_attempts: must be at least 1":        func(c *Config) { c.Bulk.MaxAttempts = 0 },
		"routing.refresh_interval: must be positive":   func(c *Config) { c.Routing.RefreshInterval = 0 },
		"routing.window_ceiling: must not be negative": func(c *Config) { c.Routing.WindowCeiling = -2 },
	}
	for want, mod := range cases {
		cfg := testConfig([]string{"http://localhost:9200"})
		mod(cfg)
		err := cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v", want, err)
		}
	}
	cfg := createDefaultConfig()
	cfg.Endpoint = "https://search.example:9200"
	if err := cfg.Validate(); err != nil {
		t.Fatalf("single endpoint: %v", err)
	}
	if s := cfg.seeds(); len(s) != 1 || s[0] != "https://search.example:9200" {
		t.Fatalf("seeds %v", s)
	}
}

var _ = plog.NewLogs

// TestTelemetryLevels checks the two telemetry setups the tests and
// benchmarks use: at the collector's default level the HTTP client's own
// metrics (otelhttp, whose meter the collector's default views drop below
// level detailed) record nothing, while the exporter's own metrics are
// kept; at level detailed both are recorded.
func TestTelemetryLevels(t *testing.T) {
	sim := ossim.StartT(t, ossim.Options{Nodes: 1, NoHopLatency: true})
	for _, detailed := range []bool{false, true} {
		cfg := testConfig(sim.Addrs())
		cfg.LogsIndex = "levels"
		// The collector's client sends the bulk requests too, so that the
		// push itself makes otelhttp metrics (with the exporter's own
		// transport only discovery does, which runs in the background).
		cfg.Bulk.Transport = TransportConfighttp
		e, reader := startExporterTelemetry(t, cfg, signalLogs, detailed)
		if err := e.pushLogs(context.Background(), makeLogs(0, 5)); err != nil {
			t.Fatal(err)
		}
		var rm metricdata.ResourceMetrics
		if err := reader.Collect(context.Background(), &rm); err != nil {
			t.Fatal(err)
		}
		httpMetrics, own := 0, 0
		for _, sm := range rm.ScopeMetrics {
			switch {
			case sm.Scope.Name == otelhttpMeter:
				httpMetrics += len(sm.Metrics)
			case strings.Contains(sm.Scope.Name, "opensearchrouted"):
				own += len(sm.Metrics)
			}
		}
		if own == 0 || (httpMetrics > 0) != detailed {
			t.Fatalf("detailed=%v: %d otelhttp metrics, %d of the exporter's", detailed, httpMetrics, own)
		}
	}
}

// TestInstallTemplatesURL: the template goes under the endpoint's path,
// without its query or fragment.
func TestInstallTemplatesURL(t *testing.T) {
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = append(got, r.Method+" "+r.URL.Path+"?"+r.URL.RawQuery)
		fmt.Fprint(w, `{"acknowledged":true}`)
	}))
	defer srv.Close()
	for seed, want := range map[string]string{
		srv.URL + "/?x=1#f":     "PUT /_index_template/ss4o_logs?",
		srv.URL + "/search/":    "PUT /search/_index_template/ss4o_logs?",
		srv.URL + "/search?x=1": "PUT /search/_index_template/ss4o_logs?",
	} {
		got = nil
		if err := installTemplates(context.Background(), srv.Client(), []string{seed}, signalLogs, ""); err != nil || len(got) != 1 || got[0] != want {
			t.Errorf("%s: %v %v, want %s", seed, got, err, want)
		}
	}
	got = nil
	if err := installTemplates(context.Background(), srv.Client(), []string{srv.URL}, signalTraces, "dlq"); err != nil ||
		fmt.Sprint(got) != "[PUT /_index_template/ss4o_traces? PUT /_index_template/opensearchrouted_deadletter_traces?]" {
		t.Errorf("with a dead-letter index: %v %v", got, err)
	}
}

// TestTemplateBodies: both bodies (and the dead-letter one) are JSON, with three dynamic templates
// (strings, integers, doubles) per attribute object and date detection off.
func TestTemplateBodies(t *testing.T) {
	for _, tc := range []struct {
		body    string
		objects []string
	}{
		{logsTemplate, []string{"attributes", "resource", "instrumentationScope.attributes"}},
		{tracesTemplate, []string{"attributes", "resource", "instrumentationScope.attributes", "events.attributes", "links.attributes"}},
	} {
		if !json.Valid([]byte(deadLetterTemplate("x"))) {
			t.Fatal(deadLetterTemplate("x"))
		}
		var v struct {
			Template struct {
				Mappings struct {
					DateDetection    *bool `json:"date_detection"`
					DynamicTemplates []map[string]struct {
						PathMatch string `json:"path_match"`
					} `json:"dynamic_templates"`
				} `json:"mappings"`
			} `json:"template"`
		}
		if err := json.Unmarshal([]byte(tc.body), &v); err != nil {
			t.Fatalf("%v\n%s", err, tc.body)
		}
		m := v.Template.Mappings
		if m.DateDetection == nil || *m.DateDetection {
			t.Error("date_detection is not false")
		}
		per := map[string]int{}
		for _, d := range m.DynamicTemplates {
			for _, x := range d {
				per[x.PathMatch]++
			}
		}
		if len(per) != len(tc.objects) {
			t.Errorf("dynamic templates for %v, want %v", per, tc.objects)
		}
		if !strings.Contains(tc.body, `"unmapped": {"type": "text"}`) {
			t.Error("the unmapped shape's string is not mapped as text")
		}
		for _, o := range tc.objects {
			if per[o+".*"] != 3 {
				t.Errorf("%s: %d dynamic templates, want 3", o, per[o+".*"])
			}
		}
	}
}
