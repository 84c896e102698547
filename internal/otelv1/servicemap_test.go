package otelv1

import (
	"encoding/json"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

// The hash Data Prepper's own tests pin for a destination relationship
// (service "ServiceName", kind "Kind", domain "d1", resource "r1", trace
// group "TraceGroupName").
func TestEdgeIDMatchesDataPrepper(t *testing.T) {
	e := Edge{ServiceName: "ServiceName", Kind: "Kind", Destination: &Endpoint{Resource: "r1", Domain: "d1"}, TraceGroupName: "TraceGroupName"}
	if got := e.ID(); got != "r7rZwbptLFxOLPUlg/x2nA==" {
		t.Fatalf("ID = %s", got)
	}
	// A target edge of the same names is another document.
	tgt := Edge{ServiceName: "ServiceName", Kind: "Kind", Target: &Endpoint{Resource: "r1", Domain: "d1"}, TraceGroupName: "TraceGroupName"}
	if tgt.ID() == e.ID() {
		t.Fatal("target and destination edges share an id")
	}
	// Invalid UTF-8 hashes as its replacement (what the server stores).
	a := Edge{ServiceName: "s\xff", Kind: "k"}
	b := Edge{ServiceName: "s\uFFFD", Kind: "k"}
	if a.ID() != b.ID() {
		t.Fatal("invalid UTF-8 and its replacement hash differently")
	}
}

func TestEdgesOf(t *testing.T) {
	td := ptrace.NewTraces()
	spans := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans()
	parent, child := spans.AppendEmpty(), spans.AppendEmpty()
	parent.SetKind(ptrace.SpanKindClient)
	parent.SetName("client updateItem")
	child.SetKind(ptrace.SpanKindServer)
	child.SetName("updateItem")
	if got := EdgesOf(parent, "inventory", child, "inventory", "client_checkout"); got != nil {
		t.Fatalf("same service gives edges %+v", got)
	}
	edges := EdgesOf(parent, "inventory", child, "database", "client_checkout")
	if len(edges) != 2 {
		t.Fatalf("%d edges", len(edges))
	}
	want := []string{
		`{"serviceName":"inventory","kind":"SPAN_KIND_CLIENT","destination":{"resource":"updateItem","domain":"database"},"target":null,"traceGroupName":"client_checkout","hashId":"` + edges[0].ID() + `"}`,
		`{"serviceName":"database","kind":"SPAN_KIND_SERVER","destination":null,"target":{"resource":"updateItem","domain":"database"},"traceGroupName":"client_checkout","hashId":"` + edges[1].ID() + `"}`,
	}
	for i := range edges {
		got := string(AppendEdge(nil, &edges[i]))
		if got != want[i] {
			t.Errorf("edge %d:\n%s\nwant\n%s", i, got, want[i])
		}
		if !json.Valid([]byte(got)) {
			t.Errorf("edge %d not JSON", i)
		}
	}
	// Same edge, same id: a repeat is a conflict, not a second document.
	again := EdgesOf(parent, "inventory", child, "database", "client_checkout")
	if again[0].ID() != edges[0].ID() || again[1].ID() != edges[1].ID() {
		t.Fatal("ids are not deterministic")
	}
}
