package opensearchrouted

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opensearchrouted/opensearchrouted/internal/routing"
	"github.com/opensearchrouted/opensearchrouted/testbed/cluster"
	"github.com/opensearchrouted/opensearchrouted/testbed/tcpproxy"
)

// realSlowCall is the records per call of the real-cluster test: 4 per
// node, so that a delay per request is a clear share of each item's time.
const realSlowCall = 12

// TestRealClusterDegradedAndWarmup: real OpenSearch, 3 nodes, an index of
// 3 primaries + 1 replica; node 2 publishes as its HTTP address a
// delaying proxy in front of its own. (The transport port is not proxied:
// its published address must lead to the node while the cluster forms,
// before the test knows the node's port. Node 2's replica writes are
// therefore not delayed: it is slow only on the exporter's path to it.)
//   - +25ms ± 5ms in each direction (a clear slowdown against the real
//     cluster's own latency on a machine shared with other work, where a
//     4-record sub-bulk may take from 20 to 200ms): node 2 is marked
//     degraded, alone, and unmarked once the delay is gone.
//   - node 2 restarted while records flow: marked dead; brought back only
//     after its readiness check (GET / and its local cluster health naming
//     an elected cluster manager: on 2.19.6 HTTP starts once the node has
//     joined, so both pass together), its window starting again from 1.
//
// Every record is stored exactly once.
func TestRealClusterDegradedAndWarmup(t *testing.T) {
	proxy, err := tcpproxy.New("127.0.0.1:9") // replaced by node 2's own address below
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	proxy.Refuse.Store(true)
	_, port, _ := net.SplitHostPort(proxy.Addr())
	pport, _ := strconv.Atoi(port)
	c := cluster.Start(t, cluster.Options{Nodes: 3, PerNode: []cluster.NodeOptions{{}, {}, {HTTPPublishPort: pport}}})
	if err := proxy.SetBackends(hostPort(c.Addr(2))); err != nil {
		t.Fatal(err)
	}
	proxy.Refuse.Store(false)
	const index = "slow-real"
	createIndex(t, c.Addr(0), index, 3, 1)
	if err := c.WaitHealth(context.Background(), "green"); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(c.Addrs()[:2])
	cfg.LogsIndex = index
	cfg.Routing.DegradedDetection.BaseEjectionTime = 2 * time.Second
	e, reader, logs := startObserved(t, cfg, signalLogs)
	var seq atomic.Int64
	push := func(n int) {
		from := int(seq.Add(int64(n))) - n
		exportAll(t, e, from, n)
	}
	push(30)
	waitRouted(t, e, index)
	var slow *routing.Node
	for _, n := range e.router.Topology().Nodes {
		if n.URL() == proxy.URL() {
			slow = n
		}
	}
	if slow == nil {
		t.Fatal("no node publishes the proxy's address")
	}
	degraded := func() []string {
		var out []string
		for _, n := range e.router.Topology().Nodes {
			if n.Degraded() {
				out = append(out, n.Name())
			}
		}
		return out
	}
	loadUntil := func(d time.Duration, cond func() bool) time.Duration {
		start := time.Now()
		for time.Since(start) < d && !cond() {
			push(realSlowCall)
		}
		return time.Since(start)
	}
	latencies := func() map[string]time.Duration {
		lat := map[string]time.Duration{}
		for _, n := range e.router.Topology().Nodes {
			lat[n.Name()] = time.Duration(e.router.WriteLatency(n))
		}
		return lat
	}

	t.Run("slow node", func(t *testing.T) {
		if err := proxy.SetDelay(25*time.Millisecond, 5*time.Millisecond); err != nil {
			t.Fatal(err)
		}
		took := loadUntil(60*time.Second, slow.Degraded)
		if got := degraded(); fmt.Sprint(got) != fmt.Sprint([]string{slow.Name()}) {
			t.Fatalf("after %v: degraded %v, want [%s]; average latency per item %v", took, got, slow.Name(), latencies())
		}
		t.Logf("+25ms ± 5ms on node 2's HTTP path: marked after %v; average latency per item %v", took.Round(100*time.Millisecond), latencies())
		if v := sumMetric(t, reader, "otelcol.opensearchrouted.node.state", map[string]string{"node": slow.Name()}); v != 3 {
			t.Errorf("node.state %d, want 3", v)
		}
		checkDegradedLogs(t, logs, slow.Name())
		if err := proxy.SetDelay(0, 0); err != nil {
			t.Fatal(err)
		}
		took = loadUntil(60*time.Second, func() bool { return !slow.Degraded() })
		if got := degraded(); len(got) != 0 {
			t.Fatalf("%v after the delay is gone: degraded %v", took, got)
		}
		t.Logf("unmarked %v after the delay is gone", took.Round(100*time.Millisecond))
	})

	t.Run("restarted node", func(t *testing.T) {
		// The router's node for the restarted one: a topology refresh while
		// it is out of the cluster retires the old one, and its return is a
		// new one (nil while the router knows none).
		current := func() *routing.Node {
			for _, n := range e.router.Nodes() {
				if n.ID() == slow.ID() {
					return n
				}
			}
			return nil
		}
		alive := func() bool { n := current(); return n != nil && n.Alive() }
		restarted := make(chan error, 1)
		go func() { restarted <- c.Restart(2) }()
		for deadline := time.Now().Add(60 * time.Second); alive(); {
			if time.Now().After(deadline) {
				t.Fatal("the restarting node was never marked dead")
			}
			push(60)
		}
		for range 20 { // records flow while the node is away
			push(60)
		}
		if err := <-restarted; err != nil {
			t.Fatal(err)
		}
		// No load now: only the router's probes reach the node until it is
		// back, so its window is what it restarted with. The probes back
		// off while the node is away (up to 30s apart, seed 001).
		for deadline := time.Now().Add(120 * time.Second); !alive(); time.Sleep(20 * time.Millisecond) {
			if time.Now().After(deadline) {
				var h map[string]any
				st := httpJSON(t, "GET", proxy.URL()+"/_cluster/health?local=true", "", &h)
				t.Fatalf("the restarted node never came back (through the proxy its local health answers HTTP %d %v)", st, h)
			}
		}
		if cwnd, _, _, inFlight := current().Window().State(); cwnd != 1 || inFlight != 0 {
			t.Fatalf("back from dead: window %d, %d in flight", cwnd, inFlight)
		}
		var h struct {
			Discovered bool `json:"discovered_cluster_manager"`
		}
		if st := httpJSON(t, "GET", c.Addr(2)+"/_cluster/health?local=true", "", &h); st != 200 || !h.Discovered {
			t.Fatalf("the node's local health: HTTP %d, discovered_cluster_manager %v", st, h.Discovered)
		}
		for range 10 {
			push(60)
		}
	})

	if got, want := count(t, c.Addr(0), index), int(seq.Load()); got != want {
		t.Fatalf("stored %d, want %d", got, want)
	}
}
