package opensearchbackfill

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/pdata/plog"
)

// statusSeq is the sequence of component statuses reported (consecutive
// repeats folded).
func statusSeq(h *harness) []componentstatus.Status {
	var out []componentstatus.Status
	for _, ev := range h.host.statuses() {
		if len(out) == 0 || out[len(out)-1] != ev.Status() {
			out = append(out, ev.Status())
		}
	}
	return out
}

// permanentErrors are the messages of the permanent errors reported.
func (h *testHost) permanentErrors() []string {
	var out []string
	for _, ev := range h.statuses() {
		if ev.Status() == componentstatus.StatusPermanentError {
			out = append(out, ev.Err().Error())
		}
	}
	return out
}

// stampedIDs writes n documents named prefix-i with @timestamp now.
func stampedIDs(t *testing.T, base, index, prefix string, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%s-%04d", prefix, i)
	}
	now := time.Now()
	bulkDocs(t, base, index, ids, func(i int) string { return tsDoc(now.Add(time.Duration(i) * time.Microsecond)) })
	return ids
}

// Follow mode through a 30 s outage of every node: the slices retry
// without end, report a recoverable error, keep their checkpoints, and
// read on when the cluster is back: every document written before and
// after is read, none twice.
func TestFollowThroughFullOutage(t *testing.T) {
	c := newCluster(t)
	createIndex(t, c.Addr(0), "events", 3, 1)
	before := stampedIDs(t, c.Addr(0), "events", "before", 500)
	cfg := followConfig(c.Addrs(), "events")
	cfg.Slices = 2
	cfg.PageSize = 100
	cfg.ReadRetry.InitialInterval = 50 * time.Millisecond
	cfg.ReadRetry.MaxInterval = time.Second
	sink := newIDSink()
	h := mustStart(t, cfg, sink, nil)
	waitFor(t, 20*time.Second, func() bool { return len(sink.snapshot()) == 500 })
	for i := range c.Len() {
		if err := c.SetUnreachable(i, true); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(30 * time.Second)
	if r := h.r.readRetries.Load(); r < 2 {
		t.Fatalf("%d read retries during the outage", r)
	}
	if n := h.logs.FilterMessageSnippet("Backfill slice failed").Len(); n != 0 {
		t.Fatalf("%d slices failed during the outage", n)
	}
	for i := range c.Len() {
		if err := c.SetUnreachable(i, false); err != nil {
			t.Fatal(err)
		}
	}
	after := stampedIDs(t, c.Addr(0), "events", "after", 500)
	waitFor(t, 30*time.Second, func() bool { return len(sink.snapshot()) == 1000 })
	settle(t, h)
	checkAllOnce(t, sink.snapshot(), append(before, after...), true)
	seq := statusSeq(h)
	rec := -1
	for i, s := range seq {
		if s == componentstatus.StatusRecoverableError {
			rec = i
		}
		if s == componentstatus.StatusPermanentError {
			t.Fatalf("permanent error reported: %v", seq)
		}
	}
	if rec < 0 || rec == len(seq)-1 || seq[len(seq)-1] != componentstatus.StatusOK {
		t.Fatalf("statuses %v: want a recoverable error, then OK", seq)
	}
}

// Once mode retries for read_retry.max_elapsed_time, then fails with a
// message saying what was read.
func TestOnceOutageFailsAfterMaxElapsed(t *testing.T) {
	c := newCluster(t)
	createIndex(t, c.Addr(0), "events", 1, 0)
	stampedIDs(t, c.Addr(0), "events", "d", 300)
	cfg := testConfig(c.Addrs(), "events")
	cfg.PageSize = 100
	cfg.ReadRetry.InitialInterval = 50 * time.Millisecond
	cfg.ReadRetry.MaxInterval = 200 * time.Millisecond
	cfg.ReadRetry.MaxElapsedTime = 2 * time.Second
	var pages int
	sink := newIDSink()
	sink.before = func(_ context.Context, call int, _ plog.Logs) (bool, error) {
		pages = call
		if call == 1 {
			for i := range c.Len() {
				_ = c.SetUnreachable(i, true)
			}
		}
		return true, nil
	}
	h := mustStart(t, cfg, sink, nil)
	h.wait(t, 30*time.Second)
	if h.host.completed() {
		t.Fatal("completed")
	}
	perm := h.host.permanentErrors()
	if len(perm) != 1 || !strings.Contains(perm[0], "reads kept failing for") || !strings.Contains(perm[0], "read_retry.max_elapsed_time 2s") ||
		!strings.Contains(perm[0], "this slice delivered 100 documents") {
		t.Fatalf("permanent errors %q (pages %d)", perm, pages)
	}
}
