package opensearchrouted

// Lifecycle tests in the shape mdatagen generates (generated_component_test.go),
// written by hand: create each signal's exporter from testdata/config.yaml,
// start it against the emulator, send data, shut it down; and check that
// every attribute the exporter records is declared for its metric in
// metadata.yaml.

import (
	"context"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pipeline"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/opensearchrouted/opensearchrouted/exporter/opensearchrouted/internal/metadata"
	"github.com/opensearchrouted/opensearchrouted/testbed/ossim"
)

func TestComponentFactoryType(t *testing.T) {
	if got := NewFactory().Type(); got != metadata.Type {
		t.Fatalf("factory type %v, want %v", got, metadata.Type)
	}
	f := NewFactory()
	if f.LogsStability() != metadata.LogsStability || f.TracesStability() != metadata.TracesStability {
		t.Errorf("stability logs %v traces %v", f.LogsStability(), f.TracesStability())
	}
	if f.MetricsStability() != component.StabilityLevelUndefined {
		t.Errorf("metrics are not supported, but stability is %v", f.MetricsStability())
	}
}

func TestComponentDefaultConfigNeedsEndpoint(t *testing.T) {
	f := NewFactory()
	set := exportertest.NewNopSettings(metadata.Type)
	_, err := f.CreateLogs(context.Background(), set, f.CreateDefaultConfig())
	if err == nil || !strings.Contains(err.Error(), "endpoints") {
		t.Fatalf("default config (no endpoint) was accepted or the error does not name endpoints: %v", err)
	}
	_, err = f.CreateMetrics(context.Background(), set, f.CreateDefaultConfig())
	if err == nil {
		t.Fatal("metrics exporter created; the exporter only handles logs and traces")
	}
}

func TestComponentLifecycle(t *testing.T) {
	sim := ossim.StartT(t, ossim.Options{Nodes: 3, Zones: []string{"a", "b", "c"}, NoHopLatency: true, DefaultShards: 3})
	f := NewFactory()

	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sub, err := cm.Sub(component.NewIDWithName(metadata.Type, "").String())
	if err != nil {
		t.Fatal(err)
	}

	subAll, err := cm.Sub(component.NewIDWithName(metadata.Type, "all").String())
	if err != nil {
		t.Fatal(err)
	}

	for _, sig := range []pipeline.Signal{pipeline.SignalLogs, pipeline.SignalTraces} {
		t.Run(sig.String()+"-lifecycle", func(t *testing.T) {
			cfg := f.CreateDefaultConfig().(*Config)
			if err := sub.Unmarshal(cfg); err != nil {
				t.Fatal(err)
			}
			cfg.Endpoint = sim.Addr(0)
			lifecycle(t, f, cfg, sig, sim, "ss4o_logs-default-namespace", "ss4o_traces-default-namespace")
		})
		// Every key of testdata/config.yaml set (gzip, templates, fixed
		// indices, attribute ids, routing off, small bulks), pointed at
		// the emulator.
		t.Run(sig.String()+"-lifecycle-every-key", func(t *testing.T) {
			cfg := f.CreateDefaultConfig().(*Config)
			if err := subAll.Unmarshal(cfg); err != nil {
				t.Fatal(err)
			}
			cfg.Endpoints = sim.Addrs()[:2]
			lifecycle(t, f, cfg, sig, sim, "app-logs", "app-traces")
		})
		t.Run(sig.String()+"-shutdown-without-start", func(t *testing.T) {
			cfg := f.CreateDefaultConfig().(*Config)
			cfg.Endpoint = sim.Addr(0)
			var c component.Component
			var err error
			set := exportertest.NewNopSettings(metadata.Type)
			if sig == pipeline.SignalLogs {
				c, err = f.CreateLogs(context.Background(), set, cfg)
			} else {
				c, err = f.CreateTraces(context.Background(), set, cfg)
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Shutdown(context.Background()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// lifecycle creates the signal's exporter with cfg through the factory,
// starts it, sends 300 records, shuts it down (which drains the queue) and
// checks they are all stored and that the recorded metrics match
// metadata.yaml.
func lifecycle(t *testing.T, f exporter.Factory, cfg *Config, sig pipeline.Signal, sim *ossim.Cluster, logsTarget, tracesTarget string) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	set := exportertest.NewNopSettings(metadata.Type)
	set.MeterProvider = mp

	var c component.Component
	var target string
	switch sig {
	case pipeline.SignalLogs:
		e, err := f.CreateLogs(context.Background(), set, cfg)
		if err != nil {
			t.Fatal(err)
		}
		c, target = e, logsTarget
		if err := e.Start(context.Background(), componenttest.NewNopHost()); err != nil {
			t.Fatal(err)
		}
		if err := e.ConsumeLogs(context.Background(), makeLogs(0, 300)); err != nil {
			t.Fatal(err)
		}
	case pipeline.SignalTraces:
		e, err := f.CreateTraces(context.Background(), set, cfg)
		if err != nil {
			t.Fatal(err)
		}
		c, target = e, tracesTarget
		if err := e.Start(context.Background(), componenttest.NewNopHost()); err != nil {
			t.Fatal(err)
		}
		if err := e.ConsumeTraces(context.Background(), makeSpans(0, 300)); err != nil {
			t.Fatal(err)
		}
	}
	// Shutdown drains the sending queue: everything accepted is stored.
	if err := c.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := countDocs(t, sim.Addr(1), target); n != 300 {
		t.Fatalf("%s holds %d documents after shutdown, want 300", target, n)
	}
	checkRecordedAttributes(t, reader)
}

// countDocs refreshes target and returns its document count.
func countDocs(t *testing.T, base, target string) int {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		httpJSON(t, "POST", base+"/"+target+"/_refresh", "", nil)
		var c struct {
			Count int `json:"count"`
		}
		st := httpJSON(t, "GET", base+"/"+target+"/_count", "", &c)
		if st == 200 || time.Now().After(deadline) {
			if st != 200 {
				t.Fatalf("GET %s/_count: HTTP %d", target, st)
			}
			return c.Count
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkRecordedAttributes collects the exporter's metrics and checks every
// data point's attribute keys against the metric's attributes in
// metadata.yaml; it also requires the document and bulk metrics to be there.
func checkRecordedAttributes(t *testing.T, reader *sdkmetric.ManualReader) {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("..", "..", "metadata.yaml"))
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
			continue // the collector's exporterhelper and HTTP client metrics
		}
		for _, m := range sm.Metrics {
			decl, ok := md.Telemetry.Metrics[m.Name]
			if !ok {
				t.Errorf("metric %s is not in metadata.yaml", m.Name)
				continue
			}
			want := append([]string(nil), decl.Attributes...)
			sort.Strings(want)
			for _, keys := range pointKeys(m.Data) {
				seen[m.Name] = true
				if strings.Join(keys, ",") != strings.Join(want, ",") {
					t.Errorf("%s: a point has attributes %v, metadata.yaml declares %v", m.Name, keys, want)
				}
			}
		}
	}
	for _, name := range []string{
		"otelcol.opensearchrouted.documents", "otelcol.opensearchrouted.documents.routed",
		"otelcol.opensearchrouted.bulk_requests", "otelcol.opensearchrouted.bulk_request.duration",
		"otelcol.opensearchrouted.bulk_request.bytes", "otelcol.opensearchrouted.topology.refreshes",
	} {
		if !seen[name] {
			t.Errorf("no %s recorded", name)
		}
	}
}

func pointKeys(data metricdata.Aggregation) [][]string {
	var out [][]string
	add := func(keys []string) { sort.Strings(keys); out = append(out, keys) }
	switch d := data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			add(setKeys(p.Attributes.ToSlice()))
		}
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			add(setKeys(p.Attributes.ToSlice()))
		}
	case metricdata.Histogram[float64]:
		for _, p := range d.DataPoints {
			add(setKeys(p.Attributes.ToSlice()))
		}
	}
	return out
}

func setKeys(kvs []attribute.KeyValue) []string {
	out := make([]string, len(kvs))
	for i, kv := range kvs {
		out[i] = string(kv.Key)
	}
	return out
}

var _ exporter.Factory = NewFactory()
