package opensearchrouted

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/opensearchrouted/opensearchrouted/testbed/ossim"
)

// nodeLabelValues lists the values of the node attribute in the data
// points of metric name.
func nodeLabelValues(t *testing.T, r *sdkmetric.ManualReader, name string) []string {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			var sets []attribute.Set
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					sets = append(sets, dp.Attributes)
				}
			case metricdata.Gauge[int64]:
				for _, dp := range d.DataPoints {
					sets = append(sets, dp.Attributes)
				}
			case metricdata.Histogram[float64]:
				for _, dp := range d.DataPoints {
					sets = append(sets, dp.Attributes)
				}
			}
			for _, s := range sets {
				if v, ok := s.Value("node"); ok {
					seen[v.Emit()] = true
				}
			}
		}
	}
	var out []string
	for v := range seen {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// TestNodeLabelStableFromStart: the configured endpoint is the node's own
// published address, and discovery answers late (its _nodes calls are
// held 300 ms): the bulk requests sent before discovery (to the endpoint)
// and after it (to the discovered node) are all labelled with the node's
// name, in every per-node metric; host:port never appears.
func TestNodeLabelStableFromStart(t *testing.T) {
	sim := ossim.StartT(t, ossim.Options{Nodes: 1, NoHopLatency: true})
	target, _ := url.Parse(sim.Addr(0))
	rp := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/_nodes") {
			time.Sleep(300 * time.Millisecond)
		}
		rp.ServeHTTP(w, r)
	}))
	defer front.Close()
	if err := sim.SetPublishAddress(0, hostPort(front.URL)); err != nil {
		t.Fatal(err)
	}
	const index = "logs-labels"
	createIndex(t, sim.Addr(0), index, 2, 0)
	cfg := testConfig([]string{front.URL})
	cfg.LogsIndex = index
	e, reader := startExporter(t, cfg, signalLogs)
	exportAll(t, e, 0, 100) // before discovery: through the endpoint
	if u := sumMetric(t, reader, "otelcol.opensearchrouted.documents.routed", map[string]string{"reason": "no_topology"}); u != 100 {
		t.Fatalf("%d of the first 100 records sent before discovery, want all", u)
	}
	waitKnown(t, e, index)
	exportAll(t, e, 100, 500) // direct, to the discovered node
	if d := routedCount(t, reader, "direct", "routed"); d != 500 {
		t.Fatalf("direct %d of 500", d)
	}
	want := sim.Node(0).Name()
	for _, m := range []string{"otelcol.opensearchrouted.bulk_requests", "otelcol.opensearchrouted.bulk_request.duration",
		"otelcol.opensearchrouted.bulk_request.bytes", "otelcol.opensearchrouted.node.state", "otelcol.opensearchrouted.node.window"} {
		if got := nodeLabelValues(t, reader, m); len(got) != 1 || got[0] != want {
			t.Errorf("%s: node labels %v, want only %q", m, got, want)
		}
	}
	if n := sumMetric(t, reader, "otelcol.opensearchrouted.bulk_requests", map[string]string{"node": want}); n < 2 {
		t.Fatalf("%d bulk requests counted under %q", n, want)
	}
}
