package otelv1

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// typicalSpan is a server span of a service with 3 resource attributes, a
// scope, 4 attributes, 1 event and a parent.
func typicalSpan() (ptrace.Traces, ptrace.ResourceSpans, ptrace.ScopeSpans, ptrace.Span) {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	res := rs.Resource().Attributes()
	res.PutStr("service.name", "checkout")
	res.PutStr("host.name", "node-7")
	res.PutStr("telemetry.sdk.language", "go")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("net/http")
	ss.Scope().SetVersion("0.60.0")
	span := ss.Spans().AppendEmpty()
	span.SetTraceID(pcommon.TraceID{0x5b, 0x8e, 0xff, 0xf7, 0x98, 0x03, 0x81, 0x03, 0xd2, 0x69, 0xb6, 0x33, 0x81, 0x3f, 0xc6, 0x0c})
	span.SetSpanID(pcommon.SpanID{0xee, 0xe1, 0x9b, 0x7e, 0xc3, 0xc1, 0xb1, 0x74})
	span.SetParentSpanID(pcommon.SpanID{0xee, 0xe1, 0x9b, 0x7e, 0xc3, 0xc1, 0xb1, 0x73})
	span.SetName("POST /cart/checkout")
	span.SetKind(ptrace.SpanKindServer)
	start := time.Date(2026, 12, 2, 3, 4, 5, 123_000_000, time.UTC)
	span.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	span.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(42_123_456)))
	span.Status().SetCode(ptrace.StatusCodeError)
	span.Status().SetMessage("card declined")
	attrs := span.Attributes()
	attrs.PutStr("http.request.method", "POST")
	attrs.PutInt("http.response.status_code", 402)
	attrs.PutStr("url.path", "/cart/checkout")
	attrs.PutBool("retry", false)
	ev := span.Events().AppendEmpty()
	ev.SetTimestamp(pcommon.NewTimestampFromTime(start.Add(1_000)))
	ev.SetName("exception")
	ev.Attributes().PutStr("exception.type", "Declined")
	return td, rs, ss, span
}

func TestLayoutGolden(t *testing.T) {
	td, rs, ss, span := typicalSpan()
	var e Encoder
	e.ResetTraces(rs, ss)
	g := TraceGroup{Name: "GET /", EndTime: pcommon.Timestamp(1796180645500000000), DurationNanos: 500_000_000, StatusCode: 0}
	got := string(e.AppendSpan(nil, span, &g))
	want := `{"traceId":"5b8efff798038103d269b633813fc60c","spanId":"eee19b7ec3c1b174","parentSpanId":"eee19b7ec3c1b173",` +
		`"traceState":"","name":"POST /cart/checkout","kind":"SPAN_KIND_SERVER",` +
		`"startTime":"2026-12-02T03:04:05.123Z","endTime":"2026-12-02T03:04:05.165123456Z","durationInNanos":42123456,` +
		`"status.code":2,"status.message":"card declined",` +
		`"traceGroup":"GET /","traceGroupFields":{"endTime":"2026-12-02T03:04:05.500Z","durationInNanos":500000000,"statusCode":0},` +
		`"span.attributes.http@request@method":"POST","span.attributes.http@response@status_code":402,` +
		`"span.attributes.url@path":"/cart/checkout","span.attributes.retry":false,"droppedAttributesCount":0,` +
		`"events":[{"time":"2026-12-02T03:04:05.123001Z","name":"exception","attributes":{"exception@type":"Declined"},"droppedAttributesCount":0}],` +
		`"droppedEventsCount":0,"links":[],"droppedLinksCount":0,"serviceName":"checkout",` +
		`"resource.attributes.service@name":"checkout","resource.attributes.host@name":"node-7",` +
		`"resource.attributes.telemetry@sdk@language":"go","instrumentationScope.name":"net/http","instrumentationScope.version":"0.60.0"}`
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	// Without a group: no traceGroup members at all.
	noGroup := string(e.AppendSpan(nil, span, nil))
	if strings.Contains(noGroup, "traceGroup") {
		t.Fatalf("traceGroup written without a group: %s", noGroup)
	}
	_, back := encodeDecode(t, td, nil)
	if string(protoBytes(t, td)) != string(protoBytes(t, back)) {
		t.Fatal("the typical span does not round-trip")
	}
}

func TestGroupOf(t *testing.T) {
	_, _, _, span := typicalSpan()
	if IsRoot(span) {
		t.Fatal("a span with a parent is a root")
	}
	span.SetParentSpanID(pcommon.SpanID{})
	if !IsRoot(span) {
		t.Fatal("a span without a parent is not a root")
	}
	g := GroupOf(span)
	want := TraceGroup{Name: "POST /cart/checkout", EndTime: span.EndTimestamp(), DurationNanos: 42123456, StatusCode: 2}
	if g != want {
		t.Fatalf("GroupOf = %+v, want %+v", g, want)
	}
}

// Java's Instant.toString, which Data Prepper writes: whole groups of
// three fraction digits.
func TestTimeFormat(t *testing.T) {
	for _, c := range []struct {
		ns   uint64
		want string
	}{
		{0, `"1970-01-01T00:00:00Z"`},
		{1, `"1970-01-01T00:00:00.000000001Z"`},
		{1_000, `"1970-01-01T00:00:00.000001Z"`},
		{10_000_000, `"1970-01-01T00:00:00.010Z"`},
		{1_598_013_600_000_000_321, `"2020-08-21T12:40:00.000000321Z"`},
		{1_621_364_324_695_000_000, `"2021-05-18T18:58:44.695Z"`},
		{maxDateNanos, `"2262-04-11T23:47:16.854775807Z"`},
		{maxDateNanos + 1, `"2262-04-11T23:47:16.854775807Z"`},
		{^uint64(0), `"2262-04-11T23:47:16.854775807Z"`},
	} {
		var c2 clock
		if got := string(c2.appendTime(nil, c.ns)); got != c.want {
			t.Errorf("%d: %s, want %s", c.ns, got, c.want)
		}
		if c.ns <= maxDateNanos {
			back, err := parseTime(strings.Trim(c.want, `"`))
			if err != nil || back != c.ns {
				t.Errorf("parseTime(%s) = %d, %v", c.want, back, err)
			}
		}
	}
}

func TestTemplatesAreJSON(t *testing.T) {
	for name, body := range map[string]string{
		"span":        SpanIndexTemplate(DefaultSpanAlias + "-*"),
		"service map": ServiceMapIndexTemplate(),
	} {
		var v struct {
			IndexPatterns []string `json:"index_patterns"`
			Template      struct {
				Mappings struct {
					Properties map[string]json.RawMessage `json:"properties"`
				} `json:"mappings"`
			} `json:"template"`
		}
		if err := json.Unmarshal([]byte(body), &v); err != nil {
			t.Fatalf("%s: %v\n%s", name, err, body)
		}
		if len(v.IndexPatterns) != 1 || len(v.Template.Mappings.Properties) == 0 {
			t.Fatalf("%s: %s", name, body)
		}
	}
}

func TestAppendInt(t *testing.T) {
	for _, n := range []int64{0, 9, 10, 99, 100, 101, 999, 1000, 12345678, -1, -10, -99, -100, math.MaxInt64, math.MinInt64} {
		if got, want := string(appendInt(nil, n)), strconv.FormatInt(n, 10); got != want {
			t.Errorf("appendInt(%d) = %s", n, got)
		}
	}
	if got := string(appendUint(nil, math.MaxUint64)); got != strconv.FormatUint(math.MaxUint64, 10) {
		t.Errorf("appendUint(MaxUint64) = %s", got)
	}
}
