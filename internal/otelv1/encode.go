package otelv1

import (
	"encoding/base64"
	"encoding/binary"
	"math"
	"slices"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/opensearchrouted/opensearchrouted/internal/jsonstr"
	"github.com/opensearchrouted/opensearchrouted/internal/ss4o"
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
	keyCache    [keyCacheSize]flatKey

	lastTrace    pcommon.TraceID // the last non-empty trace id written
	lastTraceHex [32]byte
	lastTraceOK  bool

	// The trace group of the last span, and its members as written.
	group     TraceGroup
	groupJSON []byte
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
	e.origin, exact = e.appendFlat(e.origin, `,"resource.attributes.`, res.Attributes())
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

// kindMembers are the kind members as written, with the name of the member
// after them.
var kindMembers = func() (m [len(kindNames)]string) {
	for i, n := range kindNames {
		m[i] = `,"kind":"` + n + `","startTime":`
	}
	return m
}()

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
	// Spans of one trace mostly come together: the last trace id's hex
	// is kept.
	if tid := span.TraceID(); tid == e.lastTrace && e.lastTraceOK {
		dst = append(dst, e.lastTraceHex[:]...)
	} else if !tid.IsEmpty() {
		dst = appendHex(dst, tid[:])
		copy(e.lastTraceHex[:], dst[len(dst)-32:])
		e.lastTrace, e.lastTraceOK = tid, true
	}
	dst = append(dst, `","spanId":"`...)
	if id := span.SpanID(); !id.IsEmpty() {
		dst = appendHex(dst, id[:])
	}
	dst = append(dst, `","parentSpanId":"`...)
	if id := span.ParentSpanID(); !id.IsEmpty() {
		dst = appendHex(dst, id[:])
	}
	if ts := span.TraceState().AsRaw(); ts == "" {
		dst = append(dst, `","traceState":"","name":`...)
	} else {
		dst = append(dst, `","traceState":`...)
		dst = jsonstr.Append(dst, ts)
		dst = append(dst, `,"name":`...)
	}
	dst = jsonstr.Append(dst, span.Name())
	k := span.Kind()
	if k >= 0 && int(k) < len(kindMembers) {
		dst = append(dst, kindMembers[k]...)
	} else {
		dst = append(dst, `,"kind":"`+unrecognizedKind+`","startTime":`...)
		e.exact = append(e.exact, `,"kind":`...)
		e.exact = strconv.AppendInt(e.exact, int64(k), 10)
	}
	start, end := uint64(span.StartTimestamp()), uint64(span.EndTimestamp())
	dst = e.clock.appendTime(dst, start)
	dst = append(dst, `,"endTime":`...)
	dst = e.clock.appendTime(dst, end)
	e.exactTime(`,"startTime":"`, start)
	e.exactTime(`,"endTime":"`, end)
	dst = append(dst, `,"durationInNanos":`...)
	dst = appendInt(dst, int64(clampTime(end))-int64(clampTime(start)))
	if f := span.Flags(); f != 0 {
		dst = append(dst, `,"flags":`...)
		dst = appendUint(dst, uint64(f))
	}
	st := span.Status()
	dst = append(dst, `,"status.code":`...)
	dst = appendInt(dst, int64(st.Code()))
	if msg := st.Message(); msg != "" {
		dst = append(dst, `,"status.message":`...)
		dst = jsonstr.Append(dst, msg)
	}
	if g != nil {
		if len(e.groupJSON) == 0 || *g != e.group {
			e.group = *g
			b := append(e.groupJSON[:0], `,"traceGroup":`...)
			b = jsonstr.Append(b, g.Name)
			b = append(b, `,"traceGroupFields":{"endTime":`...)
			b = e.clock.appendTime(b, uint64(g.EndTime))
			b = append(b, `,"durationInNanos":`...)
			b = strconv.AppendInt(b, g.DurationNanos, 10)
			b = append(b, `,"statusCode":`...)
			b = strconv.AppendInt(b, int64(g.StatusCode), 10)
			e.groupJSON = append(b, '}')
		}
		dst = append(dst, e.groupJSON...)
	}
	var exact bool
	dst, exact = e.appendFlat(dst, spanLead, span.Attributes())
	if !exact {
		e.exact = e.appendExactMap(e.exact, `,"span":`, span.Attributes())
	}
	events, links := span.Events(), span.Links()
	if events.Len() == 0 && links.Len() == 0 && span.DroppedAttributesCount() == 0 && span.DroppedEventsCount() == 0 && span.DroppedLinksCount() == 0 {
		dst = append(dst, `,"droppedAttributesCount":0,"events":[],"droppedEventsCount":0,"links":[],"droppedLinksCount":0`...)
	} else {
		dst = append(dst, `,"droppedAttributesCount":`...)
		dst = appendUint(dst, uint64(span.DroppedAttributesCount()))
		dst = e.appendEvents(dst, events)
		dst = append(dst, `,"droppedEventsCount":`...)
		dst = appendUint(dst, uint64(span.DroppedEventsCount()))
		dst = e.appendLinks(dst, links)
		dst = append(dst, `,"droppedLinksCount":`...)
		dst = appendUint(dst, uint64(span.DroppedLinksCount()))
	}
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
		dst = appendUint(dst, uint64(ev.DroppedAttributesCount()))
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
			dst = appendUint(dst, uint64(f))
		}
		dst = append(dst, `,"attributes":`...)
		var exact bool
		dst, exact = e.appendObject(dst, l.Attributes())
		dst = append(dst, `,"droppedAttributesCount":`...)
		dst = appendUint(dst, uint64(l.DroppedAttributesCount()))
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
	dst, exact := e.appendFlat(dst, `,"`, m)
	if len(dst) > n {
		dst = append(dst[:n], dst[n+1:]...)
	}
	return append(dst, '}'), exact
}

// spanLead starts every span attribute member.
const spanLead = `,"span.attributes.`

// appendKey writes lead and the flat form of key (every '.' replaced by
// '@', escaped as a JSON string) with its closing quote and the colon
// after it, and reports whether key held an '@'. Span attribute keys
// repeat from span to span: their members' names are kept in a small
// direct-mapped cache, so most cost one comparison and one copy.
func (e *Encoder) appendKey(dst []byte, lead, key string) ([]byte, bool) {
	var slot *flatKey
	if lead == spanLead {
		slot = &e.keyCache[keySlot(key)]
		if slot.key == key && slot.flat != "" {
			return append(dst, slot.flat...), slot.hadAt
		}
	}
	n := len(dst)
	dst = append(dst, lead...)
	q := len(dst)
	dst = jsonstr.Append(dst, key) // "key"
	dst = append(dst[:q], dst[q+1:]...)
	hadAt := flattenKey(dst[q : len(dst)-1])
	dst = append(dst, ':')
	if slot != nil && len(key) <= maxCachedKey && slot.flat == "" {
		// A slot keeps the first key it got: keys that share one never
		// evict each other (and allocate) span after span.
		*slot = flatKey{key: strings.Clone(key), flat: string(dst[n:]), hadAt: hadAt}
	}
	return dst, hadAt
}

// keySlot picks key's slot in the key cache from its length and its
// first and last bytes.
func keySlot(key string) int {
	n := len(key)
	if n == 0 {
		return 0
	}
	h := (uint32(n) ^ uint32(key[0])<<8 ^ uint32(key[n/2])<<16 ^ uint32(key[n-1])<<24) * 0x9e3779b1
	return int(h>>23) & (keyCacheSize - 1)
}

// The key cache has keyCacheSize slots for keys of up to maxCachedKey
// bytes.
const (
	keyCacheSize = 512
	maxCachedKey = 128
)

// flatKey is a cached key and its member's name as written: spanLead,
// the flat key, its closing quote and the colon.
type flatKey struct {
	key, flat string
	hadAt     bool
}

// flattenKey replaces every '.' of key with '@' in place, eight bytes at a
// time (SWAR), and reports whether key held an '@' before.
func flattenKey(key []byte) (hadAt bool) {
	const lo, hi, low7 = 0x0101010101010101, 0x8080808080808080, 0x7f7f7f7f7f7f7f7f
	// zeros has the high bit set in every byte of v that is zero.
	zeros := func(v uint64) uint64 { return ^((v&low7 + low7) | v) & hi }
	i := 0
	for ; i+8 <= len(key); i += 8 {
		x := binary.LittleEndian.Uint64(key[i:])
		if zeros(x^(lo*'@')) != 0 {
			hadAt = true
		}
		if dots := zeros(x ^ (lo * '.')); dots != 0 {
			binary.LittleEndian.PutUint64(key[i:], x^(dots>>7)*('.'^'@'))
		}
	}
	for ; i < len(key); i++ {
		switch key[i] {
		case '.':
			key[i] = '@'
		case '@':
			hadAt = true
		}
	}
	return hadAt
}

// appendFlat writes the attributes of m as members, each starting with
// lead (a comma, a quote and the path prefix: `,"span.attributes.`, or
// `,"` for none) followed by the key with every '.' replaced by '@', as
// Data Prepper names them. Values are written as flatValue does. It reports whether the
// members give m back exactly (else the caller keeps m under roundTrip): no
// key holds '@' or is empty or blank (such a key is not written: OpenSearch
// refuses an empty field name), and every value is a string, int, bool or
// finite double. Of keys that read the same once written only the first is
// written.
func (e *Encoder) appendFlat(dst []byte, lead string, m pcommon.Map) ([]byte, bool) {
	exact := true
	e.keys.reset()
	for k, v := range m.All() {
		if k == "" || (k[0] <= ' ' || k[0] >= 0x80) && strings.TrimSpace(k) == "" {
			exact = false
			continue
		}
		mark := len(dst)
		keyStart := mark + len(lead)
		var hadAt bool
		dst, hadAt = e.appendKey(dst, lead, k)
		if hadAt {
			exact = false
		}
		if e.keys.seen(dst, keyStart, len(dst)-2-keyStart) {
			dst = dst[:mark]
			continue
		}
		if v.Type() == pcommon.ValueTypeStr { // the common case, without a call
			dst = jsonstr.Append(dst, v.Str())
			continue
		}
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
	case pcommon.ValueTypeInt, pcommon.ValueTypeBool:
		return appendValue(dst, v, false), true
	case pcommon.ValueTypeDouble:
		f := v.Double()
		return appendValue(dst, v, false), !math.IsNaN(f) && !math.IsInf(f, 0)
	case pcommon.ValueTypeBytes:
		return appendValue(dst, v, false), false
	case pcommon.ValueTypeSlice, pcommon.ValueTypeMap:
		e.scratch = appendValue(e.scratch[:0], v, false)
		return jsonstr.Append(dst, string(e.scratch)), false
	}
	return append(dst, `""`...), false
}

// appendExactMap writes key and m as a list of [key, value] pairs with
// typed values (appendValue), the form roundTrip keeps attributes in. Of
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
		dst = appendValue(dst, v, true)
		dst = append(dst, ']')
	}
	return append(dst, ']')
}

// appendValue writes v as JSON. Typed, so that its type reads back: a
// string, bool or int as itself, a finite double with a '.' or an
// exponent, empty as null, a slice as an array of typed values, and the
// rest as one-member objects: {"d":"NaN"|"Infinity"|"-Infinity"}, {"y":
// base64 of bytes} and {"m":[[key, typed value], …]} for a map. Plain
// (the JSON text a slice or map attribute gets): maps as objects with
// their keys as they are, bytes as base64 strings, non-finite doubles as
// strings.
func appendValue(dst []byte, v pcommon.Value, typed bool) []byte {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return jsonstr.Append(dst, v.Str())
	case pcommon.ValueTypeInt:
		return appendInt(dst, v.Int())
	case pcommon.ValueTypeBool:
		if v.Bool() {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case pcommon.ValueTypeDouble:
		f := v.Double()
		if !typed || !math.IsNaN(f) && !math.IsInf(f, 0) {
			return ss4o.AppendDouble(dst, f)
		}
		dst = append(dst, `{"d":`...)
		return append(ss4o.AppendDouble(dst, f), '}')
	case pcommon.ValueTypeBytes:
		if !typed {
			return appendBase64(dst, v.Bytes())
		}
		dst = append(dst, `{"y":`...)
		return append(appendBase64(dst, v.Bytes()), '}')
	case pcommon.ValueTypeSlice:
		s := v.Slice()
		dst = append(dst, '[')
		for i := range s.Len() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendValue(dst, s.At(i), typed)
		}
		return append(dst, ']')
	case pcommon.ValueTypeMap:
		if typed {
			dst = append(dst, `{"m":`...)
			return append(appendTypedPairs(dst, v.Map()), '}')
		}
		dst = append(dst, '{')
		n := len(dst)
		for k, x := range v.Map().All() {
			if len(dst) > n {
				dst = append(dst, ',')
			}
			dst = jsonstr.Append(dst, k)
			dst = append(dst, ':')
			dst = appendValue(dst, x, false)
		}
		return append(dst, '}')
	}
	return append(dst, "null"...)
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

// hexPairs holds the two lower-case hex digits of every byte value, as
// little-endian 16-bit words (the first digit in the low byte).
var hexPairs = func() (t [256]uint16) {
	const digits = "0123456789abcdef"
	for i := range t {
		t[i] = uint16(digits[i>>4]) | uint16(digits[i&0xf])<<8
	}
	return t
}()

// appendHex writes b in lower-case hex, one 16-bit store per byte.
func appendHex(dst []byte, b []byte) []byte {
	n := len(dst)
	dst = slices.Grow(dst, 2*len(b))[:n+2*len(b)]
	out := dst[n:]
	for len(b) >= 4 && len(out) >= 8 {
		binary.LittleEndian.PutUint64(out, uint64(hexPairs[b[0]])|uint64(hexPairs[b[1]])<<16|
			uint64(hexPairs[b[2]])<<32|uint64(hexPairs[b[3]])<<48)
		b, out = b[4:], out[8:]
	}
	for i, c := range b {
		binary.LittleEndian.PutUint16(out[2*i:], hexPairs[c])
	}
	return dst
}

// appendUint writes n in decimal, two digits per step.
func appendUint(dst []byte, n uint64) []byte {
	if n < 10 {
		return append(dst, byte('0'+n))
	}
	var b [20]byte
	i := len(b)
	for n >= 100 {
		r := n % 100
		n /= 100
		i -= 2
		b[i], b[i+1] = digitPairs[2*r], digitPairs[2*r+1]
	}
	if n >= 10 {
		i -= 2
		b[i], b[i+1] = digitPairs[2*n], digitPairs[2*n+1]
	} else {
		i--
		b[i] = byte('0' + n)
	}
	return append(dst, b[i:]...)
}

// appendInt writes n in decimal.
func appendInt(dst []byte, n int64) []byte {
	if n < 0 {
		return appendUint(append(dst, '-'), uint64(-n)) // -MinInt64 wraps to itself, as a uint64 its magnitude
	}
	return appendUint(dst, uint64(n))
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
