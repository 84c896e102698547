package otelv1

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// normalise applies to td what the layout does not keep (the package
// documentation's list): invalid UTF-8 becomes U+FFFD, and of keys that
// are equal after that only the first is kept.
func normalise(td ptrace.Traces) {
	for _, rs := range td.ResourceSpans().All() {
		normMap(rs.Resource().Attributes())
		rs.SetSchemaUrl(validUTF8(rs.SchemaUrl()))
		for _, ss := range rs.ScopeSpans().All() {
			sc := ss.Scope()
			sc.SetName(validUTF8(sc.Name()))
			sc.SetVersion(validUTF8(sc.Version()))
			normMap(sc.Attributes())
			ss.SetSchemaUrl(validUTF8(ss.SchemaUrl()))
			for _, sp := range ss.Spans().All() {
				sp.SetName(validUTF8(sp.Name()))
				sp.TraceState().FromRaw(validUTF8(sp.TraceState().AsRaw()))
				sp.Status().SetMessage(validUTF8(sp.Status().Message()))
				normMap(sp.Attributes())
				for _, ev := range sp.Events().All() {
					ev.SetName(validUTF8(ev.Name()))
					normMap(ev.Attributes())
				}
				for _, l := range sp.Links().All() {
					l.TraceState().FromRaw(validUTF8(l.TraceState().AsRaw()))
					normMap(l.Attributes())
				}
			}
		}
	}
}

func normMap(m pcommon.Map) {
	tmp := pcommon.NewMap()
	seen := map[string]bool{}
	for k, v := range m.All() {
		k = validUTF8(k)
		if seen[k] {
			continue
		}
		seen[k] = true
		normValue(v)
		v.CopyTo(tmp.PutEmpty(k))
	}
	tmp.CopyTo(m)
}

func normValue(v pcommon.Value) {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		v.SetStr(validUTF8(v.Str()))
	case pcommon.ValueTypeMap:
		normMap(v.Map())
	case pcommon.ValueTypeSlice:
		for _, x := range v.Slice().All() {
			normValue(x)
		}
	}
}

// encodeDecode writes the one span of td with a fresh Encoder (and a
// reused one, which must write the same bytes) and reads it back.
func encodeDecode(t testing.TB, td ptrace.Traces, reused *Encoder) (doc []byte, back ptrace.Traces) {
	t.Helper()
	rs := td.ResourceSpans().At(0)
	ss := rs.ScopeSpans().At(0)
	span := ss.Spans().At(0)
	var e Encoder
	e.ResetTraces(rs, ss)
	doc = e.AppendSpan(nil, span, nil)
	if reused != nil {
		reused.ResetTraces(rs, ss)
		if again := reused.AppendSpan([]byte("prefix"), span, nil); !bytes.Equal(again[6:], doc) {
			t.Fatalf("a reused Encoder writes\n%s\nnot\n%s", again[6:], doc)
		}
	}
	if !json.Valid(doc) {
		t.Fatalf("not JSON: %s", doc)
	}
	back = ptrace.NewTraces()
	brs := back.ResourceSpans().AppendEmpty()
	bss := brs.ScopeSpans().AppendEmpty()
	if err := DecodeSpan(doc, brs, bss, bss.Spans().AppendEmpty()); err != nil {
		t.Fatalf("DecodeSpan: %v\n%s", err, doc)
	}
	return doc, back
}

func protoBytes(t testing.TB, td ptrace.Traces) []byte {
	b, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(td)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func checkRoundTrip(t testing.TB, src *source, reused *Encoder) {
	t.Helper()
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	ss := rs.ScopeSpans().AppendEmpty()
	src.span(rs, ss, ss.Spans().AppendEmpty())
	doc, back := encodeDecode(t, td, reused)
	want := ptrace.NewTraces()
	td.CopyTo(want)
	normalise(want)
	if !bytes.Equal(protoBytes(t, want), protoBytes(t, back)) {
		wj, _ := (&ptrace.JSONMarshaler{}).MarshalTraces(want)
		gj, _ := (&ptrace.JSONMarshaler{}).MarshalTraces(back)
		t.Fatalf("round trip differs\ndoc:  %.3000s\nwant: %.3000s\ngot:  %.3000s", doc, wj, gj)
	}
	checkFlatKeys(t, doc)
}

// checkFlatKeys: no member name the server refuses (empty, or a path with
// an empty segment) and no repeated member.
func checkFlatKeys(t testing.TB, doc []byte) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(doc))
	var walk func(path string) bool
	walk = func(path string) bool {
		tok, err := dec.Token()
		if err != nil {
			t.Fatalf("%v in %s", err, doc)
		}
		switch tok {
		case json.Delim('{'):
			seen := map[string]bool{}
			for dec.More() {
				kt, _ := dec.Token()
				k := kt.(string)
				if seen[k] {
					t.Fatalf("member %q repeated in %s", k, doc)
				}
				seen[k] = true
				if path != "roundTrip" {
					if k == "" || k[0] == '.' || k[len(k)-1] == '.' || bytes.Contains([]byte(k), []byte("..")) {
						t.Fatalf("member name %q refused by the server, in %s", k, doc)
					}
				}
				walk(k)
			}
			dec.Token()
		case json.Delim('['):
			for dec.More() {
				walk(path)
			}
			dec.Token()
		}
		return true
	}
	walk("")
}

func TestRoundTripRandom(t *testing.T) {
	var reused Encoder
	for seed := range uint64(3000) {
		checkRoundTrip(t, &source{rng: rand.New(rand.NewPCG(seed, 7))}, &reused)
	}
}

func TestRoundTripEmptySpan(t *testing.T) {
	td := ptrace.NewTraces()
	td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	doc, back := encodeDecode(t, td, nil)
	const want = `{"traceId":"","spanId":"","parentSpanId":"","traceState":"","name":"","kind":"SPAN_KIND_UNSPECIFIED",` +
		`"startTime":"1970-01-01T00:00:00Z","endTime":"1970-01-01T00:00:00Z","durationInNanos":0,"status.code":0,` +
		`"droppedAttributesCount":0,"events":[],"droppedEventsCount":0,"links":[],"droppedLinksCount":0}`
	if string(doc) != want {
		t.Fatalf("got\n%s\nwant\n%s", doc, want)
	}
	if !bytes.Equal(protoBytes(t, td), protoBytes(t, back)) {
		t.Fatal("empty span does not come back empty")
	}
}

func TestRoundTripEveryValueType(t *testing.T) {
	td := ptrace.NewTraces()
	rs := td.ResourceSpans().AppendEmpty()
	ss := rs.ScopeSpans().AppendEmpty()
	span := ss.Spans().AppendEmpty()
	m := span.Attributes()
	m.PutStr("s", "v")
	m.PutInt("i", math.MinInt64)
	m.PutDouble("d", 2)
	m.PutDouble("neg0", math.Copysign(0, -1))
	m.PutDouble("nan", math.NaN())
	m.PutDouble("inf", math.Inf(-1))
	m.PutBool("b", false)
	m.PutEmptyBytes("y").FromRaw([]byte{0, 1, 255})
	m.PutEmpty("e")
	sl := m.PutEmptySlice("sl")
	sl.AppendEmpty().SetInt(1)
	sl.AppendEmpty().SetStr("1")
	sl.AppendEmpty().SetEmptyMap().PutDouble("x", 1)
	m.PutEmptyMap("m").PutEmptyMap("n").PutStr("d", "NaN")
	doc, back := encodeDecode(t, td, nil)
	if !bytes.Equal(protoBytes(t, td), protoBytes(t, back)) {
		gj, _ := (&ptrace.JSONMarshaler{}).MarshalTraces(back)
		t.Fatalf("differs:\n%s\n%s", doc, gj)
	}
	// What Trace Analytics sees: the flat members, as Data Prepper writes them.
	for _, frag := range []string{`"span.attributes.s":"v"`, `"span.attributes.i":-9223372036854775808`,
		`"span.attributes.d":2.0`, `"span.attributes.neg0":-0.0`, `"span.attributes.nan":"NaN"`,
		`"span.attributes.inf":"-Infinity"`, `"span.attributes.b":false`, `"span.attributes.y":"AAH/"`,
		`"span.attributes.e":""`, `"span.attributes.sl":"[1,\"1\",{\"x\":1.0}]"`,
		`"span.attributes.m":"{\"n\":{\"d\":\"NaN\"}}"`} {
		if !bytes.Contains(doc, []byte(frag)) {
			t.Errorf("document lacks %s:\n%s", frag, doc)
		}
	}
}

func FuzzRoundTrip(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f"))
	f.Add(bytes.Repeat([]byte{0xff, 3, 7, 1}, 64))
	var reused Encoder
	f.Fuzz(func(t *testing.T, b []byte) {
		checkRoundTrip(t, &source{b: b}, &reused)
	})
}

// Repeated keys (a map from the wire can hold them) and keys equal once
// invalid UTF-8 is replaced are written once, the first, and read back so.
func TestRepeatedKeysKeepTheFirst(t *testing.T) {
	const wire = `{"resourceSpans":[{"resource":{"attributes":[{"key":"r","value":{"intValue":"1"}},{"key":"r","value":{"intValue":"2"}}]},` +
		`"scopeSpans":[{"spans":[{"name":"s","attributes":[` +
		`{"key":"a","value":{"stringValue":"first"}},{"key":"a","value":{"stringValue":"second"}},` +
		`{"key":"b\xff","value":{"boolValue":true}},{"key":"b\xfe","value":{"boolValue":false}}]}]}]}]}`
	raw := strings.NewReplacer(`b\xff`, "b\xff", `b\xfe`, "b\xfe").Replace(wire)
	td, err := (&ptrace.JSONUnmarshaler{}).UnmarshalTraces([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	if n := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes().Len(); n != 4 {
		t.Fatalf("the wire map holds %d attributes, want 4 (repeats kept)", n)
	}
	doc, back := encodeDecode(t, td, nil)
	checkFlatKeys(t, doc)
	want := ptrace.NewTraces()
	td.CopyTo(want)
	normalise(want)
	if !bytes.Equal(protoBytes(t, want), protoBytes(t, back)) {
		gj, _ := (&ptrace.JSONMarshaler{}).MarshalTraces(back)
		t.Fatalf("doc %s\nread back %s", doc, gj)
	}
	attrs := back.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes()
	if v, _ := attrs.Get("a"); attrs.Len() != 2 || v.Str() != "first" {
		t.Fatalf("attributes %v", attrs.AsRaw())
	}
}
