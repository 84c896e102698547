package opensearchrouted

import (
	"context"
	"testing"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter/exportertest"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/opensearchrouted/opensearchrouted/exporter/opensearchrouted/internal/metadata"
	"github.com/opensearchrouted/opensearchrouted/testbed/ossim"
)

// Two configured instances of the exporter (opensearchrouted/a and
// opensearchrouted/b) in one collector share its meter provider: every
// metric carries the instance's id as exporter, so their documents, bulk
// requests and node gauges report apart.
func TestInstancesReportApart(t *testing.T) {
	sim := ossim.StartT(t, ossim.Options{Nodes: 2, NoHopLatency: true})
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	pushed := map[string]int{"opensearchrouted/a": 30, "opensearchrouted/b": 70}
	from := map[string]int{"opensearchrouted/a": 0, "opensearchrouted/b": 1000}
	for id, n := range pushed {
		cfg := testConfig(sim.Addrs())
		cfg.LogsIndex = "instances"
		set := exportertest.NewNopSettings(metadata.Type)
		set.ID = component.MustNewIDWithName(metadata.Type.String(), id[len("opensearchrouted/"):])
		set.MeterProvider = mp
		e, err := newExporter(cfg, set, signalLogs)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.start(context.Background(), componenttest.NewNopHost()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = e.shutdown(context.Background()) })
		if err := e.pushLogs(context.Background(), makeLogs(from[id], n)); err != nil {
			t.Fatal(err)
		}
		waitRouted(t, e, "instances") // the node labels settled: requests and gauges reported
	}
	for id, n := range pushed {
		if got := sumMetric(t, reader, "otelcol.opensearchrouted.documents", map[string]string{"exporter": id, "outcome": "indexed"}); got != int64(n) {
			t.Errorf("documents{exporter=%s,outcome=indexed} = %d, want %d", id, got, n)
		}
		if got := sumMetric(t, reader, "otelcol.opensearchrouted.bulk_requests", map[string]string{"exporter": id}); got == 0 {
			t.Errorf("no bulk_requests{exporter=%s}", id)
		}
		for i := range sim.Len() {
			match := map[string]string{"exporter": id, "node": sim.Node(i).Name()}
			if got := countPoints(t, reader, "otelcol.opensearchrouted.node.window", match); got != 1 {
				t.Errorf("node.window%v: %d points, want 1", match, got)
			}
		}
	}
}

// countPoints counts the data points of the int64 gauge name whose
// attributes include match.
func countPoints(t *testing.T, r *sdkmetric.ManualReader, name string, match map[string]string) int {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if g, ok := m.Data.(metricdata.Gauge[int64]); ok && m.Name == name {
				for _, dp := range g.DataPoints {
					if attrsMatch(dp.Attributes.ToSlice(), match) {
						n++
					}
				}
			}
		}
	}
	return n
}
