package otelv1

import (
	"strconv"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/opensearchrouted/opensearchrouted/internal/jsonstr"
)

// TracesDecoder decodes span documents into one ptrace.Traces, putting
// spans with equal resources (and schema URLs) into one ResourceSpans and,
// within it, spans with equal scopes into one ScopeSpans, in order of
// first appearance. The zero value is ready to use; not safe for
// concurrent use.
type TracesDecoder struct {
	traces    ptrace.Traces
	started   bool
	resources map[string]int // resource key → index in traces
	scopes    []map[string]int
	rs        ptrace.ResourceSpans // scratch targets
	ss        ptrace.ScopeSpans
	span      ptrace.Span
	buf       []byte
}

// Add decodes src (see DecodeSpan) and adds the span. On error nothing is
// added, and the error is DecodeSpan's.
func (d *TracesDecoder) Add(src []byte) error {
	if !d.started {
		d.traces = ptrace.NewTraces()
		d.resources = map[string]int{}
		d.scopes = d.scopes[:0]
		d.started = true
	}
	if d.rs == (ptrace.ResourceSpans{}) {
		d.rs = ptrace.NewResourceSpans()
		d.ss = ptrace.NewScopeSpans()
		d.span = ptrace.NewSpan()
	}
	if err := DecodeSpan(src, d.rs, d.ss, d.span); err != nil {
		return err
	}
	d.buf = groupKey(d.buf[:0], d.rs.Resource().Attributes(), d.rs.Resource().DroppedAttributesCount(), d.rs.SchemaUrl())
	ri, ok := d.resources[string(d.buf)]
	if !ok {
		ri = d.traces.ResourceSpans().Len()
		d.resources[string(d.buf)] = ri
		d.scopes = append(d.scopes, map[string]int{})
		d.rs.MoveTo(d.traces.ResourceSpans().AppendEmpty())
		d.rs = ptrace.NewResourceSpans()
	}
	rs := d.traces.ResourceSpans().At(ri)
	sc := d.ss.Scope()
	d.buf = groupKey(d.buf[:0], sc.Attributes(), sc.DroppedAttributesCount(), d.ss.SchemaUrl())
	d.buf = jsonstr.Append(d.buf, sc.Name())
	d.buf = jsonstr.Append(d.buf, sc.Version())
	si, ok := d.scopes[ri][string(d.buf)]
	if !ok {
		si = rs.ScopeSpans().Len()
		d.scopes[ri][string(d.buf)] = si
		d.ss.MoveTo(rs.ScopeSpans().AppendEmpty())
		d.ss = ptrace.NewScopeSpans()
	}
	d.span.MoveTo(rs.ScopeSpans().At(si).Spans().AppendEmpty())
	return nil
}

// groupKey identifies a resource or a scope: its attributes (typed, in
// order), dropped count and schema URL.
func groupKey(dst []byte, attrs pcommon.Map, dropped uint32, schemaURL string) []byte {
	dst = appendTypedPairs(dst, attrs)
	dst = strconv.AppendUint(dst, uint64(dropped), 10)
	return jsonstr.Append(dst, schemaURL)
}

// Traces returns the spans added since the last call and starts anew.
func (d *TracesDecoder) Traces() ptrace.Traces {
	if !d.started {
		return ptrace.NewTraces()
	}
	d.started = false
	return d.traces
}
