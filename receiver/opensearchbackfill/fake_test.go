package opensearchbackfill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/goleak"

	"github.com/opensearchrouted/opensearchrouted/internal/ss4o"
)

// fakeServer answers PIT create, search and delete with scripted pages.
type fakeServer struct {
	*httptest.Server
	mu       sync.Mutex
	pages    []string // search answers, in order; the last repeats
	searches []string // search bodies
	deletes  int
}

func newFakeServer(t *testing.T, pages ...string) *fakeServer {
	f := &fakeServer{pages: pages}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		f.mu.Lock()
		defer f.mu.Unlock()
		switch {
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/_search/point_in_time"):
			_, _ = io.WriteString(w, `{"pit_id":"pit-1","_shards":{"total":2,"successful":2,"skipped":0,"failed":0},"creation_time":1}`)
		case r.Method == http.MethodPost && r.URL.Path == "/_search":
			f.searches = append(f.searches, string(body))
			i := min(len(f.searches), len(f.pages)) - 1
			_, _ = io.WriteString(w, f.pages[i])
		case r.Method == http.MethodDelete && r.URL.Path == "/_search/point_in_time":
			f.deletes++
			_, _ = io.WriteString(w, `{"pits":[{"successful":true,"pit_id":"pit-1"}]}`)
		default:
			w.WriteHeader(404)
			_, _ = io.WriteString(w, `{"error":{"type":"not_found","reason":"`+r.Method+` `+r.URL.Path+`"},"status":404}`)
		}
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) searchCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.searches)
}

// hitJSON is one hit with the given _source (raw JSON, or "" for none) and
// the sort values of the default sort (@timestamp, _index, _id).
func hitJSON(id, source string, sort int) string {
	h := `{"_index":"events","_id":"` + id + `","_version":1,"_seq_no":1,"_primary_term":1,"sort":[` + itoa(sort) + `,"events","` + id + `"]`
	if source != "" {
		h += `,"_source":` + source
	}
	return h + "}"
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func page(shards string, hits ...string) string {
	return `{"took":1,"timed_out":false,"pit_id":"pit-1","_shards":` + shards + `,"hits":{"hits":[` + strings.Join(hits, ",") + `]}}`
}

const okShards = `{"total":2,"successful":2,"skipped":0,"failed":0}`

const failedShards = `{"total":2,"successful":1,"skipped":0,"failed":1,"failures":[{"shard":1,"index":"events","node":"n2",` +
	`"reason":{"type":"circuit_breaking_exception","reason":"[parent] Data too large"}}]}`

// startOnFake starts a once read of events, pages of 2, on a fake server
// answering pages.
func startOnFake(t *testing.T, pages ...string) (*fakeServer, *harness, *idSink) {
	t.Helper()
	f := newFakeServer(t, pages...)
	cfg := testConfig([]string{f.URL}, "events")
	cfg.Discovery.Enabled = false
	cfg.PageSize = 2
	sink := newIDSink()
	return f, mustStart(t, cfg, sink, nil), sink
}

// A non-context shard failure is an error of that shard: the search is
// asked for again (its partial page is not delivered, the cursor does not
// move past the failed shard's range), counted by reason, and the read
// goes on once the shard answers.
func TestShardFailureRetriedThenRead(t *testing.T) {
	f, h, sink := startOnFake(t,
		page(failedShards, hitJSON("a", `{"n":1}`, 1), hitJSON("c", `{"n":3}`, 3)), // b is on the failed shard
		page(okShards, hitJSON("a", `{"n":1}`, 1), hitJSON("b", `{"n":2}`, 2)),
		page(okShards, hitJSON("c", `{"n":3}`, 3)),
	)
	h.wait(t, 10*time.Second)
	checkAllOnce(t, sink.snapshot(), []string{"a", "b", "c"}, true)
	f.mu.Lock()
	searches := append([]string(nil), f.searches...)
	f.mu.Unlock()
	if len(searches) != 3 || strings.Contains(searches[1], "search_after") || !strings.Contains(searches[2], `"search_after":[2,"events","b"]`) {
		t.Errorf("searches %q: the failed page was not asked for again from the same cursor", searches)
	}
	st := h.r.Stats()
	if st.ShardFailures["circuit_breaking_exception"] != 1 || st.Retries != 1 {
		t.Errorf("stats %+v", st)
	}
	if got := h.metric(t, "otelcol.opensearchbackfill.shard_failures", map[string]string{"reason": "circuit_breaking_exception"}); got != 1 {
		t.Errorf("shard_failures metric = %d", got)
	}
	if !h.host.completed() {
		t.Error("completion not reported")
	}
}

// A shard that keeps failing in once mode ends the read with a permanent
// error naming index, shard and reason, and what was read; never
// "completed" with a hole.
func TestShardFailurePersistsOnceFails(t *testing.T) {
	f, h, sink := startOnFake(t,
		page(okShards, hitJSON("a", `{"n":1}`, 1), hitJSON("b", `{"n":2}`, 2)),
		page(failedShards, hitJSON("c", `{"n":3}`, 3)),
	)
	h.wait(t, 30*time.Second)
	if h.host.completed() {
		t.Fatal("completion reported with a hole")
	}
	checkAllOnce(t, sink.snapshot(), []string{"a", "b"}, true)
	perm := h.host.permanentErrors()
	if len(perm) != 1 || !strings.Contains(perm[0], "[events][1] on node n2: circuit_breaking_exception ([parent] Data too large)") ||
		!strings.Contains(perm[0], "delivered 2 documents") {
		t.Fatalf("permanent errors %q", perm)
	}
	if n := f.searchCount(); n != 5 { // the first page, then 1 + 3 retries of the second
		t.Errorf("%d searches, want 5", n)
	}
}

// Issue 6 proof 5: documents of unexpected shapes never crash the receiver.
// With signal logs each becomes a record; with signal traces the ones that
// are not spans are skipped and counted.
func TestUnexpectedDocumentShapes(t *testing.T) {
	span := ptrace.NewSpan()
	span.SetName("real-span")
	span.SetTraceID([16]byte{1})
	span.SetSpanID([8]byte{2})
	span.SetStartTimestamp(pcommon.Timestamp(1e18))
	spanDoc := string(ss4o.AppendSpan(nil, pcommon.NewResource(), pcommon.NewInstrumentationScope(), span))
	deep := strings.Repeat(`{"a":`, 200) + "1" + strings.Repeat("}", 200)
	shapes := []string{
		`[1,2,3]`, `"just a string"`, `42`, `null`, ``, deep,
		`{"@timestamp":12345,"traceId":7}`, // SS4O names, wrong types
		`{"@timestamp":"2026-01-01T00:00:00Z","body":"ok","attributes":{"k":"v"},"spanId":"zz"}`,
		`{"@timestamp":"not a date","severity":{"number":"high"}}`,
		`{"dup":1,"dup":2}`,
		spanDoc,
	}
	hits := make([]string, len(shapes))
	for i, s := range shapes {
		hits[i] = hitJSON("d"+itoa(i), s, i)
	}
	f := newFakeServer(t, page(okShards, hits...))

	cfg := testConfig([]string{f.URL}, "events")
	cfg.Discovery.Enabled = false
	cfg.PageSize = 100
	logs := new(consumertest.LogsSink)
	h := mustStart(t, cfg, logs, nil)
	h.wait(t, 10*time.Second)
	if n := logs.LogRecordCount(); n != len(shapes) {
		t.Fatalf("logs: %d records for %d documents", n, len(shapes))
	}
	byID := map[string]plog.LogRecord{}
	for _, ld := range logs.AllLogs() {
		forEachLog(ld, func(lr plog.LogRecord) {
			id, _ := lr.Attributes().Get(AttrID)
			byID[id.Str()] = lr
		})
	}
	if b := byID["d0"].Body(); b.Type() != pcommon.ValueTypeSlice || b.Slice().Len() != 3 {
		t.Errorf("array body %v", b.AsRaw())
	}
	if b := byID["d4"].Body(); b.Type() != pcommon.ValueTypeEmpty {
		t.Errorf("no _source: body %v", b.AsRaw())
	}
	if b := byID["d9"].Body(); b.Map().Len() != 1 {
		t.Errorf("duplicate keys: %v", b.AsRaw())
	}
	if b := byID["d6"].Body(); b.Type() != pcommon.ValueTypeMap || b.Map().Len() != 2 {
		t.Errorf("wrong-typed SS4O fields: %v", b.AsRaw())
	}

	f2 := newFakeServer(t, page(okShards, hits...))
	tcfg := testConfig([]string{f2.URL}, "events")
	tcfg.Discovery.Enabled = false
	tcfg.Signal = SignalTraces
	// The pipeline refuses the page twice: the documents that are not
	// spans are still counted and logged once.
	traces := &refuseTraces{refuse: 2}
	th := mustStart(t, tcfg, traces, nil)
	th.wait(t, 10*time.Second)
	if traces.SpanCount() != 1 || traces.calls.Load() != 3 {
		t.Fatalf("traces: %d spans in %d calls", traces.SpanCount(), traces.calls.Load())
	}
	if got := th.metric(t, "otelcol.opensearchbackfill.documents.skipped", map[string]string{"reason": "foreign"}); got != int64(len(shapes)-1) {
		t.Errorf("skipped = %d, want %d", got, len(shapes)-1)
	}
	if th.logs.FilterMessageSnippet("are not spans").Len() != 1 {
		t.Error("skipped documents not logged")
	}
	// The log never carries document contents above debug level.
	for _, e := range append(h.logs.All(), th.logs.All()...) {
		if e.Level > -1 && strings.Contains(e.Message+stringify(e.ContextMap()), "just a string") {
			t.Errorf("document content logged: %v", e)
		}
	}
}

func stringify(m map[string]any) string { b, _ := json.Marshal(m); return string(b) }

// A cursor (sort values) past 2^53 and strings travel verbatim into the
// checkpoint and back into search_after.
func TestCheckpointKeepsCursorVerbatim(t *testing.T) {
	big := `{"_index":"events","_id":"x","sort":[9223372036854775807,"events","x"],"_source":{"n":1}}`
	f := newFakeServer(t, page(okShards, big))
	store := newMemStorage()
	cfg := testConfig([]string{f.URL}, "events")
	cfg.Discovery.Enabled = false
	cfg.Storage = &storageID
	cfg.Mode = ModeFollow
	cfg.PollInterval = 20 * time.Millisecond
	sink := newIDSink()
	mustStart(t, cfg, sink, hostExts(store))
	waitFor(t, 10*time.Second, func() bool { return f.searchCount() >= 2 })
	f.mu.Lock()
	second := f.searches[1]
	f.mu.Unlock()
	if !strings.Contains(second, `"search_after":[9223372036854775807,"events","x"]`) {
		t.Errorf("follow-up search %s", second)
	}
	store.mu.Lock()
	cp := string(store.data["slice_0_of_1"])
	store.mu.Unlock()
	if !strings.Contains(cp, `"cursor":[9223372036854775807,"events","x"]`) {
		t.Errorf("checkpoint %s", cp)
	}
}

func TestLimiterSpacesDeliveries(t *testing.T) {
	now := time.Unix(0, 0)
	var slept []time.Duration
	l := &limiter{rate: 1000, now: func() time.Time { return now }}
	sleep := func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }
	for range 4 {
		if err := l.wait(context.Background(), 500, sleep); err != nil {
			t.Fatal(err)
		}
	}
	want := []time.Duration{0, 500 * time.Millisecond, time.Second, 1500 * time.Millisecond}
	for i := range want {
		if slept[i] != want[i] {
			t.Fatalf("waits %v, want %v", slept, want)
		}
	}
	// Time passing refills: after 5 s idle, the next page goes at once.
	now = now.Add(5 * time.Second)
	slept = nil
	_ = l.wait(context.Background(), 500, sleep)
	if slept[0] != 0 {
		t.Errorf("after idle: %v", slept)
	}
	var nilLimiter *limiter
	if err := nilLimiter.wait(context.Background(), 1e9, sleep); err != nil {
		t.Error(err)
	}
}

func TestBackoffBounds(t *testing.T) {
	cfg := createDefaultConfig().RetryOnFailure
	cfg.InitialInterval, cfg.MaxInterval, cfg.MaxElapsedTime = 100*time.Millisecond, 400*time.Millisecond, 2*time.Second
	cfg.RandomizationFactor = 0
	b := newBackoff(cfg)
	var got []time.Duration
	for {
		d, ok := b.next()
		if !ok {
			break
		}
		got = append(got, d)
	}
	want := []float64{100, 150, 225, 337.5, 400, 400} // ms, multiplier 1.5, cap 400, total ≤ 2s
	if len(got) != len(want) {
		t.Fatalf("waits %v", got)
	}
	for i := range want {
		if got[i] != time.Duration(want[i]*float64(time.Millisecond)) {
			t.Fatalf("waits %v", got)
		}
	}
}

// max_documents_per_second spaces the pages handed to the pipeline: 500
// documents at 1,000/s in pages of 100 take at least 0.4 s (the first page
// goes at once). A lower bound only: a loaded machine can only be slower.
func TestRateLimitApplied(t *testing.T) {
	hits := make([]string, 500)
	for i := range hits {
		hits[i] = hitJSON(fmt.Sprintf("d%03d", i), `{"n":1}`, i)
	}
	var pages []string
	for from := 0; from < len(hits); from += 100 {
		pages = append(pages, page(okShards, hits[from:from+100]...))
	}
	pages = append(pages, page(okShards))
	f := newFakeServer(t, pages...)
	cfg := testConfig([]string{f.URL}, "events")
	cfg.Discovery.Enabled = false
	cfg.PageSize = 100
	cfg.MaxDocumentsPerSecond = 1000
	sink := newIDSink()
	start := time.Now()
	h := mustStart(t, cfg, sink, nil)
	h.wait(t, 30*time.Second)
	if el := time.Since(start); el < 400*time.Millisecond {
		t.Errorf("500 documents at 1000/s took %v", el)
	}
	if len(sink.snapshot()) != 500 {
		t.Errorf("delivered %d", len(sink.snapshot()))
	}
}

// Shutdown mid-read stops every goroutine the receiver started.
func TestShutdownLeavesNoGoroutines(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	hits := make([]string, 50)
	for i := range hits {
		hits[i] = hitJSON(fmt.Sprintf("d%03d", i), `{"n":1}`, i)
	}
	f := newFakeServer(t, page(okShards, hits...))
	cfg := testConfig([]string{f.URL}, "events")
	cfg.PageSize = 50
	cfg.Slices = 3
	cfg.Mode = ModeFollow
	cfg.PollInterval = 10 * time.Millisecond
	sink := newIDSink()
	h, err := startReceiver(t, cfg, sink, nil)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() bool { return f.searchCount() > 6 })
	if err := h.r.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	f.Close()
	http.DefaultTransport.(*http.Transport).CloseIdleConnections()
}

// refuseTraces refuses its first refuse calls (retryable), then keeps what
// it is given.
type refuseTraces struct {
	consumertest.TracesSink
	refuse int64
	calls  atomic.Int64
}

func (r *refuseTraces) ConsumeTraces(ctx context.Context, td ptrace.Traces) error {
	if r.calls.Add(1) <= r.refuse {
		return errors.New("busy")
	}
	return r.TracesSink.ConsumeTraces(ctx, td)
}
