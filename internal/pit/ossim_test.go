package pit_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opensearchrouted/opensearchrouted/internal/pit"
	"github.com/opensearchrouted/opensearchrouted/testbed/ossim"
)

// These tests run the Paginator against the emulator (testbed/ossim):
// real HTTP nodes whose PIT contexts die with them.

func call(t *testing.T, method, url, body string) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || bytes.Contains(b, []byte(`"errors":true`)) {
		t.Fatalf("%s %s: %d %s", method, url, resp.StatusCode, b[:min(len(b), 300)])
	}
}

// seedCluster writes n documents d00000.. into index with timestamps that
// repeat (so the _id tiebreaker matters).
func seedCluster(t *testing.T, base, index string, n int) {
	t.Helper()
	call(t, "PUT", base+"/"+index, `{"settings":{"index":{"number_of_shards":3,"number_of_replicas":1}}}`)
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "{\"index\":{\"_index\":%q,\"_id\":\"d%05d\"}}\n", index, i)
		fmt.Fprintf(&b, "{\"@timestamp\":%q,\"n\":%d}\n", t0.Add(time.Duration(i/4)*time.Second).Format(time.RFC3339), i)
	}
	call(t, "POST", base+"/_bulk", b.String())
	call(t, "POST", base+"/"+index+"/_refresh", "")
}

func checkAll(t *testing.T, seen map[string]int, n int) {
	t.Helper()
	missing, dup := 0, 0
	for i := range n {
		switch seen[fmt.Sprintf("d%05d", i)] {
		case 0:
			missing++
		case 1:
		default:
			dup++
		}
	}
	if missing > 0 || dup > 0 || len(seen) != n {
		t.Fatalf("%d distinct of %d: %d missing, %d emitted more than once", len(seen), n, missing, dup)
	}
}

func openContexts(c *ossim.Cluster) int64 {
	var open int64
	for _, s := range c.Stats() {
		open += s.PITContextsOpen
	}
	return open
}

func emulatorOpts(c *ossim.Cluster) pit.Options {
	return pit.Options{
		Endpoints: c.Addrs(),
		Indices:   []string{"logs"},
		PageSize:  150,
		Backoff:   func(int) time.Duration { return 5 * time.Millisecond },
		// Rolling restarts of two nodes: up to two recreations per slice.
		MaxRecreateAttempts: 4,
	}
}

// A rolling restart of two nodes during a 4-slice read: every document is
// emitted once, PITs are recreated and the snapshot breaks reported.
func TestEmulatorRollingRestartFourSlices(t *testing.T) {
	c := ossim.StartT(t, ossim.Options{Nodes: 3, NoHopLatency: true, DetectionDelay: 20 * time.Millisecond, RecoveryTime: 10 * time.Millisecond})
	const n = 6000
	seedCluster(t, c.Addr(0), "logs", n)

	var counters pit.Counters
	var mu sync.Mutex
	seen := map[string]int{}
	breaks, events := 0, 0
	restart := make(chan int, 2)
	var wg sync.WaitGroup
	for s := range 4 {
		o := emulatorOpts(c)
		o.Slice = &pit.Slice{ID: s, Max: 4}
		o.Counters = &counters
		o.OnSnapshotBreak = func(e pit.SnapshotBreakEvent) {
			mu.Lock()
			events++
			mu.Unlock()
			if e.OldPITID == e.NewPITID || e.Attempt < 1 {
				t.Errorf("event %+v", e)
			}
		}
		p, err := pit.Open(context.Background(), o)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			defer func() {
				if err := p.Close(context.Background()); err != nil {
					t.Errorf("close slice %d: %v", s, err)
				}
			}()
			pages := 0
			for pg, err := range p.Pages(context.Background()) {
				if pit.IsFatal(err) {
					t.Errorf("slice %d: %v", s, err)
					return
				}
				if err != nil && !errors.Is(err, pit.ErrSnapshotBreak) {
					t.Errorf("slice %d: unexpected %v", s, err)
				}
				mu.Lock()
				if errors.Is(err, pit.ErrSnapshotBreak) {
					breaks++
				}
				for _, h := range pg.Hits {
					seen[h.ID]++
				}
				mu.Unlock()
				pages++
				if s == 0 && (pages == 2 || pages == 5) {
					restart <- pages
					<-restart // wait for the restart to finish
				}
			}
		})
	}
	// The restarter: node 1 after slice 0's 2nd page, node 2 after its 5th
	// (once the cluster recovered, as a rolling restart does).
	go func() {
		for _, node := range []int{1, 2} {
			if _, ok := <-restart; !ok {
				return
			}
			if err := c.RestartNode(node); err != nil {
				t.Error(err)
			}
			if err := c.WaitGreen(10 * time.Second); err != nil {
				t.Error(err)
			}
			restart <- 0
		}
	}()
	wg.Wait()
	checkAll(t, seen, n)
	st := counters.Snapshot()
	if st.PITsRecreated < 1 || breaks != int(st.PITsRecreated) || events != int(st.PITsRecreated) {
		t.Errorf("recreated %d, breaks %d, events %d", st.PITsRecreated, breaks, events)
	}
	if st.OpenPITs() != 0 || st.PITCloseErrors != 0 || openContexts(c) != 0 {
		t.Errorf("PITs left open: %d by our count, %d contexts on the nodes", st.OpenPITs(), openContexts(c))
	}
	if st.HitsEmitted != n || st.ShardFailures["search_context_missing_exception"] == 0 {
		t.Errorf("stats %+v", st)
	}
	t.Logf("stats: %+v", st)
}

// A node stops (and leaves the cluster) mid-read, then comes back: the
// read goes on through the other nodes.
func TestEmulatorNodeStopsMidRead(t *testing.T) {
	c := ossim.StartT(t, ossim.Options{Nodes: 3, NoHopLatency: true, DetectionDelay: 20 * time.Millisecond, RecoveryTime: 10 * time.Millisecond})
	const n = 2000
	seedCluster(t, c.Addr(0), "logs", n)
	o := emulatorOpts(c)
	p, err := pit.Open(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	count := 0
	for h, err := range p.Hits(context.Background()) {
		if err != nil {
			t.Fatalf("after %d hits: %v", count, err)
		}
		seen[h.ID]++
		count++
		if count == 300 {
			if err := c.StopNode(1); err != nil {
				t.Fatal(err)
			}
		}
		if count == 1200 {
			if err := c.RestartNode(1); err != nil {
				t.Fatal(err)
			}
		}
	}
	checkAll(t, seen, n)
	st := p.Stats()
	if st.PITsRecreated < 1 {
		t.Errorf("stats %+v", st)
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if openContexts(c) != 0 {
		t.Errorf("%d PIT contexts left on the nodes", openContexts(c))
	}
	t.Logf("stats: %+v", st)
}
