package opensearchrouted

import (
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configcompression"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/opensearchrouted/opensearchrouted/exporter/opensearchrouted/internal/metadata"
)

// loadTestdataConfig unmarshals testdata/config.yaml's entry
// opensearchrouted/<name> ("" for the unnamed one) over the defaults and
// validates it as the collector does.
func loadTestdataConfig(t *testing.T, name string) (*Config, error) {
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

func TestConfigStruct(t *testing.T) {
	if err := componenttest.CheckConfigStruct(NewFactory().CreateDefaultConfig()); err != nil {
		t.Fatal(err)
	}
}

func TestLoadConfigMinimal(t *testing.T) {
	cfg, err := loadTestdataConfig(t, "")
	if err != nil {
		t.Fatal(err)
	}
	want := createDefaultConfig()
	want.Endpoint = "http://127.0.0.1:9200"
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("loaded\n%+v\nwant\n%+v", *cfg, *want)
	}
	if got := cfg.seeds(); len(got) != 1 || got[0] != "http://127.0.0.1:9200" {
		t.Errorf("seeds = %v", got)
	}
	// Net/http's own default (2) would close most connections of
	// concurrent calls after one request.
	// A total cap (the collector's default is 100) would undercut the
	// per-node number from the fourth node on.
	if !cfg.Keepalive.HasValue() || cfg.Keepalive.Get().MaxIdleConnsPerHost != defaultIdleConnsPerHost || cfg.Keepalive.Get().MaxIdleConns != 0 {
		t.Errorf("keepalive = %+v, want max_idle_conns_per_host %d, max_idle_conns 0", cfg.Keepalive, defaultIdleConnsPerHost)
	}
}

func TestLoadConfigEveryKey(t *testing.T) {
	cfg, err := loadTestdataConfig(t, "all")
	if err != nil {
		t.Fatal(err)
	}
	want := createDefaultConfig()
	want.Endpoints = []string{"http://127.0.0.1:9200", "http://127.0.0.1:9201"}
	want.Timeout = 45 * time.Second
	want.Username, want.Password = "exporter", "exporter-password"
	want.Compression = configcompression.TypeGzip
	want.TLS.Insecure = true
	ka := *want.Keepalive.Get()
	ka.MaxIdleConnsPerHost = 8
	want.Keepalive = configoptional.Some(ka)
	q := exporterhelper.NewDefaultQueueConfig()
	q.NumConsumers = 4
	q.QueueSize = 2000
	q.Sizer = exporterhelper.RequestSizerTypeRequests
	q.BlockOnOverflow = true
	b := exporterhelper.NewDefaultBatchConfig()
	b.FlushTimeout = 500 * time.Millisecond
	b.Sizer = exporterhelper.RequestSizerTypeItems
	b.MinSize = 1000
	b.MaxSize = 5000
	q.Batch = configoptional.Some(b)
	want.QueueConfig = configoptional.Some(q)
	want.RetryConfig.Enabled = true
	want.RetryConfig.InitialInterval = time.Second
	want.RetryConfig.MaxInterval = 10 * time.Second
	want.RetryConfig.MaxElapsedTime = 2 * time.Minute
	want.Dataset, want.Namespace = "checkout", "prod"
	want.LogsIndex, want.TracesIndex = "app-logs", "app-traces"
	want.InstallTemplates = true
	want.DocumentID, want.DocumentIDAttribute = DocumentIDAttribute, "event.id"
	want.RoutingAttribute = "tenant.id"
	want.Routing = RoutingConfig{
		Enabled:            false,
		RefreshInterval:    time.Minute,
		MinRefreshInterval: 2 * time.Second,
		NodeStatsInterval:  0,
		WindowCeiling:      16,
		DegradedDetection: DegradedDetectionConfig{Enabled: true, Ratio: 3, MinExcess: 20 * time.Microsecond, MinRequests: 50,
			MinHealthyNodes: 3, MaxDegradedPercent: 25, Interval: 2 * time.Second, BaseEjectionTime: time.Minute,
			MaxEjectionTime: 10 * time.Minute, NormalizeBy: NormalizeByKiB},
		Steering: SteeringConfig{Enabled: false},
	}
	want.Bulk = BulkConfig{MaxBytes: 1 << 20, MaxAttempts: 3, RetryBackoff: 250 * time.Millisecond, Transport: TransportConfighttp, CallTimeout: 3 * time.Minute}
	want.DeadLetter = DeadLetterConfig{Enabled: true, LogsIndex: "refused-logs", TracesIndex: "refused-traces"}
	want.Mapping = MappingConfig{Mode: MappingOtelV1,
		TraceGroups: TraceGroupsConfig{CacheSize: 5000, CacheTTL: 2 * time.Minute, MaxPending: 20000, FixupInterval: 2 * time.Second, FixupAttempts: 3},
		ServiceMap:  ServiceMapConfig{Enabled: false, CacheSize: 500}}

	if v, ok := cfg.Headers.Get("X-Team"); !ok || string(v) != "observability" {
		t.Errorf("headers = %v, want X-Team: observability", cfg.Headers)
	}
	cfg.Headers, want.Headers = nil, nil
	if !reflect.DeepEqual(cfg, want) {
		t.Errorf("loaded\n%+v\nwant\n%+v", *cfg, *want)
	}
}

// TestTestdataSetsEveryKey fails when Config gains a key that the "all"
// entry of testdata/config.yaml (and so the documentation, which the
// README test checks the same way) does not set.
func TestTestdataSetsEveryKey(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	sub, err := cm.Sub("opensearchrouted/all")
	if err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	for _, k := range sub.AllKeys() {
		set[k] = true
		for i := strings.LastIndexByte(k, confmap.KeyDelimiter[0]); i > 0; i = strings.LastIndexByte(k[:i], confmap.KeyDelimiter[0]) {
			set[k[:i]] = true
		}
	}
	var missing []string
	for _, k := range ownKeys(reflect.TypeFor[Config](), "") {
		if !set[k] {
			missing = append(missing, k)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("testdata/config.yaml opensearchrouted/all does not set: %v", missing)
	}
}

// ownKeys lists the mapstructure keys of the exporter's own fields (the
// squashed confighttp.ClientConfig and the collector's queue and retry
// structs are the collector's, so only their top-level key is listed).
func ownKeys(t reflect.Type, prefix string) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("mapstructure")
		if tag == "" || tag == "-" || strings.Contains(tag, "squash") {
			continue
		}
		key := prefix + tag
		out = append(out, key)
		if f.Type.Kind() == reflect.Struct && strings.HasPrefix(f.Type.PkgPath(), "github.com/opensearchrouted/") {
			out = append(out, ownKeys(f.Type, key+"::")...)
		}
	}
	return out
}

func TestLoadConfigInvalid(t *testing.T) {
	for name, want := range map[string][]string{
		"no_endpoint":        {"endpoints: at least one endpoint is required"},
		"bad_document_id":    {`document_id: "uuid" is not one of`},
		"bad_mapping":        {`mapping.mode: "jaeger" is not one of ss4o, otel-v1`, "mapping.trace_groups.cache_size: must be at least 1", "mapping.trace_groups.fixup_interval: must be positive"},
		"bad_dataset":        {"dataset:", "must not contain '-'"},
		"bad_bulk":           {"bulk.max_bytes: must be at least 1024", "bulk.max_attempts: must be at least 1", `bulk.transport: "fasthttp" is not one of auto, confighttp`},
		"credentials_in_url": {"carries credentials in the URL"},
		"bad_dead_letter":    {"dead_letter.logs_index:", "dead_letter.traces_index: must not be empty when dead_letter.enabled is true"},
		"bad_degraded": {"routing.degraded_detection.ratio: must be above 1, got 0.5", "routing.degraded_detection.min_requests: must be at least 1",
			"routing.degraded_detection.max_degraded_percent: must be between 1 and 100, got 200",
			"routing.degraded_detection.max_ejection_time: 10s is shorter than base_ejection_time (1m0s)",
			`routing.degraded_detection.normalize_by: "bytes" is not one of item, kib`},
		"call_timeout_short": {"bulk.call_timeout: 30s is shorter than timeout (1m30s, one HTTP request)"},
		"call_timeout_zero":  {"bulk.call_timeout: must be positive"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := loadTestdataConfig(t, name)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error leaks the password: %q", err)
			}
		})
	}
}
