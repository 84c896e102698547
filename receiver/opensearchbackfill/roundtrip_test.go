package opensearchbackfill

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"testing"
	"time"

	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/opensearchrouted/opensearchrouted/exporter/opensearchrouted"
)

// Volumes of the round trip (issue 6, proof 1).
const (
	roundTripLogs  = 50000
	roundTripSpans = 20000
)

// rtLogs builds n log records exercising what SS4O keeps: typed
// attributes (nested maps, slices, bytes), every record field, several
// resources and scopes, and a few values SS4O cannot keep (see
// normaliseLogs and the README).
func rtLogs(n int) plog.Logs {
	ld := plog.NewLogs()
	base := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	var sl plog.ScopeLogs
	for i := range n {
		if i%1000 == 0 {
			rl := ld.ResourceLogs().AppendEmpty()
			rl.Resource().Attributes().PutStr("service.name", fmt.Sprintf("svc-%d", (i/1000)%5))
			rl.Resource().Attributes().PutInt("shard", int64(i/1000))
			sl = rl.ScopeLogs().AppendEmpty()
			sl.Scope().SetName("rt")
			sl.Scope().SetVersion("1.2.3")
			sl.Scope().Attributes().PutBool("scoped", true)
		}
		lr := sl.LogRecords().AppendEmpty()
		lr.SetTimestamp(pcommon.NewTimestampFromTime(base.Add(time.Duration(i)*time.Millisecond + time.Duration(i%997))))
		lr.SetObservedTimestamp(pcommon.NewTimestampFromTime(base.Add(time.Duration(i) * time.Second)))
		lr.SetSeverityNumber(plog.SeverityNumber(i%24 + 1))
		lr.SetSeverityText(fmt.Sprintf("sev%d", i%24))
		if i%10 == 0 {
			var tid [16]byte
			var sid [8]byte
			binary.BigEndian.PutUint64(tid[:], uint64(i)+7)
			binary.BigEndian.PutUint64(sid[:], uint64(i)+9)
			lr.SetTraceID(tid)
			lr.SetSpanID(sid)
			lr.SetFlags(1)
		}
		switch i % 4 {
		case 0:
			lr.Body().SetStr(fmt.Sprintf("message %d: \"quoted\" and ünïcode\n", i))
		case 1:
			m := lr.Body().SetEmptyMap()
			m.PutInt("n", int64(i))
			m.PutEmptySlice("list").AppendEmpty().SetDouble(0.5)
		case 2:
			lr.Body().SetInt(int64(i) * 1e12)
		case 3:
			lr.Body().SetDouble(float64(i) + 0.25)
		}
		a := lr.Attributes()
		a.PutInt("seq", int64(i))
		a.PutDouble("ratio", float64(i)/3)
		a.PutBool("even", i%2 == 0)
		a.PutStr("path", "/api/v1/items")
		if i%100 == 0 {
			a.PutEmptyBytes("raw").FromRaw([]byte{1, 2, 3, byte(i)})
			a.PutDouble("nan", math.NaN())
		}
		lr.SetDroppedAttributesCount(uint32(i % 3))
		if i%50 == 0 {
			lr.SetEventName("ev")
		}
	}
	return ld
}

// rtSpans builds n spans with events, links and statuses.
func rtSpans(n int) ptrace.Traces {
	td := ptrace.NewTraces()
	base := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	var ss ptrace.ScopeSpans
	for i := range n {
		if i%1000 == 0 {
			rs := td.ResourceSpans().AppendEmpty()
			rs.Resource().Attributes().PutStr("service.name", fmt.Sprintf("svc-%d", (i/1000)%3))
			ss = rs.ScopeSpans().AppendEmpty()
			ss.Scope().SetName("rt-traces")
		}
		sp := ss.Spans().AppendEmpty()
		var tid [16]byte
		var sid, pid [8]byte
		binary.BigEndian.PutUint64(tid[8:], uint64(i)+1)
		tid[0] = 0xab
		binary.BigEndian.PutUint64(sid[:], uint64(i)*2654435761+1)
		binary.BigEndian.PutUint64(pid[:], uint64(i)+3)
		sp.SetTraceID(tid)
		sp.SetSpanID(sid)
		if i%3 != 0 {
			sp.SetParentSpanID(pid)
		}
		sp.TraceState().FromRaw("k=v")
		sp.SetName(fmt.Sprintf("op-%d", i%17))
		sp.SetKind(ptrace.SpanKind(i % 6))
		start := base.Add(time.Duration(i)*time.Millisecond + time.Duration(i%1000))
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Duration(i%5000) * time.Microsecond)))
		sp.Attributes().PutInt("seq", int64(i))
		sp.Attributes().PutStr("http.route", "/x")
		sp.Status().SetCode(ptrace.StatusCode(i % 3))
		if i%3 == 2 {
			sp.Status().SetMessage("boom")
		}
		if i%5 == 0 {
			ev := sp.Events().AppendEmpty()
			ev.SetName("exception")
			ev.SetTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Microsecond)))
			ev.Attributes().PutStr("exception.type", "E")
			ev.SetDroppedAttributesCount(1)
			sp.SetDroppedEventsCount(2)
		}
		if i%7 == 0 {
			l := sp.Links().AppendEmpty()
			l.SetTraceID(tid)
			l.SetSpanID(pid)
			l.Attributes().PutInt("n", 1)
			sp.SetDroppedLinksCount(1)
		}
	}
	return td
}

// normaliseValue applies what SS4O cannot keep to a value: bytes become
// their base64 string, NaN and ±Inf become strings.
func normaliseValue(v pcommon.Value) {
	switch v.Type() {
	case pcommon.ValueTypeBytes:
		v.SetStr(v.AsString())
	case pcommon.ValueTypeDouble:
		f := v.Double()
		switch {
		case math.IsNaN(f):
			v.SetStr("NaN")
		case math.IsInf(f, 1):
			v.SetStr("Infinity")
		case math.IsInf(f, -1):
			v.SetStr("-Infinity")
		}
	case pcommon.ValueTypeMap:
		v.Map().Range(func(_ string, x pcommon.Value) bool { normaliseValue(x); return true })
	case pcommon.ValueTypeSlice:
		for i := 0; i < v.Slice().Len(); i++ {
			normaliseValue(v.Slice().At(i))
		}
	}
}

func normaliseMap(m pcommon.Map) {
	m.Range(func(_ string, v pcommon.Value) bool { normaliseValue(v); return true })
}

// logKeys flattens logs to one canonical JSON string per record (its
// resource, scope and record alone), sorted: equal multisets of records
// give equal slices, whatever the grouping and order.
func logKeys(t testing.TB, ld plog.Logs) []string {
	t.Helper()
	var m plog.JSONMarshaler
	out := make([]string, 0, ld.LogRecordCount())
	for i := 0; i < ld.ResourceLogs().Len(); i++ {
		rl := ld.ResourceLogs().At(i)
		for j := 0; j < rl.ScopeLogs().Len(); j++ {
			sl := rl.ScopeLogs().At(j)
			for k := 0; k < sl.LogRecords().Len(); k++ {
				one := plog.NewLogs()
				orl := one.ResourceLogs().AppendEmpty()
				rl.Resource().CopyTo(orl.Resource())
				osl := orl.ScopeLogs().AppendEmpty()
				sl.Scope().CopyTo(osl.Scope())
				lr := osl.LogRecords().AppendEmpty()
				sl.LogRecords().At(k).CopyTo(lr)
				normaliseMap(lr.Attributes())
				normaliseValue(lr.Body())
				b, err := m.MarshalLogs(one)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, string(b))
			}
		}
	}
	sort.Strings(out)
	return out
}

func spanKeys(t testing.TB, td ptrace.Traces) []string {
	t.Helper()
	var m ptrace.JSONMarshaler
	out := make([]string, 0, td.SpanCount())
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		rs := td.ResourceSpans().At(i)
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			ss := rs.ScopeSpans().At(j)
			for k := 0; k < ss.Spans().Len(); k++ {
				one := ptrace.NewTraces()
				ors := one.ResourceSpans().AppendEmpty()
				rs.Resource().CopyTo(ors.Resource())
				oss := ors.ScopeSpans().AppendEmpty()
				ss.Scope().CopyTo(oss.Scope())
				ss.Spans().At(k).CopyTo(oss.Spans().AppendEmpty())
				b, err := m.MarshalTraces(one)
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, string(b))
			}
		}
	}
	sort.Strings(out)
	return out
}

func compareKeys(t *testing.T, what string, sent, got []string) {
	t.Helper()
	if len(sent) != len(got) {
		t.Fatalf("%s: sent %d, read back %d", what, len(sent), len(got))
	}
	bad := 0
	for i := range sent {
		if sent[i] != got[i] {
			if bad < 2 {
				t.Errorf("%s differ at %d:\nsent %s\ngot  %s", what, i, sent[i], got[i])
			}
			bad++
		}
	}
	if bad > 0 {
		t.Fatalf("%s: %d of %d differ", what, bad, len(sent))
	}
}

// exportAll writes logs and traces through the exporter (no queue) to
// rt-logs and rt-traces.
func exportAll(t *testing.T, endpoints []string, ld plog.Logs, td ptrace.Traces) {
	t.Helper()
	exportWith(t, endpoints, ld, td, func(cfg *opensearchrouted.Config) {
		cfg.LogsIndex = "rt-logs"
		cfg.TracesIndex = "rt-traces"
	})
}

// exportWith writes logs and traces through the exporter (no queue), with
// its config changed by mut.
func exportWith(t *testing.T, endpoints []string, ld plog.Logs, td ptrace.Traces, mut func(*opensearchrouted.Config)) {
	t.Helper()
	f := opensearchrouted.NewFactory()
	cfg := f.CreateDefaultConfig().(*opensearchrouted.Config)
	cfg.Endpoints = endpoints
	mut(cfg)
	cfg.QueueConfig = configoptional.None[exporterhelper.QueueBatchConfig]()
	cfg.RetryConfig.Enabled = false
	cfg.Routing.NodeStatsInterval = 0
	ctx := context.Background()
	set := exportertest.NewNopSettings(f.Type())
	le, err := f.CreateLogs(ctx, set, cfg)
	if err != nil {
		t.Fatal(err)
	}
	te, err := f.CreateTraces(ctx, set, cfg)
	if err != nil {
		t.Fatal(err)
	}
	host := &testHost{}
	if err := le.Start(ctx, host); err != nil {
		t.Fatal(err)
	}
	if err := te.Start(ctx, host); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = le.Shutdown(ctx); _ = te.Shutdown(ctx) }()
	// In chunks, as a pipeline's batches would arrive.
	const chunk = 5000
	for from := 0; from < ld.ResourceLogs().Len(); from += chunk / 1000 {
		part := plog.NewLogs()
		for i := from; i < min(from+chunk/1000, ld.ResourceLogs().Len()); i++ {
			ld.ResourceLogs().At(i).CopyTo(part.ResourceLogs().AppendEmpty())
		}
		if err := le.ConsumeLogs(ctx, part); err != nil {
			t.Fatalf("export logs: %v", err)
		}
	}
	for from := 0; from < td.ResourceSpans().Len(); from += chunk / 1000 {
		part := ptrace.NewTraces()
		for i := from; i < min(from+chunk/1000, td.ResourceSpans().Len()); i++ {
			td.ResourceSpans().At(i).CopyTo(part.ResourceSpans().AppendEmpty())
		}
		if err := te.ConsumeTraces(ctx, part); err != nil {
			t.Fatalf("export traces: %v", err)
		}
	}
}

// Issue 6 proof 1 against the emulator: the exporter writes 50,000 log
// records and 20,000 spans (a fifth under -race), the receiver reads them back with 2 slices, and
// the pdata equal what was sent after normalisation.
func TestRoundTripEmulator(t *testing.T) {
	c := newCluster(t)
	t0 := time.Now()
	sentLogs, sentSpans := rtLogs(roundTripLogs/roundTripScale), rtSpans(roundTripSpans/roundTripScale)
	wantLogs, wantSpans := logKeys(t, sentLogs), spanKeys(t, sentSpans)
	t.Logf("generate and flatten: %v", time.Since(t0))
	t0 = time.Now()
	exportAll(t, c.Addrs(), sentLogs, sentSpans)
	t.Logf("export: %v", time.Since(t0))
	t0 = time.Now()
	for _, ix := range []string{"rt-logs", "rt-traces"} {
		httpDo(t, "POST", c.Addr(0)+"/"+ix+"/_refresh", "")
	}

	// The emulator decodes every _source to sort on @timestamp, so this
	// volume is read sorted on _id alone (the default sort is covered by
	// the other tests).
	lcfg := testConfig(c.Addrs(), "rt-logs")
	lcfg.Slices, lcfg.PageSize, lcfg.Sort = 2, 10000, `[{"_id":"asc"}]`
	lsink := new(consumertest.LogsSink)
	lh := mustStart(t, lcfg, lsink, nil)

	tcfg := testConfig(c.Addrs(), "rt-traces")
	tcfg.Signal = SignalTraces
	tcfg.Slices, tcfg.PageSize, tcfg.Sort = 2, 10000, `[{"_id":"asc"}]`
	tsink := new(consumertest.TracesSink)
	th := mustStart(t, tcfg, tsink, nil)

	lh.wait(t, 120*time.Second)
	th.wait(t, 120*time.Second)
	t.Logf("backfill: %v", time.Since(t0))

	gotLogs := plog.NewLogs()
	for _, ld := range lsink.AllLogs() {
		ld.ResourceLogs().MoveAndAppendTo(gotLogs.ResourceLogs())
	}
	gotSpans := ptrace.NewTraces()
	for _, td := range tsink.AllTraces() {
		td.ResourceSpans().MoveAndAppendTo(gotSpans.ResourceSpans())
	}
	compareKeys(t, "log records", wantLogs, logKeys(t, gotLogs))
	compareKeys(t, "spans", wantSpans, spanKeys(t, gotSpans))
	if got := th.metric(t, "otelcol_receiver_accepted_spans", nil); got != roundTripSpans/roundTripScale {
		t.Errorf("accepted spans = %d", got)
	}
}

// The exporter's default SS4O data streams (with its templates) read back
// through the data stream name and through a pattern.
func TestDataStreamsAndPatternsEmulator(t *testing.T) {
	c := newCluster(t)
	sentLogs, sentSpans := rtLogs(1500), rtSpans(500)
	wantLogs, wantSpans := logKeys(t, sentLogs), spanKeys(t, sentSpans)
	exportWith(t, c.Addrs(), sentLogs, sentSpans, func(cfg *opensearchrouted.Config) { cfg.InstallTemplates = true })
	httpDo(t, "POST", c.Addr(0)+"/ss4o_*/_refresh", "")
	for _, ix := range []string{"ss4o_logs-default-namespace", "ss4o_logs-*"} {
		cfg := testConfig(c.Addrs(), ix)
		cfg.Slices = 2
		sink := new(consumertest.LogsSink)
		h := mustStart(t, cfg, sink, nil)
		h.wait(t, 60*time.Second)
		got := plog.NewLogs()
		for _, ld := range sink.AllLogs() {
			ld.ResourceLogs().MoveAndAppendTo(got.ResourceLogs())
		}
		compareKeys(t, "log records from "+ix, wantLogs, logKeys(t, got))
	}
	cfg := testConfig(c.Addrs(), "ss4o_traces-default-namespace")
	cfg.Signal = SignalTraces
	sink := new(consumertest.TracesSink)
	h := mustStart(t, cfg, sink, nil)
	h.wait(t, 60*time.Second)
	got := ptrace.NewTraces()
	for _, td := range sink.AllTraces() {
		td.ResourceSpans().MoveAndAppendTo(got.ResourceSpans())
	}
	compareKeys(t, "spans from the data stream", wantSpans, spanKeys(t, got))
}
