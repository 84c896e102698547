package opensearchbackfill

import (
	"context"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/opensearchrouted/opensearchrouted/receiver/opensearchbackfill/internal/metadata"
)

func loadConfig(t *testing.T, name string) (*Config, error) {
	t.Helper()
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sub, err := cm.Sub(component.NewIDWithName(metadata.Type, name).String())
	if err != nil {
		t.Fatal(err)
	}
	cfg := NewFactory().CreateDefaultConfig().(*Config)
	if err := sub.Unmarshal(cfg); err != nil {
		return nil, err
	}
	return cfg, confmap.Validate(cfg)
}

func TestLoadConfigEveryKey(t *testing.T) {
	cfg, err := loadConfig(t, "all")
	if err != nil {
		t.Fatal(err)
	}
	want := createDefaultConfig()
	want.Endpoints = []string{"http://127.0.0.1:9200", "http://127.0.0.1:9201"}
	want.Timeout = 45 * time.Second
	want.Indices = []string{"ss4o_logs-default-namespace", "app-*"}
	want.Query = `{"term":{"severity.text":"ERROR"}}`
	want.TimeField = "observedTimestamp"
	want.StartTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	want.EndTime = time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	want.Sort = `[{"observedTimestamp":"asc"},{"_id":"asc"}]`
	want.PageSize, want.Slices = 500, 4
	want.KeepAlive = 10 * time.Minute
	want.MaxRecreateAttempts, want.DedupWindow = 5, 1000
	want.Mode, want.PollInterval = ModeFollow, time.Minute
	want.MaxDocumentsPerSecond = 2500
	want.FollowLag, want.MaxDedupWindow, want.Preference = 10*time.Second, 5000, "_local"
	want.ReadRetry = ReadRetryConfig{InitialInterval: 2 * time.Second, MaxInterval: time.Minute, MaxElapsedTime: 10 * time.Minute}
	want.OutlierDetection = OutlierConfig{Enabled: true, Ratio: 3, MinExcess: 2 * time.Millisecond, MinRequests: 50,
		Interval: 2 * time.Second, BaseEjectionTime: time.Minute, MaxEjectionTime: 10 * time.Minute, MaxEjectionPercent: 34}
	id := component.MustNewIDWithName("file_storage", "backfill")
	want.Storage = &id
	want.RetryOnFailure.InitialInterval = 2 * time.Second
	want.RetryOnFailure.MaxInterval = time.Minute
	want.RetryOnFailure.MaxElapsedTime = 10 * time.Minute
	want.RetryOnFailure.Multiplier = 2
	want.RetryOnFailure.RandomizationFactor = 0.1
	want.Discovery = DiscoveryConfig{Enabled: false, RefreshInterval: time.Minute}

	if got, w := cfg.Headers.Get("X-Team"); !w || string(got) != "observability" {
		t.Errorf("headers = %v", cfg.Headers)
	}
	cfg.Headers, want.Headers = nil, nil
	if !configEqual(cfg, want) {
		t.Errorf("loaded\n%+v\nwant\n%+v", *cfg, *want)
	}
	q, err := cfg.query()
	if err != nil || string(q) != `{"bool":{"filter":[{"term":{"severity.text":"ERROR"}},{"range":{"observedTimestamp":{"gte":"2026-01-01T00:00:00Z","lt":"2026-02-01T00:00:00Z"}}}]}}` {
		t.Errorf("query = %s, %v", q, err)
	}
}

func configEqual(a, b *Config) bool { return reflect.DeepEqual(a, b) }

func TestLoadConfigDefaults(t *testing.T) {
	cfg, err := loadConfig(t, "minimal")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.PageSize != 1000 || cfg.Slices != 1 || cfg.KeepAlive != 5*time.Minute || cfg.MaxRecreateAttempts != 3 ||
		cfg.DedupWindow != 32768 || cfg.Mode != ModeOnce || cfg.Signal != SignalTraces || cfg.MaxDocumentsPerSecond != 0 ||
		cfg.Storage != nil || !cfg.Discovery.Enabled || cfg.TimeField != "@timestamp" || cfg.Timeout != time.Minute ||
		!cfg.RetryOnFailure.Enabled || cfg.RetryOnFailure.MaxElapsedTime != 0 {
		t.Errorf("defaults: %+v", cfg)
	}
	// The signal must match the pipeline.
	if _, err := NewFactory().CreateLogs(context.Background(), receivertest.NewNopSettings(metadata.Type), cfg, nil); err == nil ||
		!strings.Contains(err.Error(), "signal: the receiver is configured for traces but is used in a logs pipeline") {
		t.Errorf("err = %v", err)
	}
}

func TestLoadConfigOtelV1(t *testing.T) {
	cfg, err := loadConfig(t, "otelv1")
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Mapping.Mode != MappingOtelV1 || cfg.Signal != SignalTraces {
		t.Fatalf("mapping %+v, signal %s", cfg.Mapping, cfg.Signal)
	}
	if def := createDefaultConfig(); def.Mapping.Mode != MappingSS4O {
		t.Fatalf("default mapping.mode = %q", def.Mapping.Mode)
	}
}

// Bad input is refused when the configuration is loaded, naming the key.
func TestConfigErrorsNameTheKey(t *testing.T) {
	for name, wants := range map[string][]string{
		"bad_query":     {"query: must be a JSON object"},
		"no_tiebreaker": {"sort: has no tiebreaker: add _id"},
		"unstable_sort": {"sort: _doc is not stable across PITs"},
		"bad_time":      {"start_time", "yesterday"},
		"bad_range":     {"end_time: must be after start_time"},
		"bad_mapping":   {`mapping.mode: "jaeger" is not one of ss4o, otel-v1`},
		"otelv1_logs":   {`mapping.mode: "otel-v1" is a layout of span documents; it needs signal: traces, not "logs"`},
		"bad_values": {
			`endpoints: "ftp://x" is not an http:// or https:// URL`,
			"indices: at least one index",
			"page_size: must be between 1 and 10000",
			"slices: must be between 1 and 1024",
			`signal: "metrics" is not one of logs, traces`,
			`mode: "sometimes" is not one of once, follow`,
			"max_documents_per_second: must not be negative",
		},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadConfig(t, name)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
