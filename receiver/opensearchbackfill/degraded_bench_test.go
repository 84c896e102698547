package opensearchbackfill

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opensearchrouted/opensearchrouted/internal/pit"
	"github.com/opensearchrouted/opensearchrouted/internal/routing"
	"github.com/opensearchrouted/opensearchrouted/testbed/ossim"
)

// BenchmarkDegradedNode reads an index of 400 documents (3 shards, 1
// replica, 3 emulated nodes, every search 1 ms) with 4 slices through the
// receiver's node selection, in three cases side by side: all nodes
// healthy; one node 8 ms ± 2 ms slower on every search, without and with
// outlier ejection. Each case has its own emulated cluster; one op reads
// once in each case, one after the other, so that the load of a shared
// machine weighs on the three alike. A read is 4 PITs opened, read to the
// end, deleted. The selectors and detectors live across ops, as in a
// running receiver; each case first reads for 2 s untimed.
func BenchmarkDegradedNode(b *testing.B) {
	type benchCase struct {
		name     string
		read     func() int64
		out      *routing.Outliers
		elapsed  time.Duration
		docs     int64
		degraded bool
	}
	setup := func(name string, degraded, eject bool) *benchCase {
		c := ossim.StartT(b, ossim.Options{Nodes: 3, NoHopLatency: true, NoHTTPCompression: true})
		createIndex(b, c.Addr(0), "events", 3, 1)
		if err := c.WaitGreen(5 * time.Second); err != nil {
			b.Fatal(err)
		}
		seedForeign(b, c.Addr(0), "events", 400)
		for i := range c.Len() {
			if err := c.SetSearchLatency(i, time.Millisecond, 0); err != nil {
				b.Fatal(err)
			}
		}
		if degraded {
			if err := c.SetSearchLatency(2, 9*time.Millisecond, 2*time.Millisecond); err != nil {
				b.Fatal(err)
			}
		}
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
		router, err := routing.New(routing.Options{Client: client, Seeds: c.Addrs(), RefreshInterval: time.Second})
		if err != nil {
			b.Fatal(err)
		}
		router.Start()
		b.Cleanup(router.Close)
		bc := &benchCase{name: name, degraded: degraded}
		if eject {
			cfg := createDefaultConfig().OutlierDetection
			cfg.Interval = 100 * time.Millisecond
			bc.out = cfg.detector()
		}
		sel := newReadSelector(router, c.Addrs(), bc.out)
		sel.want([]string{"events"})
		bc.read = func() int64 {
			var docs atomic.Int64
			var wg sync.WaitGroup
			for s := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					p, err := pit.Open(context.Background(), pit.Options{
						Client: client, Selector: sel, Indices: []string{"events"},
						Sort: json.RawMessage(`[{"_id":"asc"}]`), PageSize: 10,
						Slice: &pit.Slice{ID: s, Max: 4}, Preference: sel.preference,
					})
					if err != nil {
						b.Error(err)
						return
					}
					defer p.Close(context.Background())
					for pg, err := range p.Pages(context.Background()) {
						if err != nil && pit.IsFatal(err) {
							b.Error(err)
							return
						}
						docs.Add(int64(len(pg.Hits)))
					}
				}()
			}
			wg.Wait()
			if n := docs.Load(); n != 400 {
				b.Fatalf("%s: read %d documents, want 400", name, n)
			}
			return docs.Load()
		}
		return bc
	}
	cases := []*benchCase{
		setup("healthy", false, true),
		setup("degraded-no-ejection", true, false),
		setup("degraded-ejection", true, true),
	}
	for warm := time.Now(); time.Since(warm) < 2*time.Second; {
		for _, bc := range cases {
			bc.read()
		}
	}
	if cases[2].out.Ejections() == 0 {
		b.Fatal("the degraded node was not ejected during the warm-up")
	}
	b.ResetTimer()
	for range b.N {
		for _, bc := range cases {
			start := time.Now()
			bc.docs += bc.read()
			bc.elapsed += time.Since(start)
		}
	}
	b.StopTimer()
	rate := func(bc *benchCase) float64 { return float64(bc.docs) / bc.elapsed.Seconds() }
	for _, bc := range cases {
		b.ReportMetric(rate(bc), bc.name+"-docs/s")
	}
	b.ReportMetric(rate(cases[2])/rate(cases[0]), "ejection/healthy")
	b.ReportMetric(rate(cases[1])/rate(cases[0]), "no-ejection/healthy")
	b.ReportMetric(float64(cases[0].out.Ejections()), "healthy-ejections")
}
