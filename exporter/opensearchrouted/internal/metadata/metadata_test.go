package metadata

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/opensearchrouted/opensearchrouted/internal/routing"
)

// yamlMetadata is the part of the top-level metadata.yaml this package is
// written from.
type yamlMetadata struct {
	Type      string `mapstructure:"type"`
	ScopeName string `mapstructure:"scope_name"`
	Status    struct {
		Class      string              `mapstructure:"class"`
		Stability  map[string][]string `mapstructure:"stability"`
		Codeowners struct {
			Active []string `mapstructure:"active"`
		} `mapstructure:"codeowners"`
	} `mapstructure:"status"`
	Attributes map[string]struct {
		Description string `mapstructure:"description"`
		Type        string `mapstructure:"type"`
	} `mapstructure:"attributes"`
	Telemetry struct {
		Metrics map[string]yamlMetric `mapstructure:"metrics"`
	} `mapstructure:"telemetry"`
}

type yamlMetric struct {
	Enabled     bool     `mapstructure:"enabled"`
	Description string   `mapstructure:"description"`
	Unit        string   `mapstructure:"unit"`
	Attributes  []string `mapstructure:"attributes"`
	Sum         *struct {
		ValueType string `mapstructure:"value_type"`
		Monotonic bool   `mapstructure:"monotonic"`
	} `mapstructure:"sum"`
	Gauge *struct {
		ValueType string `mapstructure:"value_type"`
		Async     bool   `mapstructure:"async"`
	} `mapstructure:"gauge"`
	Histogram *struct {
		ValueType        string    `mapstructure:"value_type"`
		BucketBoundaries []float64 `mapstructure:"bucket_boundaries"`
	} `mapstructure:"histogram"`
}

func loadYAML(t *testing.T) yamlMetadata {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("..", "..", "..", "..", "metadata.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var md yamlMetadata
	if err := cm.Unmarshal(&md); err != nil {
		t.Fatalf("metadata.yaml: %v", err)
	}
	return md
}

func TestStatusMatchesYAML(t *testing.T) {
	md := loadYAML(t)
	if md.Type != Type.String() {
		t.Errorf("type: yaml %q, Type %q", md.Type, Type)
	}
	if md.ScopeName != ScopeName {
		t.Errorf("scope_name: yaml %q, ScopeName %q", md.ScopeName, ScopeName)
	}
	if md.Status.Class != "exporter" {
		t.Errorf("status.class = %q, want exporter", md.Status.Class)
	}
	if len(md.Status.Codeowners.Active) == 0 {
		t.Error("status.codeowners.active is empty")
	}
	want := map[string]component.StabilityLevel{"logs": LogsStability, "traces": TracesStability}
	got := map[string]component.StabilityLevel{}
	for level, signals := range md.Status.Stability {
		var sl component.StabilityLevel
		if err := sl.UnmarshalText([]byte(level)); err != nil {
			t.Errorf("status.stability: %v", err)
			continue
		}
		for _, s := range signals {
			if _, dup := got[s]; dup {
				t.Errorf("status.stability: %s listed twice", s)
			}
			got[s] = sl
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("stability: yaml %v, package %v", got, want)
	}
}

// TestTelemetryMatchesYAML creates every instrument with a manual reader,
// records one value with each metric's declared attributes, and checks
// the collected metrics against metadata.yaml: the same names, and for
// each the description, unit, kind (monotonic int sum, int gauge, double
// histogram with the declared buckets).
func TestTelemetryMatchesYAML(t *testing.T) {
	md := loadYAML(t)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	set := componenttest.NewNopTelemetrySettings()
	set.MeterProvider = mp
	tb, err := NewTelemetryBuilder(set)
	if err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	attrs := metric.WithAttributes()
	tb.OtelcolOpensearchroutedDocuments.Add(ctx, 1, attrs)
	tb.OtelcolOpensearchroutedDocumentsFallback.Add(ctx, 1, attrs)
	tb.OtelcolOpensearchroutedDocumentsRouted.Add(ctx, 1, attrs)
	tb.OtelcolOpensearchroutedDocumentsSteered.Add(ctx, 1, attrs)
	tb.OtelcolOpensearchroutedSteeringAtRisk.Add(ctx, 1, attrs)
	tb.OtelcolOpensearchroutedBulkRequests.Add(ctx, 1, attrs)
	tb.OtelcolOpensearchroutedBulkRequestDuration.Record(ctx, 0.003, attrs)
	tb.OtelcolOpensearchroutedBulkRequestBytes.Add(ctx, 100, attrs)
	tb.OtelcolOpensearchroutedTopologyRefreshes.Add(ctx, 1, attrs)
	tb.OtelcolOpensearchroutedTraceGroups.Add(ctx, 1, attrs)
	tb.OtelcolOpensearchroutedServiceMapEdges.Add(ctx, 1, attrs)
	reg, err := tb.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		o.ObserveInt64(tb.OtelcolOpensearchroutedNodeWindow, 4)
		o.ObserveInt64(tb.OtelcolOpensearchroutedNodeInflight, 1)
		o.ObserveInt64(tb.OtelcolOpensearchroutedNodeState, 0)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = reg.Unregister() }()

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	collected := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != ScopeName {
			t.Errorf("scope %q, want %q", sm.Scope.Name, ScopeName)
		}
		for _, m := range sm.Metrics {
			collected[m.Name] = m
		}
	}
	if g, w := sortedKeys(collected), sortedKeys(md.Telemetry.Metrics); !reflect.DeepEqual(g, w) {
		t.Fatalf("metric names: package %v, yaml %v", g, w)
	}
	for name, ym := range md.Telemetry.Metrics {
		m := collected[name]
		if !ym.Enabled {
			t.Errorf("%s: disabled in yaml, but the package always creates it", name)
		}
		if m.Description != ym.Description {
			t.Errorf("%s: description\n package %q\n yaml    %q", name, m.Description, ym.Description)
		}
		if m.Unit != ym.Unit {
			t.Errorf("%s: unit: package %q, yaml %q", name, m.Unit, ym.Unit)
		}
		if err := checkKind(m, ym); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func checkKind(m metricdata.Metrics, ym yamlMetric) error {
	kinds := 0
	for _, k := range []bool{ym.Sum != nil, ym.Gauge != nil, ym.Histogram != nil} {
		if k {
			kinds++
		}
	}
	if kinds != 1 {
		return fmt.Errorf("yaml must declare exactly one of sum, gauge, histogram")
	}
	switch data := m.Data.(type) {
	case metricdata.Sum[int64]:
		if ym.Sum == nil || ym.Sum.ValueType != "int" {
			return fmt.Errorf("package has an int sum, yaml does not")
		}
		if data.IsMonotonic != ym.Sum.Monotonic {
			return fmt.Errorf("monotonic: package %v, yaml %v", data.IsMonotonic, ym.Sum.Monotonic)
		}
	case metricdata.Gauge[int64]:
		if ym.Gauge == nil || ym.Gauge.ValueType != "int" || !ym.Gauge.Async {
			return fmt.Errorf("package has an async int gauge, yaml does not")
		}
	case metricdata.Histogram[float64]:
		if ym.Histogram == nil || ym.Histogram.ValueType != "double" {
			return fmt.Errorf("package has a double histogram, yaml does not")
		}
		if len(data.DataPoints) != 1 {
			return fmt.Errorf("%d histogram points", len(data.DataPoints))
		}
		if b := data.DataPoints[0].Bounds; !reflect.DeepEqual(b, ym.Histogram.BucketBoundaries) {
			return fmt.Errorf("bucket boundaries: package %v, yaml %v", b, ym.Histogram.BucketBoundaries)
		}
	default:
		return fmt.Errorf("unexpected data type %T", m.Data)
	}
	return nil
}

// TestAttributesDeclared: every attribute a metric names is declared, every
// declared attribute is used, and the reason attribute's description lists
// every routing reason the exporter can record.
func TestAttributesDeclared(t *testing.T) {
	md := loadYAML(t)
	used := map[string]bool{}
	for name, m := range md.Telemetry.Metrics {
		for _, a := range m.Attributes {
			used[a] = true
			if _, ok := md.Attributes[a]; !ok {
				t.Errorf("%s: attribute %q is not declared under attributes", name, a)
			}
		}
	}
	for a, def := range md.Attributes {
		if !used[a] {
			t.Errorf("attribute %q is declared but no metric uses it", a)
		}
		if def.Type != "string" || def.Description == "" {
			t.Errorf("attribute %q: type %q, description %q", a, def.Type, def.Description)
		}
	}
	reason := md.Attributes["reason"].Description
	for _, r := range routing.Reasons() {
		if r == routing.Routed {
			continue
		}
		if !strings.Contains(reason, r.String()) {
			t.Errorf("attribute reason: description does not list %q", r)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
