package opensearchrouted

import (
	"context"
	"encoding/binary"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/opensearchrouted/opensearchrouted/testbed/cluster"
)

// serverCost is what a real node reports it spent: process CPU, and the
// time its indexing and get paths took.
type serverCost struct{ cpuMs, indexMs, getMs float64 }

func nodeCost(b testing.TB, base string) serverCost {
	var st struct {
		Nodes map[string]struct {
			Process struct {
				CPU struct {
					Total float64 `json:"total_in_millis"`
				} `json:"cpu"`
			} `json:"process"`
			Indices struct {
				Indexing struct {
					Time float64 `json:"index_time_in_millis"`
				} `json:"indexing"`
				Get struct {
					Time float64 `json:"time_in_millis"`
				} `json:"get"`
			} `json:"indices"`
		} `json:"nodes"`
	}
	if code := httpJSON(b, "GET", base+"/_nodes/stats/process,indices", "", &st); code != 200 {
		b.Fatalf("node stats: HTTP %d", code)
	}
	var c serverCost
	for _, n := range st.Nodes {
		c.cpuMs += n.Process.CPU.Total
		c.indexMs += n.Indices.Indexing.Time
		c.getMs += n.Indices.Get.Time
	}
	return c
}

func (c serverCost) minus(o serverCost) serverCost {
	return serverCost{c.cpuMs - o.cpuMs, c.indexMs - o.indexMs, c.getMs - o.getMs}
}

// lateWorkload is traces of 4 children each, and their roots apart.
func lateWorkload(traces int) (children, roots ptrace.Traces) {
	children, roots = ptrace.NewTraces(), ptrace.NewTraces()
	base := time.Now().Add(-time.Hour)
	mk := func(td ptrace.Traces) ptrace.SpanSlice {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", "svc")
		return rs.ScopeSpans().AppendEmpty().Spans()
	}
	cs, rs := mk(children), mk(roots)
	for k := 0; k < traces; k++ {
		var tid [16]byte
		binary.BigEndian.PutUint64(tid[8:], uint64(k)+1)
		tid[0] = 0x5c
		start := pcommon.NewTimestampFromTime(base.Add(time.Duration(k) * time.Millisecond))
		end := pcommon.NewTimestampFromTime(base.Add(time.Duration(k)*time.Millisecond + 20*time.Millisecond))
		span := func(ss ptrace.SpanSlice, j int, parent int) {
			sp := ss.AppendEmpty()
			sp.SetTraceID(tid)
			var sid [8]byte
			binary.BigEndian.PutUint64(sid[:], uint64(k)*8+uint64(j)+1)
			sp.SetSpanID(sid)
			if parent >= 0 {
				binary.BigEndian.PutUint64(sid[:], uint64(k)*8+uint64(parent)+1)
				sp.SetParentSpanID(sid)
			}
			sp.SetName("op")
			sp.SetKind(ptrace.SpanKindInternal)
			sp.SetStartTimestamp(start)
			sp.SetEndTimestamp(end)
			sp.Attributes().PutStr("http.route", "/api/items")
		}
		span(rs, 0, -1)
		for j := 1; j <= 4; j++ {
			span(cs, j, 0)
		}
	}
	return children, roots
}

// BenchmarkRealClusterFixupCost measures, on one real node, what the
// trace group fix-up costs the server per 10,000 spans stored before their
// root, against what storing those 10,000 spans cost in the same run:
// process CPU, indexing time and get time from _nodes/stats (deltas).
// Run: go test -run '^$' -bench RealClusterFixupCost -benchtime 1x ./exporter/opensearchrouted/
func BenchmarkRealClusterFixupCost(b *testing.B) {
	c := cluster.Start(b, cluster.Options{Nodes: 1})
	base := c.Addr(0)
	for i := 0; i < b.N; i++ {
		cfg := otelV1Config(c.Addrs())
		cfg.TracesIndex = "fixcost" + string(rune('a'+i%26))
		cfg.Mapping.TraceGroups.FixupInterval = time.Hour // passes run by hand below
		cfg.Mapping.ServiceMap.Enabled = false
		e, reader := startExporter(b, cfg, signalTraces)
		children, roots := lateWorkload(2500) // 10,000 children
		exportTraces(b, e, makeSpans(0, 1))   // the index exists, mapped
		httpJSON(b, "POST", base+"/_refresh", "", nil)
		time.Sleep(time.Second)

		c0 := nodeCost(b, base)
		exportTraces(b, e, children)
		httpJSON(b, "POST", base+"/"+cfg.TracesIndex+"/_refresh", "", nil)
		c1 := nodeCost(b, base)
		exportTraces(b, e, roots)
		httpJSON(b, "POST", base+"/"+cfg.TracesIndex+"/_refresh", "", nil)
		time.Sleep(time.Second)
		c2 := nodeCost(b, base)
		start := time.Now()
		e.otelTick(context.Background())
		wall := time.Since(start)
		httpJSON(b, "POST", base+"/"+cfg.TracesIndex+"/_refresh", "", nil)
		c3 := nodeCost(b, base)
		if n := sumMetric(b, reader, "otelcol.opensearchrouted.trace_groups", map[string]string{"outcome": "fixed_up"}); n != 10000 {
			b.Fatalf("fixed up %d of 10000", n)
		}
		create, fix := c1.minus(c0), c3.minus(c2)
		b.ReportMetric(create.cpuMs, "create-cpu-ms/10k")
		b.ReportMetric(fix.cpuMs, "fixup-cpu-ms/10k")
		b.ReportMetric(fix.cpuMs/create.cpuMs, "fixup/create-cpu")
		b.ReportMetric(create.indexMs, "create-index-ms/10k")
		b.ReportMetric(fix.indexMs, "fixup-index-ms/10k")
		b.ReportMetric(fix.getMs, "fixup-get-ms/10k")
		b.ReportMetric(float64(wall.Milliseconds()), "fixup-wall-ms/10k")
	}
}

// BenchmarkPushSpansMapping is the full push path per span (as
// BenchmarkPushSpans: 3 in-process minimal nodes, routed) of whole
// three-service traces, 1,000 spans per call, in the SS4O layout and in
// otel-v1 (trace group pre-pass, otelv1 encoder, service-map pairing; the
// fix-up loop idle: every root is in its call), in the same run.
func BenchmarkPushSpansMapping(b *testing.B) {
	w := newTAWorkload(200, time.Now().Add(-time.Hour))
	td := w.build(func(*taSpan) bool { return true })
	n := td.SpanCount()
	for _, mode := range []string{MappingSS4O, MappingOtelV1} {
		b.Run(mode, func(b *testing.B) {
			m := newMinimalCluster(b, 3, "bench")
			cfg := testConfig(m.urls())
			cfg.TracesIndex = "bench"
			cfg.Mapping.Mode = mode
			cfg.Mapping.TraceGroups.FixupInterval = time.Hour
			e, _ := startExporterTelemetry(b, cfg, signalTraces, false)
			waitRouted(b, e, "bench")
			ctx := context.Background()
			if err := e.pushTraces(ctx, td); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			cpu0 := processCPU()
			for i := 0; i < b.N; i += n {
				if err := e.pushTraces(ctx, td); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/span")
		})
	}
}
