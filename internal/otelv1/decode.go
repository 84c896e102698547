package otelv1

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/opensearchrouted/opensearchrouted/internal/ss4o"
)

// ErrForeign is matched (errors.Is) by the error of a document that is
// valid JSON but not a span document of this layout.
var ErrForeign = errors.New("not an otel-v1 span document")

type foreignError struct{ msg string }

func (e *foreignError) Error() string        { return "otel-v1: " + e.msg }
func (e *foreignError) Is(target error) bool { return target == ErrForeign }

func foreign(format string, args ...any) error {
	return &foreignError{msg: fmt.Sprintf(format, args...)}
}

const (
	spanPrefix     = "span.attributes."
	resourcePrefix = "resource.attributes."
)

// DecodeSpan reads a span document (src, a _source) into span, its
// resource into rs.Resource() and rs's schema URL, its scope into
// ss.Scope() and ss's schema URL. It is the exact inverse of
// Encoder.AppendSpan up to the normalisations in the package
// documentation. What rs's resource, ss's scope and span held before is
// replaced. The derived fields (durationInNanos, serviceName,
// traceGroup, traceGroupFields) are read past; null stands for absent
// (Data Prepper writes null for a field it has no value for). A member
// this layout does not have is an error matching ErrForeign.
func DecodeSpan(src []byte, rs ptrace.ResourceSpans, ss ptrace.ScopeSpans, span ptrace.Span) error {
	doc := pcommon.NewValueEmpty()
	if err := ss4o.DecodeValue(src, doc); err != nil {
		return err
	}
	if doc.Type() != pcommon.ValueTypeMap {
		return foreign("document is a JSON %s, not an object", doc.Type())
	}
	// The targets may hold what an earlier call decoded.
	pcommon.NewResource().CopyTo(rs.Resource())
	rs.SetSchemaUrl("")
	pcommon.NewInstrumentationScope().CopyTo(ss.Scope())
	ss.SetSchemaUrl("")
	ptrace.NewSpan().CopyTo(span)
	d := spanDecoder{rs: rs, ss: ss, span: span}
	for k, v := range doc.Map().All() {
		if err := d.member(k, v); err != nil {
			return err
		}
	}
	if d.hasExact {
		return d.applyExact(d.exact.Map())
	}
	return nil
}

type spanDecoder struct {
	rs       ptrace.ResourceSpans
	ss       ptrace.ScopeSpans
	span     ptrace.Span
	exact    pcommon.Value
	hasExact bool
}

func (d *spanDecoder) member(k string, v pcommon.Value) error {
	span := d.span
	if v.Type() == pcommon.ValueTypeEmpty {
		return nil
	}
	switch k {
	case "traceId":
		var id pcommon.TraceID
		if err := hexField(k, v, id[:]); err != nil {
			return err
		}
		span.SetTraceID(id)
	case "spanId", "parentSpanId":
		var id pcommon.SpanID
		if err := hexField(k, v, id[:]); err != nil {
			return err
		}
		if k == "spanId" {
			span.SetSpanID(id)
		} else {
			span.SetParentSpanID(id)
		}
	case "traceState":
		s, err := strField(k, v)
		span.TraceState().FromRaw(s)
		return err
	case "name":
		s, err := strField(k, v)
		span.SetName(s)
		return err
	case "kind":
		s, err := strField(k, v)
		if err != nil {
			return err
		}
		kind, ok := kindOf(s)
		if !ok {
			return foreign("kind %q is not a span kind", s)
		}
		span.SetKind(kind)
	case "startTime", "endTime":
		ns, err := timeField(k, v)
		if err != nil {
			return err
		}
		if k == "startTime" {
			span.SetStartTimestamp(pcommon.Timestamp(ns))
		} else {
			span.SetEndTimestamp(pcommon.Timestamp(ns))
		}
	case "flags":
		n, err := intField(k, v, 0, math.MaxUint32)
		span.SetFlags(uint32(n))
		return err
	case "status.code":
		n, err := intField(k, v, math.MinInt32, math.MaxInt32)
		span.Status().SetCode(ptrace.StatusCode(n))
		return err
	case "status.message":
		s, err := strField(k, v)
		span.Status().SetMessage(s)
		return err
	case "droppedAttributesCount", "droppedEventsCount", "droppedLinksCount":
		n, err := intField(k, v, 0, math.MaxUint32)
		switch k {
		case "droppedAttributesCount":
			span.SetDroppedAttributesCount(uint32(n))
		case "droppedEventsCount":
			span.SetDroppedEventsCount(uint32(n))
		default:
			span.SetDroppedLinksCount(uint32(n))
		}
		return err
	case "events":
		return d.events(v)
	case "links":
		return d.links(v)
	case "instrumentationScope.name":
		s, err := strField(k, v)
		d.ss.Scope().SetName(s)
		return err
	case "instrumentationScope.version":
		s, err := strField(k, v)
		d.ss.Scope().SetVersion(s)
		return err
	case "durationInNanos", "serviceName", "traceGroup", "traceGroupFields":
		// Derived from the span, its resource and its root.
	case "roundTrip":
		if v.Type() != pcommon.ValueTypeMap {
			return foreign("roundTrip is a %s, not an object", v.Type())
		}
		d.exact, d.hasExact = v, true
	default:
		switch {
		case strings.HasPrefix(k, spanPrefix):
			flatValue(v, span.Attributes().PutEmpty(unflatKey(k[len(spanPrefix):])))
		case strings.HasPrefix(k, resourcePrefix):
			flatValue(v, d.rs.Resource().Attributes().PutEmpty(unflatKey(k[len(resourcePrefix):])))
		default:
			return foreign("unknown member %q", k)
		}
	}
	return nil
}

// unflatKey undoes the '.' → '@' replacement of attribute keys.
func unflatKey(k string) string { return strings.ReplaceAll(k, "@", ".") }

// flatValue copies a flat attribute value: strings, ints, doubles and
// bools are themselves; anything else (a document not written by this
// package) is taken as it is.
func flatValue(v, dst pcommon.Value) { v.CopyTo(dst) }

func flatObject(k string, v pcommon.Value, m pcommon.Map) error {
	if v.Type() != pcommon.ValueTypeMap {
		return foreign("%s is a %s, not an object", k, v.Type())
	}
	for key, x := range v.Map().All() {
		flatValue(x, m.PutEmpty(unflatKey(key)))
	}
	return nil
}

func (d *spanDecoder) events(v pcommon.Value) error {
	if v.Type() != pcommon.ValueTypeSlice {
		return foreign("events is a %s, not an array", v.Type())
	}
	s := v.Slice()
	events := d.span.Events()
	for i := range s.Len() {
		x := s.At(i)
		if x.Type() != pcommon.ValueTypeMap {
			return foreign("events[%d] is a %s, not an object", i, x.Type())
		}
		ev := events.AppendEmpty()
		for k, f := range x.Map().All() {
			if f.Type() == pcommon.ValueTypeEmpty {
				continue
			}
			var err error
			switch k {
			case "time":
				var ns uint64
				ns, err = timeField("events.time", f)
				ev.SetTimestamp(pcommon.Timestamp(ns))
			case "name":
				var name string
				name, err = strField("events.name", f)
				ev.SetName(name)
			case "attributes":
				err = flatObject("events.attributes", f, ev.Attributes())
			case "droppedAttributesCount":
				var n int64
				n, err = intField("events.droppedAttributesCount", f, 0, math.MaxUint32)
				ev.SetDroppedAttributesCount(uint32(n))
			default:
				err = foreign("unknown member %q in events[%d]", k, i)
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

func (d *spanDecoder) links(v pcommon.Value) error {
	if v.Type() != pcommon.ValueTypeSlice {
		return foreign("links is a %s, not an array", v.Type())
	}
	s := v.Slice()
	links := d.span.Links()
	for i := range s.Len() {
		x := s.At(i)
		if x.Type() != pcommon.ValueTypeMap {
			return foreign("links[%d] is a %s, not an object", i, x.Type())
		}
		l := links.AppendEmpty()
		for k, f := range x.Map().All() {
			if f.Type() == pcommon.ValueTypeEmpty {
				continue
			}
			var err error
			switch k {
			case "traceId":
				var id pcommon.TraceID
				err = hexField("links.traceId", f, id[:])
				l.SetTraceID(id)
			case "spanId":
				var id pcommon.SpanID
				err = hexField("links.spanId", f, id[:])
				l.SetSpanID(id)
			case "traceState":
				var ts string
				ts, err = strField("links.traceState", f)
				l.TraceState().FromRaw(ts)
			case "flags":
				var n int64
				n, err = intField("links.flags", f, 0, math.MaxUint32)
				l.SetFlags(uint32(n))
			case "attributes":
				err = flatObject("links.attributes", f, l.Attributes())
			case "droppedAttributesCount":
				var n int64
				n, err = intField("links.droppedAttributesCount", f, 0, math.MaxUint32)
				l.SetDroppedAttributesCount(uint32(n))
			default:
				err = foreign("unknown member %q in links[%d]", k, i)
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// applyExact restores what roundTrip keeps (see the package
// documentation), over what the flat members gave.
func (d *spanDecoder) applyExact(m pcommon.Map) error {
	span := d.span
	for k, v := range m.All() {
		var err error
		switch k {
		case "span":
			err = typedPairs("roundTrip.span", v, span.Attributes())
		case "resource":
			err = typedPairs("roundTrip.resource", v, d.rs.Resource().Attributes())
		case "scope":
			err = typedPairs("roundTrip.scope", v, d.ss.Scope().Attributes())
		case "resourceDropped":
			var n int64
			n, err = intField("roundTrip.resourceDropped", v, 0, math.MaxUint32)
			d.rs.Resource().SetDroppedAttributesCount(uint32(n))
		case "scopeDropped":
			var n int64
			n, err = intField("roundTrip.scopeDropped", v, 0, math.MaxUint32)
			d.ss.Scope().SetDroppedAttributesCount(uint32(n))
		case "resourceSchemaUrl":
			var s string
			s, err = strField("roundTrip.resourceSchemaUrl", v)
			d.rs.SetSchemaUrl(s)
		case "scopeSchemaUrl":
			var s string
			s, err = strField("roundTrip.scopeSchemaUrl", v)
			d.ss.SetSchemaUrl(s)
		case "kind":
			var n int64
			n, err = intField("roundTrip.kind", v, math.MinInt32, math.MaxInt32)
			span.SetKind(ptrace.SpanKind(n))
		case "startTime", "endTime":
			var ns uint64
			ns, err = decimalField("roundTrip."+k, v)
			if k == "startTime" {
				span.SetStartTimestamp(pcommon.Timestamp(ns))
			} else {
				span.SetEndTimestamp(pcommon.Timestamp(ns))
			}
		case "events":
			err = d.exactEntries(k, v, span.Events().Len(), func(i int, k string, f pcommon.Value) error {
				ev := span.Events().At(i)
				switch k {
				case "attributes":
					return typedPairs("roundTrip.events.attributes", f, ev.Attributes())
				case "time":
					ns, err := decimalField("roundTrip.events.time", f)
					ev.SetTimestamp(pcommon.Timestamp(ns))
					return err
				}
				return foreign("unknown member %q in roundTrip.events", k)
			})
		case "links":
			err = d.exactEntries(k, v, span.Links().Len(), func(i int, k string, f pcommon.Value) error {
				if k != "attributes" {
					return foreign("unknown member %q in roundTrip.links", k)
				}
				return typedPairs("roundTrip.links.attributes", f, span.Links().At(i).Attributes())
			})
		default:
			err = foreign("unknown member %q in roundTrip", k)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// exactEntries reads roundTrip.events or .links: objects whose "i" is the
// index of the event or link the other members belong to.
func (d *spanDecoder) exactEntries(name string, v pcommon.Value, n int, fn func(i int, k string, f pcommon.Value) error) error {
	if v.Type() != pcommon.ValueTypeSlice {
		return foreign("roundTrip.%s is a %s, not an array", name, v.Type())
	}
	s := v.Slice()
	for j := range s.Len() {
		x := s.At(j)
		if x.Type() != pcommon.ValueTypeMap {
			return foreign("roundTrip.%s[%d] is a %s, not an object", name, j, x.Type())
		}
		iv, ok := x.Map().Get("i")
		if !ok || iv.Type() != pcommon.ValueTypeInt || iv.Int() < 0 || iv.Int() >= int64(n) {
			return foreign("roundTrip.%s[%d] has no index i of one of the %d %s", name, j, n, name)
		}
		for k, f := range x.Map().All() {
			if k == "i" {
				continue
			}
			if err := fn(int(iv.Int()), k, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// typedPairs replaces m with the [key, typed value] pairs of v.
func typedPairs(name string, v pcommon.Value, m pcommon.Map) error {
	if v.Type() != pcommon.ValueTypeSlice {
		return foreign("%s is a %s, not an array", name, v.Type())
	}
	m.Clear()
	s := v.Slice()
	m.EnsureCapacity(s.Len())
	for i := range s.Len() {
		p := s.At(i)
		if p.Type() != pcommon.ValueTypeSlice || p.Slice().Len() != 2 || p.Slice().At(0).Type() != pcommon.ValueTypeStr {
			return foreign("%s[%d] is not a [key, value] pair", name, i)
		}
		if err := typed(name, p.Slice().At(1), m.PutEmpty(p.Slice().At(0).Str())); err != nil {
			return err
		}
	}
	return nil
}

// typed reads a typed value written by appendValue into dst.
func typed(name string, v, dst pcommon.Value) error {
	switch v.Type() {
	case pcommon.ValueTypeSlice:
		s := v.Slice()
		out := dst.SetEmptySlice()
		out.EnsureCapacity(s.Len())
		for i := range s.Len() {
			if err := typed(name, s.At(i), out.AppendEmpty()); err != nil {
				return err
			}
		}
		return nil
	case pcommon.ValueTypeMap:
		m := v.Map()
		if m.Len() != 1 {
			return foreign("%s: a typed value object has %d members, not 1", name, m.Len())
		}
		for k, x := range m.All() {
			switch k {
			case "d":
				if x.Type() == pcommon.ValueTypeStr {
					switch x.Str() {
					case "NaN":
						dst.SetDouble(math.NaN())
						return nil
					case "Infinity":
						dst.SetDouble(math.Inf(1))
						return nil
					case "-Infinity":
						dst.SetDouble(math.Inf(-1))
						return nil
					}
				}
			case "y":
				if x.Type() == pcommon.ValueTypeStr {
					b, err := base64.StdEncoding.DecodeString(x.Str())
					if err != nil {
						return foreign("%s: bytes: %v", name, err)
					}
					dst.SetEmptyBytes().FromRaw(b)
					return nil
				}
			case "m":
				return typedPairs(name, x, dst.SetEmptyMap())
			}
			return foreign("%s: %q is not a typed value", name, k)
		}
	}
	v.CopyTo(dst)
	return nil
}

func strField(name string, v pcommon.Value) (string, error) {
	if v.Type() != pcommon.ValueTypeStr {
		return "", foreign("%s is a %s, not a string", name, v.Type())
	}
	return v.Str(), nil
}

func intField(name string, v pcommon.Value, lo, hi int64) (int64, error) {
	if v.Type() != pcommon.ValueTypeInt || v.Int() < lo || v.Int() > hi {
		return 0, foreign("%s is not an integer in [%d, %d]", name, lo, hi)
	}
	return v.Int(), nil
}

func timeField(name string, v pcommon.Value) (uint64, error) {
	s, err := strField(name, v)
	if err != nil {
		return 0, err
	}
	ns, err := parseTime(s)
	if err != nil {
		return 0, foreign("%s: %v", name, err)
	}
	return ns, nil
}

func decimalField(name string, v pcommon.Value) (uint64, error) {
	s, err := strField(name, v)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, foreign("%s: %v", name, err)
	}
	return n, nil
}

// hexField reads an id: "" is the empty id, else exactly 2*len(dst) hex
// digits.
func hexField(name string, v pcommon.Value, dst []byte) error {
	s, err := strField(name, v)
	if err != nil || s == "" {
		return err
	}
	if len(s) != 2*len(dst) {
		return foreign("%s %q is not %d hex digits", name, s, 2*len(dst))
	}
	if _, err := hex.Decode(dst, []byte(s)); err != nil {
		return foreign("%s %q is not hex", name, s)
	}
	return nil
}

func kindOf(s string) (ptrace.SpanKind, bool) {
	for i, n := range kindNames {
		if n == s {
			return ptrace.SpanKind(i), true
		}
	}
	if s == unrecognizedKind {
		return ptrace.SpanKindUnspecified, true // the value is under roundTrip.kind
	}
	return 0, false
}
