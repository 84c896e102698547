package otelv1

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// Spans of two resources, each with two scopes, written interleaved, come
// back grouped as they were sent, and a foreign document is refused
// without being added.
func TestTracesDecoderGroups(t *testing.T) {
	sent := ptrace.NewTraces()
	src := &source{rng: rand.New(rand.NewPCG(1, 2))}
	for r := range 2 {
		rs := sent.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", []string{"a", "b"}[r])
		rs.Resource().Attributes().PutEmptyBytes("raw").FromRaw([]byte{byte(r)})
		for s := range 2 {
			ss := rs.ScopeSpans().AppendEmpty()
			ss.Scope().SetName([]string{"x", "y"}[s])
			for range 3 {
				sp := ss.Spans().AppendEmpty()
				tmp := ptrace.NewTraces()
				trs := tmp.ResourceSpans().AppendEmpty()
				tss := trs.ScopeSpans().AppendEmpty()
				src.span(trs, tss, tss.Spans().AppendEmpty())
				tss.Spans().At(0).CopyTo(sp)
				sp.Attributes().Clear()
				sp.Events().RemoveIf(func(ptrace.SpanEvent) bool { return true })
				sp.Links().RemoveIf(func(ptrace.SpanLink) bool { return true })
				sp.SetName("n")
				sp.TraceState().FromRaw("")
				sp.Status().SetMessage("")
			}
		}
	}
	// Interleave: one span of every scope in turn.
	var docs [][]byte
	var e Encoder
	for i := range 3 {
		for _, rs := range sent.ResourceSpans().All() {
			for _, ss := range rs.ScopeSpans().All() {
				e.ResetTraces(rs, ss)
				docs = append(docs, e.AppendSpan(nil, ss.Spans().At(i), nil))
			}
		}
	}
	var d TracesDecoder
	for i, doc := range docs {
		if err := d.Add(doc); err != nil {
			t.Fatalf("doc %d: %v", i, err)
		}
		if i == 3 {
			if err := d.Add([]byte(`{"@timestamp":"2026-01-01T00:00:00Z","body":"x"}`)); err == nil {
				t.Fatal("a foreign document was accepted")
			}
		}
	}
	got := d.Traces()
	if !bytes.Equal(protoBytes(t, sent), protoBytes(t, got)) {
		gj, _ := (&ptrace.JSONMarshaler{}).MarshalTraces(got)
		t.Fatalf("grouped differently:\n%s", gj)
	}
	if d.Traces().SpanCount() != 0 {
		t.Fatal("Traces did not start anew")
	}
}
