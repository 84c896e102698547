package ss4o

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"math/rand/v2"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// entropy feeds the record generator from fuzz bytes (zeros once they run
// out) or from a seeded PRNG.
type entropy struct {
	b   []byte
	rng *rand.Rand
}

func (e *entropy) byte() byte {
	if e.rng != nil {
		return byte(e.rng.Uint32())
	}
	if len(e.b) == 0 {
		return 0
	}
	c := e.b[0]
	e.b = e.b[1:]
	return c
}

func (e *entropy) intn(n int) int { return int(e.byte()) % n }

func (e *entropy) u64() uint64 {
	if e.rng != nil {
		// Mostly ordinary values, sometimes extremes.
		switch e.rng.IntN(8) {
		case 0:
			return 0
		case 1:
			return math.MaxUint64 - uint64(e.rng.IntN(3))
		case 2:
			return e.rng.Uint64()
		}
		return 1_700_000_000_000_000_000 + e.rng.Uint64N(1e18)
	}
	var b [8]byte
	for i := range b {
		b[i] = e.byte()
	}
	return binary.LittleEndian.Uint64(b[:])
}

// str returns short strings drawn from a pool that includes invalid UTF-8,
// control characters, quotes, non-ASCII and the NaN look-alikes, or raw bytes.
func (e *entropy) str() string {
	pool := [...]string{"", "a", "service.name", "x\"y\\z", "\x00\x01\x1f\x7f", "\n\r\t\b\f", "\xff", "\xfe\xff",
		"h\xc3", "\xed\xa0\x80", "é€𝄞", "\u2028\u2029", "NaN", "Infinity", "1.5", "</script>", "\U0010ffff"}
	switch k := e.intn(len(pool) + 3); {
	case k < len(pool):
		return pool[k]
	default:
		n := e.intn(24)
		b := make([]byte, n)
		for i := range b {
			b[i] = e.byte()
		}
		return string(b)
	}
}

func (e *entropy) double() float64 {
	special := [...]float64{0, math.Copysign(0, -1), 1, -1.5, 1e21, 1e-7, math.MaxFloat64, math.SmallestNonzeroFloat64,
		math.NaN(), math.Inf(1), math.Inf(-1), 123456789.125, 0.1}
	if k := e.intn(len(special) + 2); k < len(special) {
		return special[k]
	}
	return math.Float64frombits(e.u64())
}

func (e *entropy) value(v pcommon.Value, depth int) {
	kinds := 8
	if depth <= 0 {
		kinds = 6 // no nesting
	}
	switch e.intn(kinds) {
	case 0:
		v.SetStr(e.str())
	case 1:
		v.SetInt(int64(e.u64()))
	case 2:
		v.SetDouble(e.double())
	case 3:
		v.SetBool(e.byte()&1 == 1)
	case 4:
		b := make([]byte, e.intn(40))
		for i := range b {
			b[i] = e.byte()
		}
		v.SetEmptyBytes().FromRaw(b)
	case 5:
		// empty
	case 6:
		e.fillMap(v.SetEmptyMap(), depth-1)
	case 7:
		s := v.SetEmptySlice()
		for range e.intn(4) {
			e.value(s.AppendEmpty(), depth-1)
		}
	}
}

// fillMap adds up to 6 entries, sometimes with a repeated key (pdata allows
// it when built by other means than Put).
func (e *entropy) fillMap(m pcommon.Map, depth int) {
	n := e.intn(7)
	for range n {
		k := e.str()
		v := m.PutEmpty(k)
		e.value(v, depth)
	}
	if n > 1 && e.intn(4) == 0 {
		// Keys that differ only in invalid bytes collide once sanitised.
		// (Exactly repeated keys are tested in TestRepeatedKeys.)
		m.PutStr("dup\xff", "first")
		m.PutStr("dup\xfe", "second")
	}
}

func (e *entropy) traceID() (id pcommon.TraceID) {
	if e.intn(5) == 0 {
		return id
	}
	for i := range id {
		id[i] = e.byte()
	}
	return id
}

func (e *entropy) spanID() (id pcommon.SpanID) {
	if e.intn(5) == 0 {
		return id
	}
	for i := range id {
		id[i] = e.byte()
	}
	return id
}

func (e *entropy) u32() uint32 {
	if e.intn(2) == 0 {
		return 0
	}
	return uint32(e.u64())
}

func (e *entropy) origin(res pcommon.Resource, scope pcommon.InstrumentationScope) {
	e.fillMap(res.Attributes(), 2)
	res.SetDroppedAttributesCount(e.u32())
	scope.SetName(e.str())
	scope.SetVersion(e.str())
	e.fillMap(scope.Attributes(), 1)
	scope.SetDroppedAttributesCount(e.u32())
}

func (e *entropy) log(lr plog.LogRecord) {
	lr.SetTimestamp(pcommon.Timestamp(e.u64()))
	lr.SetObservedTimestamp(pcommon.Timestamp(e.u64()))
	lr.SetTraceID(e.traceID())
	lr.SetSpanID(e.spanID())
	lr.SetFlags(plog.LogRecordFlags(e.u32()))
	lr.SetSeverityText(e.str())
	lr.SetSeverityNumber(plog.SeverityNumber(int32(e.u32())))
	lr.SetEventName(e.str())
	e.value(lr.Body(), 3)
	e.fillMap(lr.Attributes(), 3)
	lr.SetDroppedAttributesCount(e.u32())
}

func (e *entropy) span(s ptrace.Span) {
	s.SetStartTimestamp(pcommon.Timestamp(e.u64()))
	s.SetEndTimestamp(pcommon.Timestamp(e.u64()))
	s.SetTraceID(e.traceID())
	s.SetSpanID(e.spanID())
	s.SetParentSpanID(e.spanID())
	s.TraceState().FromRaw(e.str())
	s.SetFlags(e.u32())
	s.SetName(e.str())
	s.SetKind(ptrace.SpanKind(e.intn(8)))
	s.Status().SetCode(ptrace.StatusCode(e.intn(4)))
	s.Status().SetMessage(e.str())
	e.fillMap(s.Attributes(), 3)
	s.SetDroppedAttributesCount(e.u32())
	for range e.intn(3) {
		ev := s.Events().AppendEmpty()
		ev.SetTimestamp(pcommon.Timestamp(e.u64()))
		ev.SetName(e.str())
		e.fillMap(ev.Attributes(), 2)
		ev.SetDroppedAttributesCount(e.u32())
	}
	s.SetDroppedEventsCount(e.u32())
	for range e.intn(3) {
		l := s.Links().AppendEmpty()
		l.SetTraceID(e.traceID())
		l.SetSpanID(e.spanID())
		l.TraceState().FromRaw(e.str())
		l.SetFlags(e.u32())
		e.fillMap(l.Attributes(), 2)
		l.SetDroppedAttributesCount(e.u32())
	}
	s.SetDroppedLinksCount(e.u32())
}

// normalizeValue rewrites v into what SS4O keeps of it (see the package
// documentation): sanitized strings and keys, bytes as base64 strings,
// non-finite doubles as strings, the first of repeated keys.
func normalizeValue(v pcommon.Value) {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		v.SetStr(sanitizeAny(v.Str()))
	case pcommon.ValueTypeBytes:
		v.SetStr(base64.StdEncoding.EncodeToString(v.Bytes().AsRaw()))
	case pcommon.ValueTypeDouble:
		switch f := v.Double(); {
		case math.IsNaN(f):
			v.SetStr("NaN")
		case math.IsInf(f, 1):
			v.SetStr("Infinity")
		case math.IsInf(f, -1):
			v.SetStr("-Infinity")
		}
	case pcommon.ValueTypeMap:
		normalizeMap(v.Map())
	case pcommon.ValueTypeSlice:
		s := v.Slice()
		for i := range s.Len() {
			normalizeValue(s.At(i))
		}
	}
}

func normalizeMap(m pcommon.Map) {
	out := pcommon.NewMap()
	for k, v := range m.All() {
		sk := sanitizeAny(k)
		if _, dup := out.Get(sk); dup {
			continue
		}
		nv := out.PutEmpty(sk)
		v.CopyTo(nv)
		normalizeValue(nv)
	}
	out.MoveTo(m)
}

// sanitizeAny is the reference for U+FFFD replacement, written independently
// of sanitize: it walks runes with a for-range, which yields U+FFFD for each
// invalid byte.
func sanitizeAny(s string) string {
	var out []rune
	for _, r := range s {
		out = append(out, r)
	}
	return string(out)
}

func normalizeOrigin(res pcommon.Resource, scope pcommon.InstrumentationScope) {
	normalizeMap(res.Attributes())
	scope.SetName(sanitizeAny(scope.Name()))
	scope.SetVersion(sanitizeAny(scope.Version()))
	normalizeMap(scope.Attributes())
}

func normalizeLog(lr plog.LogRecord) {
	lr.SetSeverityText(sanitizeAny(lr.SeverityText()))
	lr.SetEventName(sanitizeAny(lr.EventName()))
	// A body that is bytes or a non-finite double comes back as itself:
	// its "bodyType" says what it was. Inside a map or slice body the
	// usual rules hold.
	switch b := lr.Body(); b.Type() {
	case pcommon.ValueTypeBytes, pcommon.ValueTypeDouble:
	default:
		normalizeValue(b)
	}
	normalizeMap(lr.Attributes())
}

func normalizeSpan(s ptrace.Span) {
	s.SetName(sanitizeAny(s.Name()))
	s.TraceState().FromRaw(sanitizeAny(s.TraceState().AsRaw()))
	s.Status().SetMessage(sanitizeAny(s.Status().Message()))
	normalizeMap(s.Attributes())
	for i := range s.Events().Len() {
		ev := s.Events().At(i)
		ev.SetName(sanitizeAny(ev.Name()))
		normalizeMap(ev.Attributes())
	}
	for i := range s.Links().Len() {
		l := s.Links().At(i)
		l.TraceState().FromRaw(sanitizeAny(l.TraceState().AsRaw()))
		normalizeMap(l.Attributes())
	}
}
