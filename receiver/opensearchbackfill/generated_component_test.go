package opensearchbackfill

// Lifecycle tests in the shape mdatagen generates (generated_component_test.go),
// written by hand: create each signal's receiver through the factory from
// testdata/config.yaml (the minimal and the every-key configuration), start
// it against the emulator, let it read a small index into a sink, shut it
// down; and check that every attribute the receiver records is declared for
// its metric in metadata.yaml.

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/open-telemetry/opentelemetry-collector-contrib/extension/storage/filestorage"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/extension"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pipeline"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/opensearchrouted/opensearchrouted/exporter/opensearchrouted"
	"github.com/opensearchrouted/opensearchrouted/receiver/opensearchbackfill/internal/metadata"
	"github.com/opensearchrouted/opensearchrouted/testbed/ossim"
)

func TestComponentFactoryType(t *testing.T) {
	f := NewFactory()
	if f.Type() != metadata.Type {
		t.Fatalf("factory type %v, want %v", f.Type(), metadata.Type)
	}
	if f.LogsStability() != metadata.LogsStability || f.TracesStability() != metadata.TracesStability {
		t.Errorf("stability logs %v traces %v", f.LogsStability(), f.TracesStability())
	}
	if f.MetricsStability() != component.StabilityLevelUndefined {
		t.Errorf("metrics are not supported, but stability is %v", f.MetricsStability())
	}
}

// The default configuration is a valid struct but is refused until the
// required keys are set; a metrics receiver cannot be created.
func TestComponentDefaultConfig(t *testing.T) {
	f := NewFactory()
	cfg := f.CreateDefaultConfig()
	if err := componenttest.CheckConfigStruct(cfg); err != nil {
		t.Fatal(err)
	}
	err := confmap.Validate(cfg)
	if err == nil || !strings.Contains(err.Error(), "endpoints: at least one endpoint") || !strings.Contains(err.Error(), "indices: at least one") {
		t.Fatalf("default config (no endpoint, no indices): %v", err)
	}
	_, err = f.CreateMetrics(context.Background(), receivertest.NewNopSettings(metadata.Type), cfg, consumertest.NewNop())
	if err == nil {
		t.Fatal("metrics receiver created; the receiver only reads logs and traces")
	}
}

// What the lifecycle tests read, written through the exporter (SS4O
// layout). Record i of an index carries the attribute seq = base + i; its
// observed time (logs) or start time (spans) falls in January 2026 unless
// i%3 == 0 (December 2025); even records are ERROR (logs) or have status
// Error (spans). The every-key configuration selects January 2026 and ERROR.
const (
	lcPerIndex  = 120
	lcOtelLogs  = 0    // otel-logs: the minimal configuration with signal logs
	lcOtelSpans = 1000 // otel-spans: the minimal configuration (signal traces)
	lcSS4OLogs  = 2000 // ss4o_logs-default-namespace (every key, logs)
	lcAppLogs   = 3000 // app-logs (every key, logs, through app-*)
	lcAppSpans  = 4000 // app-traces (every key, traces, through app-*)
)

func lcTime(i int) time.Time {
	if i%3 == 0 {
		return time.Date(2025, 12, 31, 12, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second)
	}
	return time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute)
}

func lcSelected(i int) bool { return i%3 != 0 && i%2 == 0 }

func lcLogs(base int) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "lifecycle")
	lrs := rl.ScopeLogs().AppendEmpty().LogRecords()
	for i := range lcPerIndex {
		lr := lrs.AppendEmpty()
		ts := pcommon.NewTimestampFromTime(lcTime(i))
		lr.SetTimestamp(ts)
		lr.SetObservedTimestamp(ts)
		lr.SetSeverityText("INFO")
		if i%2 == 0 {
			lr.SetSeverityText("ERROR")
		}
		lr.Body().SetStr(fmt.Sprintf("record %d", i))
		lr.Attributes().PutInt("seq", int64(base+i))
	}
	return ld
}

func lcSpans(base int) ptrace.Traces {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "lifecycle")
	sps := rs.ScopeSpans().AppendEmpty().Spans()
	for i := range lcPerIndex {
		sp := sps.AppendEmpty()
		n := uint64(base + i + 1)
		sp.SetTraceID(pcommon.TraceID{0xab, 15: byte(n), 14: byte(n >> 8)})
		sp.SetSpanID(pcommon.SpanID{0xcd, 7: byte(n), 6: byte(n >> 8)})
		sp.SetName("op")
		start := lcTime(i)
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Millisecond)))
		sp.Status().SetCode(ptrace.StatusCodeOk)
		if i%2 == 0 {
			sp.Status().SetCode(ptrace.StatusCodeError)
		}
		sp.Attributes().PutInt("seq", int64(base+i))
	}
	return td
}

// seqs returns base+i for every i of an index that want keeps.
func seqs(base int, want func(i int) bool) []int64 {
	var out []int64
	for i := range lcPerIndex {
		if want(i) {
			out = append(out, int64(base+i))
		}
	}
	return out
}

func lcAll(int) bool { return true }

func seedLifecycle(t *testing.T, sim *ossim.Cluster) {
	t.Helper()
	exportWith(t, sim.Addrs(), lcLogs(lcOtelLogs), lcSpans(lcOtelSpans), func(cfg *opensearchrouted.Config) {
		cfg.LogsIndex, cfg.TracesIndex = "otel-logs", "otel-spans"
	})
	exportWith(t, sim.Addrs(), lcLogs(lcAppLogs), lcSpans(lcAppSpans), func(cfg *opensearchrouted.Config) {
		cfg.LogsIndex, cfg.TracesIndex = "app-logs", "app-traces"
	})
	// The exporter's default target: ss4o_logs-default-namespace.
	exportWith(t, sim.Addrs(), lcLogs(lcSS4OLogs), ptrace.NewTraces(), func(*opensearchrouted.Config) {})
	// A document that matches the every-key traces query but is not a
	// span: with signal traces it is skipped (documents.skipped{reason}).
	bulkDocs(t, sim.Addr(0), "app-misc", []string{"not-a-span"}, func(int) string {
		return `{"startTime":"2026-01-20T00:00:00Z","status":{"code":"Error"},"note":"not a span"}`
	})
	for _, ix := range []string{"otel-logs", "otel-spans", "app-logs", "app-traces", "ss4o_logs-default-namespace"} {
		if st, b := httpDo(t, "POST", sim.Addr(0)+"/"+ix+"/_refresh", ""); st != 200 {
			t.Fatalf("refresh %s: %d %s", ix, st, b)
		}
	}
}

func TestComponentLifecycle(t *testing.T) {
	sim := ossim.StartT(t, ossim.Options{Nodes: 3, NoHopLatency: true, DefaultShards: 2})
	seedLifecycle(t, sim)

	for _, sig := range []pipeline.Signal{pipeline.SignalLogs, pipeline.SignalTraces} {
		// Only the required keys (testdata opensearchbackfill/minimal,
		// signal traces), once mode: the read completes.
		t.Run(sig.String()+"-lifecycle", func(t *testing.T) {
			cfg, err := loadConfig(t, "minimal")
			if err != nil {
				t.Fatal(err)
			}
			cfg.Endpoint = sim.Addr(0)
			want := seqs(lcOtelSpans, lcAll)
			if sig == pipeline.SignalLogs {
				cfg.Signal, cfg.Indices = SignalLogs, []string{"otel-logs"}
				want = seqs(lcOtelLogs, lcAll)
			}
			lifecycle(t, sim, cfg, nil, want, 0)
		})
		// Every key of testdata opensearchbackfill/all (two endpoints
		// rewritten to the emulator): an index and a pattern, a query and
		// a time range on observedTimestamp, its sort, 4 slices, follow
		// mode, a rate limit, checkpoints in a real file_storage
		// extension, headers, discovery off. For traces, the keys that
		// name log fields are rewritten to span fields.
		t.Run(sig.String()+"-lifecycle-every-key", func(t *testing.T) {
			cfg, err := loadConfig(t, "all")
			if err != nil {
				t.Fatal(err)
			}
			cfg.Endpoints = sim.Addrs()[:2]
			want := append(seqs(lcSS4OLogs, lcSelected), seqs(lcAppLogs, lcSelected)...)
			skipped := 0
			if sig == pipeline.SignalTraces {
				cfg.Signal = SignalTraces
				cfg.Query = `{"term":{"status.code":"Error"}}`
				cfg.TimeField = "startTime"
				cfg.Sort = `[{"startTime":"asc"},{"_id":"asc"}]`
				if err := cfg.Validate(); err != nil {
					t.Fatal(err)
				}
				want = seqs(lcAppSpans, lcSelected)
				skipped = 1 // app-misc/not-a-span
			}
			lifecycle(t, sim, cfg, fileStorage(t, *cfg.Storage), want, skipped)
		})
		t.Run(sig.String()+"-shutdown-without-start", func(t *testing.T) {
			cfg, err := loadConfig(t, "minimal")
			if err != nil {
				t.Fatal(err)
			}
			cfg.Signal = sig.String()
			rcv := createLifecycle(t, cfg, receivertest.NewNopSettings(metadata.Type), new(consumertest.LogsSink), new(consumertest.TracesSink))
			if err := rcv.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// fileStorage starts a contrib file_storage extension with the given id on a
// fresh directory, and returns the host's extensions.
func fileStorage(t *testing.T, id component.ID) map[component.ID]component.Component {
	t.Helper()
	f := filestorage.NewFactory()
	if id.Type() != f.Type() {
		t.Fatalf("storage %v is not a %v extension", id, f.Type())
	}
	cfg := f.CreateDefaultConfig().(*filestorage.Config)
	cfg.Directory = t.TempDir()
	set := extension.Settings{ID: id, TelemetrySettings: componenttest.NewNopTelemetrySettings(), BuildInfo: component.NewDefaultBuildInfo()}
	ext, err := f.Create(context.Background(), set, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := ext.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	// Registered before lifecycle runs: shut down after the receiver.
	t.Cleanup(func() {
		if err := ext.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	})
	return map[component.ID]component.Component{id: ext}
}

func createLifecycle(t *testing.T, cfg *Config, set receiver.Settings, logs *consumertest.LogsSink, traces *consumertest.TracesSink) component.Component {
	t.Helper()
	f := NewFactory()
	var rcv component.Component
	var err error
	if cfg.Signal == SignalLogs {
		rcv, err = f.CreateLogs(context.Background(), set, cfg, logs)
	} else {
		rcv, err = f.CreateTraces(context.Background(), set, cfg, traces)
	}
	if err != nil {
		t.Fatal(err)
	}
	return rcv
}

// lifecycle creates the receiver of cfg.Signal through the factory, starts
// it, waits until every slice has read to its end (once: the completion
// status; follow: every slice's PIT closed after its first pass), checks
// that exactly the wanted records were delivered, each once, and that the
// recorded metrics match metadata.yaml, then shuts it down and checks no
// point in time is left open.
func lifecycle(t *testing.T, sim *ossim.Cluster, cfg *Config, exts map[component.ID]component.Component, want []int64, skipped int) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	set := receivertest.NewNopSettings(metadata.Type)
	set.ID = component.NewID(metadata.Type)
	set.MeterProvider = mp

	logs, traces := new(consumertest.LogsSink), new(consumertest.TracesSink)
	rcv := createLifecycle(t, cfg, set, logs, traces)
	host := &testHost{exts: exts}
	if err := rcv.Start(context.Background(), host); err != nil {
		t.Fatal(err)
	}
	shut := false
	defer func() {
		if !shut {
			_ = rcv.Shutdown(context.Background())
		}
	}()
	m := &harness{reader: reader}
	waitFor(t, 30*time.Second, func() bool {
		if cfg.Mode == ModeOnce {
			return host.completed()
		}
		return m.metric(t, "otelcol.opensearchbackfill.pits.closed", nil) >= int64(cfg.Slices)
	})

	got := map[int64]int{}
	if cfg.Signal == SignalLogs {
		for _, ld := range logs.AllLogs() {
			forEachLog(ld, func(lr plog.LogRecord) {
				v, ok := lr.Attributes().Get("seq")
				if !ok {
					t.Errorf("a record without seq: %v", lr.Attributes().AsRaw())
				}
				got[v.Int()]++
			})
		}
	} else {
		for _, td := range traces.AllTraces() {
			forEachSpan(td, func(sp ptrace.Span) {
				v, ok := sp.Attributes().Get("seq")
				if !ok {
					t.Errorf("a span without seq: %v", sp.Attributes().AsRaw())
				}
				got[v.Int()]++
			})
		}
	}
	checkSeqs(t, got, want)

	if n := m.metric(t, "otelcol.opensearchbackfill.hits", nil); n != int64(len(want)+skipped) {
		t.Errorf("hits metric %d, want %d", n, len(want)+skipped)
	}
	if n := m.metric(t, "otelcol.opensearchbackfill.pits.opened", nil); n != int64(cfg.Slices) {
		t.Errorf("pits.opened metric %d, want %d (one per slice)", n, cfg.Slices)
	}
	if n := m.metric(t, "otelcol.opensearchbackfill.documents.skipped", map[string]string{"reason": "foreign"}); n != int64(skipped) {
		t.Errorf("documents.skipped{reason=foreign} %d, want %d", n, skipped)
	}
	required := []string{
		"otelcol.opensearchbackfill.pits.opened", "otelcol.opensearchbackfill.pits.closed",
		"otelcol.opensearchbackfill.hits", "otelcol.opensearchbackfill.pages",
	}
	if cfg.Storage != nil {
		if n := m.metric(t, "otelcol.opensearchbackfill.checkpoints", map[string]string{"outcome": "ok"}); n < int64(cfg.Slices) {
			t.Errorf("checkpoints{outcome=ok} %d, want at least one per slice", n)
		}
		required = append(required, "otelcol.opensearchbackfill.checkpoints")
	}
	if skipped > 0 {
		required = append(required, "otelcol.opensearchbackfill.documents.skipped")
	}
	// The asynchronous counters are observed only while the receiver
	// runs: collect before Shutdown.
	checkRecordedAttributes(t, reader, required)

	shut = true
	if err := rcv.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st, b := httpDo(t, "GET", sim.Addr(0)+"/_search/point_in_time/_all", ""); st != 200 || strings.Contains(string(b), `"index"`) {
		t.Errorf("points in time left open after shutdown: %d %s", st, b)
	}
}

// checkSeqs requires every wanted seq exactly once and nothing else.
func checkSeqs(t *testing.T, got map[int64]int, want []int64) {
	t.Helper()
	missing, dup := 0, 0
	for _, s := range want {
		switch got[s] {
		case 0:
			missing++
		case 1:
		default:
			dup++
		}
	}
	if len(want) == 0 || missing > 0 || dup > 0 || len(got) != len(want) {
		t.Fatalf("want %d records: %d missing, %d more than once, %d distinct delivered", len(want), missing, dup, len(got))
	}
}

// checkRecordedAttributes collects the receiver's metrics (its scope only)
// and checks every data point's attribute keys against the metric's
// attributes in metadata.yaml, and its receiver attribute against the
// component id lifecycle gives it; the required metrics must be there.
func checkRecordedAttributes(t *testing.T, reader *sdkmetric.ManualReader, required []string) {
	t.Helper()
	cm, err := confmaptest.LoadConf("metadata.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var md struct {
		Telemetry struct {
			Metrics map[string]struct {
				Attributes []string `mapstructure:"attributes"`
			} `mapstructure:"metrics"`
		} `mapstructure:"telemetry"`
	}
	if err := cm.Unmarshal(&md, confmap.WithIgnoreUnused()); err != nil {
		t.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != metadata.ScopeName {
			continue // receiverhelper's and the HTTP client's metrics
		}
		for _, m := range sm.Metrics {
			decl, ok := md.Telemetry.Metrics[m.Name]
			if !ok {
				t.Errorf("metric %s is not in metadata.yaml", m.Name)
				continue
			}
			wantKeys := append([]string(nil), decl.Attributes...)
			sort.Strings(wantKeys)
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok {
				t.Errorf("%s is %T, metadata.yaml declares an int sum", m.Name, m.Data)
				continue
			}
			for _, p := range sum.DataPoints {
				seen[m.Name] = true
				if keys := attrKeys(p.Attributes.ToSlice()); strings.Join(keys, ",") != strings.Join(wantKeys, ",") {
					t.Errorf("%s: a point has attributes %v, metadata.yaml declares %v", m.Name, keys, wantKeys)
				}
				if v, _ := p.Attributes.Value("receiver"); v.AsString() != component.NewID(metadata.Type).String() {
					t.Errorf("%s: a point has receiver %q, want the component id %s", m.Name, v.AsString(), component.NewID(metadata.Type))
				}
			}
		}
	}
	for _, name := range required {
		if !seen[name] {
			t.Errorf("no %s recorded", name)
		}
	}
}

func attrKeys(kvs []attribute.KeyValue) []string {
	out := make([]string, len(kvs))
	for i, kv := range kvs {
		out[i] = string(kv.Key)
	}
	sort.Strings(out)
	return out
}

var _ receiver.Factory = NewFactory()
