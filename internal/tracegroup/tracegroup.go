// Package tracegroup regroups spans decoded one document at a time (every
// document carries its own resource and scope) into one ptrace.Traces:
// spans with equal resources into one ResourceSpans and, within it, spans
// with equal scopes into one ScopeSpans, in order of first appearance. A
// Layout says how a document decodes and what makes two resources or two
// scopes equal.
package tracegroup

import "go.opentelemetry.io/collector/pdata/ptrace"

// Layout is one document layout.
type Layout struct {
	// Decode reads src into the span and its resource and scope; what
	// they held before is replaced.
	Decode func(src []byte, rs ptrace.ResourceSpans, ss ptrace.ScopeSpans, span ptrace.Span) error
	// ResourceKey and ScopeKey append bytes that are equal for equal
	// resources (with their schema URLs) and equal scopes.
	ResourceKey func(dst []byte, rs ptrace.ResourceSpans) []byte
	ScopeKey    func(dst []byte, ss ptrace.ScopeSpans) []byte
}

// Decoder collects decoded spans. The zero value is ready to use; not
// safe for concurrent use.
type Decoder struct {
	traces    ptrace.Traces
	started   bool
	resources map[string]int // resource key → index in traces
	scopes    []map[string]int
	rs        ptrace.ResourceSpans // scratch targets
	ss        ptrace.ScopeSpans
	span      ptrace.Span
	buf       []byte
}

// Add decodes src with l and adds the span. On error nothing is added, and
// the error is l.Decode's.
func (d *Decoder) Add(l *Layout, src []byte) error {
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
	if err := l.Decode(src, d.rs, d.ss, d.span); err != nil {
		return err
	}
	d.buf = l.ResourceKey(d.buf[:0], d.rs)
	ri, ok := d.resources[string(d.buf)]
	if !ok {
		ri = d.traces.ResourceSpans().Len()
		d.resources[string(d.buf)] = ri
		d.scopes = append(d.scopes, map[string]int{})
		d.rs.MoveTo(d.traces.ResourceSpans().AppendEmpty())
		d.rs = ptrace.NewResourceSpans()
	}
	rs := d.traces.ResourceSpans().At(ri)
	d.buf = l.ScopeKey(d.buf[:0], d.ss)
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

// Traces returns the spans added since the last call and starts anew.
func (d *Decoder) Traces() ptrace.Traces {
	if !d.started {
		return ptrace.NewTraces()
	}
	d.started = false
	return d.traces
}
