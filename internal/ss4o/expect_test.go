package ss4o

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// This file is a second, independent statement of the layout in doc.go: it
// builds the document a record must produce as a Go value, the way
// encoding/json decodes it (with UseNumber), using encoding/base64,
// encoding/hex and time.Format instead of the encoder's own code.

type number struct {
	isDouble bool
	i        int64
	f        float64
}

func expectValue(v pcommon.Value) any {
	switch v.Type() {
	case pcommon.ValueTypeStr:
		return sanitizeAny(v.Str())
	case pcommon.ValueTypeInt:
		return number{i: v.Int()}
	case pcommon.ValueTypeDouble:
		switch f := v.Double(); {
		case math.IsNaN(f):
			return "NaN"
		case math.IsInf(f, 1):
			return "Infinity"
		case math.IsInf(f, -1):
			return "-Infinity"
		default:
			return number{isDouble: true, f: f}
		}
	case pcommon.ValueTypeBool:
		return v.Bool()
	case pcommon.ValueTypeBytes:
		return base64.StdEncoding.EncodeToString(v.Bytes().AsRaw())
	case pcommon.ValueTypeMap:
		return expectMap(v.Map())
	case pcommon.ValueTypeSlice:
		out := []any{}
		for _, e := range v.Slice().All() {
			out = append(out, expectValue(e))
		}
		return out
	}
	return nil
}

func expectMap(m pcommon.Map) map[string]any {
	out := map[string]any{}
	for k, v := range m.All() {
		sk := sanitizeAny(k)
		if _, dup := out[sk]; !dup {
			out[sk] = expectValue(v)
		}
	}
	return out
}

func expectTime(ns uint64) string {
	if ns > math.MaxInt64 {
		// time.Unix(0, ns) cannot hold it: add in two steps.
		d := ns - math.MaxInt64
		return time.Unix(0, math.MaxInt64).UTC().Add(time.Duration(d / 2)).Add(time.Duration(d - d/2)).Format(time.RFC3339Nano)
	}
	return time.Unix(0, int64(ns)).UTC().Format(time.RFC3339Nano)
}

type fields map[string]any

func (f fields) str(k, v string) {
	if v != "" {
		f[k] = sanitizeAny(v)
	}
}

func (f fields) count(k string, n uint32) {
	if n != 0 {
		f[k] = number{i: int64(n)}
	}
}

func (f fields) hexID(k string, b []byte, empty bool) {
	if !empty {
		f[k] = hex.EncodeToString(b)
	}
}

func (f fields) attrs(k string, m pcommon.Map) {
	if m.Len() != 0 {
		f[k] = expectMap(m)
	}
}

func expectOrigin(f fields, res pcommon.Resource, resURL string, scope pcommon.InstrumentationScope, scURL string) {
	f.attrs("resource", res.Attributes())
	f.count("resourceDroppedAttributesCount", res.DroppedAttributesCount())
	f.str("schemaUrl", resURL)
	sc := fields{}
	sc.str("name", scope.Name())
	sc.str("version", scope.Version())
	sc.str("schemaUrl", scURL)
	sc.attrs("attributes", scope.Attributes())
	sc.count("droppedAttributesCount", scope.DroppedAttributesCount())
	if len(sc) > 0 {
		f["instrumentationScope"] = map[string]any(sc)
	}
}

func expectLogDoc(res pcommon.Resource, resURL string, scope pcommon.InstrumentationScope, scURL string, lr plog.LogRecord) map[string]any {
	f := fields{}
	if lr.Timestamp() != 0 {
		f["@timestamp"] = expectTime(uint64(lr.Timestamp()))
	} else {
		f["@timestamp"] = expectTime(uint64(lr.ObservedTimestamp()))
		f["timestampUnset"] = true
	}
	if lr.ObservedTimestamp() != 0 {
		f["observedTimestamp"] = expectTime(uint64(lr.ObservedTimestamp()))
	}
	tid, sid := lr.TraceID(), lr.SpanID()
	f.hexID("traceId", tid[:], tid.IsEmpty())
	f.hexID("spanId", sid[:], sid.IsEmpty())
	f.count("flags", uint32(lr.Flags()))
	sev := fields{}
	sev.str("text", lr.SeverityText())
	if n := lr.SeverityNumber(); n != 0 {
		sev["number"] = number{i: int64(n)}
	}
	if len(sev) > 0 {
		f["severity"] = map[string]any(sev)
	}
	f.str("eventName", lr.EventName())
	// The body is always a string (text in SS4O's mapping): another type is
	// written as its JSON text, with "bodyType" naming the type.
	switch b := lr.Body(); b.Type() {
	case pcommon.ValueTypeEmpty:
	case pcommon.ValueTypeStr:
		f["body"] = expectValue(b)
	default:
		f["bodyType"] = map[pcommon.ValueType]string{pcommon.ValueTypeInt: "int", pcommon.ValueTypeDouble: "double",
			pcommon.ValueTypeBool: "bool", pcommon.ValueTypeBytes: "bytes", pcommon.ValueTypeMap: "map", pcommon.ValueTypeSlice: "slice"}[b.Type()]
		if s, ok := expectValue(b).(string); ok { // bytes (base64), NaN, ±Infinity: the text itself
			f["body"] = s
		} else {
			f["body"] = jsonText{expectValue(b)}
		}
	}
	f.attrs("attributes", lr.Attributes())
	f.count("droppedAttributesCount", lr.DroppedAttributesCount())
	expectOrigin(f, res, resURL, scope, scURL)
	return f
}

func enumName(names []string, v int32) string {
	if v >= 0 && int(v) < len(names) {
		return names[v]
	}
	return strconv.Itoa(int(v))
}

func expectSpanDoc(res pcommon.Resource, resURL string, scope pcommon.InstrumentationScope, scURL string, s ptrace.Span) map[string]any {
	f := fields{}
	f["@timestamp"] = expectTime(uint64(s.StartTimestamp()))
	if s.StartTimestamp() != 0 {
		f["startTime"] = expectTime(uint64(s.StartTimestamp()))
	}
	if s.EndTimestamp() != 0 {
		f["endTime"] = expectTime(uint64(s.EndTimestamp()))
	}
	tid, sid, pid := s.TraceID(), s.SpanID(), s.ParentSpanID()
	f.hexID("traceId", tid[:], tid.IsEmpty())
	f.hexID("spanId", sid[:], sid.IsEmpty())
	f.hexID("parentSpanId", pid[:], pid.IsEmpty())
	f.str("traceState", s.TraceState().AsRaw())
	f.count("flags", s.Flags())
	f.str("name", s.Name())
	if s.Kind() != 0 {
		f["kind"] = enumName([]string{"Unspecified", "Internal", "Server", "Client", "Producer", "Consumer"}, int32(s.Kind()))
	}
	if s.Status().Code() != 0 || s.Status().Message() != "" {
		st := fields{"code": enumName([]string{"Unset", "Ok", "Error"}, int32(s.Status().Code()))}
		st.str("message", s.Status().Message())
		f["status"] = map[string]any(st)
	}
	f.attrs("attributes", s.Attributes())
	f.count("droppedAttributesCount", s.DroppedAttributesCount())
	if s.Events().Len() > 0 {
		var evs []any
		for _, ev := range s.Events().All() {
			e := fields{}
			if ev.Timestamp() != 0 {
				e["@timestamp"] = expectTime(uint64(ev.Timestamp()))
			}
			e.str("name", ev.Name())
			e.attrs("attributes", ev.Attributes())
			e.count("droppedAttributesCount", ev.DroppedAttributesCount())
			evs = append(evs, map[string]any(e))
		}
		f["events"] = evs
	}
	f.count("droppedEventsCount", s.DroppedEventsCount())
	if s.Links().Len() > 0 {
		var ls []any
		for _, l := range s.Links().All() {
			e := fields{}
			tid, sid := l.TraceID(), l.SpanID()
			e.hexID("traceId", tid[:], tid.IsEmpty())
			e.hexID("spanId", sid[:], sid.IsEmpty())
			e.str("traceState", l.TraceState().AsRaw())
			e.count("flags", l.Flags())
			e.attrs("attributes", l.Attributes())
			e.count("droppedAttributesCount", l.DroppedAttributesCount())
			ls = append(ls, map[string]any(e))
		}
		f["links"] = ls
	}
	f.count("droppedLinksCount", s.DroppedLinksCount())
	expectOrigin(f, res, resURL, scope, scURL)
	return f
}

// decodeAny decodes doc with encoding/json (numbers kept as json.Number).
func decodeAny(doc []byte) (any, error) {
	dec := json.NewDecoder(strings.NewReader(string(doc)))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("data after the document")
	}
	return v, nil
}

// sameAny compares what encoding/json decoded (got) with the expectation
// (want) and returns the first difference.
// jsonText is a string whose content is the JSON text of a value.
type jsonText struct{ v any }

func sameAny(path string, want, got any) error {
	switch w := want.(type) {
	case jsonText:
		s, ok := got.(string)
		if !ok {
			return fmt.Errorf("%s: want a string holding JSON, got %T", path, got)
		}
		dec := json.NewDecoder(strings.NewReader(s))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil || dec.More() {
			return fmt.Errorf("%s: not one JSON value: %q", path, s)
		}
		return sameAny(path, w.v, v)
	case number:
		n, ok := got.(json.Number)
		if !ok {
			return fmt.Errorf("%s: want number, got %T %v", path, got, got)
		}
		isDouble := strings.ContainsAny(string(n), ".eE")
		if isDouble != w.isDouble {
			return fmt.Errorf("%s: number %s: want double=%v", path, n, w.isDouble)
		}
		if w.isDouble {
			f, err := strconv.ParseFloat(string(n), 64)
			if err != nil || f != w.f || math.Signbit(f) != math.Signbit(w.f) {
				return fmt.Errorf("%s: want %v, got %s", path, w.f, n)
			}
			return nil
		}
		if i, err := strconv.ParseInt(string(n), 10, 64); err != nil || i != w.i {
			return fmt.Errorf("%s: want %d, got %s", path, w.i, n)
		}
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: want object, got %T", path, got)
		}
		if len(g) != len(w) {
			return fmt.Errorf("%s: want %d keys %v, got %d %v", path, len(w), keys(w), len(g), keys(g))
		}
		for k, wv := range w {
			gv, ok := g[k]
			if !ok {
				return fmt.Errorf("%s: missing key %q", path, k)
			}
			if err := sameAny(path+"."+k, wv, gv); err != nil {
				return err
			}
		}
	case fields:
		return sameAny(path, map[string]any(w), got)
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return fmt.Errorf("%s: want array of %d, got %v", path, len(w), got)
		}
		for i := range w {
			if err := sameAny(fmt.Sprintf("%s[%d]", path, i), w[i], g[i]); err != nil {
				return err
			}
		}
	default:
		if want != got {
			return fmt.Errorf("%s: want %#v, got %#v", path, want, got)
		}
	}
	return nil
}

func keys(m map[string]any) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}
