package opensearchrouted

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/opensearchrouted/opensearchrouted/exporter/opensearchrouted/internal/metadata"
)

// TestCollectorCountsTheTruth: exporterhelper (v0.165.0) counts a call's
// records as sent when the push returns nil and all of them as failed when
// it returns an error (after its retries), whatever the error names. So a
// call whose records are all stored, some in the unmapped shape, some in
// the dead-letter index, some after in-call retries, must return nil:
// otelcol_exporter_sent_log_records counts every record and
// send_failed none. Only records neither stored nor dead-lettered make it
// return an error, which exporterhelper then counts for the whole call.
func TestCollectorCountsTheTruth(t *testing.T) {
	fs := &shapeServer{stored: map[string]string{}}
	srv := httptest.NewServer(fs)
	defer srv.Close()
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer func() { _ = mp.Shutdown(context.Background()) }()
	set := exportertest.NewNopSettings(metadata.Type)
	set.MeterProvider = mp
	cfg := testConfig([]string{srv.URL})
	cfg.LogsIndex = "x"
	cfg.QueueConfig = configoptional.None[exporterhelper.QueueBatchConfig]()
	cfg.RetryConfig.InitialInterval = 10 * time.Millisecond
	cfg.RetryConfig.MaxElapsedTime = time.Second
	e, err := NewFactory().CreateLogs(context.Background(), set, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Shutdown(context.Background()) }()

	sent := func() (int64, int64) {
		return sumMetric(t, reader, "otelcol_exporter_sent_log_records", nil), sumMetric(t, reader, "otelcol_exporter_send_failed_log_records", nil)
	}
	if err := e.ConsumeLogs(context.Background(), badLogs(0, 30)); err != nil {
		t.Fatal(err)
	}
	fs.mu.Lock()
	fs.refuseUnmapped = true
	fs.mu.Unlock()
	if err := e.ConsumeLogs(context.Background(), badLogs(100, 30)); err != nil {
		t.Fatal(err)
	}
	if s, f := sent(); s != 60 || f != 0 {
		t.Fatalf("sent %d, send_failed %d; want 60, 0 (10 unmapped, 10 dead-lettered)", s, f)
	}
	if n := sumMetric(t, reader, "otelcol.opensearchrouted.documents", map[string]string{"outcome": "dead_lettered"}); n != 10 {
		t.Fatalf("dead_lettered %d", n)
	}
	fs.mu.Lock()
	fs.refuseDeadLetter = true
	fs.mu.Unlock()
	if err := e.ConsumeLogs(context.Background(), badLogs(200, 30)); err == nil {
		t.Fatal("records neither stored nor dead-lettered, and no error")
	}
	if s, f := sent(); s != 60 || f != 30 {
		t.Fatalf("sent %d, send_failed %d; want 60, 30 (exporterhelper counts the whole call)", s, f)
	}
	if n := sumMetric(t, reader, "otelcol.opensearchrouted.documents", map[string]string{"outcome": "failed"}); n != 10 {
		t.Fatalf("the exporter's own count of failed records: %d, want 10", n)
	}
}
