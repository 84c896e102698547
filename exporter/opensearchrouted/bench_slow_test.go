package opensearchrouted

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/opensearchrouted/opensearchrouted/testbed/ossim"
)

// slowVariants are the exporter configurations BenchmarkSlowNode compares
// with the healthy baseline: one line each, a name and what it changes in
// the default configuration.
var slowVariants = []struct {
	name string
	cfg  func(*Config)
}{
	{"round_robin", func(c *Config) { c.Routing.Enabled = false }},
	{"routed", func(c *Config) { c.Routing.Steering.Enabled = false }},
	{"steered", func(c *Config) { c.Routing.Steering.Enabled = true }},
}

// slowDegradations are the faults put on one node of the emulator.
var slowDegradations = []struct {
	name  string
	apply func(*ossim.Cluster, int) error
}{
	{"none", func(*ossim.Cluster, int) error { return nil }},
	{"service_x4", func(c *ossim.Cluster, i int) error { return c.SetSlowness(i, 4) }},
	{"latency_8ms", func(c *ossim.Cluster, i int) error { return c.SetLatency(i, 8*time.Millisecond, 2*time.Millisecond) }},
}

// slowShapes are the loads: calls of records records from each of the
// queue's consumers, each starting a call at most every pace.
// A benchmark iteration is rounds calls per consumer.
var slowShapes = []struct {
	name    string
	records int
	pace    time.Duration
	rounds  int
}{
	// At saturation the queue's batcher flushes at min_size (8,192):
	// every consumer pushes back to back.
	{"saturated", 8192, 0, 1},
	// Low volume: the 200 ms flush fires with what has come in, 200
	// records per consumer; each consumer pushes once per 200 ms.
	{"small_calls", 200, 200 * time.Millisecond, 5},
}

// slowNode is the node the degradations are put on.
const slowNode = 2

// BenchmarkSlowNode measures what one degraded node costs: the emulator
// with 6 nodes (default hop latency, the calibrated service time
// ossim.CalibratedService), an index of 6 primaries + 1 replica, and
// num_consumers (the default sending queue's, 10) concurrent calls, for
// each load shape, each degradation of one node and each variant, plus the
// healthy baseline (routed, no degradation) of each shape. Each cell
// reports records/s, the p50 and p99 of one push call, and their ratios
// to the baseline of the same run (x_rec/s, x_p50, x_p99). One iteration
// is one call per consumer at saturation, five (one second) with small
// calls.
//
//	go test -run '^$' -bench SlowNode -benchtime 5x ./exporter/opensearchrouted/
func BenchmarkSlowNode(b *testing.B) {
	type result struct{ recPerSec, p50, p99 float64 }
	for _, shape := range slowShapes {
		var healthy result
		run := func(b *testing.B, variant func(*Config), degrade func(*ossim.Cluster, int) error, baseline bool) {
			opts := ossim.Options{Nodes: 6, DefaultShards: 6, DefaultReplicas: 1}
			opts.ServiceBase, opts.ServicePerItem = ossim.CalibratedService()
			sim := ossim.StartT(b, opts)
			cfg := createDefaultConfig()
			cfg.Endpoints = sim.Addrs()
			cfg.LogsIndex = "bench-slow"
			variant(cfg)
			consumers := cfg.QueueConfig.Get().NumConsumers
			e, _ := startExporter(b, cfg, signalLogs)
			ctx := context.Background()
			if err := e.pushLogs(ctx, makeLogs(0, 64)); err != nil {
				b.Fatal(err)
			}
			if cfg.Routing.Enabled {
				waitRouted(b, e, cfg.LogsIndex)
			}
			if err := degrade(sim, slowNode); err != nil {
				b.Fatal(err)
			}
			// Each consumer owns one batch and gives its records new
			// content (hence new ids) and the current time before each
			// call, as a live pipeline's records have.
			batches := make([]plog.Logs, consumers)
			for w := range batches {
				batches[w] = makeLogs(0, shape.records)
			}
			var seq atomic.Int64
			seq.Store(1 << 20)
			// A degraded node is measured once the detector has had the
			// samples to mark it (it never does for a fault it does not
			// judge degraded): the cells compare the steady state.
			if !baseline && cfg.Routing.Enabled {
				warmDegraded(b, e, sim, batches[0], &seq)
			}
			lat := make([][]time.Duration, consumers)
			var wg sync.WaitGroup
			b.ResetTimer()
			cpu0 := processCPU()
			busy0 := sim.NodeStats(slowNode).ServiceNanos
			start := time.Now()
			for w := 0; w < consumers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					next := time.Now()
					for i := 0; i < b.N*shape.rounds; i++ {
						if d := time.Until(next); d > 0 {
							time.Sleep(d)
						}
						next = time.Now().Add(shape.pace)
						renumber(batches[w], &seq)
						t0 := time.Now()
						if err := e.pushLogs(ctx, batches[w]); err != nil {
							b.Error(err)
							return
						}
						lat[w] = append(lat[w], time.Since(t0))
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			cpu := processCPU() - cpu0
			busy := sim.NodeStats(slowNode).ServiceNanos - busy0
			b.StopTimer()
			all := slices.Concat(lat...)
			if len(all) == 0 {
				b.Fatal("no call completed")
			}
			slices.Sort(all)
			r := result{
				recPerSec: float64(len(all)*shape.records) / elapsed.Seconds(),
				p50:       float64(all[len(all)/2].Microseconds()) / 1000,
				p99:       float64(all[(len(all)*99)/100].Microseconds()) / 1000,
			}
			b.ReportMetric(r.recPerSec, "rec/s")
			b.ReportMetric(r.p50, "p50-ms")
			b.ReportMetric(r.p99, "p99-ms")
			// Process CPU (exporter and emulator) per record: at saturation
			// cpu-us/rec × rec/s near the cores the process got means
			// CPU-bound, not server-bound.
			b.ReportMetric(float64(cpu)/1000/float64(len(all)*shape.records), "cpu-us/rec")
			// How busy the (possibly degraded) node's write pool was: near
			// 1, that node sets the pace.
			busyFrac := float64(busy) / float64(elapsed) / float64(sim.Options().WriteThreads)
			b.ReportMetric(busyFrac, "busy-slow")
			// The rate at which that node's pool would be full: what the
			// cluster can take whatever the client's CPU (service time
			// bound; fixed latency does not show here).
			if busyFrac > 0 {
				b.ReportMetric(r.recPerSec/busyFrac, "ceiling-rec/s")
			}
			if baseline {
				healthy = r
			}
			if healthy.recPerSec > 0 {
				b.ReportMetric(r.recPerSec/healthy.recPerSec, "x_rec/s")
				b.ReportMetric(r.p50/healthy.p50, "x_p50")
				b.ReportMetric(r.p99/healthy.p99, "x_p99")
			}
		}
		b.Run(shape.name+"/healthy", func(b *testing.B) {
			run(b, func(*Config) {}, slowDegradations[0].apply, true)
		})
		for _, d := range slowDegradations {
			for _, v := range slowVariants {
				b.Run(shape.name+"/"+d.name+"/"+v.name, func(b *testing.B) {
					run(b, v.cfg, d.apply, false)
				})
			}
		}
	}
}

// warmDegraded pushes ld, renumbered, until the router marks the
// emulator's slowNode degraded, for at most 20 s.
func warmDegraded(b *testing.B, e *osExporter, sim *ossim.Cluster, ld plog.Logs, seq *atomic.Int64) {
	start := time.Now()
	marked := func() bool {
		for _, n := range e.router.Topology().Nodes {
			if n.URL() == sim.Addr(slowNode) {
				return n.Degraded()
			}
		}
		return false
	}
	for !marked() && time.Since(start) < 20*time.Second {
		renumber(ld, seq)
		if err := e.pushLogs(context.Background(), ld); err != nil {
			b.Fatal(err)
		}
	}
}

// renumber gives every record of ld a new seq attribute and the current
// time (new content, so a new content id).
func renumber(ld plog.Logs, seq *atomic.Int64) {
	now := pcommon.NewTimestampFromTime(time.Now())
	rls := ld.ResourceLogs()
	for i := 0; i < rls.Len(); i++ {
		sls := rls.At(i).ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			lrs := sls.At(j).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				lr := lrs.At(k)
				lr.Attributes().PutInt("seq", seq.Add(1))
				lr.SetTimestamp(now)
				lr.SetObservedTimestamp(now)
			}
		}
	}
}
