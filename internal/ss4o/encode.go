package ss4o

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"github.com/opensearchrouted/opensearchrouted/internal/jsonstr"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// AppendLog appends the SS4O document (the bulk item's _source, without a
// newline) of lr, emitted under res and scope, to dst and returns the
// extended buffer. Schema URLs are not known here and are left out; use an
// Encoder to include them and to encode the shared resource and scope once.
func AppendLog(dst []byte, res pcommon.Resource, scope pcommon.InstrumentationScope, lr plog.LogRecord) []byte {
	var ck clock
	dst = appendLogFields(dst, lr, &ck)
	dst = appendOrigin(dst, res, "", scope, "")
	return append(dst, '}')
}

// AppendSpan appends the SS4O document of span, emitted under res and scope,
// to dst. Schema URLs are left out; see Encoder.
func AppendSpan(dst []byte, res pcommon.Resource, scope pcommon.InstrumentationScope, span ptrace.Span) []byte {
	var ck clock
	dst = appendSpanFields(dst, span, &ck)
	dst = appendOrigin(dst, res, "", scope, "")
	return append(dst, '}')
}

// Encoder encodes records that share one resource and one instrumentation
// scope (a ScopeLogs or ScopeSpans). Reset encodes the shared part once; each
// Append copies it. The zero value encodes an empty resource and scope.
// An Encoder is not safe for concurrent use; its output is byte-identical to
// AppendLog/AppendSpan when the schema URLs are empty. Reset again after
// changing the resource or scope: the encoded copy is not updated.
type Encoder struct {
	origin []byte // encoded ,"resource":…,"instrumentationScope":… fields
	clock  clock  // the last second a timestamp was written in
}

// ResetLogs prepares e for the records of sl inside rl.
func (e *Encoder) ResetLogs(rl plog.ResourceLogs, sl plog.ScopeLogs) {
	e.Reset(rl.Resource(), rl.SchemaUrl(), sl.Scope(), sl.SchemaUrl())
}

// ResetTraces prepares e for the spans of ss inside rs.
func (e *Encoder) ResetTraces(rs ptrace.ResourceSpans, ss ptrace.ScopeSpans) {
	e.Reset(rs.Resource(), rs.SchemaUrl(), ss.Scope(), ss.SchemaUrl())
}

// Reset prepares e for records emitted under res and scope with the given
// schema URLs (those of the enclosing ResourceLogs/ResourceSpans and
// ScopeLogs/ScopeSpans).
func (e *Encoder) Reset(res pcommon.Resource, resourceSchemaURL string, scope pcommon.InstrumentationScope, scopeSchemaURL string) {
	e.origin = appendOrigin(e.origin[:0], res, resourceSchemaURL, scope, scopeSchemaURL)
}

// AppendLog appends the document of lr to dst.
func (e *Encoder) AppendLog(dst []byte, lr plog.LogRecord) []byte {
	dst = appendLogFields(dst, lr, &e.clock)
	dst = append(dst, e.origin...)
	return append(dst, '}')
}

// AppendSpan appends the document of span to dst.
func (e *Encoder) AppendSpan(dst []byte, span ptrace.Span) []byte {
	dst = appendSpanFields(dst, span, &e.clock)
	dst = append(dst, e.origin...)
	return append(dst, '}')
}

// appendLogFields writes "{" and the record's own fields; "@timestamp" is
// always first so that every later field starts with a comma.
func appendLogFields(dst []byte, lr plog.LogRecord, ck *clock) []byte {
	ts, observed := uint64(lr.Timestamp()), uint64(lr.ObservedTimestamp())
	dst = append(dst, `{"@timestamp":`...)
	if ts != 0 {
		dst = ck.appendTime(dst, ts)
	} else {
		dst = ck.appendTime(dst, observed)
		dst = append(dst, `,"timestampUnset":true`...)
	}
	if observed != 0 {
		dst = append(dst, `,"observedTimestamp":`...)
		dst = ck.appendTime(dst, observed)
	}
	if id := lr.TraceID(); !id.IsEmpty() {
		dst = append(dst, `,"traceId":"`...)
		dst = appendHex(dst, id[:])
		dst = append(dst, '"')
	}
	if id := lr.SpanID(); !id.IsEmpty() {
		dst = append(dst, `,"spanId":"`...)
		dst = appendHex(dst, id[:])
		dst = append(dst, '"')
	}
	if f := uint32(lr.Flags()); f != 0 {
		dst = append(dst, `,"flags":`...)
		dst = strconv.AppendUint(dst, uint64(f), 10)
	}
	text, num := lr.SeverityText(), int32(lr.SeverityNumber())
	if text != "" || num != 0 {
		dst = append(dst, `,"severity":{`...)
		if text != "" {
			dst = append(dst, `"text":`...)
			dst = appendString(dst, text)
			if num != 0 {
				dst = append(dst, ',')
			}
		}
		if num != 0 {
			dst = append(dst, `"number":`...)
			dst = strconv.AppendInt(dst, int64(num), 10)
		}
		dst = append(dst, '}')
	}
	if name := lr.EventName(); name != "" {
		dst = append(dst, `,"eventName":`...)
		dst = appendString(dst, name)
	}
	if body := lr.Body(); body.Type() != pcommon.ValueTypeEmpty {
		dst = appendBody(dst, body)
	}
	dst = appendAttributes(dst, `,"attributes":`, lr.Attributes())
	return appendCount(dst, `,"droppedAttributesCount":`, lr.DroppedAttributesCount())
}

func appendSpanFields(dst []byte, span ptrace.Span, ck *clock) []byte {
	start, end := uint64(span.StartTimestamp()), uint64(span.EndTimestamp())
	dst = append(dst, `{"@timestamp":`...)
	mark := len(dst)
	dst = ck.appendTime(dst, start)
	if start != 0 {
		dst = append(dst, `,"startTime":`...)
		dst = append(dst, dst[mark:len(dst)-len(`,"startTime":`)]...)
	}
	if end != 0 {
		dst = append(dst, `,"endTime":`...)
		dst = ck.appendTime(dst, end)
	}
	if id := span.TraceID(); !id.IsEmpty() {
		dst = append(dst, `,"traceId":"`...)
		dst = appendHex(dst, id[:])
		dst = append(dst, '"')
	}
	if id := span.SpanID(); !id.IsEmpty() {
		dst = append(dst, `,"spanId":"`...)
		dst = appendHex(dst, id[:])
		dst = append(dst, '"')
	}
	if id := span.ParentSpanID(); !id.IsEmpty() {
		dst = append(dst, `,"parentSpanId":"`...)
		dst = appendHex(dst, id[:])
		dst = append(dst, '"')
	}
	if ts := span.TraceState().AsRaw(); ts != "" {
		dst = append(dst, `,"traceState":`...)
		dst = appendString(dst, ts)
	}
	if f := span.Flags(); f != 0 {
		dst = append(dst, `,"flags":`...)
		dst = strconv.AppendUint(dst, uint64(f), 10)
	}
	if name := span.Name(); name != "" {
		dst = append(dst, `,"name":`...)
		dst = appendString(dst, name)
	}
	if k := span.Kind(); k != ptrace.SpanKindUnspecified {
		dst = append(dst, `,"kind":"`...)
		if int(k) < len(kindNames) && k >= 0 {
			dst = append(dst, kindNames[k]...)
		} else {
			dst = strconv.AppendInt(dst, int64(k), 10)
		}
		dst = append(dst, '"')
	}
	if st := span.Status(); st.Code() != ptrace.StatusCodeUnset || st.Message() != "" {
		dst = append(dst, `,"status":{"code":"`...)
		if c := st.Code(); int(c) < len(statusNames) && c >= 0 {
			dst = append(dst, statusNames[c]...)
		} else {
			dst = strconv.AppendInt(dst, int64(c), 10)
		}
		dst = append(dst, '"')
		if msg := st.Message(); msg != "" {
			dst = append(dst, `,"message":`...)
			dst = appendString(dst, msg)
		}
		dst = append(dst, '}')
	}
	dst = appendAttributes(dst, `,"attributes":`, span.Attributes())
	dst = appendCount(dst, `,"droppedAttributesCount":`, span.DroppedAttributesCount())
	if events := span.Events(); events.Len() > 0 {
		dst = append(dst, `,"events":[`...)
		for i := range events.Len() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendEvent(dst, events.At(i), ck)
		}
		dst = append(dst, ']')
	}
	dst = appendCount(dst, `,"droppedEventsCount":`, span.DroppedEventsCount())
	if links := span.Links(); links.Len() > 0 {
		dst = append(dst, `,"links":[`...)
		for i := range links.Len() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendLink(dst, links.At(i))
		}
		dst = append(dst, ']')
	}
	return appendCount(dst, `,"droppedLinksCount":`, span.DroppedLinksCount())
}

// kindNames and statusNames are indexed by the pdata enum values; values
// outside them are written as decimal strings ("7").
var (
	kindNames   = [...]string{"Unspecified", "Internal", "Server", "Client", "Producer", "Consumer"}
	statusNames = [...]string{"Unset", "Ok", "Error"}
)

func appendEvent(dst []byte, ev ptrace.SpanEvent, ck *clock) []byte {
	dst = append(dst, '{')
	n := len(dst)
	if ts := uint64(ev.Timestamp()); ts != 0 {
		dst = append(dst, `,"@timestamp":`...)
		dst = ck.appendTime(dst, ts)
	}
	if name := ev.Name(); name != "" {
		dst = append(dst, `,"name":`...)
		dst = appendString(dst, name)
	}
	dst = appendAttributes(dst, `,"attributes":`, ev.Attributes())
	dst = appendCount(dst, `,"droppedAttributesCount":`, ev.DroppedAttributesCount())
	return closeObject(dst, n)
}

func appendLink(dst []byte, l ptrace.SpanLink) []byte {
	dst = append(dst, '{')
	n := len(dst)
	if id := l.TraceID(); !id.IsEmpty() {
		dst = append(dst, `,"traceId":"`...)
		dst = appendHex(dst, id[:])
		dst = append(dst, '"')
	}
	if id := l.SpanID(); !id.IsEmpty() {
		dst = append(dst, `,"spanId":"`...)
		dst = appendHex(dst, id[:])
		dst = append(dst, '"')
	}
	if ts := l.TraceState().AsRaw(); ts != "" {
		dst = append(dst, `,"traceState":`...)
		dst = appendString(dst, ts)
	}
	if f := l.Flags(); f != 0 {
		dst = append(dst, `,"flags":`...)
		dst = strconv.AppendUint(dst, uint64(f), 10)
	}
	dst = appendAttributes(dst, `,"attributes":`, l.Attributes())
	dst = appendCount(dst, `,"droppedAttributesCount":`, l.DroppedAttributesCount())
	return closeObject(dst, n)
}

// closeObject ends an object whose fields were all written with a leading
// comma, starting at dst[n]: the first comma is removed.
func closeObject(dst []byte, n int) []byte {
	if len(dst) > n {
		copy(dst[n:], dst[n+1:])
		dst = dst[:len(dst)-1]
	}
	return append(dst, '}')
}

// appendOrigin writes the fields shared by every record of a scope, each
// with a leading comma (possibly none at all).
func appendOrigin(dst []byte, res pcommon.Resource, resourceSchemaURL string, scope pcommon.InstrumentationScope, scopeSchemaURL string) []byte {
	dst = appendResource(dst, res, resourceSchemaURL)
	return appendScope(dst, scope, scopeSchemaURL)
}

func appendResource(dst []byte, res pcommon.Resource, resourceSchemaURL string) []byte {
	dst = appendAttributes(dst, `,"resource":`, res.Attributes())
	dst = appendCount(dst, `,"resourceDroppedAttributesCount":`, res.DroppedAttributesCount())
	if resourceSchemaURL != "" {
		dst = append(dst, `,"schemaUrl":`...)
		dst = appendString(dst, resourceSchemaURL)
	}
	return dst
}

func appendScope(dst []byte, scope pcommon.InstrumentationScope, scopeSchemaURL string) []byte {
	name, version := scope.Name(), scope.Version()
	attrs, dropped := scope.Attributes(), scope.DroppedAttributesCount()
	if name == "" && version == "" && scopeSchemaURL == "" && attrs.Len() == 0 && dropped == 0 {
		return dst
	}
	dst = append(dst, `,"instrumentationScope":{`...)
	n := len(dst)
	if name != "" {
		dst = append(dst, `,"name":`...)
		dst = appendString(dst, name)
	}
	if version != "" {
		dst = append(dst, `,"version":`...)
		dst = appendString(dst, version)
	}
	if scopeSchemaURL != "" {
		dst = append(dst, `,"schemaUrl":`...)
		dst = appendString(dst, scopeSchemaURL)
	}
	dst = appendAttributes(dst, `,"attributes":`, attrs)
	dst = appendCount(dst, `,"droppedAttributesCount":`, dropped)
	return closeObject(dst, n)
}

func appendCount(dst []byte, key string, n uint32) []byte {
	if n == 0 {
		return dst
	}
	dst = append(dst, key...)
	return strconv.AppendUint(dst, uint64(n), 10)
}

func appendAttributes(dst []byte, key string, m pcommon.Map) []byte {
	if m.Len() == 0 {
		return dst
	}
	dst = append(dst, key...)
	return appendMap(dst, m)
}

// smallMap is the number of keys up to which repeated keys are found by
// comparing with the keys already written, without allocating.
const smallMap = 16

// appendMap writes m as a JSON object. JSON objects must not repeat a key
// (OpenSearch rejects such documents), so only the first occurrence of a key
// is written, which is the one pcommon.Map.Get returns. Keys are compared in
// their encoded form, so two keys that differ only in invalid UTF-8 (and so
// read the same on the server) count as repeats too.
func appendMap(dst []byte, m pcommon.Map) []byte {
	if m.Len() > smallMap || len(dst) > math.MaxUint32/2 {
		return appendLargeMap(dst, m)
	}
	dst = append(dst, '{')
	// The keys written so far: a fingerprint (length, first and last
	// characters) to skip most comparisons, and where each starts in dst.
	// seen has one bit set per fingerprint written (a 6-bit hash of it):
	// a key whose bit is clear repeats none, and most keys are compared
	// with nothing.
	var fps [smallMap]uint64
	var starts [smallMap]uint32
	var seen uint64
	nk := 0
	for k, v := range m.All() {
		mark := len(dst)
		if nk > 0 {
			dst = append(dst, ',')
		}
		start := len(dst)
		dst = appendString(dst, k)
		key := dst[start:]
		fp := uint64(len(key)) | uint64(key[1])<<32 | uint64(key[len(key)-2])<<40
		bit := uint64(1) << (fp * 0x9e3779b97f4a7c15 >> 58)
		dup := false
		if seen&bit != 0 {
			for i := 0; i < nk; i++ {
				if fps[i] == fp && string(dst[starts[i]:int(starts[i])+len(key)]) == string(key) {
					dup = true
					break
				}
			}
		}
		seen |= bit
		if dup {
			dst = dst[:mark]
			continue
		}
		fps[nk], starts[nk] = fp, uint32(start)
		nk++
		dst = append(dst, ':')
		dst = appendValue(dst, v)
	}
	return append(dst, '}')
}

// appendLargeMap is appendMap for maps of more than smallMap keys: repeated
// keys are found with a set.
func appendLargeMap(dst []byte, m pcommon.Map) []byte {
	dst = append(dst, '{')
	seen := make(map[string]struct{}, m.Len())
	for k, v := range m.All() {
		mark := len(dst)
		if len(seen) > 0 {
			dst = append(dst, ',')
		}
		start := len(dst)
		dst = appendString(dst, k)
		if _, dup := seen[string(dst[start:])]; dup {
			dst = dst[:mark]
			continue
		}
		seen[string(dst[start:])] = struct{}{}
		dst = append(dst, ':')
		dst = appendValue(dst, v)
	}
	return append(dst, '}')
}

// appendValue writes v keeping its type: strings, booleans, integers and
// doubles as themselves (a double always has a '.' or an exponent, so it
// reads back as a double), bytes as base64 (standard, padded), slices as
// arrays, maps as objects, empty as null. NaN and ±Inf have no JSON number:
// they are written as the strings "NaN", "Infinity" and "-Infinity".
func appendValue(dst []byte, v pcommon.Value) []byte {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return appendString(dst, v.Str())
	case pcommon.ValueTypeInt:
		return strconv.AppendInt(dst, v.Int(), 10)
	case pcommon.ValueTypeDouble:
		return appendDouble(dst, v.Double())
	case pcommon.ValueTypeBool:
		if v.Bool() {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	case pcommon.ValueTypeBytes:
		return appendBase64(dst, v.Bytes())
	case pcommon.ValueTypeMap:
		return appendMap(dst, v.Map())
	case pcommon.ValueTypeSlice:
		s := v.Slice()
		dst = append(dst, '[')
		for i := range s.Len() {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendValue(dst, s.At(i))
		}
		return append(dst, ']')
	}
	return append(dst, "null"...)
}

// bodyTypes names, under "bodyType", the type of a body that is not a
// string.
var bodyTypes = [...]string{
	pcommon.ValueTypeInt:    "int",
	pcommon.ValueTypeDouble: "double",
	pcommon.ValueTypeBool:   "bool",
	pcommon.ValueTypeBytes:  "bytes",
	pcommon.ValueTypeMap:    "map",
	pcommon.ValueTypeSlice:  "slice",
}

// appendBody writes a log body under "body", always as a string: an
// OpenSearch field has one type, SS4O maps body as text, and a map body
// under a text mapping (or a string body once a dynamic mapping has seen an
// object) is refused, the document lost. A body of another type is written
// as its JSON text (a number, true/false, the base64 of bytes, an object or
// array) with "bodyType" naming the type, which DecodeLog restores. The text
// stays searchable.
func appendBody(dst []byte, body pcommon.Value) []byte {
	dst = append(dst, `,"body":`...)
	t := body.Type()
	if t == pcommon.ValueTypeStr {
		return appendString(dst, body.Str())
	}
	start := len(dst)
	dst = appendValue(dst, body)
	text := dst[start:]
	if len(text) >= 2 && text[0] == '"' { // bytes, or NaN / ±Infinity: nothing inside to unescape
		text = text[1 : len(text)-1]
	}
	raw := string(text) // a copy: the quoted form is written over it
	dst = appendString(dst[:start], raw)
	dst = append(dst, `,"bodyType":"`...)
	dst = append(dst, bodyTypes[t]...)
	return append(dst, '"')
}

func appendDouble(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(dst, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(dst, `"-Infinity"`...)
	case f == 0:
		if math.Signbit(f) {
			return append(dst, "-0.0"...)
		}
		return append(dst, "0.0"...)
	}
	n := len(dst)
	a := f
	if f < 0 {
		dst = append(dst, '-')
		a = -f
	}
	if out, ok := appendShortest(dst, a, true); ok {
		return out
	}
	// Subnormals: strconv's shortest 'g', which is what appendShortest
	// writes for every other double.
	dst = strconv.AppendFloat(dst[:n], f, 'g', -1, 64)
	for _, c := range dst[n:] {
		if c == '.' || c == 'e' {
			return dst
		}
	}
	return append(dst, ".0"...)
}

func appendBase64(dst []byte, b pcommon.ByteSlice) []byte {
	dst = append(dst, '"')
	// Encode through a stack buffer whose size is a multiple of 3, so that
	// only the last chunk is padded and ByteSlice.AsRaw's copy is avoided.
	var chunk [3 * 128]byte
	n := b.Len()
	for i := 0; i < n; {
		c := min(len(chunk), n-i)
		for j := range c {
			chunk[j] = b.At(i + j)
		}
		dst = base64.StdEncoding.AppendEncode(dst, chunk[:c])
		i += c
	}
	return append(dst, '"')
}

// appendHex writes b in lower-case hex, four bytes per step: their eight
// nibbles are spread into the bytes of a word and turned into digits
// together (SWAR).
func appendHex(dst []byte, b []byte) []byte {
	n := len(dst)
	dst = slices.Grow(dst, 2*len(b))[:n+2*len(b)]
	out := dst[n:]
	for len(b) >= 4 {
		binary.BigEndian.PutUint64(out, hex8(binary.BigEndian.Uint32(b)))
		b, out = b[4:], out[8:]
	}
	hex.Encode(out, b)
	return dst
}

// hex8 returns the eight lower-case hex digits of v, most significant first
// when stored big-endian.
func hex8(v uint32) uint64 {
	x := uint64(v)
	x = (x<<16 | x) & 0x0000ffff0000ffff
	x = (x<<8 | x) & 0x00ff00ff00ff00ff
	x = (x<<4 | x) & 0x0f0f0f0f0f0f0f0f
	// Each byte is a nibble n: '0'+n, plus 39 more when n > 9 ('a'-'0'-10).
	letters := (x + 0x0606060606060606) >> 4 & 0x0101010101010101
	return x + 0x3030303030303030 + letters*39
}

// appendString writes s as a JSON string (see jsonstr.Append).
func appendString(dst []byte, s string) []byte { return jsonstr.Append(dst, s) }

// sanitize replaces every byte of s that is not part of valid UTF-8 with
// U+FFFD.
func sanitize(s string) string {
	out := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			out = append(out, "\uFFFD"...)
		} else {
			out = append(out, s[i:i+size]...)
		}
		i += size
	}
	return string(out)
}
