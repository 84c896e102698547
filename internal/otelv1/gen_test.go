package otelv1

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// source draws test data from fuzz bytes (zeros once they are used up) or
// from a seeded PRNG.
type source struct {
	b   []byte
	rng *rand.Rand
}

func (s *source) byte() byte {
	if s.rng != nil {
		return byte(s.rng.Uint32())
	}
	if len(s.b) == 0 {
		return 0
	}
	c := s.b[0]
	s.b = s.b[1:]
	return c
}

func (s *source) n(k int) int { return int(s.byte()) % k }

func (s *source) u64() uint64 {
	switch s.n(6) {
	case 0:
		return 0
	case 1:
		return math.MaxUint64 - uint64(s.n(3))
	case 2:
		return maxDateNanos + uint64(s.n(3)) - 1
	}
	var b [8]byte
	for i := range b {
		b[i] = s.byte()
	}
	return 1_700_000_000_000_000_000 + binary.LittleEndian.Uint64(b[:])%1e18
}

// hostile holds strings that stress the layout: keys with dots and '@',
// empty and blank keys, invalid UTF-8, escapes, look-alikes of the other
// types and of the encoder's own markers.
var hostile = [...]string{"", " ", "a", "a.b", "a@b", "a..b", ".a", "a.", "@", "service.name",
	"x\"y\\z", "\x00\x01\x1f\x7f", "\n\r\t", "\xff", "h\xc3", "\xed\xa0\x80", "é€𝄞", "\u2028",
	"NaN", "Infinity", "1.5", "true", "null", "d", "y", "m", "i", "{\"m\":[]}", "\U0010ffff"}

func (s *source) str() string {
	k := s.n(len(hostile) + 4)
	switch {
	case k < len(hostile):
		return hostile[k]
	case k == len(hostile):
		return strings.Repeat("long€", 2000+s.n(200)) // past ignore_above and in bytes near the term limit
	default:
		b := make([]byte, s.n(20))
		for i := range b {
			b[i] = s.byte()
		}
		return string(b)
	}
}

func (s *source) double() float64 {
	special := [...]float64{0, math.Copysign(0, -1), 1, -1.5, 1e21, 1e-7, math.MaxFloat64,
		math.SmallestNonzeroFloat64, math.NaN(), math.Inf(1), math.Inf(-1), 0.1}
	if k := s.n(len(special) + 1); k < len(special) {
		return special[k]
	}
	f := math.Float64frombits(s.u64() ^ uint64(s.byte())<<56)
	if math.IsNaN(f) {
		return math.NaN()
	}
	return f
}

func (s *source) value(v pcommon.Value, depth int) {
	switch s.n(9) {
	case 0:
		v.SetInt(int64(s.u64()))
	case 1:
		v.SetDouble(s.double())
	case 2:
		v.SetBool(s.n(2) == 0)
	case 3:
		b := make([]byte, s.n(6))
		for i := range b {
			b[i] = s.byte()
		}
		v.SetEmptyBytes().FromRaw(b)
	case 4:
		if depth < 3 {
			sl := v.SetEmptySlice()
			for range s.n(4) {
				s.value(sl.AppendEmpty(), depth+1)
			}
			return
		}
		v.SetStr(s.str())
	case 5:
		if depth < 3 {
			s.attrs(v.SetEmptyMap(), depth+1)
			return
		}
		v.SetStr(s.str())
	case 6:
		// empty
	default:
		v.SetStr(s.str())
	}
}

// attrs fills m with hostile keys and values of every type.
func (s *source) attrs(m pcommon.Map, depth int) {
	for range s.n(6) {
		k := s.str()
		if s.n(4) == 0 {
			k = "k" + string(rune('a'+s.n(26)))
		}
		s.value(m.PutEmpty(k), depth)
	}
}

func (s *source) id(b []byte) {
	if s.n(5) == 0 {
		return
	}
	for i := range b {
		b[i] = s.byte()
	}
}

func (s *source) span(rs ptrace.ResourceSpans, ss ptrace.ScopeSpans, span ptrace.Span) {
	res := rs.Resource()
	if s.n(3) > 0 {
		res.Attributes().PutStr("service.name", s.str())
	}
	s.attrs(res.Attributes(), 0)
	res.SetDroppedAttributesCount(uint32(s.n(3)))
	if s.n(3) == 0 {
		rs.SetSchemaUrl(s.str())
	}
	sc := ss.Scope()
	sc.SetName(s.str())
	sc.SetVersion(s.str())
	if s.n(2) == 0 {
		s.attrs(sc.Attributes(), 0)
	}
	sc.SetDroppedAttributesCount(uint32(s.n(2)))
	if s.n(3) == 0 {
		ss.SetSchemaUrl(s.str())
	}
	var tid pcommon.TraceID
	var sid, pid pcommon.SpanID
	s.id(tid[:])
	s.id(sid[:])
	s.id(pid[:])
	span.SetTraceID(tid)
	span.SetSpanID(sid)
	span.SetParentSpanID(pid)
	span.TraceState().FromRaw(s.str())
	span.SetName(s.str())
	span.SetKind(ptrace.SpanKind(s.n(8)))
	span.SetFlags(uint32(s.u64()))
	span.SetStartTimestamp(pcommon.Timestamp(s.u64()))
	span.SetEndTimestamp(pcommon.Timestamp(s.u64()))
	span.Status().SetCode(ptrace.StatusCode(s.n(4)))
	if s.n(2) == 0 {
		span.Status().SetMessage(s.str())
	}
	s.attrs(span.Attributes(), 0)
	span.SetDroppedAttributesCount(uint32(s.n(3)))
	for range s.n(3) {
		ev := span.Events().AppendEmpty()
		ev.SetTimestamp(pcommon.Timestamp(s.u64()))
		ev.SetName(s.str())
		s.attrs(ev.Attributes(), 0)
		ev.SetDroppedAttributesCount(uint32(s.n(2)))
	}
	span.SetDroppedEventsCount(uint32(s.n(2)))
	for range s.n(3) {
		l := span.Links().AppendEmpty()
		var lt pcommon.TraceID
		var ls pcommon.SpanID
		s.id(lt[:])
		s.id(ls[:])
		l.SetTraceID(lt)
		l.SetSpanID(ls)
		l.TraceState().FromRaw(s.str())
		l.SetFlags(uint32(s.n(3)))
		s.attrs(l.Attributes(), 0)
		l.SetDroppedAttributesCount(uint32(s.n(2)))
	}
	span.SetDroppedLinksCount(uint32(s.n(2)))
}

// validUTF8 is jsonstr's replacement of invalid bytes.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return sanitize(s)
}
