package opensearchbackfill

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

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
		checkAllOnce(t, sink.snapshot(), kwIDs, true)
		stats := h.r.Stats()
		if stats.ShardFailures[reason] < 1 || len(stats.ShardFailures) != 1 {
			t.Errorf("shard failures %v, want only %s", stats.ShardFailures, reason)
		}
		// Not retried: no PIT recreated or reopened, no search retried or
		// probed, no context loss.
		if stats.PITsOpened != int64(cfg.Slices) || stats.PITsRecreated != 0 || stats.ContextLosses != 0 ||
			stats.Retries != 0 || stats.Probes != 0 || stats.OpenPITs() != 0 {
			t.Errorf("stats %+v", stats)
		}
		if got := h.metric(t, "otelcol.opensearchbackfill.shard_failures", map[string]string{"reason": reason}); got != stats.ShardFailures[reason] {
			t.Errorf("shard_failures metric = %d, stats %d", got, stats.ShardFailures[reason])
		}
		// One log per failed response, one count per failure entry: the
		// server groups the identical failures of sf-num's shards into one
		// entry. Later pages may have none: once search_after is past
		// sf-num's newest @timestamp, its shards are skipped before the
		// query is parsed.
		logged := h.logs.FilterMessageSnippet("Shards failed for a reason other than context loss").All()
		if int64(len(logged)) != stats.ShardFailures[reason] {
			t.Errorf("%d shard failure logs for %d counted failures", len(logged), stats.ShardFailures[reason])
		}
		for _, e := range logged {
			if msg, _ := e.ContextMap()["error"].(string); !strings.Contains(msg, "[sf-num]") || !strings.Contains(msg, reason) {
				t.Errorf("logged error %q", msg)
			}
		}
		if !h.host.completed() {
			t.Error("completion not reported")
		}
		t.Logf("stats: %+v", stats)
	})
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
