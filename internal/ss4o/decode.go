package ss4o

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// ErrForeign is matched (errors.Is) by the error of DecodeLog and DecodeSpan
// when src is well-formed JSON that is not a document of our layout: an
// unknown field, a field of the wrong type, a missing "@timestamp". Such a
// document can still be read whole with DecodeValue.
var ErrForeign = errors.New("ss4o: not a document in the SS4O layout")

// SyntaxError reports malformed JSON.
type SyntaxError struct {
	Offset int // byte offset in src where the problem was found
	Msg    string
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("ss4o: invalid JSON at byte %d: %s", e.Offset, e.Msg)
}

// foreignError names the field that does not fit the layout.
type foreignError struct {
	field, msg string
}

func (e *foreignError) Error() string {
	return fmt.Sprintf("ss4o: not a document in the SS4O layout: field %q: %s", e.field, e.msg)
}

func (e *foreignError) Is(target error) bool { return target == ErrForeign }

func foreign(field []byte, msg string) error {
	return &foreignError{field: string(field), msg: msg}
}

// maxDepth bounds the nesting of arrays and objects the decoder follows
// (encoding/json's own limit).
const maxDepth = 10000

// DecodeLog reads a log document written by AppendLog or Encoder.AppendLog.
// It overwrites rl's resource and schema URL, sl's scope and schema URL and
// every field of lr (their record and scope lists are left alone). Documents
// written by contrib's opensearchexporter in the SS4O layout are read too,
// and so are a fallback document (AppendUnmapped) and a dead-letter document
// of signal "logs" (AppendDeadLetter), as the record they hold.
// The error matches ErrForeign for valid JSON of another shape and is a
// *SyntaxError for malformed JSON; the targets then hold a partial result.
func DecodeLog(src []byte, rl plog.ResourceLogs, sl plog.ScopeLogs, lr plog.LogRecord) error {
	err := decodeLog(src, rl, sl, lr)
	if err == nil || !errors.Is(err, ErrForeign) {
		return err
	}
	if ok, derr := decodeDeadLetter(src, SignalLogs, func(doc []byte) error {
		return checkForeign(doc, decodeLog(doc, rl, sl, lr))
	}); ok {
		return derr
	}
	return checkForeign(src, err)
}

func decodeLog(src []byte, rl plog.ResourceLogs, sl plog.ScopeLogs, lr plog.LogRecord) error {
	pcommon.NewResource().MoveTo(rl.Resource())
	pcommon.NewInstrumentationScope().MoveTo(sl.Scope())
	plog.NewLogRecord().MoveTo(lr)
	rl.SetSchemaUrl("")
	sl.SetSchemaUrl("")

	d := decoder{src: src}
	var (
		seen          fieldSet
		ts, observed  uint64
		unset         bool
		resURL, scURL string
		bodyType      string
		unmapped      []byte
	)
	member := func(key []byte) error {
		if err := seen.add(key); err != nil {
			return err
		}
		var err error
		switch string(key) {
		case "@timestamp":
			ts, err = d.timeField(key)
		case "timestampUnset":
			unset, err = d.boolField(key)
		case "observedTimestamp":
			observed, err = d.timeField(key)
		case "traceId":
			var id pcommon.TraceID
			err = d.hexField(key, id[:])
			lr.SetTraceID(id)
		case "spanId":
			var id pcommon.SpanID
			err = d.hexField(key, id[:])
			lr.SetSpanID(id)
		case "flags":
			var f uint32
			f, err = d.uint32Field(key)
			lr.SetFlags(plog.LogRecordFlags(f))
		case "severity":
			err = d.severity(key, lr)
		case "eventName":
			var s string
			s, err = d.stringField(key)
			lr.SetEventName(s)
		case "body":
			err = d.value(lr.Body())
		case "bodyType":
			bodyType, err = d.stringField(key)
		case "attributes":
			err = d.mapField(key, lr.Attributes())
		case "droppedAttributesCount":
			var n uint32
			n, err = d.uint32Field(key)
			lr.SetDroppedAttributesCount(n)
		case UnmappedField:
			unmapped, err = d.unmappedField(key)
		default:
			return d.originField(key, rl.Resource(), &resURL, sl.Scope(), &scURL)
		}
		return err
	}
	err := d.topObject(member)
	if err == nil && unmapped != nil {
		err = d.restoreUnmapped(unmapped, member)
	}
	if err != nil {
		return err
	}
	if !seen.has("@timestamp") {
		return &foreignError{field: "@timestamp", msg: "missing"}
	}
	if bodyType != "" {
		if err := restoreBody(lr.Body(), bodyType); err != nil {
			return err
		}
	}
	if !unset {
		lr.SetTimestamp(pcommon.Timestamp(ts))
	}
	lr.SetObservedTimestamp(pcommon.Timestamp(observed))
	rl.SetSchemaUrl(resURL)
	sl.SetSchemaUrl(scURL)
	return nil
}

// restoreBody turns a body written as text (see appendBody) back into a
// value of its type.
func restoreBody(b pcommon.Value, typ string) error {
	if b.Type() != pcommon.ValueTypeStr {
		return &foreignError{field: "bodyType", msg: "without a string body"}
	}
	s := b.Str()
	bad := func() error { return &foreignError{field: "body", msg: "not a " + typ + ": " + strconv.Quote(s)} }
	switch typ {
	case "int":
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return bad()
		}
		b.SetInt(n)
	case "double":
		f, err := strconv.ParseFloat(s, 64) // also NaN, Infinity, -Infinity
		if err != nil {
			return bad()
		}
		b.SetDouble(f)
	case "bool":
		switch s {
		case "true":
			b.SetBool(true)
		case "false":
			b.SetBool(false)
		default:
			return bad()
		}
	case "bytes":
		raw, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return bad()
		}
		b.SetEmptyBytes().FromRaw(raw)
	case "map", "slice":
		want := pcommon.ValueTypeMap
		if typ == "slice" {
			want = pcommon.ValueTypeSlice
		}
		if err := DecodeValue([]byte(s), b); err != nil || b.Type() != want {
			return bad()
		}
	default:
		return &foreignError{field: "bodyType", msg: "unknown type " + strconv.Quote(typ)}
	}
	return nil
}

// DecodeSpan reads a span document written by AppendSpan or
// Encoder.AppendSpan, like DecodeLog. The start time is "startTime", or
// "@timestamp" when that is absent (our encoder leaves "startTime" out only
// for a zero start time). Fallback documents and dead-letter documents of
// signal "traces" are read as the span they hold.
func DecodeSpan(src []byte, rs ptrace.ResourceSpans, ss ptrace.ScopeSpans, span ptrace.Span) error {
	err := decodeSpan(src, rs, ss, span)
	if err == nil || !errors.Is(err, ErrForeign) {
		return err
	}
	if ok, derr := decodeDeadLetter(src, SignalTraces, func(doc []byte) error {
		return checkForeign(doc, decodeSpan(doc, rs, ss, span))
	}); ok {
		return derr
	}
	return checkForeign(src, err)
}

func decodeSpan(src []byte, rs ptrace.ResourceSpans, ss ptrace.ScopeSpans, span ptrace.Span) error {
	pcommon.NewResource().MoveTo(rs.Resource())
	pcommon.NewInstrumentationScope().MoveTo(ss.Scope())
	ptrace.NewSpan().MoveTo(span)
	rs.SetSchemaUrl("")
	ss.SetSchemaUrl("")

	d := decoder{src: src}
	var (
		seen          fieldSet
		timestamp     string
		resURL, scURL string
		unmapped      []byte
	)
	member := func(key []byte) error {
		if err := seen.add(key); err != nil {
			return err
		}
		var err error
		switch string(key) {
		case "@timestamp":
			// Parsed only when "startTime" is absent: contrib writes
			// year 1 here.
			timestamp, err = d.stringField(key)
		case "startTime":
			var t uint64
			t, err = d.timeField(key)
			span.SetStartTimestamp(pcommon.Timestamp(t))
		case "endTime":
			var t uint64
			t, err = d.timeField(key)
			span.SetEndTimestamp(pcommon.Timestamp(t))
		case "traceId":
			var id pcommon.TraceID
			err = d.hexField(key, id[:])
			span.SetTraceID(id)
		case "spanId":
			var id pcommon.SpanID
			err = d.hexField(key, id[:])
			span.SetSpanID(id)
		case "parentSpanId":
			var id pcommon.SpanID
			err = d.hexField(key, id[:])
			span.SetParentSpanID(id)
		case "traceState":
			var s string
			s, err = d.stringField(key)
			span.TraceState().FromRaw(s)
		case "flags":
			var f uint32
			f, err = d.uint32Field(key)
			span.SetFlags(f)
		case "name":
			var s string
			s, err = d.stringField(key)
			span.SetName(s)
		case "kind":
			var k int32
			k, err = d.enumField(key, kindNames[:])
			span.SetKind(ptrace.SpanKind(k))
		case "status":
			err = d.status(key, span.Status())
		case "attributes":
			err = d.mapField(key, span.Attributes())
		case "droppedAttributesCount":
			var n uint32
			n, err = d.uint32Field(key)
			span.SetDroppedAttributesCount(n)
		case "events":
			err = d.events(key, span.Events())
		case "droppedEventsCount":
			var n uint32
			n, err = d.uint32Field(key)
			span.SetDroppedEventsCount(n)
		case "links":
			err = d.links(key, span.Links())
		case "droppedLinksCount":
			var n uint32
			n, err = d.uint32Field(key)
			span.SetDroppedLinksCount(n)
		case UnmappedField:
			unmapped, err = d.unmappedField(key)
		default:
			return d.originField(key, rs.Resource(), &resURL, ss.Scope(), &scURL)
		}
		return err
	}
	err := d.topObject(member)
	if err == nil && unmapped != nil {
		err = d.restoreUnmapped(unmapped, member)
	}
	if err != nil {
		return err
	}
	if !seen.has("@timestamp") {
		return &foreignError{field: "@timestamp", msg: "missing"}
	}
	if !seen.has("startTime") {
		t, err := parseTime(timestamp)
		if err != nil {
			return &foreignError{field: "@timestamp", msg: err.Error()}
		}
		span.SetStartTimestamp(pcommon.Timestamp(t))
	}
	rs.SetSchemaUrl(resURL)
	ss.SetSchemaUrl(scURL)
	return nil
}

// DecodeValue reads any JSON document into v, keeping object key order; for
// duplicate keys the last value wins in the first key's place. Integers that
// fit an int64 become Int, other numbers Double, null Empty. Invalid UTF-8 in
// strings becomes U+FFFD. For documents that are not in our layout.
func DecodeValue(src []byte, v pcommon.Value) error {
	_ = v.FromRaw(nil)
	d := decoder{src: src}
	if err := d.value(v); err != nil {
		return err
	}
	d.ws()
	if d.pos != len(d.src) {
		return d.syntax("data after the JSON value")
	}
	return nil
}

// checkForeign makes ErrForeign mean "valid JSON": decoding stops at the
// first field that does not fit, so the rest of src is checked here, and a
// syntax error anywhere is reported instead.
func checkForeign(src []byte, err error) error {
	if !errors.Is(err, ErrForeign) {
		return err
	}
	d := decoder{src: src}
	if serr := d.skip(); serr != nil {
		return serr
	}
	d.ws()
	if d.pos != len(d.src) {
		return d.syntax("data after the JSON value")
	}
	return err
}

// skip reads one JSON value without keeping it; a number must fit a
// float64, as for value.
func (d *decoder) skip() error { return d.skipValue(true) }

// skipRaw reads one JSON value checking its syntax only, for values that
// are copied, not read: any number is fine.
func (d *decoder) skipRaw() error { return d.skipValue(false) }

func (d *decoder) skipValue(inRange bool) error {
	switch c := d.peek(); c {
	case '"':
		return d.skipString()
	case '{':
		return d.object(func([]byte) error { return d.skipValue(inRange) })
	case '[':
		return d.array(func() error { return d.skipValue(inRange) })
	case 't':
		return d.literal("true")
	case 'f':
		return d.literal("false")
	case 'n':
		return d.literal("null")
	case 0:
		return d.syntax("unexpected end")
	default:
		if c != '-' && (c < '0' || c > '9') {
			return d.syntax("unexpected character " + strconv.QuoteRune(rune(c)))
		}
		var err error
		if inRange {
			_, _, _, err = d.number()
		} else {
			_, _, _, err = d.scanNumber()
		}
		return err
	}
}

// skipString reads the string at d.pos ('"') without unescaping it: it
// accepts what str accepts (escapes are checked, control characters
// refused, UTF-8 not checked).
func (d *decoder) skipString() error {
	src := d.src
	for i := d.pos + 1; i < len(src); i++ {
		c := src[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		switch c {
		case '"':
			d.pos = i + 1
			return nil
		case '\\':
			if i+1 < len(src) {
				switch src[i+1] {
				case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
					i++
					continue
				case 'u':
					if _, ok := hex4(src, i+2); ok {
						i += 5
						continue
					}
				}
			}
			d.pos = i
			return d.syntax("invalid escape")
		}
		d.pos = i
		return d.syntax("control character in string")
	}
	d.pos = len(src)
	return d.syntax("unterminated string")
}

// fieldSet records which fields of one object were read: an object that
// repeats a field is not ours. Names outside knownFields are not recorded
// (the decoders reject them anyway).
type fieldSet uint64

var knownFields = [...]string{
	"@timestamp", "timestampUnset", "observedTimestamp", "traceId", "spanId", "flags", "severity",
	"eventName", "body", "bodyType", "attributes", "droppedAttributesCount", "resource",
	"resourceDroppedAttributesCount", "schemaUrl", "instrumentationScope", "startTime", "endTime",
	"parentSpanId", "traceState", "name", "kind", "status", "events", "droppedEventsCount", "links",
	"droppedLinksCount", "text", "number", "code", "message", "version", UnmappedField,
}

func fieldIndex(name string) int {
	for i, n := range knownFields {
		if n == name {
			return i
		}
	}
	return -1
}

func (s *fieldSet) add(key []byte) error {
	i := fieldIndex(string(key))
	if i < 0 {
		return nil
	}
	if *s&(1<<i) != 0 {
		return foreign(key, "repeated")
	}
	*s |= 1 << i
	return nil
}

func (s *fieldSet) has(name string) bool {
	i := fieldIndex(name)
	return i >= 0 && *s&(1<<i) != 0
}

func (d *decoder) originField(key []byte, res pcommon.Resource, resURL *string, scope pcommon.InstrumentationScope, scURL *string) error {
	var err error
	switch string(key) {
	case "resource":
		err = d.mapField(key, res.Attributes())
	case "resourceDroppedAttributesCount":
		var n uint32
		n, err = d.uint32Field(key)
		res.SetDroppedAttributesCount(n)
	case "schemaUrl":
		*resURL, err = d.stringField(key)
	case "instrumentationScope":
		if d.peek() != '{' {
			return foreign(key, "not an object")
		}
		var seen fieldSet
		err = d.object(func(k []byte) error {
			if err := seen.add(k); err != nil {
				return err
			}
			var err error
			switch string(k) {
			case "name":
				var s string
				s, err = d.stringField(k)
				scope.SetName(s)
			case "version":
				var s string
				s, err = d.stringField(k)
				scope.SetVersion(s)
			case "schemaUrl":
				*scURL, err = d.stringField(k)
			case "attributes":
				err = d.mapField(k, scope.Attributes())
			case "droppedAttributesCount":
				var n uint32
				n, err = d.uint32Field(k)
				scope.SetDroppedAttributesCount(n)
			default:
				return foreign(k, "unknown field in instrumentationScope")
			}
			return err
		})
	default:
		return foreign(key, "unknown field")
	}
	return err
}

func (d *decoder) severity(key []byte, lr plog.LogRecord) error {
	if d.peek() != '{' {
		return foreign(key, "not an object")
	}
	var seen fieldSet
	return d.object(func(k []byte) error {
		if err := seen.add(k); err != nil {
			return err
		}
		switch string(k) {
		case "text":
			s, err := d.stringField(k)
			lr.SetSeverityText(s)
			return err
		case "number":
			n, err := d.intField(k, math.MinInt32, math.MaxInt32)
			lr.SetSeverityNumber(plog.SeverityNumber(n))
			return err
		}
		return foreign(k, "unknown field in severity")
	})
}

func (d *decoder) status(key []byte, st ptrace.Status) error {
	if d.peek() != '{' {
		return foreign(key, "not an object")
	}
	var seen fieldSet
	return d.object(func(k []byte) error {
		if err := seen.add(k); err != nil {
			return err
		}
		switch string(k) {
		case "code":
			c, err := d.enumField(k, statusNames[:])
			st.SetCode(ptrace.StatusCode(c))
			return err
		case "message":
			s, err := d.stringField(k)
			st.SetMessage(s)
			return err
		}
		return foreign(k, "unknown field in status")
	})
}

func (d *decoder) events(key []byte, events ptrace.SpanEventSlice) error {
	if d.peek() != '[' {
		return foreign(key, "not an array")
	}
	return d.array(func() error {
		if d.peek() != '{' {
			return foreign(key, "element not an object")
		}
		ev := events.AppendEmpty()
		var seen fieldSet
		return d.object(func(k []byte) error {
			if err := seen.add(k); err != nil {
				return err
			}
			var err error
			switch string(k) {
			case "@timestamp":
				var t uint64
				t, err = d.timeField(k)
				ev.SetTimestamp(pcommon.Timestamp(t))
			case "name":
				var s string
				s, err = d.stringField(k)
				ev.SetName(s)
			case "attributes":
				err = d.mapField(k, ev.Attributes())
			case "droppedAttributesCount":
				var n uint32
				n, err = d.uint32Field(k)
				ev.SetDroppedAttributesCount(n)
			default:
				return foreign(k, "unknown field in events")
			}
			return err
		})
	})
}

func (d *decoder) links(key []byte, links ptrace.SpanLinkSlice) error {
	if d.peek() != '[' {
		return foreign(key, "not an array")
	}
	return d.array(func() error {
		if d.peek() != '{' {
			return foreign(key, "element not an object")
		}
		l := links.AppendEmpty()
		var seen fieldSet
		return d.object(func(k []byte) error {
			if err := seen.add(k); err != nil {
				return err
			}
			var err error
			switch string(k) {
			case "traceId":
				var id pcommon.TraceID
				err = d.hexField(k, id[:])
				l.SetTraceID(id)
			case "spanId":
				var id pcommon.SpanID
				err = d.hexField(k, id[:])
				l.SetSpanID(id)
			case "traceState":
				var s string
				s, err = d.stringField(k)
				l.TraceState().FromRaw(s)
			case "flags":
				var f uint32
				f, err = d.uint32Field(k)
				l.SetFlags(f)
			case "attributes":
				err = d.mapField(k, l.Attributes())
			case "droppedAttributesCount":
				var n uint32
				n, err = d.uint32Field(k)
				l.SetDroppedAttributesCount(n)
			default:
				return foreign(k, "unknown field in links")
			}
			return err
		})
	})
}

// decoder is a small JSON reader over src that writes straight into pdata.
type decoder struct {
	src   []byte
	pos   int
	depth int
	buf   []byte // unescaped string scratch
}

func (d *decoder) syntax(msg string) error {
	return &SyntaxError{Offset: d.pos, Msg: msg}
}

func (d *decoder) ws() {
	for d.pos < len(d.src) {
		switch d.src[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// peek returns the next byte after white space, or 0 at the end.
func (d *decoder) peek() byte {
	d.ws()
	if d.pos >= len(d.src) {
		return 0
	}
	return d.src[d.pos]
}

// topObject reads the whole of src as one object.
func (d *decoder) topObject(fn func(key []byte) error) error {
	switch d.peek() {
	case '{':
	case 0:
		return d.syntax("empty document")
	default:
		if err := d.value(pcommon.NewValueEmpty()); err != nil {
			return err
		}
		return &foreignError{field: "", msg: "document is not a JSON object"}
	}
	if err := d.object(fn); err != nil {
		return err
	}
	d.ws()
	if d.pos != len(d.src) {
		return d.syntax("data after the JSON object")
	}
	return nil
}

// object reads an object at d.pos ('{'), calling fn for each member with
// the key (valid until the next string is read) and d.pos at the value;
// fn must read the value.
func (d *decoder) object(fn func(key []byte) error) error {
	d.pos++
	d.depth++
	if d.depth > maxDepth {
		return d.syntax("nesting too deep")
	}
	if d.peek() == '}' {
		d.pos++
		d.depth--
		return nil
	}
	for {
		if d.peek() != '"' {
			return d.syntax("expected a string key")
		}
		key, err := d.str()
		if err != nil {
			return err
		}
		if d.peek() != ':' {
			return d.syntax("expected ':'")
		}
		d.pos++
		if d.peek() == 0 {
			return d.syntax("unexpected end")
		}
		if err := fn(key); err != nil {
			return err
		}
		switch d.peek() {
		case ',':
			d.pos++
		case '}':
			d.pos++
			d.depth--
			return nil
		default:
			return d.syntax("expected ',' or '}'")
		}
	}
}

// array reads an array at d.pos ('['), calling fn with d.pos at each element.
func (d *decoder) array(fn func() error) error {
	d.pos++
	d.depth++
	if d.depth > maxDepth {
		return d.syntax("nesting too deep")
	}
	if d.peek() == ']' {
		d.pos++
		d.depth--
		return nil
	}
	for {
		if d.peek() == 0 {
			return d.syntax("unexpected end")
		}
		if err := fn(); err != nil {
			return err
		}
		switch d.peek() {
		case ',':
			d.pos++
		case ']':
			d.pos++
			d.depth--
			return nil
		default:
			return d.syntax("expected ',' or ']'")
		}
	}
}

// value reads any JSON value into v, which must be empty.
func (d *decoder) value(v pcommon.Value) error {
	switch c := d.peek(); c {
	case '"':
		s, err := d.str()
		if err != nil {
			return err
		}
		v.SetStr(string(s))
		return nil
	case '{':
		m := v.SetEmptyMap()
		return d.object(func(k []byte) error {
			return d.value(m.PutEmpty(string(k)))
		})
	case '[':
		s := v.SetEmptySlice()
		return d.array(func() error {
			return d.value(s.AppendEmpty())
		})
	case 't':
		if err := d.literal("true"); err != nil {
			return err
		}
		v.SetBool(true)
		return nil
	case 'f':
		if err := d.literal("false"); err != nil {
			return err
		}
		v.SetBool(false)
		return nil
	case 'n':
		if err := d.literal("null"); err != nil {
			return err
		}
		_ = v.FromRaw(nil)
		return nil
	case 0:
		return d.syntax("unexpected end")
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			i, f, isInt, err := d.number()
			if err != nil {
				return err
			}
			if isInt {
				v.SetInt(i)
			} else {
				v.SetDouble(f)
			}
			return nil
		}
		return d.syntax("unexpected character " + strconv.QuoteRune(rune(c)))
	}
}

func (d *decoder) literal(lit string) error {
	if len(d.src)-d.pos < len(lit) || string(d.src[d.pos:d.pos+len(lit)]) != lit {
		return d.syntax("invalid literal")
	}
	d.pos += len(lit)
	return nil
}

// number reads a JSON number. Without fraction and exponent and within the
// int64 range it is an integer; otherwise a float64.
func (d *decoder) number() (i int64, f float64, isInt bool, err error) {
	start := d.pos
	src := d.src
	neg := src[d.pos] == '-'
	digits, intEnd, isInt, err := d.scanNumber()
	if err != nil {
		return 0, 0, false, err
	}
	if isInt && intEnd-digits <= 19 {
		var u uint64
		for _, c := range src[digits:intEnd] {
			u = u*10 + uint64(c-'0')
		}
		switch {
		case !neg && u <= math.MaxInt64:
			return int64(u), 0, true, nil
		case neg && u <= 1<<63:
			return int64(-u), 0, true, nil // -1<<63 wraps to itself
		}
	}
	f, err = strconv.ParseFloat(string(src[start:d.pos]), 64)
	if err != nil {
		// Only a range error is possible for a well-formed number.
		return 0, 0, false, d.syntax("number out of range")
	}
	return 0, f, false, nil
}

// scanNumber moves d.pos past the JSON number there, checking only its
// syntax: its integer digits are src[digits:intEnd]; isInt is false when it
// has a fraction or an exponent.
func (d *decoder) scanNumber() (digits, intEnd int, isInt bool, err error) {
	src := d.src
	if src[d.pos] == '-' {
		d.pos++
	}
	digits = d.pos
	if d.pos < len(src) && src[d.pos] == '0' {
		d.pos++
	} else {
		for d.pos < len(src) && src[d.pos] >= '0' && src[d.pos] <= '9' {
			d.pos++
		}
	}
	if d.pos == digits {
		return 0, 0, false, d.syntax("invalid number")
	}
	intEnd = d.pos
	isInt = true
	if d.pos < len(src) && src[d.pos] == '.' {
		isInt = false
		d.pos++
		n := d.pos
		for d.pos < len(src) && src[d.pos] >= '0' && src[d.pos] <= '9' {
			d.pos++
		}
		if d.pos == n {
			return 0, 0, false, d.syntax("invalid number")
		}
	}
	if d.pos < len(src) && (src[d.pos] == 'e' || src[d.pos] == 'E') {
		isInt = false
		d.pos++
		if d.pos < len(src) && (src[d.pos] == '+' || src[d.pos] == '-') {
			d.pos++
		}
		n := d.pos
		for d.pos < len(src) && src[d.pos] >= '0' && src[d.pos] <= '9' {
			d.pos++
		}
		if d.pos == n {
			return 0, 0, false, d.syntax("invalid number")
		}
	}
	return digits, intEnd, isInt, nil
}

// str reads a string at d.pos ('"'). The result aliases src or d.buf and is
// valid until the next call.
func (d *decoder) str() ([]byte, error) {
	d.pos++
	start := d.pos
	src := d.src
	for i := start; i < len(src); i++ {
		c := src[i]
		switch {
		case c == '"':
			d.pos = i + 1
			return src[start:i], nil
		case c < 0x20:
			d.pos = i
			return nil, d.syntax("control character in string")
		case c == '\\' || c >= utf8.RuneSelf:
			return d.strSlow(start, i)
		}
	}
	d.pos = len(src)
	return nil, d.syntax("unterminated string")
}

func (d *decoder) strSlow(start, i int) ([]byte, error) {
	src := d.src
	buf := append(d.buf[:0], src[start:i]...)
	for i < len(src) {
		c := src[i]
		switch {
		case c == '"':
			d.pos = i + 1
			d.buf = buf
			return buf, nil
		case c < 0x20:
			d.pos = i
			return nil, d.syntax("control character in string")
		case c >= utf8.RuneSelf:
			r, size := utf8.DecodeRune(src[i:])
			if r == utf8.RuneError && size == 1 {
				buf = append(buf, "\uFFFD"...)
			} else {
				buf = append(buf, src[i:i+size]...)
			}
			i += size
		case c != '\\':
			buf = append(buf, c)
			i++
		default:
			if i+1 >= len(src) {
				d.pos = i
				return nil, d.syntax("unterminated string")
			}
			e := src[i+1]
			i += 2
			switch e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, ok := hex4(src, i)
				if !ok {
					d.pos = i
					return nil, d.syntax("invalid \\u escape")
				}
				i += 4
				if utf16.IsSurrogate(r) {
					r2, ok := rune(0), false
					if i+6 <= len(src) && src[i] == '\\' && src[i+1] == 'u' {
						r2, ok = hex4(src, i+2)
					}
					if dec := utf16.DecodeRune(r, r2); ok && dec != utf8.RuneError {
						r = dec
						i += 6
					} else {
						r = utf8.RuneError
					}
				}
				buf = utf8.AppendRune(buf, r)
			default:
				d.pos = i - 1
				return nil, d.syntax("invalid escape")
			}
		}
	}
	d.pos = len(src)
	return nil, d.syntax("unterminated string")
}

func hex4(src []byte, i int) (rune, bool) {
	if i+4 > len(src) {
		return 0, false
	}
	var r rune
	for _, c := range src[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// Typed field readers: a value of another JSON type is a foreign document.

func (d *decoder) stringField(key []byte) (string, error) {
	if d.peek() != '"' {
		return "", foreign(key, "not a string")
	}
	s, err := d.str()
	return string(s), err
}

func (d *decoder) boolField(key []byte) (bool, error) {
	switch d.peek() {
	case 't':
		return true, d.literal("true")
	case 'f':
		return false, d.literal("false")
	}
	return false, foreign(key, "not a boolean")
}

func (d *decoder) timeField(key []byte) (uint64, error) {
	s, err := d.stringField(key)
	if err != nil {
		return 0, err
	}
	t, err := parseTime(s)
	if err != nil {
		return 0, foreign(key, err.Error())
	}
	return t, nil
}

func (d *decoder) intField(key []byte, lo, hi int64) (int64, error) {
	if c := d.peek(); c != '-' && (c < '0' || c > '9') {
		return 0, foreign(key, "not a number")
	}
	i, _, isInt, err := d.number()
	if err != nil {
		return 0, err
	}
	if !isInt || i < lo || i > hi {
		return 0, foreign(key, fmt.Sprintf("not an integer in [%d, %d]", lo, hi))
	}
	return i, nil
}

func (d *decoder) uint32Field(key []byte) (uint32, error) {
	n, err := d.intField(key, 0, math.MaxUint32)
	return uint32(n), err
}

// hexField reads a hex id into dst; "" leaves dst zero.
func (d *decoder) hexField(key []byte, dst []byte) error {
	s, err := d.stringField(key)
	if err != nil || s == "" {
		return err
	}
	if len(s) != 2*len(dst) {
		return foreign(key, fmt.Sprintf("not %d hex digits", 2*len(dst)))
	}
	for i := range dst {
		hi, ok1 := unhex(s[2*i])
		lo, ok2 := unhex(s[2*i+1])
		if !ok1 || !ok2 {
			return foreign(key, "not hex")
		}
		dst[i] = hi<<4 | lo
	}
	return nil
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// enumField reads a name from names (its index is the value), "" (0) or a
// decimal int32 written for values without a name.
func (d *decoder) enumField(key []byte, names []string) (int32, error) {
	s, err := d.stringField(key)
	if err != nil || s == "" {
		return 0, err
	}
	for i, n := range names {
		if s == n {
			return int32(i), nil
		}
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, foreign(key, "unknown value "+strconv.Quote(s))
	}
	return int32(n), nil
}

func (d *decoder) mapField(key []byte, m pcommon.Map) error {
	if d.peek() != '{' {
		return foreign(key, "not an object")
	}
	return d.object(func(k []byte) error {
		return d.value(m.PutEmpty(string(k)))
	})
}
