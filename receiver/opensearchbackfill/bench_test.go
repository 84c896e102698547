package opensearchbackfill

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/opensearchrouted/opensearchrouted/receiver/opensearchbackfill/internal/metadata"
)

// externalEmulator runs testbed/cmd/ossim in its own process, so that the
// allocations the benchmark reports are the receiver's alone.
func externalEmulator(b *testing.B, nodes int) []string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "ossim")
	build := exec.Command("go", "build", "-o", bin, "github.com/opensearchrouted/opensearchrouted/testbed/cmd/ossim")
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("building ossim: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "--nodes", fmt.Sprint(nodes), "--port", "0", "--no-hop-latency")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	sc := bufio.NewScanner(out)
	var urls []string
	for len(urls) < nodes && sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 {
			urls = append(urls, f[1])
		}
	}
	if len(urls) != nodes {
		b.Fatalf("ossim printed %d node URLs", len(urls))
	}
	go func() { // drain
		for sc.Scan() {
		}
	}()
	return urls
}

// BenchmarkBackfill reads an index of 2,000 documents (3 shards, 1
// replica, 3 nodes, in another process) with 1 and 4 slices, with no added
// latency and with 1 ms (and 5 ms) added to every request the emulator
// serves. One op
// is a whole backfill: start, read every slice to its end, shutdown.
func BenchmarkBackfill(b *testing.B) {
	const docs = 2000
	urls := externalEmulator(b, 3)
	createIndex(b, urls[0], "bench", 3, 1)
	httpDo(b, "GET", urls[0]+"/_cluster/health/bench?wait_for_status=green&timeout=10s", "")
	seedForeign(b, urls[0], "bench", docs)
	for _, lat := range []time.Duration{0, time.Millisecond, 5 * time.Millisecond} {
		for i := range urls {
			st, body := httpDo(b, "POST", fmt.Sprintf("%s/_ossim/nodes/%d/latency?mean=%s&jitter=0", urls[0], i, lat), "")
			if st != 200 {
				b.Fatalf("latency: %d %s", st, body)
			}
		}
		for _, slices := range []int{1, 4} {
			b.Run(fmt.Sprintf("latency=%v/slices=%d", lat, slices), func(b *testing.B) {
				cfg := testConfig(urls, "bench")
				cfg.Slices = slices
				cfg.PageSize = 50
				// The emulator decodes every _source to sort on @timestamp
				// (a real server reads doc values), which would measure the
				// emulator; _id alone keeps its work small.
				cfg.Sort = `[{"_id":"asc"}]`
				cfg.Discovery.Enabled = false // the read path, not discovery
				sink := consumertest.NewNop()
				var ms0, ms1 runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&ms0)
				b.ResetTimer()
				start := time.Now()
				for range b.N {
					h := mustStartBench(b, cfg, sink)
					select {
					case <-h.r.done:
					case <-time.After(2 * time.Minute):
						b.Fatal("backfill did not finish")
					}
					if got := h.r.Stats().HitsEmitted; got != docs {
						b.Fatalf("read %d of %d", got, docs)
					}
					if err := h.r.Shutdown(context.Background()); err != nil {
						b.Fatal(err)
					}
				}
				elapsed := time.Since(start)
				b.StopTimer()
				runtime.ReadMemStats(&ms1)
				total := float64(docs) * float64(b.N)
				b.ReportMetric(total/elapsed.Seconds(), "docs/s")
				b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/total, "allocs/doc")
				b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/total, "B/doc")
			})
		}
	}
}

// mustStartBench starts a receiver without the test cleanup (each op shuts
// its receiver down itself).
func mustStartBench(b *testing.B, cfg *Config, next consumer.Logs) *harness {
	b.Helper()
	set := receivertest.NewNopSettings(metadata.Type)
	r, err := NewFactory().CreateLogs(context.Background(), set, cfg, next)
	if err != nil {
		b.Fatal(err)
	}
	h := &harness{r: r.(*backfillReceiver), host: &testHost{}}
	if err := r.Start(context.Background(), h.host); err != nil {
		b.Fatal(err)
	}
	return h
}
