package opensearchrouted

import (
	"context"
	"errors"
	"sort"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/opensearchrouted/opensearchrouted/testbed/cluster"
)

// pushAll pushes ld, resending what comes back for retry as the
// collector's retry would (re-encoded), until it is all stored.
func pushAll(t *testing.T, e *osExporter, ld plog.Logs) {
	t.Helper()
	err := e.pushLogs(context.Background(), ld)
	for tries := 0; err != nil; tries++ {
		var le consumererror.Logs
		if !errors.As(err, &le) || tries > 50 {
			t.Fatalf("export: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
		err = e.pushLogs(context.Background(), le.Data())
	}
}

// testRealClusterSteering is TestRealCluster's steering part, on an index
// of 6 primaries (no replica: with 3 nodes and one replica every node has
// copies of 4 of the 6 shards, too many to steer around). With one node
// marked degraded, the documents written after the steering set starts
// land only in the other nodes' shards (the server's per-shard counts);
// after the set changes (another node degraded instead), a resend of the
// same records is answered 409 throughout: each is stored once.
func testRealClusterSteering(t *testing.T, c *cluster.Cluster) {
	const index, n = "steer-real", 3000
	base := c.Addr(0)
	createIndex(t, base, index, 6, 0)
	if code := httpJSON(t, "GET", base+"/_cluster/health/"+index+"?wait_for_status=green&timeout=60s", "", nil); code != 200 {
		t.Fatalf("%s not green: HTTP %d", index, code)
	}
	cfg := testConfig(c.Addrs())
	cfg.LogsIndex = index
	e, reader := startExporter(t, cfg, signalLogs)
	pushAll(t, e, steerLogs(0, 1, time.Now()))
	waitRouted(t, e, index)

	_, byNode := shardCopies(t, base, index)
	var names []string
	for name, shards := range byNode {
		if len(shards) == 2 {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	if len(names) < 2 {
		t.Fatalf("fewer than two nodes with two primaries each: %v", byNode)
	}
	slow, next := names[0], names[1]
	e.router.SetDegraded(routerNode(t, e.router, slow), true)
	pushAll(t, e, steerLogs(1, 1, time.Now()))
	waitSteering(t, e.steering, index)

	before, _ := shardCopies(t, base, index)
	data := steerLogs(1000, n, time.Now())
	pushAll(t, e, data)
	after, _ := shardCopies(t, base, index)
	checkAvoided(t, before, after, byNode[slow], slow, n)
	steered := sumMetric(t, reader, "otelcol.opensearchrouted.documents.steered", nil)
	if steered < n/6 {
		t.Fatalf("%d of %d documents steered", steered, n)
	}

	e.router.SetDegraded(routerNode(t, e.router, slow), false)
	e.router.SetDegraded(routerNode(t, e.router, next), true)
	dups0 := sumMetric(t, reader, "otelcol.opensearchrouted.documents", map[string]string{"outcome": "duplicate"})
	pushAll(t, e, data)
	dups := sumMetric(t, reader, "otelcol.opensearchrouted.documents", map[string]string{"outcome": "duplicate"}) - dups0
	bySeq, ids := storedSeqs(t, base, index)
	checkOnceIn(t, bySeq, 1000, n)
	if dups != n || len(ids) != n+2 {
		t.Fatalf("resend: %d answered 409 (want %d), %d documents stored (want %d)", dups, n, len(ids), n+2)
	}
	t.Logf("degraded %s (shards %s): %d of %d documents steered, none written to its shards; resent after %s was degraded instead: %d answered 409, each stored once",
		slow, ints(byNode[slow]), steered, n, next, dups)
}
