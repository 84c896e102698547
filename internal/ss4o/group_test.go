package ss4o

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// TestLogsDecoderRegroups: a plog.Logs encoded record by record (the
// exporter's view) and decoded document by document (the receiver's view)
// comes back as the same plog.Logs, grouping included.
func TestLogsDecoderRegroups(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	in := plog.NewLogs()
	for r := range 3 {
		rl := in.ResourceLogs().AppendEmpty()
		e := &entropy{rng: rng}
		e.fillMap(rl.Resource().Attributes(), 1)
		rl.Resource().Attributes().PutInt("resource.index", int64(r))
		rl.SetSchemaUrl("https://example.com/schema")
		for s := range 2 {
			sl := rl.ScopeLogs().AppendEmpty()
			sl.Scope().SetName("scope-" + string(rune('a'+s)))
			for range 1 + rng.IntN(4) {
				e.log(sl.LogRecords().AppendEmpty())
			}
		}
	}
	var docs [][]byte
	var enc Encoder
	for _, rl := range in.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			enc.ResetLogs(rl, sl)
			for _, lr := range sl.LogRecords().All() {
				docs = append(docs, enc.AppendLog(nil, lr))
			}
		}
	}
	var d LogsDecoder
	// Interleave: all records of a scope need not be adjacent.
	order := rng.Perm(len(docs))
	for _, i := range order {
		if err := d.Add(docs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Add([]byte(`{"foreign":true}`)); !errors.Is(err, ErrForeign) {
		t.Fatalf("foreign document: %v", err)
	}
	shuffled := d.Logs()
	if shuffled.ResourceLogs().Len() != 3 || shuffled.LogRecordCount() != in.LogRecordCount() {
		t.Fatalf("%d resources, %d records; want 3, %d", shuffled.ResourceLogs().Len(), shuffled.LogRecordCount(), in.LogRecordCount())
	}
	for _, rl := range shuffled.ResourceLogs().All() {
		if rl.ScopeLogs().Len() != 2 {
			t.Fatalf("%d scopes under one resource, want 2", rl.ScopeLogs().Len())
		}
	}
	for _, doc := range docs {
		if err := d.Add(doc); err != nil {
			t.Fatal(err)
		}
	}
	out := d.Logs()
	for _, rl := range in.ResourceLogs().All() {
		normalizeMap(rl.Resource().Attributes())
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				normalizeLog(lr)
			}
		}
	}
	var m plog.JSONMarshaler
	want, _ := m.MarshalLogs(in)
	got, _ := m.MarshalLogs(out)
	if !bytes.Equal(want, got) {
		t.Fatalf("regrouped logs differ\nwant %s\ngot  %s", want, got)
	}
	if d.Logs().LogRecordCount() != 0 {
		t.Fatal("Logs did not start anew")
	}
}

func TestTracesDecoderRegroups(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	in := ptrace.NewTraces()
	for r := range 2 {
		rs := in.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutInt("resource.index", int64(r))
		for s := range 3 {
			ss := rs.ScopeSpans().AppendEmpty()
			ss.Scope().SetName("scope-" + string(rune('a'+s)))
			ss.SetSchemaUrl("https://example.com/" + string(rune('a'+s)))
			for range 1 + rng.IntN(3) {
				(&entropy{rng: rng}).span(ss.Spans().AppendEmpty())
			}
		}
	}
	var d TracesDecoder
	var enc Encoder
	for _, rs := range in.ResourceSpans().All() {
		for _, ss := range rs.ScopeSpans().All() {
			enc.ResetTraces(rs, ss)
			for _, sp := range ss.Spans().All() {
				if err := d.Add(enc.AppendSpan(nil, sp)); err != nil {
					t.Fatal(err)
				}
			}
			normalizeOrigin(rs.Resource(), ss.Scope())
			for _, sp := range ss.Spans().All() {
				normalizeSpan(sp)
			}
		}
	}
	var m ptrace.JSONMarshaler
	want, _ := m.MarshalTraces(in)
	got, _ := m.MarshalTraces(d.Traces())
	if !bytes.Equal(want, got) {
		t.Fatalf("regrouped traces differ\nwant %s\ngot  %s", want, got)
	}
}
