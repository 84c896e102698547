package pit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// sleeper records the waits asked for and returns at once.
type sleeper struct {
	mu    sync.Mutex
	waits []time.Duration
}

func (s *sleeper) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeper) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.waits)
}

// opts returns Options for fc with instant, recorded backoff.
func opts(fc *fakeCluster, s *sleeper) Options {
	return Options{
		Endpoints: fc.urls(),
		Indices:   []string{"logs"},
		PageSize:  100,
		Sleep:     s.sleep,
		Backoff:   func(n int) time.Duration { return time.Duration(n+1) * time.Millisecond },
	}
}

func mustOpen(t *testing.T, o Options) *Paginator {
	t.Helper()
	p, err := Open(context.Background(), o)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return p
}

type hitResult struct {
	hits []Hit
	errs []error // non-nil errors, in order
}

func readHits(t *testing.T, p *Paginator, after func(n int)) hitResult {
	t.Helper()
	var r hitResult
	for h, err := range p.Hits(context.Background()) {
		if err != nil {
			r.errs = append(r.errs, err)
			if IsFatal(err) {
				return r
			}
		}
		if h.ID != "" {
			r.hits = append(r.hits, h)
		}
		if after != nil {
			after(len(r.hits))
		}
	}
	return r
}

func ids(hs []Hit) []string {
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.ID
	}
	return out
}

func wantIDs(n int) []string {
	out := make([]string, n)
	for i := range n {
		out[i] = fmt.Sprintf("doc-%05d", i)
	}
	return out
}

// checkComplete asserts that got holds every id 0..n-1 exactly once.
func checkComplete(t *testing.T, got []string, n int) {
	t.Helper()
	seen := map[string]int{}
	for _, id := range got {
		seen[id]++
	}
	var missing, dup []string
	for _, id := range wantIDs(n) {
		switch seen[id] {
		case 0:
			missing = append(missing, id)
		case 1:
		default:
			dup = append(dup, id)
		}
	}
	if len(missing) > 0 || len(dup) > 0 || len(got) != n {
		t.Fatalf("got %d hits for %d docs: %d missing (first %v), %d duplicated (first %v)",
			len(got), n, len(missing), first(missing), len(dup), first(dup))
	}
}

func first(s []string) []string { return s[:min(len(s), 3)] }

func TestReadsEverythingInOrderAndClosesPIT(t *testing.T) {
	fc := newFakeCluster(t, 3, 5)
	fc.fill("logs", 1234)
	var s sleeper
	p := mustOpen(t, opts(fc, &s))
	r := readHits(t, p, nil)
	if len(r.errs) > 0 {
		t.Fatalf("errors: %v", r.errs)
	}
	if !slices.Equal(ids(r.hits), wantIDs(1234)) {
		t.Fatalf("hits not complete and in order: got %d", len(r.hits))
	}
	for i, h := range r.hits {
		if h.Index != "logs" || h.Version != 1 || h.SeqNo != 0 || h.PrimaryTerm != 1 || len(h.Sort) != 3 {
			t.Fatalf("hit %d decoded wrong: %+v", i, h)
		}
		if string(h.Source) != fmt.Sprintf(`{"n":%q}`, h.ID) {
			t.Fatalf("hit %d source %s", i, h.Source)
		}
	}
	// 13 pages: the 13th has 34 < 100 hits, so no empty 14th search.
	if fc.searches != 13 {
		t.Errorf("searches = %d, want 13", fc.searches)
	}
	if c := p.Cursor(); len(c) != 3 || string(c[1]) != `"logs"` || string(c[2]) != `"doc-01233"` {
		t.Errorf("cursor after the end = %s", c)
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	st := p.Stats()
	if st.PITsOpened != 1 || st.PITsClosed != 1 || st.OpenPITs() != 0 || st.HitsEmitted != 1234 || st.PagesEmitted != 13 ||
		st.PITsRecreated != 0 || st.Retries != 0 || st.Probes != 0 {
		t.Errorf("stats = %+v", st)
	}
	if fc.openPITs() != 0 || len(fc.deleted) != 1 {
		t.Errorf("PIT not deleted: open %d, deleted %v", fc.openPITs(), fc.deleted)
	}
	if s.count() != 0 {
		t.Errorf("slept %d times on a clean read", s.count())
	}
	for _, err := range p.Hits(context.Background()) {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("iterating after Close: %v, want ErrClosed", err)
		}
	}
}

func TestRequestShape(t *testing.T) {
	fc := newFakeCluster(t, 1, 1)
	fc.fill("logs", 5)
	var s sleeper
	o := opts(fc, &s)
	o.Indices = []string{"logs", "logs-*"}
	o.KeepAlive = 90 * time.Second
	o.PageSize = 2
	o.Slice = &Slice{ID: 1, Max: 2}
	o.Source = json.RawMessage(`["n"]`)
	o.Query = json.RawMessage(`{ "term": {"x": 1} }`)
	// A long sort value past 2^53 must travel verbatim.
	o.SearchAfter = []json.RawMessage{json.RawMessage(`-9223372036854775808`), json.RawMessage(`""`), json.RawMessage(`""`)}
	p := mustOpen(t, o)
	readHits(t, p, nil)
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if fc.paths[0] != "POST /logs,logs-%2A/_search/point_in_time?keep_alive=90000ms" &&
		fc.paths[0] != "POST /logs,logs-*/_search/point_in_time?keep_alive=90000ms" {
		t.Errorf("open path = %s", fc.paths[0])
	}
	if fc.paths[1] != "POST /_search" {
		t.Errorf("search path = %s", fc.paths[1])
	}
	b := fc.bodies[1]
	pitObj := b["pit"].(map[string]any)
	if pitObj["keep_alive"] != "90000ms" || !strings.HasPrefix(pitObj["id"].(string), "pit-1") {
		t.Errorf("pit = %v", pitObj)
	}
	if b["size"] != 2.0 || b["version"] != true || b["seq_no_primary_term"] != true || b["track_total_hits"] != false {
		t.Errorf("body = %v", b)
	}
	if fmt.Sprint(b["slice"]) != "map[id:1 max:2]" || fmt.Sprint(b["_source"]) != "[n]" || fmt.Sprint(b["query"]) != "map[term:map[x:1]]" {
		t.Errorf("body = %v", b)
	}
	if fmt.Sprint(b["sort"]) != "[map[@timestamp:map[order:asc unmapped_type:date]] map[_index:map[order:asc unmapped_type:keyword]] map[_id:map[order:asc unmapped_type:keyword]]]" {
		t.Errorf("sort = %v", b["sort"])
	}
	// The exact bytes of the cursor: re-encode what our client sent.
	raw := string(p.searchBodyFor(t, o.SearchAfter))
	if !strings.Contains(raw, `"search_after":[-9223372036854775808,"",""]`) {
		t.Errorf("search_after not verbatim: %s", raw)
	}
	p.cfg.Slice = &Slice{ID: 0, Max: 1}
	if strings.Contains(string(p.searchBodyFor(t, nil)), "slice") {
		t.Error("slice max 1 must not be sent (the server rejects it)")
	}
	if fc.paths[len(fc.paths)-1] != "DELETE /_search/point_in_time" {
		t.Errorf("last request %s", fc.paths[len(fc.paths)-1])
	}
}

// searchBodyFor encodes a search with the given cursor.
func (p *Paginator) searchBodyFor(t *testing.T, cur []json.RawMessage) []byte {
	t.Helper()
	saved := p.fetchCursor
	p.fetchCursor = cur
	defer func() { p.fetchCursor = saved }()
	b := p.searchBody("id", false)
	if !json.Valid(b) {
		t.Fatalf("search body is not JSON: %s", b)
	}
	return b
}

func TestIndexInSearchPathIsRejectedByFake(t *testing.T) {
	// Guards the fake: spec §4 says a PIT search with an index in the path
	// is a 400; our client never does it (TestRequestShape).
	fc := newFakeCluster(t, 1, 1)
	resp, err := http.Post(fc.urls()[0]+"/logs/_search", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 {
		t.Fatalf("status %d", resp.StatusCode)
	}
}

func TestPartialContextLossRecreatesAndResumes(t *testing.T) {
	fc := newFakeCluster(t, 3, 6)
	fc.fill("logs", 1000)
	var s sleeper
	o := opts(fc, &s)
	var events []SnapshotBreakEvent
	o.OnSnapshotBreak = func(e SnapshotBreakEvent) { events = append(events, e) }
	p := mustOpen(t, o)
	firstPIT := p.PITID()
	var pages []Page
	var pageErrs []error
	for pg, err := range p.Pages(context.Background()) {
		if IsFatal(err) {
			t.Fatalf("fatal: %v", err)
		}
		pages = append(pages, pg)
		pageErrs = append(pageErrs, err)
		if len(pages) == 3 {
			fc.restart(1) // a node holding contexts restarts between pages
		}
	}
	var got []string
	for _, pg := range pages {
		got = append(got, ids(pg.Hits)...)
	}
	checkComplete(t, got, 1000)
	if !slices.IsSorted(got) {
		t.Error("hits out of order although nothing changed")
	}
	breaks := 0
	for i, err := range pageErrs {
		if errors.Is(err, ErrSnapshotBreak) {
			breaks++
			if i != 3 || pages[i].PriorPITID != firstPIT || pages[i].PITID == firstPIT {
				t.Errorf("snapshot break on page %d, prior %q new %q", i, pages[i].PriorPITID, pages[i].PITID)
			}
		} else if err != nil {
			t.Errorf("page %d: unexpected %v", i, err)
		}
	}
	if breaks != 1 || len(events) != 1 {
		t.Fatalf("breaks %d, events %d", breaks, len(events))
	}
	e := events[0]
	if e.OldPITID != firstPIT || e.NewPITID != p.PITID() || e.Attempt != 1 || len(e.FailedShards) != 2 ||
		e.FailedShards[0].Type != typeContextMissing || string(e.Cursor[2]) != `"doc-00299"` || e.Cause == nil {
		t.Errorf("event = %+v", e)
	}
	st := p.Stats()
	if st.PITsRecreated != 1 || st.PITsOpened != 2 || st.ContextLosses != 1 || st.ShardFailures[typeContextMissing] != 2 || st.HitsDeduped != 0 {
		t.Errorf("stats = %+v", st)
	}
	// The lost PIT was deleted (its surviving contexts freed).
	if len(fc.deleted) != 1 || fc.deleted[0] != firstPIT {
		t.Errorf("deleted = %v", fc.deleted)
	}
	if s.count() != 1 || s.waits[0] != time.Millisecond {
		t.Errorf("waits = %v, want one recreate backoff", s.waits)
	}
	if err := p.Close(context.Background()); err != nil || fc.openPITs() != 0 {
		t.Errorf("close: %v, open PITs %d", err, fc.openPITs())
	}
}

func TestNodeLeftClusterIsContextLoss(t *testing.T) {
	// While the node is gone the coordinator fails its shards with
	// illegal_state_exception "no node found for id"; reading on would
	// skip their documents, so it must recreate (on the replicas).
	fc := newFakeCluster(t, 3, 3)
	fc.fill("logs", 600)
	var s sleeper
	p := mustOpen(t, opts(fc, &s))
	r := readHits(t, p, func(n int) {
		if n == 150 {
			fc.setDown(2, true)
		}
	})
	for _, err := range r.errs {
		t.Errorf("unexpected error: %v", err)
	}
	checkComplete(t, ids(r.hits), 600)
	if st := p.Stats(); st.PITsRecreated != 1 || st.ShardFailures["illegal_state_exception"] == 0 {
		t.Errorf("stats = %+v", st)
	}
}

func TestTotalContextLoss404(t *testing.T) {
	for _, tc := range []struct {
		name string
		lose func(fc *fakeCluster)
	}{
		{"all nodes restarted", func(fc *fakeCluster) { fc.restart(0); fc.restart(1) }},
		{"keep-alive expired", func(fc *fakeCluster) { fc.expireAll() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := newFakeCluster(t, 2, 4)
			fc.fill("logs", 500)
			var s sleeper
			p := mustOpen(t, opts(fc, &s))
			old := p.PITID()
			r := readHits(t, p, func(n int) {
				if n == 200 {
					tc.lose(fc)
				}
			})
			if len(r.errs) > 0 {
				t.Fatalf("errors: %v", r.errs)
			}
			checkComplete(t, ids(r.hits), 500)
			st := p.Stats()
			if st.PITsRecreated != 1 || st.ContextLosses != 1 || st.Probes != 0 {
				t.Errorf("stats = %+v", st)
			}
			if p.PITID() == old {
				t.Error("PIT id unchanged")
			}
		})
	}
}

func TestClassifiesTotalLossByEveryPlace(t *testing.T) {
	cm := `{"type":"search_context_missing_exception","reason":"No search context found for id [3]"}`
	for name, body := range map[string]string{
		"top-level type":  `{"error":` + cm + `,"status":404}`,
		"root cause only": `{"error":{"root_cause":[` + cm + `],"type":"search_phase_execution_exception","reason":"all shards failed"},"status":404}`,
		"failed shards":   `{"error":{"root_cause":[],"type":"search_phase_execution_exception","reason":"all shards failed","failed_shards":[{"shard":0,"index":"logs","node":"n1","reason":` + cm + `}]},"status":404}`,
		"caused by":       `{"error":{"type":"search_phase_execution_exception","reason":"all shards failed","caused_by":` + cm + `},"status":404}`,
		// Real 2.19: every context on a node that left the cluster.
		"node left, 500":     `{"error":{"root_cause":[{"type":"illegal_state_exception","reason":"no node found for id: AbC"}],"type":"search_phase_execution_exception","reason":"all shards failed","phase":"query","grouped":true,"failed_shards":[{"shard":0,"index":"logs","node":null,"reason":{"type":"illegal_state_exception","reason":"no node found for id: AbC"}}]},"status":500}`,
		"node not connected": `{"error":{"root_cause":[{"type":"node_not_connected_exception","reason":"[node-1][127.0.0.1:9301] Node not connected"}],"type":"search_phase_execution_exception","reason":"all shards failed"},"status":500}`,
	} {
		t.Run(name, func(t *testing.T) {
			out, he, _ := classifyError("search", "http://u:secret@h:1", 500, []byte(body))
			if out != outLost {
				t.Fatalf("outcome %v", out)
			}
			if strings.Contains(he.Error(), "secret") {
				t.Errorf("credentials in error: %v", he)
			}
		})
	}
	notLost := map[string]struct {
		status int
		body   string
		want   outcome
	}{
		"other illegal state": {500, `{"error":{"type":"illegal_state_exception","reason":"something else"},"status":500}`, outTransient},
		"index missing":       {404, `{"error":{"root_cause":[{"type":"index_not_found_exception","reason":"no such index [x]"}],"type":"index_not_found_exception","reason":"no such index [x]"},"status":404}`, outFatal},
		"bad request":         {400, `{"error":{"type":"parsing_exception","reason":"bad"},"status":400}`, outFatal},
		"circuit breaker":     {429, `{"error":{"type":"circuit_breaking_exception","reason":"[parent] Data too large"},"status":429}`, outTransient},
		"proxy 502":           {502, `<html>bad gateway</html>`, outTransient},
		"all shards 503":      {503, `{"error":{"root_cause":[{"type":"no_such_shard","reason":"x"}],"type":"search_phase_execution_exception","reason":"all shards failed"},"status":503}`, outTransient},
	}
	for name, tc := range notLost {
		t.Run(name, func(t *testing.T) {
			if out, _, _ := classifyError("search", "http://h", tc.status, []byte(tc.body)); out != tc.want {
				t.Fatalf("outcome %v, want %v", out, tc.want)
			}
		})
	}
}

func TestTransportErrorProbeSurvivesAndRetries(t *testing.T) {
	fc := newFakeCluster(t, 3, 3)
	fc.fill("logs", 400)
	var s sleeper
	var broken atomic.Int32
	fc.setHook(func(kind string, node int, body map[string]any, w http.ResponseWriter) bool {
		if kind == "search" && fc.searchCount() == 2 && broken.Add(1) == 1 {
			panic(http.ErrAbortHandler) // connection reset mid-request, once
		}
		return false
	})
	p := mustOpen(t, opts(fc, &s))
	r := readHits(t, p, nil)
	if len(r.errs) > 0 {
		t.Fatalf("errors: %v", r.errs)
	}
	if !slices.Equal(ids(r.hits), wantIDs(400)) {
		t.Fatal("incomplete or disordered after a retried page")
	}
	st := p.Stats()
	if st.Probes != 1 || st.Retries != 1 || st.PITsRecreated != 0 || st.PITsOpened != 1 {
		t.Errorf("stats = %+v", st)
	}
	if fc.probes != 1 {
		t.Errorf("server saw %d probes", fc.probes)
	}
}

func (fc *fakeCluster) searchCount() int {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return fc.searches
}

func Test5xxProbeFindsLossAndRecreates(t *testing.T) {
	fc := newFakeCluster(t, 2, 2)
	fc.fill("logs", 300)
	var s sleeper
	var once atomic.Bool
	fc.setHook(func(kind string, node int, body map[string]any, w http.ResponseWriter) bool {
		if kind == "search" && fc.searchCount() == 1 && once.CompareAndSwap(false, true) {
			fc.restart(0) // the node dies while answering; its contexts are gone
			fc.restart(1)
			writeJSON(w, 503, `{"error":{"type":"transport_exception","reason":"transport stopped"},"status":503}`)
			return true
		}
		return false
	})
	p := mustOpen(t, opts(fc, &s))
	r := readHits(t, p, nil)
	if len(r.errs) > 0 {
		t.Fatalf("errors: %v", r.errs)
	}
	checkComplete(t, ids(r.hits), 300)
	if st := p.Stats(); st.Probes != 1 || st.PITsRecreated != 1 || st.Retries != 0 {
		t.Errorf("stats = %+v", st)
	}
}

func Test429RetriesWithoutProbe(t *testing.T) {
	fc := newFakeCluster(t, 1, 1)
	fc.fill("logs", 150)
	var s sleeper
	var n atomic.Int32
	fc.setHook(func(kind string, node int, body map[string]any, w http.ResponseWriter) bool {
		if kind == "search" && n.Add(1) <= 2 {
			writeJSON(w, 429, `{"error":{"root_cause":[{"type":"rejected_execution_exception","reason":"rejected"}],"type":"rejected_execution_exception","reason":"rejected"},"status":429}`)
			return true
		}
		return false
	})
	p := mustOpen(t, opts(fc, &s))
	r := readHits(t, p, nil)
	if len(r.errs) > 0 {
		t.Fatalf("errors: %v", r.errs)
	}
	checkComplete(t, ids(r.hits), 150)
	st := p.Stats()
	if st.Probes != 0 || st.Retries != 2 {
		t.Errorf("stats = %+v", st)
	}
	if !slices.Equal(s.waits, []time.Duration{time.Millisecond, 2 * time.Millisecond}) {
		t.Errorf("waits %v", s.waits)
	}
}

func TestTransientRetriesAreBounded(t *testing.T) {
	fc := newFakeCluster(t, 2, 1)
	fc.fill("logs", 10)
	var s sleeper
	fc.setHook(func(kind string, node int, body map[string]any, w http.ResponseWriter) bool {
		if kind == "search" || kind == "probe" {
			writeJSON(w, 500, `{"error":{"type":"exception","reason":"boom"},"status":500}`)
			return true
		}
		return false
	})
	o := opts(fc, &s)
	o.MaxRetries = 2
	p := mustOpen(t, o)
	r := readHits(t, p, nil)
	if len(r.errs) != 1 || !IsFatal(r.errs[0]) || !strings.Contains(r.errs[0].Error(), "giving up after 2 retries") {
		t.Fatalf("errs = %v", r.errs)
	}
	var he *HTTPError
	if !errors.As(r.errs[0], &he) || he.Status != 500 || he.Type != "exception" {
		t.Errorf("cause not kept: %v", r.errs[0])
	}
	if st := p.Stats(); st.Retries != 2 || st.Probes != 2 {
		t.Errorf("stats = %+v", st)
	}
	// The error sticks: a new iteration reports it again without requests.
	before := len(fc.paths)
	for _, err := range p.Hits(context.Background()) {
		if !errors.Is(err, r.errs[0]) {
			t.Errorf("second iteration: %v", err)
		}
	}
	if len(fc.paths) != before {
		t.Error("a failed paginator sent requests")
	}
}

func TestOtherShardFailureIsNotRetried(t *testing.T) {
	fc := newFakeCluster(t, 1, 2)
	fc.fill("logs", 250)
	var s sleeper
	const failure = `{"shard":1,"index":"logs","node":"node0","reason":{"type":"circuit_breaking_exception","reason":"[parent] Data too large"}}`
	fc.setHook(func(kind string, node int, body map[string]any, w http.ResponseWriter) bool {
		if kind == "search" && fc.searchCount() == 1 {
			fc.mu.Lock()
			fc.searches++
			fc.mu.Unlock()
			// The second page: shard 1 failed, shard 0's hits are here.
			writeJSON(w, 200, `{"pit_id":"`+body["pit"].(map[string]any)["id"].(string)+`","took":1,"timed_out":false,`+
				`"_shards":{"total":2,"successful":1,"skipped":0,"failed":1,"failures":[`+failure+`]},`+
				`"hits":{"hits":[{"_index":"logs","_id":"doc-00100","_version":1,"_seq_no":0,"_primary_term":1,"_source":{},"sort":[1700000000033,"logs","doc-00100"]}]}}`)
			return true
		}
		return false
	})
	o := opts(fc, &s)
	p := mustOpen(t, o)
	r := readHits(t, p, nil)
	if len(r.errs) != 1 || !errors.Is(r.errs[0], ErrShardFailure) || IsFatal(r.errs[0]) {
		t.Fatalf("errs = %v", r.errs)
	}
	var sfe *ShardFailureError
	if !errors.As(r.errs[0], &sfe) || len(sfe.Failures) != 1 || sfe.Failures[0] != (ShardFailure{Index: "logs", Shard: 1, Node: "node0", Type: "circuit_breaking_exception", Reason: "[parent] Data too large"}) {
		t.Errorf("failure = %+v", sfe)
	}
	// The failed page's one hit is emitted and reading goes on after it
	// (this fake then serves every later document).
	if len(r.hits) != 100+1+149 {
		t.Errorf("hits = %d", len(r.hits))
	}
	st := p.Stats()
	if st.ShardFailures["circuit_breaking_exception"] != 1 || st.Retries != 0 || st.Probes != 0 || st.PITsRecreated != 0 || s.count() != 0 {
		t.Errorf("stats = %+v, waits %v", st, s.waits)
	}
}

func TestShardFailureOnPagesAndEmptyPage(t *testing.T) {
	fc := newFakeCluster(t, 1, 2)
	fc.fill("logs", 50)
	var s sleeper
	fc.setHook(func(kind string, node int, body map[string]any, w http.ResponseWriter) bool {
		if kind == "search" {
			writeJSON(w, 200, `{"_shards":{"total":2,"successful":0,"skipped":0,"failed":2,"failures":[`+
				`{"shard":0,"index":"logs","reason":{"type":"task_cancelled_exception","reason":"cancelled"}},`+
				`{"shard":1,"index":"logs","reason":{"type":"task_cancelled_exception","reason":"cancelled"}}]},"hits":{"hits":[]}}`)
			return true
		}
		return false
	})
	p := mustOpen(t, opts(fc, &s))
	n := 0
	for pg, err := range p.Pages(context.Background()) {
		n++
		if !errors.Is(err, ErrShardFailure) || IsFatal(err) || len(pg.ShardFailures) != 2 || len(pg.Hits) != 0 {
			t.Errorf("page %+v err %v", pg, err)
		}
	}
	if n != 1 {
		t.Errorf("%d pages", n)
	}
	// An empty page's failures are retried first (3 times), each counted.
	if got := p.Stats().ShardFailures["task_cancelled_exception"]; got != 8 || s.count() != 3 {
		t.Errorf("counted %d, %d waits", got, s.count())
	}
}

// TestEmptyPageShardFailurePasses: the last page comes back with no hit and
// a shard failed (a circuit breaker tripped); giving it up would drop the
// rest of that shard. It is asked again and the read completes.
func TestEmptyPageShardFailurePasses(t *testing.T) {
	fc := newFakeCluster(t, 1, 2)
	fc.fill("logs", 250)
	var s sleeper
	searches := 0
	fc.setHook(func(kind string, node int, body map[string]any, w http.ResponseWriter) bool {
		if kind != "search" {
			return false
		}
		searches++
		if searches == 2 {
			writeJSON(w, 200, `{"_shards":{"total":2,"successful":1,"skipped":0,"failed":1,"failures":[`+
				`{"shard":1,"index":"logs","reason":{"type":"circuit_breaking_exception","reason":"[parent] Data too large"}}]},"hits":{"hits":[]}}`)
			return true
		}
		return false
	})
	p := mustOpen(t, opts(fc, &s))
	defer p.Close(context.Background())
	r := readHits(t, p, nil)
	if len(r.hits) != 250 || len(r.errs) != 0 {
		t.Fatalf("%d hits, errors %v", len(r.hits), r.errs)
	}
	if st := p.Stats(); st.Retries != 1 || st.ShardFailures["circuit_breaking_exception"] != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestDedupAfterRecreate(t *testing.T) {
	for _, emitAll := range []bool{false, true} {
		t.Run(fmt.Sprintf("emitAll=%v", emitAll), func(t *testing.T) {
			fc := newFakeCluster(t, 2, 2)
			fc.fill("logs", 400)
			var s sleeper
			o := opts(fc, &s)
			if emitAll {
				o.DedupWindow = -1
			}
			p := mustOpen(t, o)
			firstPIT := p.PITID()
			var replayed atomic.Bool
			fc.setHook(func(kind string, node int, body map[string]any, w http.ResponseWriter) bool {
				// The first search after the recreate comes back from an
				// earlier cursor, as when sort values moved across the
				// snapshot boundary: hits already emitted reappear.
				if kind != "search" {
					return false
				}
				pitID, _ := body["pit"].(map[string]any)["id"].(string)
				if pitID != firstPIT && replayed.CompareAndSwap(false, true) {
					body["search_after"] = []any{float64(1_700_000_000_000 + 50), "logs", "doc-00150"}
				}
				return false
			})
			r := readHits(t, p, func(n int) {
				if n == 200 {
					// doc-00010 is updated (new version, sort value past the
					// cursor), doc-00399 too; then a node restarts.
					fc.put("logs", "doc-00010", 1_700_000_000_000+300)
					fc.put("logs", "doc-00399", 1_700_000_000_000+133)
					fc.restart(0)
				}
			})
			var ooo []string
			for _, err := range r.errs {
				if IsFatal(err) {
					t.Fatalf("fatal: %v", err)
				}
			}
			for _, h := range r.hits {
				if h.OutOfOrder {
					ooo = append(ooo, h.ID)
				}
			}
			st := p.Stats()
			if emitAll {
				// Duplicates pass: 49 replayed hits (151..199) and the updated doc-00010.
				if len(r.hits) != 400+49+1 || len(ooo) != 0 || st.HitsDeduped != 0 {
					t.Errorf("hits %d, out of order %v, stats %+v", len(r.hits), ooo, st)
				}
				return
			}
			if len(r.hits) != 401 || st.HitsDeduped != 49 {
				t.Errorf("hits %d (want 400 + the updated doc), deduped %d", len(r.hits), st.HitsDeduped)
			}
			if !slices.Equal(ooo, []string{"doc-00010"}) || st.HitsOutOfOrder != 1 || len(r.errs) != 1 || !errors.Is(r.errs[0], ErrHitOutOfOrder) {
				t.Errorf("out of order %v, errs %v, stats %+v", ooo, r.errs, st)
			}
			for _, h := range r.hits {
				if h.ID == "doc-00010" && h.OutOfOrder && h.Version != 2 {
					t.Errorf("out-of-order hit is not the new version: %+v", h)
				}
			}
		})
	}
}

func TestRecreateBudgetIsBounded(t *testing.T) {
	fc := newFakeCluster(t, 2, 2)
	fc.fill("logs", 300)
	var s sleeper
	// Every PIT loses its contexts right after creation.
	fc.setHook(func(kind string, node int, body map[string]any, w http.ResponseWriter) bool {
		if kind == "search" {
			fc.restart(0)
		}
		return false
	})
	o := opts(fc, &s)
	o.Backoff = nil // the default: full jitter, 250ms·2^n capped at 10s
	var events []SnapshotBreakEvent
	o.OnSnapshotBreak = func(e SnapshotBreakEvent) { events = append(events, e) }
	p := mustOpen(t, o)
	r := readHits(t, p, nil)
	if len(r.hits) != 0 || len(r.errs) != 1 {
		t.Fatalf("hits %d errs %v", len(r.hits), r.errs)
	}
	err := r.errs[0]
	if !IsFatal(err) || !errors.Is(err, ErrRecreateExhausted) || !errors.Is(err, ErrContextLost) {
		t.Fatalf("err = %v", err)
	}
	var cle *ContextLostError
	if !errors.As(err, &cle) || len(cle.Failures) == 0 {
		t.Errorf("no failures in %v", err)
	}
	if len(events) != 3 || events[2].Attempt != 3 {
		t.Errorf("events %d", len(events))
	}
	if len(s.waits) != 3 {
		t.Fatalf("waits %v", s.waits)
	}
	for i, w := range s.waits {
		if w < 0 || w > backoffCeiling(i) {
			t.Errorf("wait %d = %v, above %v", i, w, backoffCeiling(i))
		}
	}
	if st := p.Stats(); st.PITsRecreated != 3 || st.PITsOpened != 4 {
		t.Errorf("stats %+v", st)
	}
	// Every PIT we opened is deleted by now (the lost ones at recreate).
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if fc.openPITs() != 0 {
		t.Errorf("%d PITs left open", fc.openPITs())
	}
}

// TestRecreateBudgetResetsOnProgress: the PIT is lost before every other
// page (as when the caller pauses longer than the keep-alive between
// pages, again and again). One recreation each time, then a page: a read
// of ten pages needs nine recreations with a budget of one in a row.
func TestRecreateBudgetResetsOnProgress(t *testing.T) {
	fc := newFakeCluster(t, 2, 2)
	fc.fill("logs", 1000)
	var s sleeper
	searches := 0
	fc.setHook(func(kind string, node int, body map[string]any, w http.ResponseWriter) bool {
		if kind == "search" {
			searches++
			if searches > 1 && searches%2 == 0 {
				fc.restart(0)
			}
		}
		return false
	})
	o := opts(fc, &s)
	o.MaxRecreateAttempts = 1
	p := mustOpen(t, o)
	defer p.Close(context.Background())
	r := readHits(t, p, nil)
	for _, err := range r.errs {
		if IsFatal(err) {
			t.Fatalf("after %d hits: %v", len(r.hits), err)
		}
	}
	ids := map[string]bool{}
	for _, h := range r.hits {
		ids[h.ID] = true
	}
	if len(r.hits) != 1000 || len(ids) != 1000 {
		t.Fatalf("%d hits, %d distinct, want 1000", len(r.hits), len(ids))
	}
	if st := p.Stats(); st.PITsRecreated < 5 {
		t.Fatalf("only %d recreations: the test did not lose the PIT between pages", st.PITsRecreated)
	}
}

func TestRecreateDisabled(t *testing.T) {
	fc := newFakeCluster(t, 1, 1)
	fc.fill("logs", 300)
	var s sleeper
	o := opts(fc, &s)
	o.MaxRecreateAttempts = -1
	o.Sort = json.RawMessage(`[{"@timestamp":"asc"},"_shard_doc"]`) // allowed without recreation
	p := mustOpen(t, o)
	r := readHits(t, p, func(n int) {
		if n == 100 {
			fc.restart(0)
		}
	})
	if len(r.hits) != 100 || len(r.errs) != 1 || !errors.Is(r.errs[0], ErrContextLost) || errors.Is(r.errs[0], ErrRecreateExhausted) {
		t.Fatalf("hits %d errs %v", len(r.hits), r.errs)
	}
	if p.Stats().PITsRecreated != 0 || s.count() != 0 {
		t.Error("recreated although disabled")
	}
}

func TestExistingPIT(t *testing.T) {
	fc := newFakeCluster(t, 2, 2)
	fc.fill("logs", 250)
	var s sleeper
	owner := mustOpen(t, opts(fc, &s)) // stands for the caller's own PIT
	theirs := owner.PITID()

	o := opts(fc, &s)
	o.ExistingPITID = theirs
	var events []SnapshotBreakEvent
	o.OnSnapshotBreak = func(e SnapshotBreakEvent) { events = append(events, e) }
	p := mustOpen(t, o)
	if p.PITID() != theirs || fc.opens != 1 {
		t.Fatalf("opened a PIT although handed one")
	}
	// A clean read and Close leave their PIT alone.
	p2 := mustOpen(t, o)
	if r := readHits(t, p2, nil); len(r.hits) != 250 {
		t.Fatalf("read %d", len(r.hits))
	}
	if err := p2.Close(context.Background()); err != nil || len(fc.deleted) != 0 {
		t.Fatalf("close deleted %v (%v)", fc.deleted, err)
	}
	// A lost PIT is recreated as ours: reported, and only ours deleted.
	r := readHits(t, p, func(n int) {
		if n == 100 {
			fc.restart(1)
		}
	})
	checkComplete(t, ids(r.hits), 250)
	if len(events) != 1 || events[0].OldPITID != theirs || events[0].NewPITID != p.PITID() {
		t.Fatalf("events %+v", events)
	}
	if len(fc.deleted) != 0 {
		t.Errorf("deleted the caller's PIT at recreate: %v", fc.deleted)
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(fc.deleted, []string{events[0].NewPITID}) {
		t.Errorf("deleted %v", fc.deleted)
	}
}

func TestSlicesAreDisjointAndComplete(t *testing.T) {
	fc := newFakeCluster(t, 3, 4)
	fc.fill("logs", 2000)
	var s sleeper
	var shared Counters
	var mu sync.Mutex
	var all []string
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			o := opts(fc, &s)
			o.Slice = &Slice{ID: i, Max: 4}
			o.Counters = &shared
			p, err := Open(context.Background(), o)
			if err != nil {
				t.Error(err)
				return
			}
			defer p.Close(context.Background())
			for h, err := range p.Hits(context.Background()) {
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				all = append(all, h.ID)
				mu.Unlock()
				if h.ID == "doc-00500" {
					fc.restart(1) // one restart during the parallel read
				}
				_ = p.Stats()
				_ = p.Cursor()
			}
		})
	}
	wg.Wait()
	checkComplete(t, all, 2000)
	st := shared.Snapshot()
	if st.HitsEmitted != 2000 || st.PITsOpened < 4 || st.PITsRecreated < 1 || st.OpenPITs() != 0 {
		t.Errorf("stats %+v", st)
	}
}

// hitsUntil appends the ids of p's hits to got until it holds n, and stops
// the loop there.
func hitsUntil(t *testing.T, p *Paginator, got []string, n int) []string {
	t.Helper()
	for h, err := range p.Hits(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, h.ID)
		if len(got) == n {
			break
		}
	}
	return got
}

// pagesUntil is hitsUntil with Pages: whole pages, until got holds at least n.
func pagesUntil(t *testing.T, p *Paginator, got []string, n int) []string {
	t.Helper()
	for pg, err := range p.Pages(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ids(pg.Hits)...)
		if len(got) >= n {
			break
		}
	}
	return got
}

func TestCursorResume(t *testing.T) {
	fc := newFakeCluster(t, 1, 3)
	fc.fill("logs", 500)
	var s sleeper
	p := mustOpen(t, opts(fc, &s))
	// Stop mid-page; the rest of the page is kept for the next loop.
	got := hitsUntil(t, p, nil, 130)
	if c := p.Cursor(); string(c[2]) != `"doc-00129"` {
		t.Fatalf("cursor %s", c)
	}
	got = pagesUntil(t, p, got, 300)
	cur := p.Cursor()
	p.Close(context.Background())
	if string(cur[2]) != `"doc-00299"` {
		t.Fatalf("cursor %s", cur)
	}
	// A new paginator (a restarted collector) resumes from the checkpoint.
	o := opts(fc, &s)
	o.SearchAfter = cur
	p2 := mustOpen(t, o)
	defer p2.Close(context.Background())
	got = append(got, ids(readHits(t, p2, nil).hits)...)
	if !slices.Equal(got, wantIDs(500)) {
		t.Fatalf("resume lost or repeated hits: %d", len(got))
	}
}

func TestConcurrentIterationRefused(t *testing.T) {
	fc := newFakeCluster(t, 1, 1)
	fc.fill("logs", 10)
	var s sleeper
	p := mustOpen(t, opts(fc, &s))
	defer p.Close(context.Background())
	for range p.Hits(context.Background()) {
		for _, err := range p.Pages(context.Background()) {
			if !errors.Is(err, ErrBusy) {
				t.Fatalf("nested iteration: %v", err)
			}
		}
		break
	}
}

func TestPartialPITCreationIsRetried(t *testing.T) {
	fc := newFakeCluster(t, 2, 2)
	fc.fill("logs", 10)
	var s sleeper
	o := opts(fc, &s)
	fc.setPartialOpens(1)
	p, err := Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	st := p.Stats()
	if st.PITsOpened != 2 || st.PITsClosed != 1 || st.Retries != 1 || fc.openPITs() != 1 {
		t.Errorf("the partial PIT was not deleted and retried: %+v", st)
	}
	if r := readHits(t, p, nil); len(r.hits) != 10 {
		t.Errorf("hits %d", len(r.hits))
	}

	fc.setPartialOpens(10)
	o.MaxRetries = 1
	_, err = Open(context.Background(), o)
	var pe *PartialPITError
	if !errors.As(err, &pe) || pe.Total != 2 || pe.Failed != 1 {
		t.Fatalf("err = %v", err)
	}
	if fc.openPITs() != 1 {
		t.Errorf("partial PITs left open: %d", fc.openPITs()-1)
	}
}

func TestOpenFailsWhenNoNodeAnswers(t *testing.T) {
	fc := newFakeCluster(t, 2, 2)
	fc.setDown(0, true)
	fc.setDown(1, true)
	var s sleeper
	o := opts(fc, &s)
	o.MaxRetries = 1
	_, err := Open(context.Background(), o)
	var te *TransportError
	if !errors.As(err, &te) || s.count() != 1 {
		t.Fatalf("err = %v, waits %v", err, s.waits)
	}
}

func TestOpenUnknownIndexIsClear(t *testing.T) {
	fc := newFakeCluster(t, 1, 1)
	fc.setHook(func(kind string, node int, body map[string]any, w http.ResponseWriter) bool {
		writeJSON(w, 404, `{"error":{"root_cause":[{"type":"index_not_found_exception","reason":"no such index [nope]","index":"nope"}],"type":"index_not_found_exception","reason":"no such index [nope]","index":"nope"},"status":404}`)
		return true
	})
	var s sleeper
	o := opts(fc, &s)
	o.Indices = []string{"nope"}
	_, err := Open(context.Background(), o)
	var he *HTTPError
	if !errors.As(err, &he) || he.Type != "index_not_found_exception" || !strings.Contains(err.Error(), "no such index [nope]") || s.count() != 0 {
		t.Fatalf("err = %v", err)
	}
}

type recordingSelector struct {
	*RoundRobin
	mu       sync.Mutex
	excluded []string
	observed map[string]int
}

func (r *recordingSelector) ReadNode(ix []string, exclude func(string) bool) (string, bool) {
	r.mu.Lock()
	for _, u := range r.urls {
		if exclude(u) {
			r.excluded = append(r.excluded, u)
		}
	}
	r.mu.Unlock()
	return r.RoundRobin.ReadNode(ix, exclude)
}

func (r *recordingSelector) ObserveRead(u string, err error) {
	r.mu.Lock()
	if err != nil {
		r.observed[u]++
	}
	r.mu.Unlock()
}

func TestSelectorSkipsFailedNodes(t *testing.T) {
	fc := newFakeCluster(t, 3, 3)
	fc.fill("logs", 600)
	fc.setDown(1, true) // before Open: the PIT's contexts live on nodes 0 and 2
	rr, err := NewRoundRobin(fc.urls())
	if err != nil {
		t.Fatal(err)
	}
	sel := &recordingSelector{RoundRobin: rr, observed: map[string]int{}}
	var s sleeper
	o := opts(fc, &s)
	o.Endpoints = nil
	o.Selector = sel
	now := time.Unix(1000, 0)
	o.Now = func() time.Time { return now }
	p := mustOpen(t, o)
	r := readHits(t, p, nil)
	if len(r.errs) > 0 {
		t.Fatal(r.errs)
	}
	checkComplete(t, ids(r.hits), 600)
	down := fc.urls()[1]
	if sel.observed[down] != 1 {
		t.Errorf("node 1 failures observed %d, want 1 (then skipped)", sel.observed[down])
	}
	if len(sel.excluded) == 0 || sel.excluded[0] != down {
		t.Errorf("excluded %v", sel.excluded)
	}
	// After the cooldown the node is offered again.
	now = now.Add(DefaultNodeCooldown)
	excl := len(sel.excluded)
	p.do(context.Background(), "probe", "POST", "/_search", []byte(`{}`))
	if len(sel.excluded) != excl {
		t.Errorf("node still excluded after the cooldown")
	}
	p.Close(context.Background())
}

func TestCredentialsNeverInErrors(t *testing.T) {
	fc := newFakeCluster(t, 1, 1)
	fc.setDown(0, true)
	var s sleeper
	o := opts(fc, &s)
	o.Endpoints = []string{strings.Replace(fc.urls()[0], "http://", "http://admin:hunter2@", 1)}
	o.MaxRetries = -1
	_, err := Open(context.Background(), o)
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("err = %v", err)
	}
}

func TestContextCancelIsNotSticky(t *testing.T) {
	fc := newFakeCluster(t, 1, 1)
	fc.fill("logs", 300)
	var s sleeper
	p := mustOpen(t, opts(fc, &s))
	defer p.Close(context.Background())
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var got []string
	for h, err := range p.Hits(ctx) {
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				t.Fatal(err)
			}
			break
		}
		got = append(got, h.ID)
		if len(got) == 100 {
			cancel()
		}
	}
	got = append(got, ids(readHits(t, p, nil).hits)...)
	if !slices.Equal(got, wantIDs(300)) {
		t.Fatalf("got %d", len(got))
	}
}

func TestCloseOutcomes(t *testing.T) {
	for _, tc := range []struct {
		name       string
		status     int
		body       string
		wantErr    bool
		closed     int64
		errs       int64
		unconfirmd int64
		deletes    int
	}{
		{"confirmed", 200, `{"pits":[{"successful":true,"pit_id":"x"}]}`, false, 1, 0, 0, 1},
		{"contexts already gone", 200, `{"pits":[{"successful":false,"pit_id":"x"}]}`, false, 1, 0, 1, 1},
		{"not found", 404, `{"error":{"type":"resource_not_found_exception","reason":"pit is not found"},"status":404}`, false, 1, 0, 0, 1},
		{"server error retried", 500, `{"error":{"type":"exception","reason":"boom"},"status":500}`, true, 0, 1, 0, 4},
		{"forbidden not retried", 403, `{"error":{"type":"security_exception","reason":"no permissions"},"status":403}`, true, 0, 1, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := newFakeCluster(t, 1, 1)
			var s sleeper
			p := mustOpen(t, opts(fc, &s))
			var deletes atomic.Int32
			fc.setHook(func(kind string, node int, body map[string]any, w http.ResponseWriter) bool {
				if kind == "delete" {
					deletes.Add(1)
					writeJSON(w, tc.status, tc.body)
					return true
				}
				return false
			})
			err := p.Close(context.Background())
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v", err)
			}
			st := p.Stats()
			if st.PITsClosed != tc.closed || st.PITCloseErrors != tc.errs || st.PITDeletesUnconfirmed != tc.unconfirmd || int(deletes.Load()) != tc.deletes {
				t.Errorf("stats %+v, %d deletes", st, deletes.Load())
			}
		})
	}
}

// BenchmarkProcessPage decodes a 1000-hit search response (the hand
// scanner against encoding/json into the same structs) and runs it through
// dedup: the client-side cost per page, allocations per hit.
func BenchmarkProcessPage(b *testing.B) {
	var sb strings.Builder
	sb.WriteString(`{"pit_id":"abc","took":3,"timed_out":false,"_shards":{"total":3,"successful":3,"skipped":0,"failed":0},"hits":{"hits":[`)
	for i := range 1000 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"_index":"logs-2024.01.01","_id":"%s","_version":1,"_seq_no":%d,"_primary_term":1,"_score":null,`+
			`"_source":{"@timestamp":"2024-01-01T00:00:00.%03dZ","body":"GET /api/v1/items 200","severity":{"text":"INFO","number":9},"attributes":{"http.method":"GET","http.status_code":200}},"sort":[%d,"%s"]}`,
			autoID(i), i, i%1000, 1704067200000+int64(i), autoID(i))
	}
	sb.WriteString(`]}}`)
	body := []byte(sb.String())
	cfg, err := base().validate()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("scan-only", func(b *testing.B) {
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		cpu := startCPU(b)
		for i := 0; i < b.N; i++ {
			if _, err := decodeSearch(body); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/hit")
		b.ReportMetric(float64(cpu.stop())/float64(b.N*1000), "cpu-ns/hit")
	})
	b.Run("encoding-json-only", func(b *testing.B) { // baseline: encoding/json into the same structs
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		cpu := startCPU(b)
		for i := 0; i < b.N; i++ {
			var resp searchResponse
			if err := json.Unmarshal(body, &resp); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/hit")
		b.ReportMetric(float64(cpu.stop())/float64(b.N*1000), "cpu-ns/hit")
	})
	b.Run("scan+dedup", func(b *testing.B) {
		p := &Paginator{cfg: cfg, ctr: cfg.Counters, win: newWindow(DefaultDedupWindow)}
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		cpu := startCPU(b)
		for i := 0; i < b.N; i++ {
			resp, err := decodeSearch(body)
			if err != nil {
				b.Fatal(err)
			}
			p.done = false
			if _, err := p.process(resp, nil); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*1000), "ns/hit")
		b.ReportMetric(float64(cpu.stop())/float64(b.N*1000), "cpu-ns/hit")
	})
}

func TestCloseDuringIteration(t *testing.T) {
	fc := newFakeCluster(t, 2, 2)
	fc.fill("logs", 1000)
	var s sleeper
	p := mustOpen(t, opts(fc, &s))
	inSearch := make(chan struct{})
	release := make(chan struct{})
	var once sync.Once
	fc.setHook(func(kind string, node int, body map[string]any, w http.ResponseWriter) bool {
		if kind == "search" && fc.searchCount() == 2 {
			once.Do(func() {
				close(inSearch)
				<-release
				fc.restart(0) // the answer will say: contexts lost, recreate
				fc.restart(1)
			})
		}
		return false
	})
	done := make(chan error, 1)
	go func() {
		var last error
		for _, err := range p.Hits(context.Background()) {
			if IsFatal(err) {
				last = err
			}
		}
		done <- last
	}()
	<-inSearch
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("iteration ended with %v, want ErrClosed", err)
	}
	if fc.openPITs() != 0 {
		t.Errorf("%d PITs left open after Close", fc.openPITs())
	}
}

func TestNewestPITIDIsUsed(t *testing.T) {
	fc := newFakeCluster(t, 1, 1)
	fc.fill("logs", 350)
	fc.mu.Lock()
	fc.rotateIDs = true // an old id stops working once a new one is handed out
	fc.mu.Unlock()
	var s sleeper
	p := mustOpen(t, opts(fc, &s))
	first := p.PITID()
	r := readHits(t, p, nil)
	if len(r.errs) > 0 || len(r.hits) != 350 {
		t.Fatalf("hits %d errs %v", len(r.hits), r.errs)
	}
	if p.PITID() == first || p.Stats().PITsRecreated != 0 {
		t.Errorf("pit id %q (first %q), stats %+v", p.PITID(), first, p.Stats())
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if fc.openPITs() != 0 {
		t.Error("the newest PIT id was not the one deleted")
	}
}

// TestGroupedShardFailures: the server lists identical shard failures once
// (failed: 2, one entry); no "unknown" failure is invented for the other.
func TestGroupedShardFailures(t *testing.T) {
	fc := newFakeCluster(t, 1, 2)
	fc.fill("logs", 250)
	var s sleeper
	const failure = `{"shard":1,"index":"logs","node":"node0","reason":{"type":"circuit_breaking_exception","reason":"[parent] Data too large"}}`
	fc.setHook(func(kind string, node int, body map[string]any, w http.ResponseWriter) bool {
		// An empty page is asked again (3 retries): fail all four.
		if kind == "search" && fc.searchCount() <= 4 {
			fc.mu.Lock()
			fc.searches++
			fc.mu.Unlock()
			writeJSON(w, 200, `{"pit_id":"`+body["pit"].(map[string]any)["id"].(string)+`","took":1,"timed_out":false,`+
				`"_shards":{"total":2,"successful":0,"skipped":0,"failed":2,"failures":[`+failure+`]},"hits":{"hits":[]}}`)
			return true
		}
		return false
	})
	p := mustOpen(t, opts(fc, &s))
	r := readHits(t, p, nil)
	if len(r.errs) == 0 || !errors.Is(r.errs[0], ErrShardFailure) {
		t.Fatalf("errs = %v", r.errs)
	}
	st := p.Stats()
	if st.ShardFailures["circuit_breaking_exception"] != 4 || st.ShardFailures["unknown"] != 0 {
		t.Fatalf("shard failures %v", st.ShardFailures)
	}
}

// TestSameIDInTwoIndices: an _id is unique within one index only. Two
// documents of different indices with the same _id and @timestamp must not
// tie under the default sort (search_after would skip the second at a
// page boundary): _index sits between them. Checked against the real
// server's order in the real-cluster tests.
func TestSameIDInTwoIndices(t *testing.T) {
	fc := newFakeCluster(t, 1, 1)
	fc.put("logs-a", "same", 1000)
	fc.put("logs-b", "same", 1000)
	fc.put("logs-a", "zzz", 1000)
	var s sleeper
	o := opts(fc, &s)
	o.Indices, o.PageSize = []string{"logs-a", "logs-b"}, 1
	p := mustOpen(t, o)
	defer p.Close(context.Background())
	r := readHits(t, p, nil)
	var got []string
	for _, h := range r.hits {
		got = append(got, h.Index+"/"+h.ID)
	}
	if want := []string{"logs-a/same", "logs-a/zzz", "logs-b/same"}; !slices.Equal(got, want) || len(r.errs) != 0 {
		t.Fatalf("read %v (errors %v), want %v", got, r.errs, want)
	}
}

// TestHitsThenPagesThenHits: a Hits loop that stops right after a page's
// last hit, then a Pages loop, then Hits again whose search fails: the
// cursor (what a caller checkpoints) must not move back, so that resuming
// from it reads every document once.
func TestHitsThenPagesThenHits(t *testing.T) {
	fc := newFakeCluster(t, 1, 2)
	fc.fill("logs", 450)
	var s sleeper
	var failing atomic.Bool
	fc.setHook(func(kind string, node int, body map[string]any, w http.ResponseWriter) bool {
		if kind == "search" && failing.Load() {
			writeJSON(w, 400, `{"error":{"type":"parsing_exception","reason":"injected"},"status":400}`)
			return true
		}
		return false
	})
	p := mustOpen(t, opts(fc, &s)) // pages of 100
	defer p.Close(context.Background())
	got := hitsUntil(t, p, nil, 100) // stops right after the first page's last hit
	got = pagesUntil(t, p, got, 101) // one page
	before := fmt.Sprint(p.Cursor())
	failing.Store(true)
	for _, err := range p.Hits(context.Background()) {
		if !IsFatal(err) {
			t.Fatalf("want the injected failure, got %v", err)
		}
	}
	if after := fmt.Sprint(p.Cursor()); after != before {
		t.Fatalf("cursor moved back from %s to %s", before, after)
	}
	// A restart resumes from that cursor, as from a checkpoint.
	failing.Store(false)
	o := opts(fc, &s)
	o.SearchAfter = p.Cursor()
	p2 := mustOpen(t, o)
	defer p2.Close(context.Background())
	got = append(got, ids(readHits(t, p2, nil).hits)...)
	seen := map[string]bool{}
	for _, id := range got {
		if seen[id] {
			t.Fatalf("%s read twice (%d reads)", id, len(got))
		}
		seen[id] = true
	}
	if len(seen) != 450 {
		t.Fatalf("%d documents read, want 450", len(seen))
	}
}
