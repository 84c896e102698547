package otelv1

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/opensearchrouted/opensearchrouted/internal/jsonstr"
)

// TraceGroup is what a span document carries about its trace's root span
// (Data Prepper's traceGroup and traceGroupFields).
type TraceGroup struct {
	Name          string            // the root span's name
	EndTime       pcommon.Timestamp // root's end
	DurationNanos int64             // root's end - start
	StatusCode    int32             // root's status code (ptrace.StatusCode value)
}

// IsRoot reports whether span is the root of its trace: its parent span id
// is empty (Data Prepper's definition).
func IsRoot(span ptrace.Span) bool { return span.ParentSpanID().IsEmpty() }

// GroupOf returns the trace group a root span gives its trace.
func GroupOf(root ptrace.Span) TraceGroup {
	start, end := clampTime(uint64(root.StartTimestamp())), clampTime(uint64(root.EndTimestamp()))
	return TraceGroup{
		Name:          root.Name(),
		EndTime:       root.EndTimestamp(),
		DurationNanos: int64(end) - int64(start),
		StatusCode:    int32(root.Status().Code()),
	}
}

func clampTime(ns uint64) uint64 { return min(ns, maxDateNanos) }

// Encoder writes span documents in the otel-v1 layout (see the package
// documentation). The zero value is ready and encodes an empty resource and
// scope; ResetTraces encodes a scope's shared part once for all its spans.
// An Encoder is not safe for concurrent use; it can be reused.
type Encoder struct {
	clock       clock
	origin      []byte // ,"serviceName":…,"resource.attributes.…":…,"instrumentationScope.…":…
	originExact []byte // roundTrip members of the resource and scope, each with a leading comma
	exact       []byte // roundTrip members of the current span
	scratch     []byte
	keys        keySet
}

// ResetTraces prepares e for the spans of ss inside rs: the service name,
// resource attributes and scope fields are encoded here, once.
func (e *Encoder) ResetTraces(rs ptrace.ResourceSpans, ss ptrace.ScopeSpans) {
	res, scope := rs.Resource(), ss.Scope()
	e.origin, e.originExact = e.origin[:0], e.originExact[:0]
	if v, ok := res.Attributes().Get("service.name"); ok && v.Type() == pcommon.ValueTypeStr && v.Str() != "" {
		e.origin = append(e.origin, `,"serviceName":`...)
		e.origin = jsonstr.Append(e.origin, v.Str())
	}
	var exact bool
	e.origin, exact = e.appendFlat(e.origin, `"resource.attributes`, res.Attributes())
	if !exact {
		e.originExact = e.appendExactMap(e.originExact, `,"resource":`, res.Attributes())
	}
	if name := scope.Name(); name != "" {
		e.origin = append(e.origin, `,"instrumentationScope.name":`...)
		e.origin = jsonstr.Append(e.origin, name)
	}
	if version := scope.Version(); version != "" {
		e.origin = append(e.origin, `,"instrumentationScope.version":`...)
		e.origin = jsonstr.Append(e.origin, version)
	}
	if scope.Attributes().Len() > 0 {
		e.originExact = e.appendExactMap(e.originExact, `,"scope":`, scope.Attributes())
	}
	e.originExact = appendCount(e.originExact, `,"resourceDropped":`, res.DroppedAttributesCount())
	e.originExact = appendCount(e.originExact, `,"scopeDropped":`, scope.DroppedAttributesCount())
	if u := rs.SchemaUrl(); u != "" {
		e.originExact = append(e.originExact, `,"resourceSchemaUrl":`...)
		e.originExact = jsonstr.Append(e.originExact, u)
	}
	if u := ss.SchemaUrl(); u != "" {
		e.originExact = append(e.originExact, `,"scopeSchemaUrl":`...)
		e.originExact = jsonstr.Append(e.originExact, u)
	}
}

// kindNames are the OTLP protobuf names of the span kinds, as Data Prepper
// writes them; another value is written as "UNRECOGNIZED" (the protobuf
// name of an unknown enum value) and kept under roundTrip.
var kindNames = [...]string{"SPAN_KIND_UNSPECIFIED", "SPAN_KIND_INTERNAL", "SPAN_KIND_SERVER", "SPAN_KIND_CLIENT", "SPAN_KIND_PRODUCER", "SPAN_KIND_CONSUMER"}

const unrecognizedKind = "UNRECOGNIZED"

// KindName is the string a span document's kind field holds for k.
func KindName(k ptrace.SpanKind) string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return unrecognizedKind
}

// AppendSpan appends the document of span (emitted under the resource and
// scope of the last ResetTraces) to dst. With g nil, traceGroup and
// traceGroupFields are left out (the root is not known yet).
func (e *Encoder) AppendSpan(dst []byte, span ptrace.Span, g *TraceGroup) []byte {
	e.exact = e.exact[:0]
	dst = append(dst, `{"traceId":"`...)
	tid := span.TraceID()
	if !tid.IsEmpty() {
		dst = appendHex(dst, tid[:])
	}
	dst = append(dst, `","spanId":"`...)
	if id := span.SpanID(); !id.IsEmpty() {
		dst = appendHex(dst, id[:])
	}
	dst = append(dst, `","parentSpanId":"`...)
	if id := span.ParentSpanID(); !id.IsEmpty() {
		dst = appendHex(dst, id[:])
	}
	dst = append(dst, `","traceState":`...)
	dst = jsonstr.Append(dst, span.TraceState().AsRaw())
	dst = append(dst, `,"name":`...)
	dst = jsonstr.Append(dst, span.Name())
	dst = append(dst, `,"kind":"`...)
	k := span.Kind()
	dst = append(dst, KindName(k)...)
	if k < 0 || int(k) >= len(kindNames) {
		e.exact = append(e.exact, `,"kind":`...)
		e.exact = strconv.AppendInt(e.exact, int64(k), 10)
	}
	start, end := uint64(span.StartTimestamp()), uint64(span.EndTimestamp())
	dst = append(dst, `","startTime":`...)
	dst = e.clock.appendTime(dst, start)
	dst = append(dst, `,"endTime":`...)
	dst = e.clock.appendTime(dst, end)
	e.exactTime(`,"startTime":"`, start)
	e.exactTime(`,"endTime":"`, end)
	dst = append(dst, `,"durationInNanos":`...)
	dst = strconv.AppendInt(dst, int64(clampTime(end))-int64(clampTime(start)), 10)
	if f := span.Flags(); f != 0 {
		dst = append(dst, `,"flags":`...)
		dst = strconv.AppendUint(dst, uint64(f), 10)
	}
	st := span.Status()
	dst = append(dst, `,"status.code":`...)
	dst = strconv.AppendInt(dst, int64(st.Code()), 10)
	if msg := st.Message(); msg != "" {
		dst = append(dst, `,"status.message":`...)
		dst = jsonstr.Append(dst, msg)
	}
	if g != nil {
		dst = append(dst, `,"traceGroup":`...)
		dst = jsonstr.Append(dst, g.Name)
		dst = append(dst, `,"traceGroupFields":{"endTime":`...)
		dst = e.clock.appendTime(dst, uint64(g.EndTime))
		dst = append(dst, `,"durationInNanos":`...)
		dst = strconv.AppendInt(dst, g.DurationNanos, 10)
		dst = append(dst, `,"statusCode":`...)
		dst = strconv.AppendInt(dst, int64(g.StatusCode), 10)
		dst = append(dst, '}')
	}
	var exact bool
	dst, exact = e.appendFlat(dst, `"span.attributes`, span.Attributes())
	if !exact {
		e.exact = e.appendExactMap(e.exact, `,"span":`, span.Attributes())
	}
	dst = append(dst, `,"droppedAttributesCount":`...)
	dst = strconv.AppendUint(dst, uint64(span.DroppedAttributesCount()), 10)
	dst = e.appendEvents(dst, span.Events())
	dst = append(dst, `,"droppedEventsCount":`...)
	dst = strconv.AppendUint(dst, uint64(span.DroppedEventsCount()), 10)
	dst = e.appendLinks(dst, span.Links())
	dst = append(dst, `,"droppedLinksCount":`...)
	dst = strconv.AppendUint(dst, uint64(span.DroppedLinksCount()), 10)
	dst = append(dst, e.origin...)
	if len(e.exact) > 0 || len(e.originExact) > 0 {
		dst = append(dst, `,"roundTrip":{`...)
		n := len(dst)
		dst = append(dst, e.exact...)
		dst = append(dst, e.originExact...)
		dst = append(dst[:n], dst[n+1:]...) // the first member's comma
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// exactTime keeps a time that date_nanos cannot hold under roundTrip, as
// a decimal string.
func (e *Encoder) exactTime(key string, ns uint64) {
	if ns <= maxDateNanos {
		return
	}
	e.exact = append(e.exact, key...)
	e.exact = strconv.AppendUint(e.exact, ns, 10)
	e.exact = append(e.exact, '"')
}

func (e *Encoder) appendEvents(dst []byte, events ptrace.SpanEventSlice) []byte {
	dst = append(dst, `,"events":[`...)
	var lossy []int
	for i := range events.Len() {
		ev := events.At(i)
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"time":`...)
		ts := uint64(ev.Timestamp())
		dst = e.clock.appendTime(dst, ts)
		dst = append(dst, `,"name":`...)
		dst = jsonstr.Append(dst, ev.Name())
		dst = append(dst, `,"attributes":`...)
		var exact bool
		dst, exact = e.appendObject(dst, ev.Attributes())
		dst = append(dst, `,"droppedAttributesCount":`...)
		dst = strconv.AppendUint(dst, uint64(ev.DroppedAttributesCount()), 10)
		dst = append(dst, '}')
		if !exact || ts > maxDateNanos {
			lossy = append(lossy, i)
		}
	}
	dst = append(dst, ']')
	if len(lossy) > 0 {
		e.exact = append(e.exact, `,"events":[`...)
		for j, i := range lossy {
			if j > 0 {
				e.exact = append(e.exact, ',')
			}
			ev := events.At(i)
			e.exact = append(e.exact, `{"i":`...)
			e.exact = strconv.AppendInt(e.exact, int64(i), 10)
			e.exact = e.appendExactMap(e.exact, `,"attributes":`, ev.Attributes())
			if ts := uint64(ev.Timestamp()); ts > maxDateNanos {
				e.exact = append(e.exact, `,"time":"`...)
				e.exact = strconv.AppendUint(e.exact, ts, 10)
				e.exact = append(e.exact, '"')
			}
			e.exact = append(e.exact, '}')
		}
		e.exact = append(e.exact, ']')
	}
	return dst
}

func (e *Encoder) appendLinks(dst []byte, links ptrace.SpanLinkSlice) []byte {
	dst = append(dst, `,"links":[`...)
	var lossy []int
	for i := range links.Len() {
		l := links.At(i)
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = append(dst, `{"traceId":"`...)
		if id := l.TraceID(); !id.IsEmpty() {
			dst = appendHex(dst, id[:])
		}
		dst = append(dst, `","spanId":"`...)
		if id := l.SpanID(); !id.IsEmpty() {
			dst = appendHex(dst, id[:])
		}
		dst = append(dst, `","traceState":`...)
		dst = jsonstr.Append(dst, l.TraceState().AsRaw())
		if f := l.Flags(); f != 0 {
			dst = append(dst, `,"flags":`...)
			dst = strconv.AppendUint(dst, uint64(f), 10)
		}
		dst = append(dst, `,"attributes":`...)
		var exact bool
		dst, exact = e.appendObject(dst, l.Attributes())
		dst = append(dst, `,"droppedAttributesCount":`...)
		dst = strconv.AppendUint(dst, uint64(l.DroppedAttributesCount()), 10)
		dst = append(dst, '}')
		if !exact {
			lossy = append(lossy, i)
		}
	}
	dst = append(dst, ']')
	if len(lossy) > 0 {
		e.exact = append(e.exact, `,"links":[`...)
		for j, i := range lossy {
			if j > 0 {
				e.exact = append(e.exact, ',')
			}
			e.exact = append(e.exact, `{"i":`...)
			e.exact = strconv.AppendInt(e.exact, int64(i), 10)
			e.exact = e.appendExactMap(e.exact, `,"attributes":`, links.At(i).Attributes())
			e.exact = append(e.exact, '}')
		}
		e.exact = append(e.exact, ']')
	}
	return dst
}

// appendObject writes m as a JSON object of flat attributes (keys with '.'
// replaced by '@'), for events and links.
func (e *Encoder) appendObject(dst []byte, m pcommon.Map) ([]byte, bool) {
	dst = append(dst, '{')
	n := len(dst)
	dst, exact := e.appendFlat(dst, "", m)
	if len(dst) > n {
		dst = append(dst[:n], dst[n+1:]...)
	}
	return append(dst, '}'), exact
}

// appendFlat writes the attributes of m as members, each with a leading
// comma, named prefix (a quote and a path without its final dot, or "" for
// none) + "." + the key with every '.' replaced by '@', as Data Prepper
// names them. Values are written as flatValue does. It reports whether the
// members give m back exactly (else the caller keeps m under roundTrip): no
// key holds '@' or is empty or blank (such a key is not written: OpenSearch
// refuses an empty field name), and every value is a string, int, bool or
// finite double. Of keys that read the same once written only the first is
// written.
func (e *Encoder) appendFlat(dst []byte, prefix string, m pcommon.Map) ([]byte, bool) {
	exact := true
	e.keys.reset()
	for k, v := range m.All() {
		if strings.TrimSpace(k) == "" {
			exact = false
			continue
		}
		mark := len(dst)
		dst = append(dst, ',')
		var keyStart int
		if prefix != "" {
			dst = append(dst, prefix...)
			q := len(dst)
			dst = jsonstr.Append(dst, k)
			dst[q] = '.' // the key's opening quote becomes the path's dot
			keyStart = q + 1
		} else {
			dst = jsonstr.Append(dst, k)
			keyStart = mark + 2
		}
		key := dst[keyStart : len(dst)-1]
		for i, c := range key {
			switch c {
			case '.':
				key[i] = '@'
			case '@':
				exact = false
			}
		}
		if e.keys.seen(dst, keyStart, len(key)) {
			dst = dst[:mark]
			continue
		}
		dst = append(dst, ':')
		var ok bool
		dst, ok = e.flatValue(dst, v)
		exact = exact && ok
	}
	return dst, exact
}

// flatValue writes v as Data Prepper writes an attribute value: a string,
// int, bool or double as itself (a double always with a '.' or an
// exponent, so that it reads back as a double), a slice or map as the JSON
// text of its value (a string), NaN and ±Inf as "NaN", "Infinity",
// "-Infinity", bytes as their base64 string, an empty value as "". It
// reports whether the value reads back exactly.
func (e *Encoder) flatValue(dst []byte, v pcommon.Value) ([]byte, bool) {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return jsonstr.Append(dst, v.Str()), true
	case pcommon.ValueTypeInt:
		return strconv.AppendInt(dst, v.Int(), 10), true
	case pcommon.ValueTypeBool:
		if v.Bool() {
			return append(dst, "true"...), true
		}
		return append(dst, "false"...), true
	case pcommon.ValueTypeDouble:
		f := v.Double()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return appendNonFinite(dst, f), false
		}
		return appendDouble(dst, f), true
	case pcommon.ValueTypeBytes:
		return appendBase64(dst, v.Bytes()), false
	case pcommon.ValueTypeSlice, pcommon.ValueTypeMap:
		e.scratch = appendPlain(e.scratch[:0], v)
		return jsonstr.Append(dst, string(e.scratch)), false
	}
	return append(dst, `""`...), false
}

// appendPlain writes v as plain JSON (the text a slice or map attribute
// gets): maps as objects with their keys as they are, slices as arrays,
// bytes as base64 strings, non-finite doubles as strings, empty as null.
func appendPlain(dst []byte, v pcommon.Value) []byte {
	switch v.Type() {
	case pcommon.ValueTypeMap:
		dst = append(dst, '{')
		first := true
		for k, x := range v.Map().All() {
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = jsonstr.Append(dst, k)
			dst = append(dst, ':')
			dst = appendPlain(dst, x)
		}
		return append(dst, '}')
	case pcommon.ValueTypeSlice:
		s := v.Slice()
		dst = append(dst, '[')
		for i := range s.Len() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendPlain(dst, s.At(i))
		}
		return append(dst, ']')
	case pcommon.ValueTypeEmpty:
		return append(dst, "null"...)
	}
	var e Encoder
	out, _ := e.flatValue(dst, v)
	return out
}

// appendExactMap writes key and m as a list of [key, value] pairs with
// typed values (appendTyped), the form roundTrip keeps attributes in. Of
// keys that read the same once written only the first is kept.
func (e *Encoder) appendExactMap(dst []byte, key string, m pcommon.Map) []byte {
	dst = append(dst, key...)
	return appendTypedPairs(dst, m)
}

func appendTypedPairs(dst []byte, m pcommon.Map) []byte {
	dst = append(dst, '[')
	start := len(dst)
	var seen map[string]struct{}
	if m.Len() > 1 {
		seen = make(map[string]struct{}, m.Len())
	}
	for k, v := range m.All() {
		mark := len(dst)
		if len(dst) > start {
			dst = append(dst, ',')
		}
		dst = append(dst, '[')
		ks := len(dst)
		dst = jsonstr.Append(dst, k)
		if seen != nil {
			if _, dup := seen[string(dst[ks:])]; dup {
				dst = dst[:mark]
				continue
			}
			seen[string(dst[ks:])] = struct{}{}
		}
		dst = append(dst, ',')
		dst = appendTyped(dst, v)
		dst = append(dst, ']')
	}
	return append(dst, ']')
}

// appendTyped writes v so that its type reads back: a string, bool or int
// as itself, a finite double with a '.' or an exponent, empty as null, a
// slice as an array of typed values, and the rest as one-member objects:
// {"d":"NaN"|"Infinity"|"-Infinity"}, {"y":base64 of bytes} and
// {"m":[[key, typed value], …]} for a map.
func appendTyped(dst []byte, v pcommon.Value) []byte {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return jsonstr.Append(dst, v.Str())
	case pcommon.ValueTypeInt:
		return strconv.AppendInt(dst, v.Int(), 10)
	case pcommon.ValueTypeBool:
		if v.Bool() {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case pcommon.ValueTypeDouble:
		f := v.Double()
		if math.IsNaN(f) || math.IsInf(f, 0) {
			dst = append(dst, `{"d":`...)
			return append(appendNonFinite(dst, f), '}')
		}
		return appendDouble(dst, f)
	case pcommon.ValueTypeBytes:
		dst = append(dst, `{"y":`...)
		return append(appendBase64(dst, v.Bytes()), '}')
	case pcommon.ValueTypeSlice:
		s := v.Slice()
		dst = append(dst, '[')
		for i := range s.Len() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendTyped(dst, s.At(i))
		}
		return append(dst, ']')
	case pcommon.ValueTypeMap:
		dst = append(dst, `{"m":`...)
		return append(appendTypedPairs(dst, v.Map()), '}')
	}
	return append(dst, "null"...)
}

func appendNonFinite(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, `"NaN"`...)
	case f > 0:
		return append(dst, `"Infinity"`...)
	}
	return append(dst, `"-Infinity"`...)
}

// appendDouble writes a finite f in the shortest form that reads back as
// the same float64, with ".0" added when that form has neither '.' nor an
// exponent ("-0.0" for negative zero).
func appendDouble(dst []byte, f float64) []byte {
	n := len(dst)
	dst = strconv.AppendFloat(dst, f, 'g', -1, 64)
	for _, c := range dst[n:] {
		if c == '.' || c == 'e' {
			return dst
		}
	}
	return append(dst, ".0"...)
}

func appendBase64(dst []byte, b pcommon.ByteSlice) []byte {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b.AsRaw())
	return append(dst, '"')
}

func appendCount(dst []byte, key string, n uint32) []byte {
	if n == 0 {
		return dst
	}
	dst = append(dst, key...)
	return strconv.AppendUint(dst, uint64(n), 10)
}

const hexDigits = "0123456789abcdef"

// appendHex writes b in lower-case hex.
func appendHex(dst []byte, b []byte) []byte {
	for len(b) >= 2 {
		v := binary.BigEndian.Uint16(b)
		dst = append(dst, hexDigits[v>>12], hexDigits[v>>8&0xf], hexDigits[v>>4&0xf], hexDigits[v&0xf])
		b = b[2:]
	}
	for _, c := range b {
		dst = append(dst, hexDigits[c>>4], hexDigits[c&0xf])
	}
	return dst
}

// keySet finds members whose names repeat one written before, in the
// output buffer itself: up to smallSet keys by their fingerprints and
// offsets (no allocation), more through a map.
type keySet struct {
	n      int
	fps    [smallSet]uint64
	starts [smallSet]int
	bits   uint64
	big    map[string]struct{}
}

const smallSet = 16

func (s *keySet) reset() {
	s.n, s.bits = 0, 0
	if s.big != nil {
		clear(s.big)
	}
}

// seen reports whether the key dst[start:start+n] was added before, and
// adds it otherwise.
func (s *keySet) seen(dst []byte, start, n int) bool {
	key := dst[start : start+n]
	if s.n >= smallSet {
		if s.big == nil {
			s.big = make(map[string]struct{})
		}
		if s.n == smallSet {
			// Move the small keys into the map once.
			for i := 0; i < s.n; i++ {
				l := int(s.fps[i] & 0xffffffff)
				s.big[string(dst[s.starts[i]:s.starts[i]+l])] = struct{}{}
			}
			s.n++
		}
		if _, ok := s.big[string(key)]; ok {
			return true
		}
		s.big[string(key)] = struct{}{}
		return false
	}
	var first, last byte
	if n > 0 {
		first, last = key[0], key[n-1]
	}
	fp := uint64(n) | uint64(first)<<32 | uint64(last)<<40
	bit := uint64(1) << (fp * 0x9e3779b97f4a7c15 >> 58)
	if s.bits&bit != 0 {
		for i := 0; i < s.n; i++ {
			if s.fps[i] == fp && string(dst[s.starts[i]:s.starts[i]+n]) == string(key) {
				return true
			}
		}
	}
	s.bits |= bit
	s.fps[s.n], s.starts[s.n] = fp, start
	s.n++
	return false
}
