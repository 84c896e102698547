package demo

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/opensearchrouted/opensearchrouted/testbed/ossim"
)

// resendConfig is the collector of TestResendMergedByTheBatcher: a batch
// that only the 2s flush timeout closes, so that requests sent within 2s
// of each other reach the exporter as one call.
const resendConfig = `
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: ${env:OSR_OTLP_GRPC}
exporters:
  opensearchrouted:
    endpoint: ${env:OSR_OPENSEARCH_ENDPOINT}
    dataset: ${env:OSR_DATASET}
    install_templates: true
    sending_queue:
      enabled: true
      num_consumers: 2
      batch:
        flush_timeout: 2s
        min_size: 100000
        max_size: 200000
extensions:
  health_check:
    endpoint: 127.0.0.1:${env:OSR_HEALTH_PORT}
service:
  extensions: [health_check]
  telemetry:
    logs:
      level: warn
    metrics:
      level: normal
      readers:
        - pull:
            exporter:
              prometheus:
                host: 127.0.0.1
                port: ${env:OSR_METRICS_PORT}
  pipelines:
    logs:
      receivers: [otlp]
      exporters: [opensearchrouted]
`

// TestResendMergedByTheBatcher: an OTLP client resends a request (as it
// does when the answer is lost) within the batcher's flush window, so the
// collector's OTLP receiver and batcher hand both copies to the exporter
// in one call. The records are stored once, the copies counted as
// duplicates; records repeated within the request are all stored; and the
// collector's own counters report every record sent, none failed.
func TestResendMergedByTheBatcher(t *testing.T) {
	_, bin := collectorBinary(t)
	sim := ossim.StartT(t, ossim.Options{Nodes: 3})
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "collector.yaml")
	if err := os.WriteFile(cfgPath, []byte(resendConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	ports := make([]int, 3)
	for i := range ports {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		ports[i] = p
	}
	o := Options{Collector: bin, Config: cfgPath, OTLPAddr: hostPort(ports[0]), MetricsPort: ports[1], HealthPort: ports[2], LogDir: dir}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	col, err := startCollector(ctx, o, sim.Addrs()[:1], true, "resend")
	if err != nil {
		t.Fatal(err)
	}
	defer col.stop()
	if err := col.waitHealthy(ctx, o.HealthPort, 60*time.Second); err != nil {
		t.Fatal(err)
	}

	// 200 records in 4 resources, the first 5 of each resource twice within it.
	ld := makeLogs(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), 0, 200)
	for r := 0; r < ld.ResourceLogs().Len(); r++ {
		lrs := ld.ResourceLogs().At(r).ScopeLogs().At(0).LogRecords()
		for k := 0; k < 5; k++ {
			lrs.At(k).CopyTo(lrs.AppendEmpty())
		}
	}
	want := int64(ld.LogRecordCount())
	conn, err := grpc.NewClient(o.OTLPAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := plogotlp.NewGRPCClient(conn)
	req := plogotlp.NewExportRequestFromLogs(ld)
	sentAt := time.Now()
	for k := 0; k < 2; k++ {
		if _, err := client.Export(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	if time.Since(sentAt) > time.Second {
		t.Fatalf("the two sends took %v: not within one flush window", time.Since(sentAt))
	}
	const sent = "otelcol_exporter_sent_log_records"
	var m Metrics
	for deadline := time.Now().Add(30 * time.Second); ; {
		if m, err = scrape(ctx, o.MetricsPort); err == nil && m.Sum(sent, nil) >= float64(2*want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the collector reports %v records sent, want %d (%v)", m.Sum(sent, nil), 2*want, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got, err := countDocs(ctx, sim.Addr(0), "ss4o_logs-resend-namespace"); err != nil || got != want {
		t.Fatalf("stored %d, want %d (%v)", got, want, err)
	}
	if f := m.Sum("otelcol_exporter_send_failed_log_records", nil); f != 0 {
		t.Fatalf("send_failed %v", f)
	}
	if d := m.Sum("otelcol_opensearchrouted_documents", map[string]string{"outcome": "duplicate"}); d != float64(want) {
		t.Fatalf("%v counted duplicate, want %d (the resent copy)", d, want)
	}
	if c := m.Sum("otelcol_exporter_sent_log_records", nil); c != float64(2*want) {
		t.Fatalf("sent %v, want %d", c, 2*want)
	}
}
