package opensearchbackfill

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/opensearchrouted/opensearchrouted/internal/otelv1"
	"github.com/opensearchrouted/opensearchrouted/internal/pit"
)

// otelV1Spans is rtSpans(n) plus a resource of spans holding what the
// otel-v1 layout keeps under roundTrip: keys with '@' and empty keys,
// bytes, maps, slices, empty values, NaN and ±Inf, scope attributes,
// schema URLs, dropped counts, an unknown kind and times past date_nanos.
func otelV1Spans(n int) ptrace.Traces {
	td := rtSpans(n)
	rs := td.ResourceSpans().AppendEmpty()
	rs.SetSchemaUrl("https://opentelemetry.io/schemas/1.26.0")
	res := rs.Resource()
	res.Attributes().PutStr("service.name", "hostile")
	res.Attributes().PutEmptyBytes("host.id").FromRaw([]byte{0, 0xff, 7})
	res.SetDroppedAttributesCount(2)
	ss := rs.ScopeSpans().AppendEmpty()
	ss.SetSchemaUrl("https://opentelemetry.io/schemas/1.27.0")
	ss.Scope().SetName("hostile-scope")
	ss.Scope().Attributes().PutBool("scope.flag", true)
	ss.Scope().SetDroppedAttributesCount(1)
	for i := range 25 {
		sp := ss.Spans().AppendEmpty()
		sp.SetTraceID(pcommon.TraceID{0xcd, byte(i), 1})
		sp.SetSpanID(pcommon.SpanID{0xcd, byte(i), 2})
		sp.SetName(fmt.Sprintf("hostile-%d", i))
		sp.SetKind(ptrace.SpanKind(6 + i%3))
		sp.SetStartTimestamp(pcommon.Timestamp(math.MaxInt64 + uint64(i)))
		sp.SetEndTimestamp(pcommon.Timestamp(math.MaxUint64 - uint64(i)))
		a := sp.Attributes()
		a.PutStr("user@example.com", "at")
		a.PutStr("", "empty key")
		a.PutDouble("nan", math.NaN())
		a.PutDouble("inf", math.Inf(i%2*2-1))
		a.PutEmpty("nothing")
		a.PutEmptyMap("m").PutEmptySlice("s").AppendEmpty().SetDouble(1)
		a.PutEmptyBytes("b").FromRaw([]byte(strings.Repeat("\x01", i)))
		a.PutStr("long", strings.Repeat("€", 9000+i))
		ev := sp.Events().AppendEmpty()
		ev.SetTimestamp(pcommon.Timestamp(math.MaxUint64))
		ev.Attributes().PutEmptyMap("detail").PutInt("n", int64(i))
		l := sp.Links().AppendEmpty()
		l.SetTraceID(pcommon.TraceID{1})
		l.SetFlags(uint32(i))
		l.Attributes().PutEmptyBytes("k.b").FromRaw([]byte{byte(i)})
	}
	return td
}

// writeOtelV1 installs the otel-v1 span template, creates the first span
// index behind its write alias and writes every span of td through _bulk
// as otelv1.Encoder encodes it.
func writeOtelV1(t *testing.T, base string, td ptrace.Traces) {
	t.Helper()
	if st, b := httpDo(t, "PUT", base+"/_index_template/otel-v1-apm-span", otelv1.SpanIndexTemplate(otelv1.DefaultSpanAlias+"-*")); st != 200 {
		t.Fatalf("template: %d %s", st, b)
	}
	if st, b := httpDo(t, "PUT", base+"/"+otelv1.FirstSpanIndex+"?wait_for_active_shards=all",
		`{"settings":{"number_of_shards":3,"number_of_replicas":0},"aliases":{"`+otelv1.DefaultSpanAlias+`":{"is_write_index":true}}}`); st != 200 {
		t.Fatalf("create %s: %d %s", otelv1.FirstSpanIndex, st, b)
	}
	var e otelv1.Encoder
	var docs []string
	for _, rs := range td.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			e.ResetTraces(rs, ss)
			for _, sp := range ss.Spans().All() {
				var g *otelv1.TraceGroup
				if otelv1.IsRoot(sp) {
					root := otelv1.GroupOf(sp)
					g = &root
				}
				docs = append(docs, string(e.AppendSpan(nil, sp, g)))
			}
		}
	}
	ids := make([]string, len(docs))
	for i := range ids {
		ids[i] = fmt.Sprintf("s%06d", i)
	}
	bulkDocs(t, base, otelv1.DefaultSpanAlias, ids, func(i int) string { return docs[i] })
}

// readOtelV1 reads the span indices back with the receiver in otel-v1
// mode and compares with what was sent: the pdata must be equal (each
// span with its resource and scope; the spans were made without invalid
// UTF-8 or repeated keys, the layout's only normalisations).
func readOtelV1(t *testing.T, endpoints []string, sent ptrace.Traces) {
	t.Helper()
	cfg := testConfig(endpoints, otelv1.DefaultSpanAlias+"-*")
	cfg.Signal = SignalTraces
	cfg.Mapping.Mode = MappingOtelV1
	cfg.Slices, cfg.PageSize, cfg.Sort = 2, 500, `[{"_id":"asc"}]`
	sink := new(consumertest.TracesSink)
	h := mustStart(t, cfg, sink, nil)
	h.wait(t, 2*time.Minute)
	got := ptrace.NewTraces()
	for _, td := range sink.AllTraces() {
		td.ResourceSpans().MoveAndAppendTo(got.ResourceSpans())
	}
	compareKeys(t, "spans", spanKeys(t, sent), spanKeys(t, got))
	if n := h.metric(t, "otelcol_receiver_accepted_spans", nil); n != int64(sent.SpanCount()) {
		t.Errorf("accepted spans = %d, sent %d", n, sent.SpanCount())
	}
}

// The otel-v1 round trip on the emulator: spans written in the otel-v1
// layout read back exactly.
func TestOtelV1RoundTripEmulator(t *testing.T) {
	c := newCluster(t)
	sent := otelV1Spans(3000)
	writeOtelV1(t, c.Addr(0), sent)
	readOtelV1(t, c.Addrs(), sent)
}

// In ss4o mode (the default) an otel-v1 document is not a span: it is
// skipped and counted, not guessed at; in otel-v1 mode an SS4O document is.
func TestOtelV1ModeIsNotGuessed(t *testing.T) {
	var c converter
	hit := func(src string) []pit.Hit { return []pit.Hit{{Index: "i", ID: "1", Source: []byte(src)}} }
	var e otelv1.Encoder
	sp := ptrace.NewSpan()
	sp.SetName("x")
	doc := string(e.AppendSpan(nil, sp, nil))
	if td, skip := c.toTraces(hit(doc)); len(skip) != 1 || td.SpanCount() != 0 {
		t.Fatalf("ss4o mode read an otel-v1 document: %d spans, %d skipped", td.SpanCount(), len(skip))
	}
	c.otelV1 = true
	if td, skip := c.toTraces(hit(doc)); len(skip) != 0 || td.SpanCount() != 1 {
		t.Fatalf("otel-v1 mode: %d spans, %v", td.SpanCount(), skip)
	}
	if td, skip := c.toTraces(hit(`{"@timestamp":"2026-01-01T00:00:00Z","name":"x","kind":"Server"}`)); len(skip) != 1 || td.SpanCount() != 0 {
		t.Fatalf("otel-v1 mode read an SS4O document: %d spans, %d skipped", td.SpanCount(), len(skip))
	}
}
