package otelv1

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// The fix-up's partial document carries the group fields exactly as
// AppendSpan writes them into a span encoded with its group.
func TestAppendGroupUpdateMatchesAppendSpan(t *testing.T) {
	root := ptrace.NewSpan()
	root.SetName("GET /checkout \"x\"")
	start := time.Date(2026, 12, 2, 1, 2, 3, 456_789_000, time.UTC)
	root.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
	root.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(1500 * time.Millisecond)))
	root.Status().SetCode(ptrace.StatusCodeError)
	g := GroupOf(root)

	child := ptrace.NewSpan()
	child.SetTraceID(pcommon.TraceID{1})
	child.SetSpanID(pcommon.SpanID{2})
	child.SetParentSpanID(pcommon.SpanID{3})
	var e Encoder
	var span map[string]any
	if err := json.Unmarshal(e.AppendSpan(nil, child, &g), &span); err != nil {
		t.Fatal(err)
	}
	var upd struct {
		Doc map[string]any `json:"doc"`
	}
	raw := AppendGroupUpdate(nil, &g)
	if err := json.Unmarshal(raw, &upd); err != nil {
		t.Fatalf("%s: %v", raw, err)
	}
	want := map[string]any{"traceGroup": span["traceGroup"], "traceGroupFields": span["traceGroupFields"]}
	if span["traceGroup"] == nil || !reflect.DeepEqual(upd.Doc, want) {
		t.Fatalf("update doc %v\nspan's fields %v", upd.Doc, want)
	}
}
