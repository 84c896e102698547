package ss4o

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

func tryLog(src string) (plog.ResourceLogs, plog.ScopeLogs, plog.LogRecord, error) {
	rl := plog.NewResourceLogs()
	sl := rl.ScopeLogs().AppendEmpty()
	lr := sl.LogRecords().AppendEmpty()
	return rl, sl, lr, DecodeLog([]byte(src), rl, sl, lr)
}

func trySpan(src string) (ptrace.ResourceSpans, ptrace.ScopeSpans, ptrace.Span, error) {
	rs := ptrace.NewResourceSpans()
	ss := rs.ScopeSpans().AppendEmpty()
	sp := ss.Spans().AppendEmpty()
	return rs, ss, sp, DecodeSpan([]byte(src), rs, ss, sp)
}

func TestDecodeGolden(t *testing.T) {
	doc, err := os.ReadFile("testdata/log.json")
	if err != nil {
		t.Fatal(err)
	}
	rl, sl, lr, err := tryLog(string(doc))
	if err != nil {
		t.Fatal(err)
	}
	wrl, wsl, wlr := goldenLog()
	normalizeLog(wlr)
	if rl.SchemaUrl() != wrl.SchemaUrl() || sl.Scope().Name() != wsl.Scope().Name() ||
		lr.Timestamp() != wlr.Timestamp() || lr.ObservedTimestamp() != wlr.ObservedTimestamp() ||
		lr.Flags() != wlr.Flags() || lr.TraceID() != wlr.TraceID() || lr.SpanID() != wlr.SpanID() ||
		!lr.Body().Equal(wlr.Body()) || !lr.Attributes().Equal(wlr.Attributes()) ||
		!rl.Resource().Attributes().Equal(wrl.Resource().Attributes()) {
		t.Errorf("decoded golden log differs: %v", lr.Attributes().AsRaw())
	}
	if v, _ := lr.Attributes().Get("double"); v.Type() != pcommon.ValueTypeDouble || v.Double() != 2 {
		t.Errorf("double attribute: %s %v", v.Type(), v.AsRaw())
	}

	doc, err = os.ReadFile("testdata/span.json")
	if err != nil {
		t.Fatal(err)
	}
	_, ss, sp, err := trySpan(string(doc))
	if err != nil {
		t.Fatal(err)
	}
	_, _, wsp := goldenSpan()
	if sp.Kind() != ptrace.SpanKindServer || sp.Status().Code() != ptrace.StatusCodeError || sp.Flags() != 0x101 ||
		sp.Events().Len() != 2 || sp.Links().At(0).DroppedAttributesCount() != 4 || sp.DroppedLinksCount() != 5 ||
		sp.StartTimestamp() != wsp.StartTimestamp() || sp.EndTimestamp() != wsp.EndTimestamp() ||
		ss.SchemaUrl() != "https://opentelemetry.io/schemas/1.26.0" || sp.TraceState().AsRaw() != "vendor=a,other=b" {
		t.Errorf("decoded golden span differs")
	}
}

// The documents contrib's exporter writes are read too, including its year-1
// span "@timestamp" (the start time comes from "startTime").
func TestDecodeContribSamples(t *testing.T) {
	data, err := os.ReadFile("testdata/contrib-samples.ndjson")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	_, sl, lr, err := tryLog(lines[0])
	if err != nil {
		t.Fatal(err)
	}
	if lr.Body().Str() != "the message" || lr.SeverityNumber() != 9 || sl.Scope().Name() != "telemetrygen" {
		t.Errorf("contrib log: %v", lr.Body().AsRaw())
	}
	if ds, ok := lr.Attributes().Get("data_stream"); !ok || ds.Type() != pcommon.ValueTypeMap {
		t.Errorf("contrib data_stream attribute lost")
	}
	if w, _ := lr.Attributes().Get("worker"); w.Type() != pcommon.ValueTypeInt {
		t.Errorf("worker: %s", w.Type())
	}
	_, _, sp, err := trySpan(lines[1])
	if err != nil {
		t.Fatal(err)
	}
	if sp.StartTimestamp().AsTime().Year() != 2026 || sp.Kind() != ptrace.SpanKindServer || sp.Events().Len() != 1 || sp.Status().Code() != ptrace.StatusCodeOk {
		t.Errorf("contrib span: start %v kind %v", sp.StartTimestamp(), sp.Kind())
	}
	// A contrib span decodes as a span, not as a log.
	if _, _, _, err := tryLog(lines[1]); !errors.Is(err, ErrForeign) {
		t.Errorf("span read as log: %v", err)
	}
}

func TestDecodeForeign(t *testing.T) {
	const ts = `"@timestamp":"2026-01-01T00:00:00Z"`
	logs := map[string]string{
		`{}`:                                    "@timestamp",
		`{"message":"hi",` + ts + `}`:           "message",
		`{` + ts + `,` + ts + `}`:               "@timestamp",
		`{"@timestamp":1767225600000}`:          "@timestamp",
		`{"@timestamp":"yesterday"}`:            "@timestamp",
		`{"@timestamp":"1969-12-31T00:00:00Z"}`: "@timestamp",
		`{` + ts + `,"traceId":"abc"}`:          "traceId",
		`{` + ts + `,"traceId":"0102030405060708090a0b0c0d0e0fzz"}`: "traceId",
		`{` + ts + `,"severity":"INFO"}`:                            "severity",
		`{` + ts + `,"severity":{"level":1}}`:                       "level",
		`{` + ts + `,"severity":{"number":1.5}}`:                    "number",
		`{` + ts + `,"severity":{"number":3000000000}}`:             "number",
		`{` + ts + `,"attributes":[1]}`:                             "attributes",
		`{` + ts + `,"droppedAttributesCount":-1}`:                  "droppedAttributesCount",
		`{` + ts + `,"flags":"1"}`:                                  "flags",
		`{` + ts + `,"instrumentationScope":{"extra":1}}`:           "extra",
		`{` + ts + `,"kind":"Server"}`:                              "kind",
		`[1,2]`:                                                     "",
		`"just a string"`:                                           "",
	}
	for src, field := range logs {
		_, _, _, err := tryLog(src)
		var fe *foreignError
		if !errors.Is(err, ErrForeign) || !errors.As(err, &fe) || fe.field != field {
			t.Errorf("DecodeLog(%s) = %v, want ErrForeign on %q", src, err, field)
		}
	}
	spans := map[string]string{
		`{` + ts + `,"kind":"Sideways"}`:        "kind",
		`{` + ts + `,"status":{"code":"Fine"}}`: "code",
		`{` + ts + `,"events":{}}`:              "events",
		`{` + ts + `,"events":[1]}`:             "events",
		`{` + ts + `,"links":[{"x":1}]}`:        "x",
		`{` + ts + `,"body":"x"}`:               "body",
		`{"@timestamp":"0001-01-01T00:00:00Z"}`: "@timestamp",
	}
	for src, field := range spans {
		_, _, _, err := trySpan(src)
		var fe *foreignError
		if !errors.Is(err, ErrForeign) || !errors.As(err, &fe) || fe.field != field {
			t.Errorf("DecodeSpan(%s) = %v, want ErrForeign on %q", src, err, field)
		}
	}
}

func TestDecodeSyntaxErrors(t *testing.T) {
	for _, src := range []string{``, ` `, `{`, `{"@timestamp"`, `{"@timestamp":}`, `{"a":1,}`, `{"a" 1}`, `{"a":1}x`,
		`{"a":"\x01"}`, `{"a":"\q"}`, `{"a":"\u12"}`, `{"a":01}`, `{"a":1.}`, `{"a":-}`, `{"a":1e}`, `{"a":tru}`,
		`{"a":[1 2]}`, `{"a":"unterminated}`, `{"a":1e999}`, strings.Repeat("[", 10001) + strings.Repeat("]", 10001)} {
		if json.Valid([]byte(src)) && src != `{"a":1e999}` {
			t.Fatalf("test case %q is valid JSON", src)
		}
		_, _, _, err := tryLog(src)
		var se *SyntaxError
		if !errors.As(err, &se) || errors.Is(err, ErrForeign) {
			t.Errorf("DecodeLog(%.40q) = %v, want a SyntaxError", src, err)
		}
		if err := DecodeValue([]byte(src), pcommon.NewValueEmpty()); !errors.As(err, &se) {
			t.Errorf("DecodeValue(%.40q) = %v, want a SyntaxError", src, err)
		}
	}
}

func TestDecodeValue(t *testing.T) {
	v := pcommon.NewValueEmpty()
	src := `{"z":1,"a":[true,null,-0.0,"s\u00e9\ud834\udd1e\ud800x"],"m":{"k":9223372036854775807,"big":9223372036854775808,"neg":-9223372036854775808,"e":1E2},"z":2}`
	if err := DecodeValue([]byte(src), v); err != nil {
		t.Fatal(err)
	}
	m := v.Map()
	var keys []string
	for k := range m.All() {
		keys = append(keys, k)
	}
	if strings.Join(keys, ",") != "z,a,m" {
		t.Errorf("key order %v", keys)
	}
	if z, _ := m.Get("z"); z.Int() != 2 {
		t.Errorf("repeated key: %v", z.AsRaw())
	}
	a, _ := m.Get("a")
	if s := a.Slice(); s.At(1).Type() != pcommon.ValueTypeEmpty || !math.Signbit(s.At(2).Double()) || s.At(3).Str() != "sé\U0001D11E\uFFFDx" {
		t.Errorf("array: %v", a.AsRaw())
	}
	mm, _ := m.Get("m")
	k, _ := mm.Map().Get("k")
	big, _ := mm.Map().Get("big")
	neg, _ := mm.Map().Get("neg")
	e, _ := mm.Map().Get("e")
	if k.Int() != math.MaxInt64 || big.Type() != pcommon.ValueTypeDouble || neg.Int() != math.MinInt64 || e.Double() != 100 {
		t.Errorf("numbers: %v", mm.AsRaw())
	}
}

// TestDecodeReuse: decoding into targets that held another record leaves
// nothing of it behind.
func TestDecodeReuse(t *testing.T) {
	rl, sl, lr := goldenLog()
	doc := []byte(`{"@timestamp":"2026-01-01T00:00:00Z"}`)
	if err := DecodeLog(doc, rl, sl, lr); err != nil {
		t.Fatal(err)
	}
	if got := AppendLog(nil, rl.Resource(), sl.Scope(), lr); !bytes.Equal(got, doc) || rl.SchemaUrl() != "" {
		t.Errorf("leftovers: %s", got)
	}
	rs, ss, sp := goldenSpan()
	doc = []byte(`{"@timestamp":"2026-01-01T00:00:00Z","startTime":"2026-01-01T00:00:00Z"}`)
	if err := DecodeSpan(doc, rs, ss, sp); err != nil {
		t.Fatal(err)
	}
	if got := AppendSpan(nil, rs.Resource(), ss.Scope(), sp); !bytes.Equal(got, doc) || ss.SchemaUrl() != "" {
		t.Errorf("leftovers: %s", got)
	}
}

// addDocumentSeeds adds the documents under testdata to f's corpus.
func addDocumentSeeds(f *testing.F) {
	for _, name := range []string{"testdata/log.json", "testdata/span.json", "testdata/contrib-samples.ndjson"} {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
			f.Add(line)
		}
	}
}

// FuzzDecode: arbitrary input never panics, DecodeValue accepts exactly what
// encoding/json accepts, and a document
// DecodeLog/DecodeSpan accepts re-encodes to something they accept again.
func FuzzDecode(f *testing.F) {
	addDocumentSeeds(f)
	f.Add([]byte(`{"a":"\ud800\udc00\u0000","b":[1,-0.5e-3,{}]}`))
	f.Fuzz(func(t *testing.T, src []byte) {
		err := DecodeValue(src, pcommon.NewValueEmpty())
		var v any
		jerr := json.Unmarshal(src, &v)
		if (err == nil) != (jerr == nil) {
			t.Fatalf("DecodeValue: %v, encoding/json: %v", err, jerr)
		}
		if rl, sl, lr, err := tryLog(string(src)); err == nil {
			doc := AppendLog(nil, rl.Resource(), sl.Scope(), lr)
			if _, _, _, err := tryLog(string(doc)); err != nil {
				t.Fatalf("re-encoded log does not decode: %v\n%s", err, doc)
			}
		}
		if rs, ss, sp, err := trySpan(string(src)); err == nil {
			doc := AppendSpan(nil, rs.Resource(), ss.Scope(), sp)
			if _, _, _, err := trySpan(string(doc)); err != nil {
				t.Fatalf("re-encoded span does not decode: %v\n%s", err, doc)
			}
		}
	})
}
