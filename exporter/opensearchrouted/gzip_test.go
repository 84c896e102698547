package opensearchrouted

import (
	"context"
	"testing"

	"go.opentelemetry.io/collector/config/configopaque"

	"github.com/opensearchrouted/opensearchrouted/testbed/ossim"
)

// gzipAnswers exports with the user header Accept-Encoding: gzip, with each
// bulk transport, to base (where the cluster answers gzip-compressed):
// every record stored exactly once, none retried, routed once the topology
// (whose discovery answers are compressed too) is known.
func gzipAnswers(t *testing.T, base string, endpoints []string) {
	for k, tr := range []string{TransportAuto, TransportConfighttp} {
		t.Run(tr, func(t *testing.T) {
			index := "logs-gzip-" + tr
			createIndex(t, base, index, 3, 0)
			cfg := testConfig(endpoints)
			cfg.LogsIndex = index
			cfg.Bulk.Transport = tr
			cfg.Headers = configopaque.MapList{{Name: "Accept-Encoding", Value: "gzip"}}
			e, reader := startExporter(t, cfg, signalLogs)
			from := 10_000 * k
			if err := e.pushLogs(context.Background(), makeLogs(from, 100)); err != nil {
				t.Fatal(err)
			}
			waitRouted(t, e, index)
			if err := e.pushLogs(context.Background(), makeLogs(from+100, 2000)); err != nil {
				t.Fatal(err)
			}
			if got := count(t, base, index); got != 2100 {
				t.Fatalf("stored %d, want 2100", got)
			}
			if r := sumMetric(t, reader, "otelcol.opensearchrouted.documents", map[string]string{"outcome": "retried"}); r != 0 {
				t.Fatalf("%d documents retried", r)
			}
			if d := sumMetric(t, reader, "otelcol.opensearchrouted.documents.routed", map[string]string{"path": "direct"}); d != 2000 {
				t.Fatalf("%d documents direct, want 2000", d)
			}
		})
	}
}

func TestGzipAnswersEmulator(t *testing.T) {
	sim := ossim.StartT(t, ossim.Options{Nodes: 3, NoHopLatency: true})
	gzipAnswers(t, sim.Addr(0), sim.Addrs())
}
