package opensearchrouted

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
)

// BenchmarkPushLogsSteering is the push path of BenchmarkPushLogs (1,000
// records per call, minimal cluster of 3 nodes, 6 primaries) for three
// exporters taking turns call by call (each first in turn), so that the machine's load weighs
// on each alike: steering off, steering on with no node degraded, and
// steering on with one node degraded (a third of the records steered).
// It reports each one's CPU per record and the ratios to steering off.
func BenchmarkPushLogsSteering(b *testing.B) {
	exps, ld := steeringTrio(b)
	ctx := context.Background()
	benchTurns(b, exps, func(e *osExporter) {
		if err := e.pushLogs(ctx, ld); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkPushLogsSteeringEach is BenchmarkPushLogsSteering's push path
// for one of its exporters at a time (off, idle, degraded), all three
// started alike: for counting instructions (valgrind), which the machine's
// load does not change.
func BenchmarkPushLogsSteeringEach(b *testing.B) {
	for k, name := range []string{"off", "idle", "degraded"} {
		b.Run(name, func(b *testing.B) {
			exps, ld := steeringTrio(b)
			benchPush(b, func(ctx context.Context) error { return exps[k].pushLogs(ctx, ld) })
		})
	}
}

// BenchmarkEncodeSteering is the encoding phase alone (documents, ids,
// steering, locating) of the three exporters of BenchmarkPushLogsSteering,
// taking turns the same way.
func BenchmarkEncodeSteering(b *testing.B) {
	exps, ld := steeringTrio(b)
	c := &call{}
	benchTurns(b, exps, func(e *osExporter) {
		c.reset()
		e.encodeLogs(c, ld)
	})
}

// steeringTrio starts the three exporters of BenchmarkPushLogsSteering on
// a minimal cluster, and returns them and a call's records, dated now
// (records dated before an exporter started are never steered), after one
// warm-up call each.
func steeringTrio(b *testing.B) ([]*osExporter, plog.Logs) {
	m := newMinimalCluster(b, 3, "bench")
	start := func(steer bool) *osExporter {
		cfg := testConfig(m.urls())
		cfg.LogsIndex = "bench"
		cfg.Routing.Steering.Enabled = steer
		e, _ := startExporter(b, cfg, signalLogs)
		waitRouted(b, e, "bench")
		return e
	}
	off, idle, degraded := start(false), start(true), start(true)
	degraded.router.SetDegraded(degraded.router.Topology().Nodes[0], true)
	ctx := context.Background()
	if err := degraded.pushLogs(ctx, makeLogs(0, 1)); err != nil { // tracks the target
		b.Fatal(err)
	}
	waitSteering(b, degraded.steering, "bench")
	ld := makeLogs(0, benchPer)
	datedNow(ld, time.Now())
	exps := []*osExporter{off, idle, degraded}
	for _, e := range exps {
		if err := e.pushLogs(ctx, ld); err != nil {
			b.Fatal(err)
		}
	}
	return exps, ld
}

// benchTurns runs one call of benchPer records per exporter and turn (the
// exporters go first in turn), and reports each one's CPU per record and
// the ratios of the others to the first's.
func benchTurns(b *testing.B, exps []*osExporter, run func(*osExporter)) {
	cpu := make([]int64, len(exps))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += benchPer {
		for j := range exps {
			k := (i/benchPer + j) % len(exps)
			c0 := processCPU()
			run(exps[k])
			cpu[k] += processCPU() - c0
		}
	}
	b.StopTimer()
	n := float64(b.N)
	b.ReportMetric(float64(cpu[0])/n, "off-cpu-ns/record")
	b.ReportMetric(float64(cpu[1])/n, "idle-cpu-ns/record")
	b.ReportMetric(float64(cpu[2])/n, "degraded-cpu-ns/record")
	b.ReportMetric(float64(cpu[1])/float64(cpu[0]), "idle/off")
	b.ReportMetric(float64(cpu[2])/float64(cpu[0]), "degraded/off")
}

// datedNow gives every record of ld the timestamp at (a record dated
// before the exporter started is never steered).
func datedNow(ld plog.Logs, at time.Time) {
	ts := pcommon.NewTimestampFromTime(at)
	for i := 0; i < ld.ResourceLogs().Len(); i++ {
		sls := ld.ResourceLogs().At(i).ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			lrs := sls.At(j).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				lrs.At(k).SetTimestamp(ts)
			}
		}
	}
}
