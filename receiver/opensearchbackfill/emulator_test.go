package opensearchbackfill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.uber.org/goleak"

	"github.com/opensearchrouted/opensearchrouted/testbed/ossim"
)

func newCluster(t testing.TB) *ossim.Cluster {
	return ossim.StartT(t, ossim.Options{Nodes: 3, NoHopLatency: true})
}

// checkAllOnce asserts that every id was delivered, and (when strict) at
// most once.
func checkAllOnce(t *testing.T, got map[string]int, ids []string, strict bool) {
	t.Helper()
	missing, dup := 0, 0
	for _, id := range ids {
		switch n := got[id]; {
		case n == 0:
			missing++
		case n > 1:
			dup++
		}
	}
	if missing > 0 || (strict && dup > 0) || len(got) != len(ids) {
		t.Fatalf("%d ids: %d missing, %d delivered more than once, %d distinct delivered", len(ids), missing, dup, len(got))
	}
}

func TestOnceFourSlicesReadsEverythingAndReportsCompletion(t *testing.T) {
	c := newCluster(t)
	createIndex(t, c.Addr(0), "events", 3, 1)
	ids := seedForeign(t, c.Addr(0), "events", 3000)

	cfg := testConfig(c.Addrs(), "events")
	cfg.Slices = 4
	cfg.PageSize = 100
	sink := newIDSink()
	h := mustStart(t, cfg, sink, nil)
	h.wait(t, 60*time.Second)
	checkAllOnce(t, sink.snapshot(), ids, true)
	if !h.host.completed() {
		t.Errorf("completion not reported: %v", h.host.statuses())
	}
	st := h.r.Stats()
	if st.PITsOpened != 4 || st.HitsEmitted != 3000 || st.OpenPITs() != 0 {
		t.Errorf("stats %+v", st)
	}
	// Standard receiver metrics and the paginator counters.
	if got := h.metric(t, "otelcol_receiver_accepted_log_records", nil); got != 3000 {
		t.Errorf("accepted log records = %d", got)
	}
	if got := h.metric(t, "otelcol.opensearchbackfill.hits", nil); got != 3000 {
		t.Errorf("hits metric = %d", got)
	}
	if got := h.metric(t, "otelcol.opensearchbackfill.pits.opened", nil); got != 4 {
		t.Errorf("pits opened metric = %d", got)
	}
	// A foreign document becomes a record with the source as a map body.
	var once sync.Once
	sink2 := consumertest.LogsSink{}
	cfg2 := testConfig(c.Addrs(), "events")
	cfg2.Query = `{"term":{"n":7}}`
	h2 := mustStart(t, cfg2, &sink2, nil)
	h2.wait(t, 30*time.Second)
	all := sink2.AllLogs()
	if len(all) != 1 || all[0].LogRecordCount() != 1 {
		t.Fatalf("query n=7: %d batches", len(all))
	}
	forEachLog(all[0], func(lr plog.LogRecord) {
		once.Do(func() {})
		body := lr.Body().Map().AsRaw()
		idx, _ := lr.Attributes().Get(AttrIndex)
		id, _ := lr.Attributes().Get(AttrID)
		if body["n"] != int64(7) || idx.Str() != "events" || id.Str() != "doc-00007" {
			t.Errorf("record body %v index %q id %q", body, idx.Str(), id.Str())
		}
	})
}

// A node holding PIT contexts restarts in the middle of a 4-slice read:
// every document is delivered exactly once (dedup on), PITs are recreated
// and the snapshot break is logged.
func TestNodeRestartMidBackfillFourSlices(t *testing.T) {
	c := newCluster(t)
	createIndex(t, c.Addr(0), "events", 3, 1)
	ids := seedForeign(t, c.Addr(0), "events", 6000)

	cfg := testConfig(c.Addrs(), "events")
	cfg.Slices = 4
	cfg.PageSize = 100
	var calls atomic.Int32
	reached, restarted := make(chan struct{}), make(chan struct{})
	sink := newIDSink()
	sink.before = func(context.Context, int, plog.Logs) (bool, error) {
		if calls.Add(1) == 12 {
			close(reached)
			<-restarted // this page is delivered after the restart
		}
		return true, nil
	}
	h := mustStart(t, cfg, sink, nil)
	select {
	case <-reached:
	case <-h.r.done:
		t.Fatal("the backfill ended before the restart")
	}
	// Restart a node that holds contexts of the open PITs.
	if err := c.RestartNode(nodeWithContexts(t, c)); err != nil {
		t.Fatal(err)
	}
	close(restarted)
	h.wait(t, 90*time.Second)
	checkAllOnce(t, sink.snapshot(), ids, true)
	st := h.r.Stats()
	if st.PITsRecreated < 1 || st.ContextLosses < 1 {
		t.Errorf("no recreation: %+v", st)
	}
	if n := h.logs.FilterMessageSnippet("Point in time recreated").Len(); n < 1 {
		t.Errorf("snapshot break not reported in the log")
	}
	if got := h.metric(t, "otelcol.opensearchbackfill.pits.recreated", nil); got < 1 {
		t.Errorf("pits.recreated metric = %d", got)
	}
	if !h.host.completed() {
		t.Errorf("completion not reported")
	}
}

// nodeWithContexts returns the index of a node holding PIT contexts.
func nodeWithContexts(t testing.TB, c *ossim.Cluster) int {
	t.Helper()
	_, b := httpDo(t, "GET", c.Addr(0)+"/_search/point_in_time/_all", "")
	var r struct {
		Pits []struct {
			Node string `json:"node"`
		} `json:"pits"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("list pits: %v %s", err, b)
	}
	counts := map[string]int{}
	for _, p := range r.Pits {
		counts[p.Node]++
	}
	best, bestN := 0, -1
	for i := 0; i < c.Len(); i++ {
		if n := counts[c.Node(i).Name()]; n > bestN {
			best, bestN = i, n
		}
	}
	if bestN <= 0 {
		t.Fatalf("no node holds PIT contexts: %s", b)
	}
	return best
}

// A collector stopped mid-backfill resumes from its checkpoints: nothing is
// missing, and at most one page per slice is delivered twice.
func TestCheckpointResume(t *testing.T) {
	store := newMemStorage()
	checkpointScenario(t, storageID, func(t *testing.T) map[component.ID]component.Component { return hostExts(store) })
	if store.sets == 0 {
		t.Error("no checkpoint written")
	}
}

// checkpointScenario runs checkpointResume with 4 slices on an emulator
// index of 4,000 documents.
func checkpointScenario(t *testing.T, id component.ID, exts func(t *testing.T) map[component.ID]component.Component) {
	c := newCluster(t)
	createIndex(t, c.Addr(0), "events", 3, 1)
	ids := seedForeign(t, c.Addr(0), "events", 4000)
	checkpointResume(t, c.Addrs(), "events", ids, 4, 100, id, exts)
}

// checkpointResume runs a read of index (holding the seedForeign documents
// ids) that stops mid-way (the "crash": a page reaches the pipeline but the
// collector stops before its checkpoint is written), then a second run that
// must resume, then a third that must find every slice done, then a read
// with another query that must ignore the checkpoints. id is the storage
// extension's id; exts gives each run's extensions (a new storage extension
// per run, as after a process restart).
func checkpointResume(t *testing.T, endpoints []string, index string, ids []string, slices, pageSize int,
	id component.ID, exts func(t *testing.T) map[component.ID]component.Component) {
	t.Helper()
	cfg := testConfig(endpoints, index)
	cfg.Slices = slices
	cfg.PageSize = pageSize
	cfg.Storage = &id
	first := newIDSink()
	stopped := make(chan struct{})
	var stopOnce sync.Once
	first.before = func(ctx context.Context, call int, _ plog.Logs) (bool, error) {
		if call <= 10 {
			return true, nil
		}
		stopOnce.Do(func() { close(stopped) })
		<-ctx.Done()
		return true, ctx.Err()
	}
	h1, err := startReceiver(t, cfg, first, exts(t))
	if err != nil {
		t.Fatal(err)
	}
	<-stopped
	time.Sleep(50 * time.Millisecond) // let the other slices block too
	if err := h1.r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	got1 := first.snapshot()
	if len(got1) == 0 || len(got1) >= len(ids) {
		t.Fatalf("first run delivered %d of %d", len(got1), len(ids))
	}

	second := newIDSink()
	h2 := mustStart(t, cfg, second, exts(t))
	h2.wait(t, 60*time.Second)
	got2 := second.snapshot()
	union := map[string]int{}
	again := 0
	for id, n := range got1 {
		union[id] += n
	}
	for id, n := range got2 {
		if got1[id] > 0 {
			again++
		}
		union[id] += n
	}
	for _, id := range ids {
		if union[id] == 0 {
			t.Fatalf("id %s never delivered", id)
		}
	}
	if again > cfg.Slices*cfg.PageSize {
		t.Errorf("%d documents delivered again, more than one page per slice", again)
	}
	if len(got2) >= len(ids) {
		t.Errorf("the second run re-read everything (%d)", len(got2))
	}
	t.Logf("first run %d, second run %d, delivered again %d", len(got1), len(got2), again)
	if !h2.host.completed() {
		t.Error("completion not reported")
	}
	if got := h2.metric(t, "otelcol.opensearchbackfill.checkpoints", map[string]string{"outcome": "ok"}); got < 4 {
		t.Errorf("checkpoints metric = %d", got)
	}
	// Each run stops before the next starts, as a restarted collector does
	// (a file storage keeps its database locked while a client is open).
	if err := h2.r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A third start finds every slice done and reads nothing.
	third := newIDSink()
	h3 := mustStart(t, cfg, third, exts(t))
	h3.wait(t, 10*time.Second)
	if len(third.snapshot()) != 0 || !h3.host.completed() || h3.r.Stats().PITsOpened != 0 {
		t.Errorf("third run read %d, stats %+v", len(third.snapshot()), h3.r.Stats())
	}
	if err := h3.r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	// A checkpoint of another read is ignored.
	cfg4 := *cfg
	cfg4.Query = fmt.Sprintf(`{"range":{"n":{"gte":%d}}}`, len(ids)-10)
	fourth := newIDSink()
	h4 := mustStart(t, &cfg4, fourth, exts(t))
	h4.wait(t, 30*time.Second)
	if len(fourth.snapshot()) != 10 {
		t.Errorf("changed query read %d, want 10", len(fourth.snapshot()))
	}
}

// A pipeline error is retried without skipping; a permanent one is counted.
func TestConsumerErrorsRetriedWithoutSkipping(t *testing.T) {
	c := newCluster(t)
	createIndex(t, c.Addr(0), "events", 2, 0)
	ids := seedForeign(t, c.Addr(0), "events", 500)

	cfg := testConfig(c.Addrs(), "events")
	cfg.PageSize = 50
	sink := newIDSink()
	sink.before = func(_ context.Context, call int, _ plog.Logs) (bool, error) {
		if call%3 != 0 { // two refusals before every acceptance
			return false, errors.New("memory limiter: refused")
		}
		return true, nil
	}
	h := mustStart(t, cfg, sink, nil)
	h.wait(t, 60*time.Second)
	checkAllOnce(t, sink.snapshot(), ids, true)
	if got := h.metric(t, "otelcol.opensearchbackfill.consumer.retries", nil); got != 20 {
		t.Errorf("consumer retries = %d, want 20", got)
	}
	if got := h.metric(t, "otelcol_receiver_refused_log_records", nil); got != 1000 {
		t.Errorf("refused log records = %d, want 1000", got)
	}

	perm := newIDSink()
	perm.before = func(_ context.Context, call int, _ plog.Logs) (bool, error) {
		if call == 1 {
			return false, consumererror.NewPermanent(errors.New("bad data"))
		}
		return true, nil
	}
	h2 := mustStart(t, cfg, perm, nil)
	h2.wait(t, 30*time.Second)
	if n := len(perm.snapshot()); n != 450 {
		t.Errorf("delivered %d after a permanent refusal, want 450", n)
	}
	if got := h2.metric(t, "otelcol.opensearchbackfill.documents.skipped", map[string]string{"reason": "permanent"}); got != 50 {
		t.Errorf("skipped = %d", got)
	}
}

// Retries that run out stop the slice and report a permanent error.
func TestConsumerRetriesExhaustedFailSlice(t *testing.T) {
	c := newCluster(t)
	createIndex(t, c.Addr(0), "events", 1, 0)
	seedForeign(t, c.Addr(0), "events", 100)
	cfg := testConfig(c.Addrs(), "events")
	cfg.RetryOnFailure.MaxElapsedTime = 100 * time.Millisecond
	sink := newIDSink()
	sink.before = func(context.Context, int, plog.Logs) (bool, error) { return false, errors.New("down") }
	h := mustStart(t, cfg, sink, nil)
	h.wait(t, 30*time.Second)
	if h.host.completed() {
		t.Error("completion reported after a failure")
	}
	found := false
	for _, ev := range h.host.statuses() {
		if ev.Err() != nil && strings.Contains(ev.Err().Error(), "refused a page of 100 documents") {
			found = true
		}
	}
	if !found {
		t.Errorf("no permanent error status: %v", h.host.statuses())
	}
}

func TestUnknownIndexFailsAtStart(t *testing.T) {
	c := newCluster(t)
	createIndex(t, c.Addr(0), "events", 1, 0)
	cfg := testConfig(c.Addrs(), "events", "no-such-index")
	cfg.Slices = 2
	ignore := goleak.IgnoreCurrent()
	_, err := startReceiver(t, cfg, newIDSink(), nil)
	if err == nil || !strings.Contains(err.Error(), "no-such-index") || !strings.Contains(err.Error(), "index_not_found_exception") {
		t.Fatalf("err = %v", err)
	}
	// A failed Start leaves nothing running (discovery, PITs); idle
	// keep-alive connections of the collector's HTTP client may remain
	// until its transport closes them (confighttp wraps the transport).
	goleak.VerifyNone(t, ignore,
		goleak.IgnoreTopFunction("net/http.(*persistConn).readLoop"),
		goleak.IgnoreTopFunction("net/http.(*persistConn).writeLoop"),
		goleak.IgnoreTopFunction("internal/poll.runtime_pollWait"))
	_, b := httpDo(t, "GET", c.Addr(0)+"/_search/point_in_time/_all", "")
	if strings.Contains(string(b), `"index"`) {
		t.Errorf("PITs left open: %s", b)
	}
}

func TestStorageExtensionMissing(t *testing.T) {
	c := newCluster(t)
	createIndex(t, c.Addr(0), "events", 1, 0)
	cfg := testConfig(c.Addrs(), "events")
	cfg.Storage = &storageID
	_, err := startReceiver(t, cfg, newIDSink(), nil)
	if err == nil || !strings.Contains(err.Error(), `storage: extension "memstorage" not found`) {
		t.Fatalf("err = %v", err)
	}
}

// Follow mode picks up documents written after the first read.
func TestFollowModePicksUpNewDocuments(t *testing.T) {
	c := newCluster(t)
	createIndex(t, c.Addr(0), "events", 2, 0)
	ids := seedForeign(t, c.Addr(0), "events", 200)
	cfg := testConfig(c.Addrs(), "events")
	cfg.Mode = ModeFollow
	cfg.PollInterval = 50 * time.Millisecond
	sink := newIDSink()
	mustStart(t, cfg, sink, nil)
	waitFor(t, 20*time.Second, func() bool { return len(sink.snapshot()) == 200 })
	later := []string{"later-1", "later-2"}
	bulkDocs(t, c.Addr(0), "events", later, func(i int) string {
		return `{"@timestamp":"2026-06-01T00:00:00Z","n":` + string(rune('0'+i)) + `}`
	})
	waitFor(t, 20*time.Second, func() bool { return len(sink.snapshot()) == 202 })
	checkAllOnce(t, sink.snapshot(), append(ids, later...), true)
}

func waitFor(t testing.TB, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("condition not met in %v", d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// start_time (inclusive) and end_time (exclusive) combine with query.
func TestTimeRangeAndQuery(t *testing.T) {
	c := newCluster(t)
	createIndex(t, c.Addr(0), "events", 2, 0)
	seedForeign(t, c.Addr(0), "events", 1000) // @timestamp = t0 + (i % 500) ms
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	cfg := testConfig(c.Addrs(), "events")
	cfg.StartTime = t0.Add(100 * time.Millisecond)
	cfg.EndTime = t0.Add(200 * time.Millisecond)
	cfg.Query = `{"range":{"n":{"lt":500}}}`
	sink := newIDSink()
	h := mustStart(t, cfg, sink, nil)
	h.wait(t, 30*time.Second)
	var want []string
	for i := 100; i < 200; i++ {
		want = append(want, fmt.Sprintf("doc-%05d", i))
	}
	checkAllOnce(t, sink.snapshot(), want, true)
}
