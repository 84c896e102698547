package ss4o

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

func logDoc(rl plog.ResourceLogs, sl plog.ScopeLogs, lr plog.LogRecord) []byte {
	var enc Encoder
	enc.ResetLogs(rl, sl)
	return enc.AppendLog(nil, lr)
}

func spanDoc(rs ptrace.ResourceSpans, ss ptrace.ScopeSpans, span ptrace.Span) []byte {
	var enc Encoder
	enc.ResetTraces(rs, ss)
	return enc.AppendSpan(nil, span)
}

// decodedLog decodes doc with DecodeLog and returns the record as pdata's
// own JSON (the form records are compared in) and encoded again.
func decodedLog(t testing.TB, doc []byte) (pdataJSON, again []byte) {
	t.Helper()
	logs := plog.NewLogs()
	rl := logs.ResourceLogs().AppendEmpty()
	sl := rl.ScopeLogs().AppendEmpty()
	lr := sl.LogRecords().AppendEmpty()
	if err := DecodeLog(doc, rl, sl, lr); err != nil {
		t.Fatalf("DecodeLog: %v\n%.2000s", err, doc)
	}
	var m plog.JSONMarshaler
	out, err := m.MarshalLogs(logs)
	if err != nil {
		t.Fatal(err)
	}
	return out, logDoc(rl, sl, lr)
}

func decodedSpan(t testing.TB, doc []byte) (pdataJSON, again []byte) {
	t.Helper()
	traces := ptrace.NewTraces()
	rs := traces.ResourceSpans().AppendEmpty()
	ss := rs.ScopeSpans().AppendEmpty()
	span := ss.Spans().AppendEmpty()
	if err := DecodeSpan(doc, rs, ss, span); err != nil {
		t.Fatalf("DecodeSpan: %v\n%.2000s", err, doc)
	}
	var m ptrace.JSONMarshaler
	out, err := m.MarshalTraces(traces)
	if err != nil {
		t.Fatal(err)
	}
	return out, spanDoc(rs, ss, span)
}

// checkShapes turns the encoder's document doc into its fallback shape and
// into a dead-letter document (of each shape) and checks that decode reads
// each as the record doc holds, which encodes to doc again.
func checkShapes(t testing.TB, doc []byte, signal string, decode func(testing.TB, []byte) ([]byte, []byte)) {
	t.Helper()
	fb, err := AppendUnmapped([]byte("prefix"), doc)
	if err != nil {
		t.Fatalf("AppendUnmapped: %v\n%.2000s", err, doc)
	}
	if !bytes.HasPrefix(fb, []byte("prefix")) {
		t.Fatalf("dst not appended to: %.200q", fb)
	}
	fb = fb[len("prefix"):]
	checkUnmapped(t, doc, fb)
	checkCompact(t, fb)
	want, again := decode(t, doc)
	if !bytes.Equal(again, doc) {
		t.Fatalf("the original does not re-encode to itself:\n%.2000s\n%.2000s", doc, again)
	}
	have, again := decode(t, fb)
	if !bytes.Equal(want, have) {
		t.Fatalf("fallback shape decodes differently\nwant %.2000s\nhave %.2000s\nfallback %.2000s", want, have, fb)
	}
	if !bytes.Equal(again, doc) {
		t.Fatalf("fallback shape decodes to a record that encodes differently:\n%.2000s\n%.2000s", doc, again)
	}
	for _, shape := range []string{ShapeOriginal, ShapeUnmapped} {
		dl := AppendDeadLetter(nil, &DeadLetter{Time: time.Unix(1764547200, 5), Signal: signal, Index: "ss4o_" + signal + "-x-y",
			ID: "id-1", Status: 400, ErrorType: "mapper_parsing_exception", ErrorReason: "failed to parse", Shape: shape, Document: doc})
		if !json.Valid(dl) {
			t.Fatalf("dead letter is not valid JSON: %.2000s", dl)
		}
		checkCompact(t, dl)
		if have, _ := decode(t, dl); !bytes.Equal(want, have) {
			t.Fatalf("dead letter decodes differently\nwant %.2000s\nhave %.2000s", want, have)
		}
	}
}

// jsonMember is a member of a JSON object as encoding/json reads it: the
// key unescaped, the value's bytes as they are.
type jsonMember struct {
	key string
	raw json.RawMessage
}

// jsonMembers reads the members of the object doc with encoding/json.
func jsonMembers(t testing.TB, doc []byte) []jsonMember {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(doc))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not an object (%v): %.200q", err, doc)
	}
	var out []jsonMember
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			t.Fatal(err)
		}
		out = append(out, jsonMember{tok.(string), raw})
	}
	return out
}

// checkUnmapped checks fb, AppendUnmapped's output for doc, independently
// of the package's scanner: valid JSON whose members are doc's members
// that are not moved, in order, followed (when any were moved) by
// "unmapped", a string whose text is an object of exactly the moved
// members, in order (invalid UTF-8 in them as U+FFFD).
func checkUnmapped(t testing.TB, doc, fb []byte) {
	t.Helper()
	if !json.Valid(fb) {
		t.Fatalf("fallback shape is not valid JSON:\n%.2000q\nfrom %.2000q", fb, doc)
	}
	var kept, moved []jsonMember
	for _, m := range jsonMembers(t, doc) {
		if movable([]byte(m.key)) {
			m.raw = json.RawMessage(sanitizeAny(string(m.raw)))
			moved = append(moved, m)
		} else {
			kept = append(kept, m)
		}
	}
	got := jsonMembers(t, fb)
	if len(moved) == 0 {
		if !bytes.Equal(fb, doc) {
			t.Fatalf("nothing to move, but the document changed:\n%.2000q\n%.2000q", doc, fb)
		}
		return
	}
	if n := len(got) - 1; n != len(kept) || got[n].key != UnmappedField {
		t.Fatalf("fallback members %v, want %d kept and %q last", memberKeys(got), len(kept), UnmappedField)
	}
	for i, m := range kept {
		if got[i].key != m.key || !bytes.Equal(got[i].raw, m.raw) {
			t.Fatalf("kept member %d: %q %.200s, want %q %.200s", i, got[i].key, got[i].raw, m.key, m.raw)
		}
	}
	var text string
	if err := json.Unmarshal(got[len(got)-1].raw, &text); err != nil {
		t.Fatalf("unmapped is not a string: %v", err)
	}
	inner := jsonMembers(t, []byte(text))
	if len(inner) != len(moved) {
		t.Fatalf("unmapped holds %v, want %v", memberKeys(inner), memberKeys(moved))
	}
	for i, m := range moved {
		if inner[i].key != m.key || !bytes.Equal(inner[i].raw, m.raw) {
			t.Fatalf("moved member %d: %q %.200s, want %q %.200s", i, inner[i].key, inner[i].raw, m.key, m.raw)
		}
	}
}

func memberKeys(ms []jsonMember) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.key)
	}
	return out
}

func TestAppendUnmappedLayout(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{`{"@timestamp":"2026-01-01T00:00:00Z","attributes":{"a":"x\"y","b":[1,2.5]},"body":"m","resource":{"r":1},"instrumentationScope":{"name":"s"}}`,
			`{"@timestamp":"2026-01-01T00:00:00Z","body":"m","unmapped":"{\"attributes\":{\"a\":\"x\\\"y\",\"b\":[1,2.5]},\"resource\":{\"r\":1},\"instrumentationScope\":{\"name\":\"s\"}}"}`},
		// Only top-level members move; a nested "attributes" stays.
		{`{"events":[{"attributes":{"k":"v"}}],"name":"n","links":[{"traceId":"ab"}]}`,
			`{"name":"n","unmapped":"{\"events\":[{\"attributes\":{\"k\":\"v\"}}],\"links\":[{\"traceId\":\"ab\"}]}"}`},
		// Everything moved: no leading comma.
		{`{"attributes":{}}`, `{"unmapped":"{\"attributes\":{}}"}`},
		// White space between members goes; inside members it stays
		// (escaped inside the string).
		{" {\n \"attributes\" :\t{\"a\" : 1} ,\n\"x\" : [ 1 ]\n} ", `{"x" : [ 1 ],"unmapped":"{\"attributes\" :\u0009{\"a\" : 1}}"}`},
		// Keys are compared unescaped, and moved with their escapes.
		{`{"attr\u0069butes":{"\u00e9":"\ud834\udd1e"}}`, `{"unmapped":"{\"attr\\u0069butes\":{\"\\u00e9\":\"\\ud834\\udd1e\"}}"}`},
		// Moved bytes are not read: any number, any escape.
		{`{"attributes":{"n":1e999,"m":-0.0E+5,"s":"\/\b\f\n\r\t\u0000"}}`,
			`{"unmapped":"{\"attributes\":{\"n\":1e999,\"m\":-0.0E+5,\"s\":\"\\/\\b\\f\\n\\r\\t\\u0000\"}}"}`},
		// Nothing to move: unchanged, white space included.
		{`{"@timestamp":"2026-01-01T00:00:00Z","body":"m"}`, `{"@timestamp":"2026-01-01T00:00:00Z","body":"m"}`},
		{` { } `, ` { } `},
		{`{"unmapped":"{}","x":1}`, `{"unmapped":"{}","x":1}`},
	} {
		got, err := AppendUnmapped(nil, []byte(c.doc))
		if err != nil || string(got) != c.want {
			t.Errorf("AppendUnmapped(%s)\n got %s (%v)\nwant %s", c.doc, got, err, c.want)
			continue
		}
		checkUnmapped(t, []byte(c.doc), got)
	}
}

func TestAppendUnmappedErrors(t *testing.T) {
	foreignDocs := []string{`[1]`, `"s"`, `1`, `null`, `{"unmapped":"x","attributes":{}}`, `{"resource":{},"unmapped":1}`}
	syntaxDocs := []string{``, ` `, `{`, `{"attributes":{}`, `{"a":1,}`, `{"a" 1}`, `{"a":1}x`, `{"attributes":{"a":tru}}`,
		`{"a":"\x01"}`, `{"attributes":[1 2]}`, `{1:2}`, `[1]]`, `{"a":1 "b":2}`, `{"attributes":"\x"}`, `{"attributes":"\u12"}`,
		`{"attributes":"\`, `{"attributes":-}`, `{"attributes":01}`, `{"attributes":1.}`, `{"attributes":1e+}`, `{"attributes":nul}`, `{"attributes":"` + "\x1f" + `"}`,
		`{"attributes":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`}
	dst := []byte("keep")
	for _, doc := range foreignDocs {
		out, err := AppendUnmapped(dst, []byte(doc))
		if !errors.Is(err, ErrForeign) || string(out) != "keep" {
			t.Errorf("AppendUnmapped(%s) = %q, %v; want ErrForeign, dst unchanged", doc, out, err)
		}
	}
	for _, doc := range syntaxDocs {
		out, err := AppendUnmapped(dst, []byte(doc))
		var se *SyntaxError
		if !errors.As(err, &se) || string(out) != "keep" {
			t.Errorf("AppendUnmapped(%.40s) = %q, %v; want a SyntaxError, dst unchanged", doc, out, err)
		}
	}
}

// TestDecodeUnmappedForeign: what AppendUnmapped never writes is not read
// as a fallback document.
func TestDecodeUnmappedForeign(t *testing.T) {
	const ts = `"@timestamp":"2026-01-01T00:00:00Z"`
	for src, field := range map[string]string{
		`{` + ts + `,"unmapped":1}`:                                          "unmapped",
		`{` + ts + `,"unmapped":"not json"}`:                                 "unmapped",
		`{` + ts + `,"unmapped":"{\"attributes\":{}} x"}`:                    "unmapped",
		`{` + ts + `,"unmapped":"[]"}`:                                       "unmapped",
		`{` + ts + `,"unmapped":""}`:                                         "unmapped",
		`{` + ts + `,"unmapped":"{\"body\":\"x\"}"}`:                         "body",
		`{` + ts + `,"unmapped":"{\"unmapped\":\"{}\"}"}`:                    "unmapped",
		`{` + ts + `,"unmapped":"{}","unmapped":"{}"}`:                       "unmapped",
		`{` + ts + `,"attributes":{},"unmapped":"{\"attributes\":{}}"}`:      "attributes",
		`{` + ts + `,"unmapped":"{\"attributes\":{},\"attributes\":{}}"}`:    "attributes",
		`{` + ts + `,"unmapped":"{\"attributes\":[]}"}`:                      "attributes",
		`{` + ts + `,"unmapped":"{\"events\":[]}"}`:                          "events",
		`{` + ts + `,"unmapped":"{\"instrumentationScope\":{\"x\":1}}"}`:     "x",
		`{` + ts + `,"severity":{"unmapped":"{}"}}`:                          "unmapped",
		`{` + ts + `,"unmapped":"{\"attributes\":{\"a\":\"\\u12\"}}"}`:       "unmapped",
		`{` + ts + `,"unmapped":"{\"resource\":{\"a\":1},\"resource\":{}}"}`: "resource",
	} {
		_, _, _, err := tryLog(src)
		var fe *foreignError
		if !errors.Is(err, ErrForeign) || !errors.As(err, &fe) || fe.field != field {
			t.Errorf("DecodeLog(%s) = %v, want ErrForeign on %q", src, err, field)
		}
	}
	// An empty object of moved members reads as none.
	rl, _, lr, err := tryLog(`{` + ts + `,"body":"b","unmapped":"{}"}`)
	if err != nil || lr.Body().Str() != "b" || lr.Attributes().Len() != 0 || rl.Resource().Attributes().Len() != 0 {
		t.Errorf("empty unmapped: %v", err)
	}
	// A span document's own "unmapped" member is read as a span's.
	_, _, sp, err := trySpan(`{` + ts + `,"name":"n","unmapped":"{\"events\":[{\"name\":\"e\"}],\"links\":[{\"flags\":1}]}"}`)
	if err != nil || sp.Events().Len() != 1 || sp.Events().At(0).Name() != "e" || sp.Links().Len() != 1 || sp.Links().At(0).Flags() != 1 {
		t.Errorf("span unmapped: %v", err)
	}
}

// hostileLogs are records of the kinds that servers refuse or that stress
// the layout: the fallback shape and the dead-letter document must keep
// each exactly.
func hostileLogs() map[string]func(res pcommon.Resource, scope pcommon.InstrumentationScope, lr plog.LogRecord) {
	return map[string]func(pcommon.Resource, pcommon.InstrumentationScope, plog.LogRecord){
		"empty": func(pcommon.Resource, pcommon.InstrumentationScope, plog.LogRecord) {},
		"only-body": func(_ pcommon.Resource, _ pcommon.InstrumentationScope, lr plog.LogRecord) {
			lr.Body().SetStr("no attributes, resource or scope")
		},
		"invalid-utf8": func(res pcommon.Resource, scope pcommon.InstrumentationScope, lr plog.LogRecord) {
			lr.Body().SetStr("b\xffody\xc3")
			lr.Attributes().PutStr("k\xfe\xff", "v\xed\xa0\x80")
			lr.Attributes().PutEmptyMap("m\x80").PutStr("\xc0", "\xf5")
			res.Attributes().PutStr("service.name\xff", "\xe2\x82")
			scope.SetName("s\xff")
		},
		"every-escape": func(res pcommon.Resource, _ pcommon.InstrumentationScope, lr plog.LogRecord) {
			var all strings.Builder
			for c := range 0x80 {
				all.WriteByte(byte(c))
			}
			all.WriteString("\u2028\u2029\U0010ffff\\\"/")
			lr.Attributes().PutStr(all.String(), all.String())
			lr.Attributes().PutStr(`\u0041`, `"\"\\"`)
			res.Attributes().PutStr("\x00", "\n")
			lr.Body().SetStr(all.String())
		},
		"non-finite": func(_ pcommon.Resource, _ pcommon.InstrumentationScope, lr plog.LogRecord) {
			lr.Attributes().PutDouble("nan", math.NaN())
			lr.Attributes().PutDouble("inf", math.Inf(1))
			lr.Attributes().PutDouble("-inf", math.Inf(-1))
			lr.Attributes().PutEmptySlice("list").FromRaw([]any{math.Inf(-1), -0.0, 1e300})
			lr.Body().SetDouble(math.NaN())
		},
		"inf-body": func(_ pcommon.Resource, _ pcommon.InstrumentationScope, lr plog.LogRecord) {
			lr.Body().SetDouble(math.Inf(-1))
		},
		"bytes-body": func(_ pcommon.Resource, _ pcommon.InstrumentationScope, lr plog.LogRecord) {
			lr.Body().SetEmptyBytes().FromRaw([]byte{0, 1, 0xff, '"', '\\'})
			lr.Attributes().PutEmptyBytes("raw").FromRaw([]byte("\x00\xff"))
		},
		"map-body": func(_ pcommon.Resource, _ pcommon.InstrumentationScope, lr plog.LogRecord) {
			lr.Body().SetEmptyMap().PutEmptyMap("attributes").PutStr("unmapped", "{}")
		},
		"deep-25": func(res pcommon.Resource, _ pcommon.InstrumentationScope, lr plog.LogRecord) {
			m := lr.Attributes()
			r := res.Attributes()
			for i := range 25 {
				m = m.PutEmptyMap("level" + strconv.Itoa(i))
				r = r.PutEmptyMap("r")
			}
			m.PutStr("leaf", "deep")
			r.PutInt("leaf", 25)
		},
		"keys-5000": func(_ pcommon.Resource, _ pcommon.InstrumentationScope, lr plog.LogRecord) {
			for i := range 5000 {
				lr.Attributes().PutInt("attr."+strconv.Itoa(i), int64(i))
			}
		},
		"value-1MB": func(_ pcommon.Resource, _ pcommon.InstrumentationScope, lr plog.LogRecord) {
			lr.Attributes().PutStr("big", strings.Repeat(strings.Repeat("a", 1000)+"\"\\\n€", 1<<20/1000))
		},
		"prefix-conflicts": func(res pcommon.Resource, _ pcommon.InstrumentationScope, lr plog.LogRecord) {
			lr.Attributes().PutStr("code.function", "f")
			lr.Attributes().PutStr("code.function.name", "g")
			res.Attributes().PutStr("deployment.environment", "prod")
			res.Attributes().PutStr("deployment.environment.name", "prod")
		},
		"kind-changes": func(_ pcommon.Resource, _ pcommon.InstrumentationScope, lr plog.LogRecord) {
			lr.Attributes().PutBool("flag", true)
			lr.Attributes().PutEmptyMap("obj").PutInt("x", 1)
			lr.Attributes().PutEmptySlice("mixed").FromRaw([]any{1, "s", true, nil, map[string]any{"a": 1}})
			lr.Attributes().PutEmpty("nothing")
		},
		"everything": func(res pcommon.Resource, scope pcommon.InstrumentationScope, lr plog.LogRecord) {
			rl, sl, typ := typicalLog()
			rl.Resource().CopyTo(res)
			sl.Scope().CopyTo(scope)
			typ.CopyTo(lr)
			res.SetDroppedAttributesCount(3)
			scope.Attributes().PutStr("scope.attr", "x")
			scope.SetDroppedAttributesCount(1)
			lr.SetDroppedAttributesCount(2)
			lr.SetFlags(1)
			lr.SetEventName("ev")
		},
	}
}

func TestUnmappedAndDeadLetterHostileLogs(t *testing.T) {
	for name, build := range hostileLogs() {
		t.Run(name, func(t *testing.T) {
			rl := plog.NewResourceLogs()
			sl := rl.ScopeLogs().AppendEmpty()
			lr := sl.LogRecords().AppendEmpty()
			lr.SetTimestamp(ts("2026-11-29T16:11:46.438131144Z"))
			build(rl.Resource(), sl.Scope(), lr)
			rl.SetSchemaUrl("https://example.com/r\xff")
			checkShapes(t, logDoc(rl, sl, lr), SignalLogs, decodedLog)
		})
	}
}

func TestUnmappedAndDeadLetterHostileSpans(t *testing.T) {
	for name, build := range hostileLogs() {
		t.Run(name, func(t *testing.T) {
			// The same contents on a span: its attributes, resource and
			// scope, and those of an event and a link.
			lr := plog.NewLogRecord()
			rs := ptrace.NewResourceSpans()
			ss := rs.ScopeSpans().AppendEmpty()
			span := ss.Spans().AppendEmpty()
			build(rs.Resource(), ss.Scope(), lr)
			span.SetStartTimestamp(ts("2026-11-29T16:11:46.438131144Z"))
			span.SetName("op")
			lr.Attributes().CopyTo(span.Attributes())
			// The big cases once per span (three times would only be
			// slower).
			if lr.Attributes().Len() > 0 && name != "value-1MB" && name != "keys-5000" {
				ev := span.Events().AppendEmpty()
				ev.SetName("event")
				lr.Attributes().CopyTo(ev.Attributes())
				l := span.Links().AppendEmpty()
				l.SetTraceID(pcommon.TraceID{1})
				lr.Attributes().CopyTo(l.Attributes())
				span.Links().AppendEmpty() // an empty link
			}
			checkShapes(t, spanDoc(rs, ss, span), SignalTraces, decodedSpan)
		})
	}
}

func TestUnmappedAndDeadLetterRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 18))
	for range randomCases / 3 {
		_, rl, sl, lr := randomLog(&entropy{rng: rng})
		checkShapes(t, logDoc(rl, sl, lr), SignalLogs, decodedLog)
		_, rs, ss, span := randomSpan(&entropy{rng: rng})
		checkShapes(t, spanDoc(rs, ss, span), SignalTraces, decodedSpan)
	}
}

// TestGroupDecodersReadAllShapes: the receiver's decoders give the same
// plog.Logs / ptrace.Traces for documents in any mix of shapes.
func TestGroupDecodersReadAllShapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	mix := func(doc []byte, signal string) []byte {
		switch rng.IntN(3) {
		case 0:
			return doc
		case 1:
			fb, err := AppendUnmapped(nil, doc)
			if err != nil {
				t.Fatal(err)
			}
			return fb
		}
		return AppendDeadLetter(nil, &DeadLetter{Time: time.Now(), Signal: signal, Shape: ShapeUnmapped, Document: doc})
	}
	var logs, mixedLogs LogsDecoder
	var traces, mixedTraces TracesDecoder
	for i := range 200 {
		_, rl, sl, lr := randomLog(&entropy{rng: rng})
		_, rs, ss, span := randomSpan(&entropy{rng: rng})
		if i%2 == 0 { // shared resources and scopes, to be grouped again
			rl.Resource().Attributes().Clear()
			sl.Scope().SetName("shared")
			rs.Resource().Attributes().Clear()
			ss.Scope().SetName("shared")
		}
		doc := logDoc(rl, sl, lr)
		if err := logs.Add(doc); err != nil {
			t.Fatal(err)
		}
		if err := mixedLogs.Add(mix(doc, SignalLogs)); err != nil {
			t.Fatal(err)
		}
		doc = spanDoc(rs, ss, span)
		if err := traces.Add(doc); err != nil {
			t.Fatal(err)
		}
		if err := mixedTraces.Add(mix(doc, SignalTraces)); err != nil {
			t.Fatal(err)
		}
	}
	var lm plog.JSONMarshaler
	want, _ := lm.MarshalLogs(logs.Logs())
	got, _ := lm.MarshalLogs(mixedLogs.Logs())
	if !bytes.Equal(want, got) {
		t.Fatalf("logs differ\nwant %s\ngot  %s", want, got)
	}
	var tm ptrace.JSONMarshaler
	want, _ = tm.MarshalTraces(traces.Traces())
	got, _ = tm.MarshalTraces(mixedTraces.Traces())
	if !bytes.Equal(want, got) {
		t.Fatalf("traces differ\nwant %s\ngot  %s", want, got)
	}
}

func FuzzUnmappedLog(f *testing.F) {
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{6, 7, 0xff, 0x80, 3}, 60))
	f.Add(bytes.Repeat([]byte{0x13, 0xfe, 0xed, 0xa0, 0x80, 0x22, 0x5c}, 40))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, rl, sl, lr := randomLog(&entropy{b: data})
		checkShapes(t, logDoc(rl, sl, lr), SignalLogs, decodedLog)
	})
}

func FuzzUnmappedSpan(f *testing.F) {
	f.Add([]byte{})
	f.Add(bytes.Repeat([]byte{6, 7, 0xff, 0x80, 3}, 60))
	f.Add(bytes.Repeat([]byte{0x13, 0xfe, 0xed, 0xa0, 0x80, 0x22, 0x5c}, 40))
	f.Fuzz(func(t *testing.T, data []byte) {
		_, rs, ss, span := randomSpan(&entropy{b: data})
		checkShapes(t, spanDoc(rs, ss, span), SignalTraces, decodedSpan)
	})
}

// FuzzAppendUnmappedJSON: for any valid JSON object AppendUnmapped writes
// valid JSON holding the same members (checkUnmapped); it fails only on an
// object that already has "unmapped" besides members to move, and on
// invalid JSON.
func FuzzAppendUnmappedJSON(f *testing.F) {
	addDocumentSeeds(f)
	f.Add([]byte(` { "attr\u0069butes" : { "\ud800" : "\u0000\"\\/\b\f\n\r\t" } , "links":[ ] , "x":-0.5e-3 } `))
	f.Add([]byte(`{"resource":null,"resource":true,"unmapped":"x"}`))
	f.Add([]byte(`{"attributes":{"n":1e999,"m":-0.0E+5},"links":"\u00e9\ud800"}`))
	f.Add([]byte("{\"events\":[\"\xff\xfe\"],\"\xed\xa0\x80\":1}"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		out, err := AppendUnmapped(nil, doc)
		var obj map[string]json.RawMessage
		if json.Unmarshal(doc, &obj) != nil || obj == nil {
			if err == nil {
				t.Fatalf("AppendUnmapped accepted what encoding/json does not read as an object: %q", doc)
			}
			return
		}
		if err != nil {
			_, hasUnmapped := obj[UnmappedField]
			if !errors.Is(err, ErrForeign) || !hasUnmapped {
				t.Fatalf("AppendUnmapped(%q): %v", doc, err)
			}
			return
		}
		checkUnmapped(t, doc, out)
	})
}
