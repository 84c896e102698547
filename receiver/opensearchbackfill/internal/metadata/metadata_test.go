package metadata

import (
	"context"
	"os"
	"sort"
	"testing"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.yaml.in/yaml/v3"
)

type yamlMetric struct {
	Enabled     bool     `yaml:"enabled"`
	Description string   `yaml:"description"`
	Unit        string   `yaml:"unit"`
	Attributes  []string `yaml:"attributes"`
	Sum         *struct {
		ValueType string `yaml:"value_type"`
		Monotonic bool   `yaml:"monotonic"`
		Async     bool   `yaml:"async"`
	} `yaml:"sum"`
}

type yamlMetadata struct {
	Type      string `yaml:"type"`
	ScopeName string `yaml:"scope_name"`
	Status    struct {
		Class     string              `yaml:"class"`
		Stability map[string][]string `yaml:"stability"`
	} `yaml:"status"`
	Attributes map[string]struct {
		Type string `yaml:"type"`
	} `yaml:"attributes"`
	Telemetry struct {
		Metrics map[string]yamlMetric `yaml:"metrics"`
	} `yaml:"telemetry"`
}

func readYAML(t *testing.T) yamlMetadata {
	t.Helper()
	b, err := os.ReadFile("../../metadata.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var md yamlMetadata
	if err := yaml.Unmarshal(b, &md); err != nil {
		t.Fatal(err)
	}
	return md
}

func TestStatusMatchesYAML(t *testing.T) {
	md := readYAML(t)
	if md.Type != Type.String() || md.ScopeName != ScopeName || md.Status.Class != "receiver" {
		t.Errorf("type %q scope %q class %q", md.Type, md.ScopeName, md.Status.Class)
	}
	want := map[string]component.StabilityLevel{"logs": LogsStability, "traces": TracesStability}
	got := map[string]string{}
	for level, sigs := range md.Status.Stability {
		for _, s := range sigs {
			got[s] = level
		}
	}
	for sig, lvl := range want {
		if got[sig] != lvl.String() && got[sig] != lowercase(lvl.String()) {
			t.Errorf("%s stability: yaml %q, code %q", sig, got[sig], lvl)
		}
	}
	if len(got) != len(want) {
		t.Errorf("yaml signals %v", got)
	}
}

func lowercase(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 32
		}
	}
	return string(b)
}

// Every instrument the builder creates is in the YAML with the same
// description, unit and kind, and every YAML metric is created.
func TestTelemetryMatchesYAML(t *testing.T) {
	md := readYAML(t)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	set := componenttest.NewNopTelemetrySettings()
	set.MeterProvider = mp
	tb, err := NewTelemetryBuilder(set)
	if err != nil {
		t.Fatal(err)
	}
	async := map[string]bool{}
	reg, err := tb.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, c := range []metric.Int64ObservableCounter{
			tb.OtelcolOpensearchbackfillPitsOpened, tb.OtelcolOpensearchbackfillPitsRecreated,
			tb.OtelcolOpensearchbackfillPitsClosed, tb.OtelcolOpensearchbackfillHits,
			tb.OtelcolOpensearchbackfillHitsDeduplicated, tb.OtelcolOpensearchbackfillHitsOutOfOrder,
			tb.OtelcolOpensearchbackfillPages, tb.OtelcolOpensearchbackfillSearchRetries,
			tb.OtelcolOpensearchbackfillShardFailures,
		} {
			o.ObserveInt64(c, 1)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = reg.Unregister() }()
	ctx := context.Background()
	tb.OtelcolOpensearchbackfillDocumentsSkipped.Add(ctx, 1)
	tb.OtelcolOpensearchbackfillConsumerRetries.Add(ctx, 1)
	tb.OtelcolOpensearchbackfillCheckpoints.Add(ctx, 1)

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	var created []string
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != ScopeName {
			t.Errorf("scope %q", sm.Scope.Name)
		}
		for _, m := range sm.Metrics {
			created = append(created, m.Name)
			ym, ok := md.Telemetry.Metrics[m.Name]
			if !ok {
				t.Errorf("%s is created but not in metadata.yaml", m.Name)
				continue
			}
			if ym.Description != m.Description || ym.Unit != m.Unit {
				t.Errorf("%s: yaml %q %q, code %q %q", m.Name, ym.Description, ym.Unit, m.Description, m.Unit)
			}
			sum, ok := m.Data.(metricdata.Sum[int64])
			if ym.Sum == nil || ym.Sum.ValueType != "int" || !ok || sum.IsMonotonic != ym.Sum.Monotonic {
				t.Errorf("%s: kind differs from the yaml (%T)", m.Name, m.Data)
			}
			if ym.Sum != nil {
				async[m.Name] = ym.Sum.Async
			}
			for _, a := range ym.Attributes {
				if _, ok := md.Attributes[a]; !ok {
					t.Errorf("%s: attribute %q not declared", m.Name, a)
				}
			}
		}
	}
	sort.Strings(created)
	if len(created) != len(md.Telemetry.Metrics) {
		t.Errorf("created %d metrics %v, yaml has %d", len(created), created, len(md.Telemetry.Metrics))
	}
	// The async ones are exactly those observed through RegisterCallback.
	for _, name := range []string{"otelcol.opensearchbackfill.documents.skipped", "otelcol.opensearchbackfill.consumer.retries", "otelcol.opensearchbackfill.checkpoints"} {
		if async[name] {
			t.Errorf("%s is synchronous in code, async in the yaml", name)
		}
	}
	if n := countTrue(async); n != 9 {
		t.Errorf("%d async metrics in the yaml, code has 9", n)
	}
}

func countTrue(m map[string]bool) int {
	n := 0
	for _, v := range m {
		if v {
			n++
		}
	}
	return n
}
