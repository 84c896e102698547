package opensearchrouted

import (
	"context"
	"testing"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/opensearchrouted/opensearchrouted/receiver/opensearchbackfill"
)

// replayDeadLetters reads index (a dead-letter index) with the backfill
// receiver in once mode, as the README's replay configuration does, and
// returns the records it emits by their attribute seq; it fails unless it
// gets want records.
func replayDeadLetters(t *testing.T, endpoints []string, index string, want int) map[int64]plog.LogRecord {
	t.Helper()
	f := opensearchbackfill.NewFactory()
	cfg := f.CreateDefaultConfig().(*opensearchbackfill.Config)
	cfg.Endpoints = endpoints
	cfg.Indices = []string{index}
	cfg.Signal, cfg.Mode = opensearchbackfill.SignalLogs, opensearchbackfill.ModeOnce
	sink := new(consumertest.LogsSink)
	r, err := f.CreateLogs(context.Background(), receivertest.NewNopSettings(f.Type()), cfg, sink)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := r.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	for deadline := time.Now().Add(2 * time.Minute); sink.LogRecordCount() < want; {
		if time.Now().After(deadline) {
			t.Fatalf("replayed %d records of %d", sink.LogRecordCount(), want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond) // and no more
	out := map[int64]plog.LogRecord{}
	for _, ld := range sink.AllLogs() {
		for i := 0; i < ld.ResourceLogs().Len(); i++ {
			sls := ld.ResourceLogs().At(i).ScopeLogs()
			for j := 0; j < sls.Len(); j++ {
				lrs := sls.At(j).LogRecords()
				for k := 0; k < lrs.Len(); k++ {
					seq, _ := lrs.At(k).Attributes().Get("seq")
					if _, dup := out[seq.Int()]; dup {
						t.Fatalf("record %d replayed twice", seq.Int())
					}
					out[seq.Int()] = lrs.At(k)
				}
			}
		}
	}
	if len(out) != want {
		t.Fatalf("replayed %d distinct records, want %d", len(out), want)
	}
	return out
}

// checkReplay compares the replayed records with the corpus they were
// made from: the same records, body and attributes (invalid UTF-8 and
// non-finite doubles come back normalised, see internal/ss4o).
func checkReplay(t *testing.T, got map[int64]plog.LogRecord, sent plog.Logs) {
	t.Helper()
	for i := 0; i < sent.ResourceLogs().Len(); i++ {
		lrs := sent.ResourceLogs().At(i).ScopeLogs().At(0).LogRecords()
		for k := 0; k < lrs.Len(); k++ {
			lr := lrs.At(k)
			seq, _ := lr.Attributes().Get("seq")
			r, ok := got[seq.Int()]
			if !ok {
				t.Fatalf("record %d not replayed", seq.Int())
			}
			if r.Attributes().Len() != lr.Attributes().Len() || r.Timestamp() != lr.Timestamp() {
				t.Fatalf("record %d: %d attributes at %v, sent %d at %v", seq.Int(), r.Attributes().Len(), r.Timestamp(), lr.Attributes().Len(), lr.Timestamp())
			}
			if b := lr.Body().AsString(); utf8.ValidString(b) && (r.Body().Type() != lr.Body().Type() || r.Body().AsString() != b) {
				t.Fatalf("record %d: body %v %.40q, sent %v %.40q", seq.Int(), r.Body().Type(), r.Body().AsString(), lr.Body().Type(), b)
			}
		}
	}
}
