package opensearchrouted

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumererror"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/opensearchrouted/opensearchrouted/internal/routing"
	"github.com/opensearchrouted/opensearchrouted/testbed/ossim"
)

const slowIndex = "slow-logs"

type slowRig struct {
	sim    *ossim.Cluster
	e      *osExporter
	reader *sdkmetric.ManualReader
	logs   *observer.ObservedLogs
	seq    atomic.Int64
	size   int // records per call
}

// startSlowRig: the emulator with 6 nodes, an index of 6 primaries + 1
// replica, a shard service time of perItem per item, calls of size
// records, and an exporter whose degraded detection returns a recovered
// node after 2s (other settings default). Calls are small (a few records
// per node) and the service time long, so that the emulator's own CPU
// cost, about tenfold under the race detector and more on a busy machine,
// stays below the latencies compared.
func startSlowRig(t *testing.T, perItem time.Duration, size int, mod func(*Config)) *slowRig {
	t.Helper()
	sim := ossim.StartT(t, ossim.Options{Nodes: 6, DefaultShards: 6, DefaultReplicas: 1, ServicePerItem: perItem, NoHTTPCompression: true})
	cfg := testConfig(sim.Addrs())
	cfg.LogsIndex = slowIndex
	cfg.Routing.DegradedDetection.BaseEjectionTime = 2 * time.Second
	if mod != nil {
		mod(cfg)
	}
	e, reader, logs := startObserved(t, cfg, signalLogs)
	rig := &slowRig{sim: sim, e: e, reader: reader, logs: logs, size: size}
	rig.push(t)
	waitRouted(t, e, slowIndex)
	if err := sim.WaitGreen(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	return rig
}

// push exports one call of new records.
func (r *slowRig) push(t *testing.T) {
	from := int(r.seq.Add(int64(r.size))) - r.size
	if err := r.e.pushLogs(context.Background(), makeLogs(from, r.size)); err != nil {
		t.Errorf("push: %v", err)
	}
}

// load pushes, one call after the other, for d or until until() holds
// (the emulator then is not short of CPU: its latency is its service time).
func (r *slowRig) load(t *testing.T, d time.Duration, until func() bool) time.Duration {
	start := time.Now()
	stop := start.Add(d)
	var wg sync.WaitGroup
	var done atomic.Bool
	for range 1 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !done.Load() && time.Now().Before(stop) {
				r.push(t)
				if until != nil && until() {
					done.Store(true)
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start)
}

// node is the router's node for emulator node i.
func (r *slowRig) node(t *testing.T, i int) *routing.Node {
	for _, n := range r.e.router.Topology().Nodes {
		if n.URL() == r.sim.Addr(i) {
			return n
		}
	}
	t.Fatalf("emulator node %d not in the topology", i)
	return nil
}

func (r *slowRig) latencies(t *testing.T) string {
	var sb strings.Builder
	for i := range r.sim.Len() {
		fmt.Fprintf(&sb, " %d:%v", i, time.Duration(r.e.router.WriteLatency(r.node(t, i))))
	}
	return sb.String()
}

func (r *slowRig) degraded(t *testing.T) []int {
	var out []int
	for i := range r.sim.Len() {
		if r.node(t, i).Degraded() {
			out = append(out, i)
		}
	}
	return out
}

// separation is the slow node's average write latency over the median of
// the others'.
func (r *slowRig) separation(t *testing.T, slow int) float64 {
	var others []float64
	for i := range r.sim.Len() {
		if i != slow {
			others = append(others, r.e.router.WriteLatency(r.node(t, i)))
		}
	}
	sort.Float64s(others)
	return r.e.router.WriteLatency(r.node(t, slow)) / others[len(others)/2]
}

func (r *slowRig) checkStoredOnce(t *testing.T) {
	t.Helper()
	if got, want := count(t, r.sim.Addr(0), slowIndex), int(r.seq.Load()); got != want {
		t.Fatalf("stored %d documents, want %d", got, want)
	}
}

const degradedLog = "OpenSearch node degraded: its bulk requests are slow"

// One node 4× slower (its primary and its replica writes): marked degraded
// within seconds, alone (the node whose primary has its replica there is
// slowed too, but is not marked), exported as node.state 3 with a log
// line; unmarked after it recovers; nothing marked when every node is
// equally slow. Every record is stored once.
func TestDegradedNodeSlownessEmulator(t *testing.T) {
	for _, by := range []string{NormalizeByItem, NormalizeByKiB} {
		t.Run(by, func(t *testing.T) {
			r := startSlowRig(t, 3*time.Millisecond, 36, func(c *Config) { c.Routing.DegradedDetection.NormalizeBy = by })
			const slow = 2
			if err := r.sim.SetSlowness(slow, 4); err != nil {
				t.Fatal(err)
			}
			took := r.load(t, 20*time.Second, func() bool { return r.node(t, slow).Degraded() })
			if got := r.degraded(t); fmt.Sprint(got) != "[2]" {
				t.Fatalf("after %v of 4× slowness: degraded %v, want [2]; latencies%s", took, got, r.latencies(t))
			}
			t.Logf("4× slowness, latency per %s: marked after %v, separation %.2f× the median", by, took.Round(100*time.Millisecond), r.separation(t, slow))
			name := r.node(t, slow).Name()
			if v := sumMetric(t, r.reader, "otelcol.opensearchrouted.node.state", map[string]string{"node": name}); v != 3 {
				t.Errorf("node.state of %s = %d, want 3", name, v)
			}
			checkDegradedLogs(t, r.logs, name)

			if err := r.sim.SetSlowness(slow, 1); err != nil {
				t.Fatal(err)
			}
			took = r.load(t, 20*time.Second, func() bool { return !r.node(t, slow).Degraded() })
			if got := r.degraded(t); len(got) != 0 {
				t.Fatalf("%v after recovery: degraded %v", took, got)
			}
			t.Logf("unmarked %v after recovery", took.Round(100*time.Millisecond))

			for i := range r.sim.Len() {
				if err := r.sim.SetSlowness(i, 4); err != nil {
					t.Fatal(err)
				}
			}
			before := r.logs.FilterMessage(degradedLog).Len()
			r.load(t, 5*time.Second, nil)
			if got := r.degraded(t); len(got) != 0 {
				t.Fatalf("every node equally slow: degraded %v", got)
			}
			if n := r.logs.FilterMessage(degradedLog).Len() - before; n != 0 {
				t.Fatalf("every node equally slow: %d nodes marked meanwhile", n)
			}
			r.checkStoredOnce(t)
		})
	}
}

// One node with +8ms ± 2ms on every request it serves (client requests and
// the replica writes sent to it), with small calls (low volume, where
// latency dominates): marked, alone; unmarked after the delay is gone.
func TestDegradedNodeLatencyEmulator(t *testing.T) {
	r := startSlowRig(t, 200*time.Microsecond, 12, nil)
	const slow = 4
	if err := r.sim.SetLatency(slow, 8*time.Millisecond, 2*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	took := r.load(t, 20*time.Second, func() bool { return r.node(t, slow).Degraded() })
	if got := r.degraded(t); fmt.Sprint(got) != "[4]" {
		t.Fatalf("after %v of +8ms: degraded %v, want [4]; latencies%s", took, got, r.latencies(t))
	}
	t.Logf("+8ms ± 2ms: marked after %v, separation %.2f× the median", took.Round(100*time.Millisecond), r.separation(t, slow))
	if err := r.sim.SetLatency(slow, 0, 0); err != nil {
		t.Fatal(err)
	}
	took = r.load(t, 20*time.Second, func() bool { return !r.node(t, slow).Degraded() })
	if got := r.degraded(t); len(got) != 0 {
		t.Fatalf("%v after the delay is gone: degraded %v", took, got)
	}
	r.checkStoredOnce(t)
}

// A blackholed node with no request timeout: the call returns at
// bulk.call_timeout, its records on that node handed back retryable
// (call_deadline_exceeded, counted retried); sent again once the node
// answers, every record is stored exactly once.
func TestCallDeadlineBoundsACallEmulator(t *testing.T) {
	sim := ossim.StartT(t, ossim.Options{Nodes: 3, NoHopLatency: true, DefaultShards: 3, DefaultReplicas: -1})
	cfg := testConfig(sim.Addrs())
	cfg.LogsIndex = slowIndex
	cfg.Timeout = 0 // no request timeout: only the call's deadline ends a silent request
	cfg.Bulk.CallTimeout = 2 * time.Second
	e, reader := startExporter(t, cfg, signalLogs)
	if err := e.pushLogs(context.Background(), makeLogs(0, 30)); err != nil {
		t.Fatal(err)
	}
	waitRouted(t, e, slowIndex)
	if err := sim.Blackhole(1, true); err != nil {
		t.Fatal(err)
	}
	const n = 600
	ld := makeLogs(30, n)
	start := time.Now()
	err := e.pushLogs(context.Background(), ld)
	took := time.Since(start)
	if took < 2*time.Second || took > 3*time.Second {
		t.Fatalf("the call took %v, want about bulk.call_timeout (2s)", took)
	}
	var le consumererror.Logs
	if !errors.As(err, &le) || consumererror.IsPermanent(err) {
		t.Fatalf("want a retryable error with the records to retry, got %v", err)
	}
	if !strings.Contains(err.Error(), errTypeCallDeadline) {
		t.Errorf("error does not say %s: %v", errTypeCallDeadline, err)
	}
	retry := le.Data()
	k := retry.LogRecordCount()
	if k == 0 || k == n {
		t.Fatalf("%d of %d handed back: node 1 holds a third of the shards", k, n)
	}
	if got := sumMetric(t, reader, "otelcol.opensearchrouted.documents", map[string]string{"outcome": "retried"}); got != int64(k) {
		t.Errorf("retried counter %d, want %d", got, k)
	}
	if got := count(t, sim.Addr(0), slowIndex); got != 30+n-k {
		t.Fatalf("stored %d before the retry, want %d", got, 30+n-k)
	}
	if err := sim.Blackhole(1, false); err != nil {
		t.Fatal(err)
	}
	if err := e.pushLogs(context.Background(), retry); err != nil {
		t.Fatalf("retry: %v", err)
	}
	if got := count(t, sim.Addr(0), slowIndex); got != 30+n {
		t.Fatalf("stored %d after the retry, want %d", got, 30+n)
	}
}

// checkDegradedLogs: the degraded warning was logged for node name (once,
// or again after an unmarking: a node whose latency hovers near the
// threshold may be marked more than once), and for no other node.
func checkDegradedLogs(t *testing.T, logs *observer.ObservedLogs, name string) {
	t.Helper()
	all := logs.FilterMessage(degradedLog)
	mine := all.FilterField(zap.String("node", name)).Len()
	if mine == 0 || mine != all.Len() {
		t.Errorf("%d degraded log lines for %s, %d in all", mine, name, all.Len())
	}
}
