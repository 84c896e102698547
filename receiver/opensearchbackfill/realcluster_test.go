package opensearchbackfill

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/opensearchrouted/opensearchrouted/internal/pit"
	"github.com/opensearchrouted/opensearchrouted/testbed/cluster"
)

// TestRealCluster proves the receiver against real OpenSearch (one 3-node
// cluster for the package), issue 6 proofs 1–4: the exporter→receiver
// round trip with the default sort, a node holding PIT contexts killed and
// restarted in the middle of a 4-slice read, a collector restart resuming
// from file_storage checkpoints, and a shard failure that is not a context
// loss.
func TestRealCluster(t *testing.T) {
	c := cluster.Start(t, cluster.Options{})
	base := c.Addr(0)
	// dynamic:false keeps every field in _source without mapping it, so
	// that values of several types under one key (SS4O bodies and
	// attributes) never conflict; @timestamp is the sort field.
	for _, ix := range []string{"rt-logs", "rt-traces"} {
		st, b := httpDo(t, "PUT", base+"/"+ix, `{"settings":{"number_of_shards":3,"number_of_replicas":1},`+
			`"mappings":{"dynamic":false,"properties":{"@timestamp":{"type":"date_nanos"}}}}`)
		if st != 200 {
			t.Fatalf("create %s: %d %s", ix, st, b)
		}
	}

	t.Run("RoundTrip", func(t *testing.T) {
		sentLogs, sentSpans := rtLogs(roundTripLogs/roundTripScale), rtSpans(roundTripSpans/roundTripScale)
		wantLogs, wantSpans := logKeys(t, sentLogs), spanKeys(t, sentSpans)
		exportAll(t, c.Addrs(), sentLogs, sentSpans)
		httpDo(t, "POST", base+"/rt-logs,rt-traces/_refresh", "")

		lcfg := testConfig(c.Addrs(), "rt-logs")
		lcfg.Slices = 2
		lsink := new(consumertest.LogsSink)
		lh := mustStart(t, lcfg, lsink, nil)
		tcfg := testConfig(c.Addrs(), "rt-traces")
		tcfg.Signal = SignalTraces
		tsink := new(consumertest.TracesSink)
		th := mustStart(t, tcfg, tsink, nil)
		lh.wait(t, 3*time.Minute)
		th.wait(t, 3*time.Minute)
		gotLogs := plog.NewLogs()
		for _, ld := range lsink.AllLogs() {
			ld.ResourceLogs().MoveAndAppendTo(gotLogs.ResourceLogs())
		}
		gotSpans := ptrace.NewTraces()
		for _, td := range tsink.AllTraces() {
			td.ResourceSpans().MoveAndAppendTo(gotSpans.ResourceSpans())
		}
		compareKeys(t, "log records", wantLogs, logKeys(t, gotLogs))
		compareKeys(t, "spans", wantSpans, spanKeys(t, gotSpans))
		if !lh.host.completed() || !th.host.completed() {
			t.Error("completion not reported")
		}
	})

	// Spans written in the otel-v1 layout (internal/otelv1, into an index
	// made from its template) read back exactly in mapping.mode otel-v1.
	t.Run("OtelV1RoundTrip", func(t *testing.T) {
		sent := otelV1Spans(3000)
		writeOtelV1(t, base, sent)
		readOtelV1(t, c.Addrs(), sent)
	})

	t.Run("NodeRestartFourSlices", func(t *testing.T) {
		st, b := httpDo(t, "PUT", base+"/events", `{"settings":{"number_of_shards":3,"number_of_replicas":1}}`)
		if st != 200 {
			t.Fatalf("create events: %d %s", st, b)
		}
		if err := c.WaitHealth(context.Background(), "green"); err != nil {
			t.Fatal(err)
		}
		ids := seedForeign(t, base, "events", 6000)
		cfg := testConfig(c.Addrs(), "events")
		cfg.Slices = 4
		cfg.PageSize = 100
		kill := make(chan int, 1)
		killed := make(chan struct{})
		var calls atomic.Int32
		sink := newIDSink()
		sink.before = func(context.Context, int, plog.Logs) (bool, error) {
			if calls.Add(1) == 12 {
				node, err := realNodeWithPITs(c)
				if err != nil {
					t.Error(err)
					node = 1
				}
				kill <- node
				<-killed // the page is delivered after the node died
			}
			return true, nil
		}
		h := mustStart(t, cfg, sink, nil)
		var node int
		select {
		case node = <-kill:
		case <-h.r.done:
			t.Fatal("the backfill ended before the node was killed")
		}
		if node == 0 {
			// Node 0 is every config's first endpoint; any node holding
			// contexts will do, and the test then also covers reading
			// through the other seeds.
			t.Logf("killing node 0 (holds the most PIT contexts)")
		}
		if err := c.Kill(node); err != nil {
			t.Fatal(err)
		}
		close(killed)
		if err := c.Restart(node); err != nil {
			t.Fatal(err)
		}
		h.wait(t, 3*time.Minute)
		checkAllOnce(t, sink.snapshot(), ids, true)
		stats := h.r.Stats()
		if stats.PITsRecreated < 1 {
			t.Errorf("no PIT recreated: %+v", stats)
		}
		if h.logs.FilterMessageSnippet("Point in time recreated").Len() < 1 {
			t.Error("snapshot break not logged")
		}
		t.Logf("stats after the restart of node %d: %+v", node, stats)
	})

	// An index created and never written has no mapping: with the default
	// sort the server refused every search ("No mapping found for [_index]
	// in order to sort on") and the read failed at start. A once read of
	// it completes with nothing; a follower reads what is written later.
	t.Run("EmptyIndex", func(t *testing.T) {
		createIndex(t, base, "empty", 2, 0)
		once := mustStart(t, testConfig(c.Addrs(), "empty"), newIDSink(), nil)
		once.wait(t, time.Minute)
		if !once.host.completed() {
			t.Fatalf("a once read of an empty index did not complete: %q", once.host.permanentErrors())
		}
		cfg := testConfig(c.Addrs(), "empty")
		cfg.Mode = ModeFollow
		cfg.PollInterval = 100 * time.Millisecond
		sink := newIDSink()
		mustStart(t, cfg, sink, nil)
		writeAt(t, base, "empty", time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC), "first")
		waitFor(t, 30*time.Second, func() bool { return sink.snapshot()["first"] == 1 })
	})

	// Follow mode and shards that refresh at different times: a document
	// written first, with the older @timestamp, becomes visible after a
	// newer one of another shard was read (refresh disabled on its index
	// makes the order certain). It is read, once.
	t.Run("FollowRefreshLag", func(t *testing.T) {
		for _, ix := range []string{"lag-a", "lag-b"} {
			st, b := httpDo(t, "PUT", base+"/"+ix, `{"settings":{"number_of_shards":1,"number_of_replicas":1},`+
				`"mappings":{"properties":{"@timestamp":{"type":"date"}}}}`)
			if st != 200 {
				t.Fatalf("create %s: %d %s", ix, st, b)
			}
		}
		if st, b := httpDo(t, "PUT", base+"/lag-a/_settings", `{"index.refresh_interval":"-1"}`); st != 200 {
			t.Fatalf("disable refresh: %d %s", st, b)
		}
		if err := c.WaitHealth(context.Background(), "green"); err != nil {
			t.Fatal(err)
		}
		t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
		if st, b := httpDo(t, "PUT", base+"/lag-a/_doc/old", tsDoc(t0)); st != 201 {
			t.Fatalf("index old: %d %s", st, b)
		}
		writeAt(t, base, "lag-b", t0.Add(time.Second), "new")
		cfg := testConfig(c.Addrs(), "lag-a", "lag-b")
		cfg.Mode = ModeFollow
		cfg.PollInterval = 100 * time.Millisecond
		sink := newIDSink()
		h := mustStart(t, cfg, sink, nil)
		waitFor(t, 30*time.Second, func() bool { return sink.snapshot()["new"] == 1 })
		if sink.snapshot()["old"] != 0 {
			t.Fatal("old is visible before its refresh: the scenario does not hold")
		}
		httpDo(t, "POST", base+"/lag-a/_refresh", "")
		waitFor(t, 30*time.Second, func() bool { return sink.snapshot()["old"] == 1 })
		settle(t, h)
		checkAllOnce(t, sink.snapshot(), []string{"old", "new"}, true)
		if h.logs.FilterMessageSnippet("refresh disabled").Len() != 1 {
			t.Error("the disabled refresh of lag-a was not warned about")
		}
	})

	// Issue 6 proof 3: a collector restarted with the file_storage
	// extension resumes from its checkpoints (the emulator version's
	// scenario and assertions, on a real index).
	t.Run("CheckpointResume", func(t *testing.T) {
		createIndex(t, base, "ckpt", 3, 1)
		if err := c.WaitHealth(context.Background(), "green"); err != nil {
			t.Fatal(err)
		}
		ids := seedForeign(t, base, "ckpt", 3000)
		id, exts := fileStorageOnDir(t.TempDir())
		checkpointResume(t, c.Addrs(), "ckpt", ids, 2, 100, id, exts)
	})

	// Issue 6 proof 4: a shard failure that is not a context loss. n is a
	// long in sf-num and a keyword in sf-kw; a range on n with a bound that
	// is not a number fails to parse on sf-num's shards only, so every
	// search answers HTTP 200 with those shards failed. The failure is
	// counted by its reason type and not retried; sf-kw's documents are all
	// delivered.
	t.Run("NonContextShardFailure", func(t *testing.T) {
		const mapping = `{"settings":{"number_of_shards":%d,"number_of_replicas":1},` +
			`"mappings":{"properties":{"@timestamp":{"type":"date"},"n":{"type":%q}}}}`
		for _, ix := range []struct {
			name, typ string
			shards    int
		}{{"sf-num", "long", 3}, {"sf-kw", "keyword", 2}} {
			if st, b := httpDo(t, "PUT", base+"/"+ix.name, fmt.Sprintf(mapping, ix.shards, ix.typ)); st != 200 {
				t.Fatalf("create %s: %d %s", ix.name, st, b)
			}
		}
		if err := c.WaitHealth(context.Background(), "green"); err != nil {
			t.Fatal(err)
		}
		seedForeign(t, base, "sf-num", 200)
		kwIDs := make([]string, 300)
		for i := range kwIDs {
			kwIDs[i] = fmt.Sprintf("kw-%04d", i)
		}
		t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
		bulkDocs(t, base, "sf-kw", kwIDs, func(i int) string {
			return fmt.Sprintf(`{"@timestamp":%q,"n":"x%04d"}`, t0.Add(time.Duration(i)*time.Millisecond).Format(time.RFC3339Nano), i)
		})
		const query = `{"range":{"n":{"gte":"a"}}}`

		// What the server does with this query: a partial success, the
		// numeric index's shards failed (grouped by cause).
		st, b := httpDo(t, "POST", base+"/sf-num,sf-kw/_search", `{"size":0,"query":`+query+`}`)
		var probe struct {
			Shards struct {
				Total, Successful, Failed int
				Failures                  []struct {
					Index  string `json:"index"`
					Reason struct {
						Type string `json:"type"`
					} `json:"reason"`
				} `json:"failures"`
			} `json:"_shards"`
		}
		if st != 200 || json.Unmarshal(b, &probe) != nil || probe.Shards.Failed != 3 || probe.Shards.Successful != 2 ||
			len(probe.Shards.Failures) == 0 || probe.Shards.Failures[0].Index != "sf-num" {
			t.Fatalf("the query does not fail on sf-num's shards only: HTTP %d %s", st, b)
		}
		reason := probe.Shards.Failures[0].Reason.Type
		if reason == "" || reason == "search_context_missing_exception" {
			t.Fatalf("failure reason %q: %s", reason, b)
		}
		t.Logf("server answer: HTTP 200, %d of %d shards failed with %s", probe.Shards.Failed, probe.Shards.Total, reason)

		cfg := testConfig(c.Addrs(), "sf-num", "sf-kw")
		cfg.Query = query
		cfg.Slices = 2
		cfg.PageSize = 50
		sink := newIDSink()
		h := mustStart(t, cfg, sink, nil)
		h.wait(t, time.Minute)
		if h.host.completed() {
			t.Fatal("completion reported although sf-num's shards were never read")
		}
		stats := h.r.Stats()
		if stats.ShardFailures[reason] < 1 || len(stats.ShardFailures) != 1 {
			t.Errorf("shard failures %v, want only %s", stats.ShardFailures, reason)
		}
		// Retried: every slice asked for its first page 1 + MaxRetries
		// times, with no context loss.
		if stats.Retries < int64(cfg.Slices)*pit.DefaultMaxRetries || stats.ContextLosses != 0 || stats.OpenPITs() != 0 {
			t.Errorf("stats %+v", stats)
		}
		if got := h.metric(t, "otelcol.opensearchbackfill.shard_failures", map[string]string{"reason": reason}); got != stats.ShardFailures[reason] {
			t.Errorf("shard_failures metric = %d, stats %d", got, stats.ShardFailures[reason])
		}
		perm := h.host.permanentErrors()
		if len(perm) != cfg.Slices {
			t.Fatalf("%d permanent errors, want one per slice: %q", len(perm), perm)
		}
		for _, msg := range perm {
			if !strings.Contains(msg, "[sf-num][") || !strings.Contains(msg, reason) || !strings.Contains(msg, "kept failing") {
				t.Errorf("permanent error %q does not name index, shard and reason", msg)
			}
		}
		if n := len(sink.snapshot()); n != 0 {
			t.Errorf("%d documents delivered from pages with failed shards", n)
		}
		t.Logf("stats: %+v", stats)
	})

	// Follow mode through a rolling restart of every node, with writes
	// before, during and after: every acknowledged document is read, none
	// twice.
	t.Run("FollowRollingRestart", func(t *testing.T) {
		st, b := httpDo(t, "PUT", base+"/roll", `{"settings":{"number_of_shards":3,"number_of_replicas":1},`+
			`"mappings":{"properties":{"@timestamp":{"type":"date"}}}}`)
		if st != 200 {
			t.Fatalf("create roll: %d %s", st, b)
		}
		if err := c.WaitHealth(context.Background(), "green"); err != nil {
			t.Fatal(err)
		}
		w := startWriter(t, c.Addrs(), "roll")
		waitFor(t, 10*time.Second, func() bool { return len(w.written()) > 0 })
		cfg := testConfig(c.Addrs(), "roll")
		cfg.Mode = ModeFollow
		cfg.Slices = 2
		cfg.PageSize = 200
		cfg.PollInterval = 200 * time.Millisecond
		cfg.ReadRetry.InitialInterval = 100 * time.Millisecond
		cfg.ReadRetry.MaxInterval = 2 * time.Second
		sink := newIDSink()
		h := mustStart(t, cfg, sink, nil)
		t.Cleanup(func() {
			if t.Failed() {
				for _, e := range h.logs.All() {
					t.Logf("receiver log: %s %v", e.Message, e.ContextMap())
				}
			}
		})
		waitFor(t, 30*time.Second, func() bool { return len(sink.snapshot()) > 0 })
		for i := range c.Len() {
			if err := c.Restart(i); err != nil {
				t.Fatal(err)
			}
			if err := c.WaitHealth(context.Background(), "green"); err != nil {
				t.Fatal(err)
			}
			t.Logf("node %d restarted; %d documents written, %d read", i, len(w.written()), len(sink.snapshot()))
		}
		time.Sleep(2 * time.Second)
		ids := w.stop()
		httpDo(t, "POST", base+"/roll/_refresh", "")
		waitFor(t, time.Minute, func() bool { return len(sink.snapshot()) >= len(ids) })
		settle(t, h)
		checkAllOnce(t, sink.snapshot(), ids, true)
		if n := h.logs.FilterMessageSnippet("Backfill slice failed").Len(); n != 0 {
			t.Fatalf("%d slices failed", n)
		}
		t.Logf("%d documents written and read once; read retries %d; stats %+v", len(ids), h.r.readRetries.Load(), h.r.Stats())
	})
}

// writer writes batches of documents stamped with the current time to
// index, rotating over the nodes and retrying failed items until they are
// acknowledged (create: an item already created answers 409).
type writer struct {
	mu    sync.Mutex
	ids   []string
	stopc chan struct{}
	done  chan struct{}
}

func startWriter(t *testing.T, addrs []string, index string) *writer {
	w := &writer{stopc: make(chan struct{}), done: make(chan struct{})}
	client := &http.Client{Timeout: 10 * time.Second}
	go func() {
		defer close(w.done)
		seq, node := 0, 0
		for {
			select {
			case <-w.stopc:
				return
			case <-time.After(100 * time.Millisecond):
			}
			batch := make([]string, 20)
			for i := range batch {
				batch[i] = fmt.Sprintf("w-%06d", seq)
				seq++
			}
			for len(batch) > 0 {
				now := time.Now()
				var b strings.Builder
				for i, id := range batch {
					fmt.Fprintf(&b, `{"create":{"_index":%q,"_id":%q}}`+"\n%s\n", index, id, tsDoc(now.Add(time.Duration(i)*time.Microsecond)))
				}
				node = (node + 1) % len(addrs)
				resp, err := client.Post(addrs[node]+"/_bulk", "application/x-ndjson", strings.NewReader(b.String()))
				if err != nil {
					time.Sleep(100 * time.Millisecond)
					continue
				}
				var r struct {
					Items []map[string]struct {
						ID     string `json:"_id"`
						Status int    `json:"status"`
					} `json:"items"`
				}
				err = json.NewDecoder(resp.Body).Decode(&r)
				resp.Body.Close()
				if err != nil || len(r.Items) != len(batch) {
					time.Sleep(100 * time.Millisecond)
					continue
				}
				var retry []string
				w.mu.Lock()
				for i, it := range r.Items {
					if st := it["create"].Status; st == 201 || st == 409 {
						w.ids = append(w.ids, batch[i])
					} else {
						retry = append(retry, batch[i])
					}
				}
				w.mu.Unlock()
				batch = retry
			}
		}
	}()
	t.Cleanup(func() { w.stop() })
	return w
}

func (w *writer) written() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.ids...)
}

// stop ends the writes and returns the acknowledged ids.
func (w *writer) stop() []string {
	select {
	case <-w.stopc:
	default:
		close(w.stopc)
	}
	<-w.done
	return w.written()
}

// realNodeWithPITs returns the node holding the most PIT contexts, from
// node stats (indices.search.point_in_time_current).
func realNodeWithPITs(c *cluster.Cluster) (int, error) {
	var r struct {
		Nodes map[string]struct {
			Name    string `json:"name"`
			Indices struct {
				Search struct {
					PITCurrent int `json:"point_in_time_current"`
				} `json:"search"`
			} `json:"indices"`
		} `json:"nodes"`
	}
	resp, err := httpGetJSON(c.Addr(0) + "/_nodes/stats/indices/search")
	if err != nil {
		return 0, err
	}
	if err := json.Unmarshal(resp, &r); err != nil {
		return 0, err
	}
	best, bestN := -1, 0
	for i := 0; i < c.Len(); i++ {
		for _, n := range r.Nodes {
			if n.Name == c.NodeName(i) && n.Indices.Search.PITCurrent > bestN {
				best, bestN = i, n.Indices.Search.PITCurrent
			}
		}
	}
	if best < 0 {
		return 0, fmt.Errorf("no node reports open PIT contexts: %s", resp)
	}
	return best, nil
}
