package opensearchbackfill

import (
	"testing"
	"time"

	"github.com/opensearchrouted/opensearchrouted/testbed/ossim"
)

// degradedCluster is 3 emulated nodes whose searches take 1ms, an index
// of 3 shards with 1 replica and 40 documents. Answers are not compressed
// (http.compression: false): gzip on both sides would cost more than the
// latencies compared under the race detector.
func degradedCluster(t *testing.T) (*ossim.Cluster, []string) {
	c := ossim.StartT(t, ossim.Options{Nodes: 3, NoHopLatency: true, NoHTTPCompression: true})
	createIndex(t, c.Addr(0), "events", 3, 1)
	if err := c.WaitGreen(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	ids := seedForeign(t, c.Addr(0), "events", 40)
	for i := range c.Len() {
		if err := c.SetSearchLatency(i, time.Millisecond, 0); err != nil {
			t.Fatal(err)
		}
	}
	return c, ids
}

// followForever searches all the time, cheaply: follow mode polling
// every millisecond after the cursor (follow_lag 0, sort on _id), so that
// each poll is a PIT and one search that finds nothing new; the
// emulator's own cost stays well under the latencies compared, even under
// the race detector.
func followForever(c *ossim.Cluster) *Config {
	cfg := followConfig(c.Addrs(), "events")
	cfg.PollInterval = time.Millisecond
	cfg.FollowLag = 0
	cfg.Sort = `[{"_id":"asc"}]`
	cfg.Slices = 4
	cfg.PageSize = 5
	cfg.OutlierDetection.Interval = 100 * time.Millisecond
	cfg.OutlierDetection.BaseEjectionTime = 3 * time.Second
	cfg.OutlierDetection.MaxEjectionTime = 6 * time.Second
	return cfg
}

// searches counts the searches each node coordinated during d.
func searches(c *ossim.Cluster, d time.Duration) []int64 {
	before := make([]int64, c.Len())
	for i := range before {
		before[i] = c.CoordinatedSearches(i)
	}
	time.Sleep(d)
	out := make([]int64, c.Len())
	for i := range out {
		out[i] = c.CoordinatedSearches(i) - before[i]
	}
	return out
}

func share(counts []int64, i int) float64 {
	var total int64
	for _, n := range counts {
		total += n
	}
	if total == 0 {
		return 0
	}
	return float64(counts[i]) / float64(total)
}

// One node 8ms ± 2ms slower on every search: ejected, it then serves
// under 2 % of the searches and holds no PIT context; once it recovers it
// serves again within the ejection time.
func TestDegradedNodeEjected(t *testing.T) {
	c, ids := degradedCluster(t)
	if err := c.SetSearchLatency(2, 9*time.Millisecond, 2*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	cfg := followForever(c)
	sink := newIDSink()
	h := mustStart(t, cfg, sink, nil)
	out := h.r.rsel.out
	waitFor(t, 20*time.Second, func() bool { return out.Ejections() >= 1 })
	time.Sleep(200 * time.Millisecond) // searches sent before the ejection end
	var contexts int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				contexts = max(contexts, c.NodeStats(2).PITContextsOpen)
			}
		}
	}()
	n := searches(c, 1500*time.Millisecond)
	close(stop)
	<-sampled
	if s := share(n, 2); s >= 0.02 || n[0]+n[1] < 50 {
		t.Fatalf("after the ejection node 2 coordinated %.1f%% of the searches (%v)", 100*s, n)
	}
	if contexts != 0 {
		t.Errorf("node 2 held %d PIT contexts after its ejection: PITs are not created with a preference for the other nodes", contexts)
	}
	t.Logf("after the ejection: searches per node %v", n)

	// Recovery: back in service within the ejection time (3s, or 6s on a
	// second ejection), judged afresh.
	if err := c.SetSearchLatency(2, time.Millisecond, 0); err != nil {
		t.Fatal(err)
	}
	recovered := time.Now()
	base := c.CoordinatedSearches(2)
	waitFor(t, 6*time.Second, func() bool { return c.CoordinatedSearches(2) > base+20 })
	back := time.Since(recovered)
	if back > cfg.OutlierDetection.MaxEjectionTime+500*time.Millisecond {
		t.Fatalf("node 2 back after %v", back)
	}
	n = searches(c, 2*time.Second)
	if s := share(n, 2); s < 0.1 {
		t.Fatalf("after the recovery node 2 coordinated %.1f%% of the searches (%v)", 100*s, n)
	}
	t.Logf("node 2 served again %v after it recovered; searches per node %v", back.Round(time.Millisecond), n)
	if len(sink.snapshot()) != 40 {
		t.Fatalf("%d documents read", len(sink.snapshot()))
	}
	checkAllOnce(t, sink.snapshot(), ids, true)
}

// All nodes equally slow: nothing is ejected.
func TestEquallySlowNodesNotEjected(t *testing.T) {
	c, _ := degradedCluster(t)
	for i := range c.Len() {
		if err := c.SetSearchLatency(i, 9*time.Millisecond, 2*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	h := mustStart(t, followForever(c), newIDSink(), nil)
	n := searches(c, 3*time.Second)
	if e := h.r.rsel.out.Ejections(); e != 0 {
		t.Fatalf("%d ejections with every node equally slow (searches %v)", e, n)
	}
	for i := range n {
		if s := share(n, i); s < 0.2 {
			t.Errorf("node %d coordinated %.1f%% of the searches (%v)", i, 100*s, n)
		}
	}
}
