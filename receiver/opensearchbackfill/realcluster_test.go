package opensearchbackfill

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/opensearchrouted/opensearchrouted/testbed/cluster"
)

// TestRealCluster proves the receiver against real OpenSearch (one 3-node
// cluster for the package): the exporter→receiver round trip with the
// default sort, and a node holding PIT contexts killed and restarted in the
// middle of a 4-slice read.
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
