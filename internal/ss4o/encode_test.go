package ss4o

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func ts(s string) pcommon.Timestamp {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		panic(err)
	}
	return pcommon.NewTimestampFromTime(t)
}

// goldenLog is a typical record with one attribute of every type.
func goldenLog() (plog.ResourceLogs, plog.ScopeLogs, plog.LogRecord) {
	rl := plog.NewResourceLogs()
	rl.SetSchemaUrl("https://opentelemetry.io/schemas/1.26.0")
	res := rl.Resource().Attributes()
	res.PutStr("service.name", "checkout")
	res.PutStr("host.name", "bench-host")
	res.PutStr("k8s.pod.name", "checkout-7f9c")
	sl := rl.ScopeLogs().AppendEmpty()
	sl.Scope().SetName("github.com/acme/checkout")
	sl.Scope().SetVersion("1.4.2")
	sl.Scope().Attributes().PutBool("scope.flag", true)
	lr := sl.LogRecords().AppendEmpty()
	lr.SetTimestamp(ts("2026-11-29T16:11:46.438131144Z"))
	lr.SetObservedTimestamp(ts("2026-11-29T16:11:46.4384Z"))
	lr.SetTraceID(pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0})
	lr.SetSpanID(pcommon.SpanID{1, 2, 3, 4, 5, 6, 7, 0})
	lr.SetFlags(plog.DefaultLogRecordFlags.WithIsSampled(true))
	lr.SetSeverityText("Info")
	lr.SetSeverityNumber(plog.SeverityNumberInfo)
	lr.Body().SetStr("order \"42\" placed\n\tby ü")
	a := lr.Attributes()
	a.PutStr("str", "value")
	a.PutInt("int", -42)
	a.PutDouble("double", 2)
	a.PutDouble("nan", math.NaN())
	a.PutBool("bool", false)
	a.PutEmptyBytes("bytes").FromRaw([]byte{0, 1, 2, 0xff})
	s := a.PutEmptySlice("slice")
	s.AppendEmpty().SetStr("a")
	s.AppendEmpty().SetInt(1)
	m := a.PutEmptyMap("map")
	m.PutStr("nested", "x")
	m.PutEmptyMap("empty")
	a.PutEmpty("empty")
	return rl, sl, lr
}

func goldenSpan() (ptrace.ResourceSpans, ptrace.ScopeSpans, ptrace.Span) {
	rs := ptrace.NewResourceSpans()
	rs.Resource().Attributes().PutStr("service.name", "checkout")
	rs.Resource().SetDroppedAttributesCount(1)
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("telemetrygen")
	ss.SetSchemaUrl("https://opentelemetry.io/schemas/1.26.0")
	sp := ss.Spans().AppendEmpty()
	sp.SetTraceID(pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0, 0})
	sp.SetSpanID(pcommon.SpanID{1, 2, 3, 4, 5, 6, 0, 0})
	sp.SetParentSpanID(pcommon.SpanID{9, 9, 9, 9, 9, 9, 0, 0})
	sp.TraceState().FromRaw("vendor=a,other=b")
	sp.SetFlags(0x101)
	sp.SetName("okey-dokey-0")
	sp.SetKind(ptrace.SpanKindServer)
	sp.SetStartTimestamp(ts("2026-11-29T16:12:12.875779959Z"))
	sp.SetEndTimestamp(ts("2026-11-29T16:12:12.875902Z"))
	sp.Status().SetCode(ptrace.StatusCodeError)
	sp.Status().SetMessage("boom")
	sp.Attributes().PutStr("http.method", "GET")
	sp.Attributes().PutInt("http.status_code", 500)
	sp.SetDroppedAttributesCount(2)
	ev := sp.Events().AppendEmpty()
	ev.SetTimestamp(ts("2026-11-29T16:12:12.875829959Z"))
	ev.SetName("event-0")
	ev.Attributes().PutStr("ev.key", "ev.value")
	sp.Events().AppendEmpty().SetName("no-time")
	sp.SetDroppedEventsCount(3)
	l := sp.Links().AppendEmpty()
	l.SetTraceID(pcommon.TraceID{0xff, 0xee, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14})
	l.SetSpanID(pcommon.SpanID{0xab, 0xcd, 1, 2, 3, 4, 5, 6})
	l.SetFlags(1)
	l.SetDroppedAttributesCount(4)
	sp.SetDroppedLinksCount(5)
	return rs, ss, sp
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := "testdata/" + name
	if *update {
		if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, bytes.TrimSuffix(want, []byte("\n"))) {
		t.Errorf("%s differs\ngot  %s\nwant %s", name, got, want)
	}
	if !json.Valid(got) {
		t.Errorf("%s: invalid JSON", name)
	}
}

func TestGoldenLog(t *testing.T) {
	rl, sl, lr := goldenLog()
	var e Encoder
	e.ResetLogs(rl, sl)
	golden(t, "log.json", e.AppendLog(nil, lr))
}

func TestGoldenSpan(t *testing.T) {
	rs, ss, sp := goldenSpan()
	var e Encoder
	e.ResetTraces(rs, ss)
	golden(t, "span.json", e.AppendSpan(nil, sp))
}

func TestValueTypes(t *testing.T) {
	cases := []struct {
		set  func(pcommon.Value)
		want string
	}{
		{func(v pcommon.Value) {}, `null`},
		{func(v pcommon.Value) { v.SetStr("") }, `""`},
		{func(v pcommon.Value) { v.SetStr("a\"b\\c/\u007f") }, `"a\"b\\c/` + "\u007f" + `"`},
		{func(v pcommon.Value) { v.SetStr("\x00\x1f\b\f\n\r\t") }, `"\u0000\u001f\b\f\n\r\t"`},
		{func(v pcommon.Value) { v.SetStr("a\xffb\xed\xa0\x80c") }, `"a` + "\uFFFD" + `b` + "\uFFFD\uFFFD\uFFFD" + `c"`},
		{func(v pcommon.Value) { v.SetStr("€\U0001D11E") }, `"€` + "\U0001D11E" + `"`},
		{func(v pcommon.Value) { v.SetBool(true) }, `true`},
		{func(v pcommon.Value) { v.SetBool(false) }, `false`},
		{func(v pcommon.Value) { v.SetInt(math.MinInt64) }, `-9223372036854775808`},
		{func(v pcommon.Value) { v.SetInt(math.MaxInt64) }, `9223372036854775807`},
		{func(v pcommon.Value) { v.SetDouble(2) }, `2.0`},
		{func(v pcommon.Value) { v.SetDouble(math.Copysign(0, -1)) }, `-0.0`},
		{func(v pcommon.Value) { v.SetDouble(0.1) }, `0.1`},
		{func(v pcommon.Value) { v.SetDouble(1e21) }, `1e+21`},
		{func(v pcommon.Value) { v.SetDouble(1e-7) }, `1e-07`},
		{func(v pcommon.Value) { v.SetDouble(math.MaxFloat64) }, `1.7976931348623157e+308`},
		{func(v pcommon.Value) { v.SetDouble(math.NaN()) }, `"NaN"`},
		{func(v pcommon.Value) { v.SetDouble(math.Inf(1)) }, `"Infinity"`},
		{func(v pcommon.Value) { v.SetDouble(math.Inf(-1)) }, `"-Infinity"`},
		{func(v pcommon.Value) { v.SetEmptyBytes() }, `""`},
		{func(v pcommon.Value) { v.SetEmptyBytes().FromRaw([]byte("hello, world")) }, `"aGVsbG8sIHdvcmxk"`},
		{func(v pcommon.Value) { v.SetEmptySlice() }, `[]`},
		{func(v pcommon.Value) { v.SetEmptyMap() }, `{}`},
		{func(v pcommon.Value) {
			s := v.SetEmptySlice()
			s.AppendEmpty()
			s.AppendEmpty().SetEmptySlice().AppendEmpty().SetInt(1)
			s.AppendEmpty().SetEmptyMap().PutDouble("d", 1.5)
		}, `[null,[1],{"d":1.5}]`},
	}
	for _, c := range cases {
		v := pcommon.NewValueEmpty()
		c.set(v)
		if got := string(appendValue(nil, v)); got != c.want {
			t.Errorf("%s %v: got %s, want %s", v.Type(), v.AsRaw(), got, c.want)
		}
	}
	// Bytes longer than the encoder's chunk keep one padding at the end.
	b := make([]byte, 1000)
	for i := range b {
		b[i] = byte(i * 7)
	}
	v := pcommon.NewValueEmpty()
	v.SetEmptyBytes().FromRaw(b)
	want, _ := json.Marshal(b)
	if got := appendValue(nil, v); !bytes.Equal(got, want) {
		t.Errorf("long bytes: got %s, want %s", got, want)
	}
}

// TestStringsAgainstEncodingJSON: for every string, encoding/json reads our
// escaping back as the sanitized string, and for valid UTF-8 our output
// equals encoding/json's apart from its HTML and U+2028/9 escapes.
func TestStringsAgainstEncodingJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i := range 20000 {
		b := make([]byte, rng.IntN(12))
		for j := range b {
			if i%2 == 0 {
				b[j] = byte(rng.IntN(256))
			} else {
				b[j] = byte(rng.IntN(128))
			}
		}
		s := string(b)
		got := appendString(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil || back != sanitizeAny(s) {
			t.Fatalf("%q: encoded %s read back as %q (%v)", s, got, back, err)
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(s)
		want := strings.TrimSuffix(buf.String(), "\n")
		want = strings.NewReplacer(`\u0008`, `\b`, `\u000c`, `\f`, `\u2028`, "\u2028", `\u2029`, "\u2029", `\ufffd`, "\uFFFD").Replace(want)
		if string(got) != want {
			t.Fatalf("%q: got %s, encoding/json %s", s, got, want)
		}
	}
}

func TestSanitizeMatchesRange(t *testing.T) {
	for _, s := range []string{"", "abc", "\xff", "a\xc3", "\xed\xa0\x80", "\xf4\x90\x80\x80", "é\xffé"} {
		if got, want := sanitize(s), sanitizeAny(s); got != want {
			t.Errorf("sanitize(%q) = %q, want %q", s, got, want)
		}
	}
}

func TestTimeFormatAndParse(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	check := func(ns uint64) {
		got := string(appendTime(nil, ns))
		want := `"` + expectTime(ns) + `"`
		if got != want {
			t.Fatalf("%d: got %s, want %s", ns, got, want)
		}
		back, err := parseTime(got[1 : len(got)-1])
		if err != nil || back != ns {
			t.Fatalf("%d: parsed back %d, %v", ns, back, err)
		}
	}
	for _, ns := range []uint64{0, 1, 999_999_999, 1e9, 951782400e9 /* 2000-02-29 */, 4107542400e9, math.MaxInt64, math.MaxInt64 + 1, math.MaxUint64} {
		check(ns)
	}
	for range 100000 {
		check(rng.Uint64())
		check(rng.Uint64N(4e18))
		// Fractions with trailing zeros (ms, µs, tenths) and leading ones.
		for _, unit := range []uint64{10, 100, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8} {
			check(rng.Uint64N(4e18) / unit * unit)
		}
		check(rng.Uint64N(4e9)*1e9 + rng.Uint64N(1000))
	}
	// Other RFC 3339 forms are read too.
	for s, want := range map[string]uint64{
		"1970-01-01T00:00:01+00:00":           1e9,
		"1970-01-01T01:00:01.5+01:00":         1.5e9,
		"2026-11-29T16:11:46.438131144Z":      1795968706438131144,
		"2026-11-29T16:11:46.43813114Z":       1795968706438131140,
		"2026-11-29T16:11:46.000000000Z":      1795968706000000000,
		"2554-07-21T23:34:33.709551615Z":      math.MaxUint64,
		"2026-11-29T17:11:46.438131144+01:00": 1795968706438131144,
	} {
		if got, err := parseTime(s); err != nil || got != want {
			t.Errorf("parseTime(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
	for _, s := range []string{"0001-01-01T00:00:00Z", "1969-12-31T23:59:59.999Z", "2554-07-21T23:34:33.709551616Z", "9999-12-31T23:59:59Z",
		"2026-02-30T00:00:00Z", "2026-11-29 16:11:46Z", "2026-11-29T16:11:46.Z", "", "1795968706"} {
		if got, err := parseTime(s); err == nil {
			t.Errorf("parseTime(%q) = %d, want an error", s, got)
		}
	}
}

// TestRepeatedKeys: pdata maps unmarshalled from OTLP can repeat a key; the
// document keeps the first (what Map.Get returns), since OpenSearch rejects
// documents with repeated keys. Above smallMap keys a set is used.
func TestRepeatedKeys(t *testing.T) {
	for _, n := range []int{2, smallMap, smallMap + 1, 100} {
		var kvs []string
		for i := range n {
			kvs = append(kvs, `{"key":"k`+string(rune('a'+i%26))+string(rune('a'+i/26))+`","value":{"intValue":"`+string(rune('0'+i%10))+`"}}`)
		}
		kvs = append(kvs, `{"key":"kaa","value":{"stringValue":"second"}}`, `{"key":"kba","value":{"stringValue":"second"}}`)
		otlp := `{"resourceLogs":[{"scopeLogs":[{"logRecords":[{"attributes":[` + strings.Join(kvs, ",") + `]}]}]}]}`
		var u plog.JSONUnmarshaler
		logs, err := u.UnmarshalLogs([]byte(otlp))
		if err != nil {
			t.Fatal(err)
		}
		rl := logs.ResourceLogs().At(0)
		lr := rl.ScopeLogs().At(0).LogRecords().At(0)
		if lr.Attributes().Len() != n+2 {
			t.Fatalf("pdata map has %d entries, want %d with repeats", lr.Attributes().Len(), n+2)
		}
		doc := AppendLog(nil, rl.Resource(), rl.ScopeLogs().At(0).Scope(), lr)
		var got struct{ Attributes map[string]any }
		if err := json.Unmarshal(doc, &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Attributes) != n || got.Attributes["kaa"] != 0.0 || got.Attributes["kba"] != 1.0 {
			t.Errorf("n=%d: %d attributes, kaa=%v: %s", n, len(got.Attributes), got.Attributes["kaa"], doc)
		}
		if bytes.Count(doc, []byte(`"kaa":`)) != 1 {
			t.Errorf("n=%d: repeated key written: %s", n, doc)
		}
	}
}

func TestDeepNesting(t *testing.T) {
	lr := plog.NewLogRecord()
	v := lr.Body()
	const depth = 3000
	for i := range depth {
		if i%2 == 0 {
			v = v.SetEmptyMap().PutEmpty("k")
		} else {
			v = v.SetEmptySlice().AppendEmpty()
		}
	}
	v.SetStr("leaf")
	doc := AppendLog(nil, pcommon.NewResource(), pcommon.NewInstrumentationScope(), lr)
	if !json.Valid(doc) {
		t.Fatal("invalid JSON")
	}
	var got any
	if err := json.Unmarshal(doc, &got); err != nil {
		t.Fatal(err)
	}
	// A map body is written as its JSON text (appendBody).
	var cur any
	if err := json.Unmarshal([]byte(got.(map[string]any)["body"].(string)), &cur); err != nil {
		t.Fatal(err)
	}
	for i := range depth {
		if i%2 == 0 {
			cur = cur.(map[string]any)["k"]
		} else {
			cur = cur.([]any)[0]
		}
	}
	if cur != "leaf" {
		t.Fatalf("leaf: %v", cur)
	}
	checkDecodedLog(t, doc, lr)
}

func TestHugeAttributes(t *testing.T) {
	lr := plog.NewLogRecord()
	big := strings.Repeat("x\"\n\xff€", 200_000)
	lr.Body().SetStr(big)
	for i := range 5000 {
		lr.Attributes().PutInt("attr."+strings.Repeat("k", i%50)+string(rune('a'+i%26))+string(rune(0x100+i)), int64(i))
	}
	s := lr.Attributes().PutEmptySlice("list")
	for i := range 10000 {
		s.AppendEmpty().SetDouble(float64(i) / 3)
	}
	doc := AppendLog(nil, pcommon.NewResource(), pcommon.NewInstrumentationScope(), lr)
	var got struct {
		Body       string
		Attributes map[string]any
	}
	if err := json.Unmarshal(doc, &got); err != nil {
		t.Fatal(err)
	}
	if got.Body != sanitizeAny(big) || len(got.Attributes) != 5001 || len(got.Attributes["list"].([]any)) != 10000 {
		t.Fatalf("body equal %v, %d attributes", got.Body == sanitizeAny(big), len(got.Attributes))
	}
	checkDecodedLog(t, doc, lr)
}

// checkDecodedLog decodes doc and encodes the result again: the bytes must
// be the same (normalizing lr itself would be quadratic for these sizes).
func checkDecodedLog(t *testing.T, doc []byte, lr plog.LogRecord) {
	t.Helper()
	rl := plog.NewResourceLogs()
	sl := rl.ScopeLogs().AppendEmpty()
	got := sl.LogRecords().AppendEmpty()
	if err := DecodeLog(doc, rl, sl, got); err != nil {
		t.Fatal(err)
	}
	if again := AppendLog(nil, rl.Resource(), sl.Scope(), got); !bytes.Equal(again, doc) {
		t.Fatal("decoded record encodes differently")
	}
	if got.Attributes().Len() != lr.Attributes().Len() {
		t.Fatalf("%d attributes decoded, %d encoded", got.Attributes().Len(), lr.Attributes().Len())
	}
}

func TestEncoderReuse(t *testing.T) {
	rl, sl, lr := goldenLog()
	var e Encoder
	e.ResetLogs(rl, sl)
	first := e.AppendLog(nil, lr)
	e.Reset(pcommon.NewResource(), "", pcommon.NewInstrumentationScope(), "")
	if got, want := e.AppendLog(nil, lr), AppendLog(nil, pcommon.NewResource(), pcommon.NewInstrumentationScope(), lr); !bytes.Equal(got, want) {
		t.Fatalf("after Reset:\n%s\n%s", got, want)
	}
	e.ResetLogs(rl, sl)
	buf := make([]byte, 0, 4096)
	buf = e.AppendLog(buf, lr)
	buf = e.AppendLog(buf, lr)
	if !bytes.Equal(buf, append(append([]byte{}, first...), first...)) {
		t.Fatal("appending twice does not give two documents")
	}
}

func TestAllocs(t *testing.T) {
	rl, sl, lr := typicalLog()
	buf := make([]byte, 0, 4096)
	var e Encoder
	e.ResetLogs(rl, sl)
	if n := testing.AllocsPerRun(100, func() { buf = AppendLog(buf[:0], rl.Resource(), sl.Scope(), lr) }); n != 0 {
		t.Errorf("AppendLog: %v allocs", n)
	}
	if n := testing.AllocsPerRun(100, func() { buf = e.AppendLog(buf[:0], lr) }); n != 0 {
		t.Errorf("Encoder.AppendLog: %v allocs", n)
	}
	wide := plog.NewLogRecord()
	for i := range smallMap {
		wide.Attributes().PutInt("attribute."+string(rune('a'+i)), int64(i))
	}
	if n := testing.AllocsPerRun(100, func() { buf = e.AppendLog(buf[:0], wide) }); n != 0 {
		t.Errorf("Encoder.AppendLog with %d attributes: %v allocs", smallMap, n)
	}
	rs, ss, sp := typicalSpan()
	if n := testing.AllocsPerRun(100, func() { buf = AppendSpan(buf[:0], rs.Resource(), ss.Scope(), sp) }); n != 0 {
		t.Errorf("AppendSpan: %v allocs", n)
	}
	var r Repeats
	if n := testing.AllocsPerRun(100, func() {
		r.Reset()
		buf = AppendID(buf[:0], ContentID(buf), r.Next(ContentID(buf)))
	}); n != 0 {
		t.Errorf("ids: %v allocs", n)
	}
}

// TestClockReuse checks that a clock reused across timestamps (mostly in
// the same few seconds, sometimes far away) writes what a fresh one does.
func TestClockReuse(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	var c clock
	base := rng.Uint64N(4e18)
	for i := range 100000 {
		ns := base + rng.Uint64N(3e9)
		switch i % 100 {
		case 0:
			ns = rng.Uint64()
		case 1:
			ns = ns / 1e9 * 1e9 // a whole second
		}
		if got, want := string(c.appendTime(nil, ns)), string(appendTime(nil, ns)); got != want {
			t.Fatalf("%d: reused clock wrote %s, want %s", ns, got, want)
		}
	}
}

// TestAppendHex checks the word-at-a-time hex against encoding/hex on every
// length up to 40 and a million random words.
func TestAppendHex(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for n := 0; n <= 40; n++ {
		for range 200 {
			b := make([]byte, n)
			for i := range b {
				b[i] = byte(rng.Uint32())
			}
			if got, want := string(appendHex([]byte("x"), b)), "x"+hex.EncodeToString(b); got != want {
				t.Fatalf("appendHex(%x) = %s", b, got)
			}
		}
	}
	var w [4]byte
	for range 1_000_000 {
		v := rng.Uint32()
		binary.BigEndian.PutUint32(w[:], v)
		var out [8]byte
		binary.BigEndian.PutUint64(out[:], hex8(v))
		if string(out[:]) != hex.EncodeToString(w[:]) {
			t.Fatalf("hex8(%08x) = %s", v, out)
		}
	}
}

// TestAppendDoubleMatchesG checks that the 'f' shortcut writes every double
// exactly as strconv's shortest 'g' does: random bit patterns across the
// whole range, short decimals, integers and the edges of the shortcut.
func TestAppendDoubleMatchesG(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	want := func(f float64) string {
		s := strconv.FormatFloat(f, 'g', -1, 64)
		if !strings.ContainsAny(s, ".e") {
			s += ".0"
		}
		return s
	}
	check := func(f float64) {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return
		}
		if got := string(appendDouble(nil, f)); got != want(f) {
			t.Fatalf("appendDouble(%v) = %s, want %s", f, got, want(f))
		}
	}
	edges := []float64{1e-4, 1e5, math.Nextafter(1e-4, 0), math.Nextafter(1e-4, 1), math.Nextafter(1e5, 0), math.Nextafter(1e5, 1e6), 99999.99999999999, 0.0001, 1, 0.5, 12345.678,
		0, math.Copysign(0, -1), math.SmallestNonzeroFloat64, 2.2250738585072009e-308, 1e5, 123456, 1e21}
	for _, f := range edges {
		check(f)
		check(-f)
	}
	for range 1_000_000 {
		check(math.Float64frombits(rng.Uint64()))
		check(rng.Float64() * 1e5)
		check(rng.Float64() * math.Pow(10, float64(rng.IntN(14)-6)))
		check(float64(rng.IntN(10_000_000)) / math.Pow(10, float64(rng.IntN(8))))
		check(float64(rng.Int64N(200_000) - 100_000))
	}
}
