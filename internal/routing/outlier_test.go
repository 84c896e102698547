package routing

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func newTestOutliers(cfg OutlierConfig) (*Outliers, *fakeClock) {
	clk := &fakeClock{t: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}
	cfg.Now = clk.now
	return NewOutliers(cfg), clk
}

// feed gives every member n samples of its latency, 10ms of clock apart.
func feed(o *Outliers, clk *fakeClock, n int, lat map[*OutlierMember]time.Duration) {
	for range n {
		for m, d := range lat {
			o.Observe(m, d, 1)
		}
		clk.add(10 * time.Millisecond)
	}
}

func members(o *Outliers, n int) []*OutlierMember {
	out := make([]*OutlierMember, n)
	for i := range out {
		out[i] = o.Member(fmt.Sprintf("n%d", i))
	}
	return out
}

func TestOutlierEjectsTheSlowMemberOnly(t *testing.T) {
	o, clk := newTestOutliers(OutlierConfig{})
	m := members(o, 3)
	feed(o, clk, 300, map[*OutlierMember]time.Duration{m[0]: time.Millisecond, m[1]: time.Millisecond, m[2]: 9 * time.Millisecond})
	if !o.Ejected(m[2]) || o.Ejected(m[0]) || o.Ejected(m[1]) {
		t.Fatalf("ejected: %v %v %v, want only n2", o.Ejected(m[0]), o.Ejected(m[1]), o.Ejected(m[2]))
	}
	if o.Ejections() != 1 {
		t.Fatalf("%d ejections", o.Ejections())
	}
	// Returns after the base ejection time, with a fresh average.
	clk.add(30 * time.Second)
	if o.Ejected(m[2]) {
		t.Fatal("still ejected after the ejection time")
	}
	o.Observe(m[2], time.Millisecond, 1)
	if avg := m[2].Average(); avg != float64(time.Millisecond) {
		t.Fatalf("average %v after the return, want a fresh 1ms", time.Duration(avg))
	}
}

// A burst of slow samples is an outlier in one evaluation only: not
// ejected.
func TestOutlierBurstNeedsConfirmation(t *testing.T) {
	o, clk := newTestOutliers(OutlierConfig{Alpha: 1}) // the average is the last sample
	m := members(o, 3)
	healthy := map[*OutlierMember]time.Duration{m[0]: time.Millisecond, m[1]: time.Millisecond, m[2]: time.Millisecond}
	feed(o, clk, 150, healthy)
	for range 10 { // one evaluation sees m[2] slow, the next healthy
		o.Observe(m[2], 20*time.Millisecond, 1)
		clk.add(time.Second)
		o.Observe(m[0], time.Millisecond, 1)
		o.Observe(m[1], time.Millisecond, 1)
		o.Observe(m[2], time.Millisecond, 1)
		clk.add(time.Second)
		o.Observe(m[0], time.Millisecond, 1)
	}
	if o.Ejections() != 0 {
		t.Fatalf("%d ejections for single-evaluation bursts", o.Ejections())
	}
}

func TestOutlierAllEquallySlowNothingEjected(t *testing.T) {
	o, clk := newTestOutliers(OutlierConfig{})
	m := members(o, 3)
	feed(o, clk, 300, map[*OutlierMember]time.Duration{m[0]: 9 * time.Millisecond, m[1]: 9 * time.Millisecond, m[2]: 9 * time.Millisecond})
	if o.Ejections() != 0 {
		t.Fatalf("%d ejections of equally slow members", o.Ejections())
	}
}

func TestOutlierGuardrails(t *testing.T) {
	t.Run("MinRequests", func(t *testing.T) {
		o, clk := newTestOutliers(OutlierConfig{MinRequests: 50, Interval: time.Millisecond})
		m := members(o, 3)
		feed(o, clk, 49, map[*OutlierMember]time.Duration{m[0]: time.Millisecond, m[1]: time.Millisecond, m[2]: 9 * time.Millisecond})
		if o.Ejections() != 0 {
			t.Fatal("judged below MinRequests")
		}
		// Two evaluations in a row with every member at MinRequests.
		feed(o, clk, 4, map[*OutlierMember]time.Duration{m[0]: time.Millisecond, m[1]: time.Millisecond, m[2]: 9 * time.Millisecond})
		if o.Ejections() != 1 {
			t.Fatal("not ejected at MinRequests")
		}
	})
	t.Run("MinCandidates", func(t *testing.T) {
		o, clk := newTestOutliers(OutlierConfig{})
		m := members(o, 2)
		feed(o, clk, 300, map[*OutlierMember]time.Duration{m[0]: time.Millisecond, m[1]: 50 * time.Millisecond})
		if o.Ejections() != 0 {
			t.Fatal("ejected below MinCandidates")
		}
	})
	t.Run("MaxEjectionPercent", func(t *testing.T) {
		o, clk := newTestOutliers(OutlierConfig{MaxEjectionPercent: 20})
		m := members(o, 6)
		lat := map[*OutlierMember]time.Duration{}
		for i, mm := range m {
			lat[mm] = time.Millisecond
			if i >= 4 {
				lat[mm] = 9 * time.Millisecond
			}
		}
		feed(o, clk, 300, lat)
		if o.Ejections() != 1 { // 20% of 6, rounded down
			t.Fatalf("%d ejected, want 1", o.Ejections())
		}
	})
	t.Run("MinExcess", func(t *testing.T) {
		o, clk := newTestOutliers(OutlierConfig{})
		m := members(o, 3)
		// 3× the median but only 200µs more: noise, not degradation.
		feed(o, clk, 300, map[*OutlierMember]time.Duration{m[0]: 100 * time.Microsecond, m[1]: 100 * time.Microsecond, m[2]: 300 * time.Microsecond})
		if o.Ejections() != 0 {
			t.Fatal("ejected for an excess below MinExcess")
		}
	})
	t.Run("Stale", func(t *testing.T) {
		o, clk := newTestOutliers(OutlierConfig{})
		m := members(o, 3)
		feed(o, clk, 300, map[*OutlierMember]time.Duration{m[0]: time.Millisecond, m[1]: 9 * time.Millisecond, m[2]: 9 * time.Millisecond})
		if o.Ejections() != 0 {
			t.Fatal("ejected")
		}
		// m[2] unused for long: not a candidate, m[1] now the outlier of
		// two, which MinCandidates protects.
		clk.add(time.Minute)
		feed(o, clk, 300, map[*OutlierMember]time.Duration{m[0]: time.Millisecond, m[1]: 9 * time.Millisecond})
		if o.Ejections() != 0 {
			t.Fatal("a stale member counted as a candidate")
		}
	})
}

// The ejection time grows with each ejection and the count decays while
// the member serves well.
func TestOutlierEjectionTimeGrowsAndDecays(t *testing.T) {
	o, clk := newTestOutliers(OutlierConfig{BaseEjectionTime: 10 * time.Second, MaxEjectionTime: 25 * time.Second})
	m := members(o, 3)
	slow := map[*OutlierMember]time.Duration{m[0]: time.Millisecond, m[1]: time.Millisecond, m[2]: 9 * time.Millisecond}
	ejectedFor := func() time.Duration {
		t.Helper()
		feed(o, clk, 300, slow) // 3s of samples: ejected within it
		if !o.Ejected(m[2]) {
			t.Fatal("not ejected")
		}
		start := clk.now()
		for o.Ejected(m[2]) {
			clk.add(100 * time.Millisecond)
		}
		return clk.now().Sub(start)
	}
	first := ejectedFor()
	second := ejectedFor()
	third := ejectedFor()
	if first > 10*time.Second || second <= 10*time.Second || second > 20*time.Second || third > 25*time.Second || third <= 20*time.Second {
		t.Fatalf("ejections lasted %v, %v, %v; want ≤10s, ≤20s, ≤25s (capped), each longer", first, second, third)
	}
	// Healthy for long: the count decays back to zero.
	healthy := map[*OutlierMember]time.Duration{m[0]: time.Millisecond, m[1]: time.Millisecond, m[2]: time.Millisecond}
	for range 40 {
		feed(o, clk, 100, healthy) // 1s each
	}
	if got := ejectedFor(); got > 10*time.Second {
		t.Fatalf("after 40s healthy the ejection lasted %v, want the base 10s", got)
	}
}

// A member whose requests are larger is compared per cost unit.
func TestOutlierCostNormalises(t *testing.T) {
	o, clk := newTestOutliers(OutlierConfig{})
	m := members(o, 3)
	for range 300 {
		o.Observe(m[0], time.Millisecond, 1)
		o.Observe(m[1], time.Millisecond, 1)
		o.Observe(m[2], 10*time.Millisecond, 10)
		clk.add(10 * time.Millisecond)
	}
	if o.Ejections() != 0 {
		t.Fatal("a member with ten times the work and ten times the latency was ejected")
	}
}

func TestOutlierConcurrent(t *testing.T) {
	o := NewOutliers(OutlierConfig{Interval: time.Millisecond, MinRequests: 5})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				m := o.Member(fmt.Sprintf("n%d", i%3))
				d := time.Millisecond
				if m.Key() == "n2" {
					d = 9 * time.Millisecond
				}
				o.Observe(m, d, 1)
				_ = o.Ejected(m)
				if g == 0 && i == 1000 {
					o.Forget("n1")
				}
			}
		}()
	}
	wg.Wait()
}

func BenchmarkOutlierObserve(b *testing.B) {
	o := NewOutliers(OutlierConfig{})
	m := members(o, 3)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			mm := m[i%3]
			o.Observe(mm, time.Millisecond, 1)
			_ = o.Ejected(mm)
			i++
		}
	})
}
