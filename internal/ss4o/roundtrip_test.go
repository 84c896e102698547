package ss4o

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// checkLog builds a record from e and checks every property of the layout:
// valid JSON; encoding/json reads back the input's values (expectLogDoc);
// DecodeLog gives back the input as SS4O keeps it; re-encoding the decoded
// record gives the same bytes; AppendLog equals Encoder without schema URLs.
func checkLog(t testing.TB, e *entropy) {
	t.Helper()
	logs, rl, sl, lr := randomLog(e)

	var enc Encoder
	enc.ResetLogs(rl, sl)
	doc := enc.AppendLog([]byte("prefix"), lr)
	if !bytes.HasPrefix(doc, []byte("prefix")) {
		t.Fatalf("dst not appended to: %q", doc)
	}
	doc = doc[len("prefix"):]
	if !json.Valid(doc) {
		t.Fatalf("invalid JSON: %q", doc)
	}
	checkCompact(t, doc)
	got, err := decodeAny(doc)
	if err != nil {
		t.Fatalf("encoding/json: %v\n%s", err, doc)
	}
	if err := sameAny("", expectLogDoc(rl.Resource(), rl.SchemaUrl(), sl.Scope(), sl.SchemaUrl(), lr), got); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	if rl.SchemaUrl() == "" && sl.SchemaUrl() == "" {
		if plain := AppendLog(nil, rl.Resource(), sl.Scope(), lr); !bytes.Equal(plain, doc) {
			t.Fatalf("AppendLog differs from Encoder:\n%s\n%s", plain, doc)
		}
	}

	out := plog.NewLogs()
	orl := out.ResourceLogs().AppendEmpty()
	osl := orl.ScopeLogs().AppendEmpty()
	olr := osl.LogRecords().AppendEmpty()
	if err := DecodeLog(doc, orl, osl, olr); err != nil {
		t.Fatalf("DecodeLog: %v\n%s", err, doc)
	}
	normalizeOrigin(rl.Resource(), sl.Scope())
	normalizeLog(lr)
	rl.SetSchemaUrl(sanitizeAny(rl.SchemaUrl()))
	sl.SetSchemaUrl(sanitizeAny(sl.SchemaUrl()))
	var m plog.JSONMarshaler
	want, err1 := m.MarshalLogs(logs)
	have, err2 := m.MarshalLogs(out)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if !bytes.Equal(want, have) {
		t.Fatalf("round trip differs\nwant %s\nhave %s\ndoc  %s", want, have, doc)
	}
	enc.ResetLogs(orl, osl)
	if again := enc.AppendLog(nil, olr); !bytes.Equal(again, doc) {
		t.Fatalf("re-encoding differs\n%s\n%s", doc, again)
	}
}

func checkSpan(t testing.TB, e *entropy) {
	t.Helper()
	traces, rs, ss, span := randomSpan(e)

	var enc Encoder
	enc.ResetTraces(rs, ss)
	doc := enc.AppendSpan(nil, span)
	if !json.Valid(doc) {
		t.Fatalf("invalid JSON: %q", doc)
	}
	checkCompact(t, doc)
	got, err := decodeAny(doc)
	if err != nil {
		t.Fatalf("encoding/json: %v\n%s", err, doc)
	}
	if err := sameAny("", expectSpanDoc(rs.Resource(), rs.SchemaUrl(), ss.Scope(), ss.SchemaUrl(), span), got); err != nil {
		t.Fatalf("%v\n%s", err, doc)
	}
	if rs.SchemaUrl() == "" && ss.SchemaUrl() == "" {
		if plain := AppendSpan(nil, rs.Resource(), ss.Scope(), span); !bytes.Equal(plain, doc) {
			t.Fatalf("AppendSpan differs from Encoder:\n%s\n%s", plain, doc)
		}
	}

	out := ptrace.NewTraces()
	ors := out.ResourceSpans().AppendEmpty()
	oss := ors.ScopeSpans().AppendEmpty()
	ospan := oss.Spans().AppendEmpty()
	if err := DecodeSpan(doc, ors, oss, ospan); err != nil {
		t.Fatalf("DecodeSpan: %v\n%s", err, doc)
	}
	normalizeOrigin(rs.Resource(), ss.Scope())
	normalizeSpan(span)
	rs.SetSchemaUrl(sanitizeAny(rs.SchemaUrl()))
	ss.SetSchemaUrl(sanitizeAny(ss.SchemaUrl()))
	var m ptrace.JSONMarshaler
	want, err1 := m.MarshalTraces(traces)
	have, err2 := m.MarshalTraces(out)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if !bytes.Equal(want, have) {
		t.Fatalf("round trip differs\nwant %s\nhave %s\ndoc  %s", want, have, doc)
	}
	enc.ResetTraces(ors, oss)
	if again := enc.AppendSpan(nil, ospan); !bytes.Equal(again, doc) {
		t.Fatalf("re-encoding differs\n%s\n%s", doc, again)
	}
}

// randomLog builds one record from e, with its resource, scope and
// (sometimes) schema URLs.
func randomLog(e *entropy) (plog.Logs, plog.ResourceLogs, plog.ScopeLogs, plog.LogRecord) {
	logs := plog.NewLogs()
	rl := logs.ResourceLogs().AppendEmpty()
	sl := rl.ScopeLogs().AppendEmpty()
	lr := sl.LogRecords().AppendEmpty()
	e.origin(rl.Resource(), sl.Scope())
	if e.intn(2) == 0 {
		rl.SetSchemaUrl(e.str())
		sl.SetSchemaUrl(e.str())
	}
	e.log(lr)
	return logs, rl, sl, lr
}

// randomSpan is randomLog for a span.
func randomSpan(e *entropy) (ptrace.Traces, ptrace.ResourceSpans, ptrace.ScopeSpans, ptrace.Span) {
	traces := ptrace.NewTraces()
	rs := traces.ResourceSpans().AppendEmpty()
	ss := rs.ScopeSpans().AppendEmpty()
	span := ss.Spans().AppendEmpty()
	e.origin(rs.Resource(), ss.Scope())
	if e.intn(2) == 0 {
		rs.SetSchemaUrl(e.str())
		ss.SetSchemaUrl(e.str())
	}
	e.span(span)
	return traces, rs, ss, span
}

func TestRoundTripRandomLogs(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range randomCases {
		checkLog(t, &entropy{rng: rng})
	}
}

func TestRoundTripRandomSpans(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range randomCases {
		checkSpan(t, &entropy{rng: rng})
	}
}

func TestRoundTripEmptyEverything(t *testing.T) {
	// Fuzz bytes that run out at once give zero/empty for every field.
	checkLog(t, &entropy{})
	checkSpan(t, &entropy{})
	if got := string(AppendLog(nil, plog.NewResourceLogs().Resource(), plog.NewScopeLogs().Scope(), plog.NewLogRecord())); got != `{"@timestamp":"1970-01-01T00:00:00Z","timestampUnset":true}` {
		t.Errorf("empty log: %s", got)
	}
	if got := string(AppendSpan(nil, ptrace.NewResourceSpans().Resource(), ptrace.NewScopeSpans().Scope(), ptrace.NewSpan())); got != `{"@timestamp":"1970-01-01T00:00:00Z"}` {
		t.Errorf("empty span: %s", got)
	}
}

func FuzzLog(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16"))
	f.Add(bytes.Repeat([]byte{6, 7, 0xff, 0x80, 3}, 60))
	f.Add(bytes.Repeat([]byte{0x13, 0xfe, 0xed, 0xa0, 0x80, 0x22, 0x5c}, 40))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkLog(t, &entropy{b: data})
	})
}

func FuzzSpan(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16"))
	f.Add(bytes.Repeat([]byte{6, 7, 0xff, 0x80, 3}, 60))
	f.Add(bytes.Repeat([]byte{0x13, 0xfe, 0xed, 0xa0, 0x80, 0x22, 0x5c}, 40))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkSpan(t, &entropy{b: data})
	})
}

// checkCompact fails t if doc holds a byte below 0x20: documents are one
// NDJSON line as they are written (see bulk.Batch.CommitCompact).
func checkCompact(t testing.TB, doc []byte) {
	t.Helper()
	for i, c := range doc {
		if c < 0x20 {
			t.Fatalf("byte %#x at %d of %q", c, i, doc)
		}
	}
}
