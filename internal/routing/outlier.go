package routing

import (
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Outliers ejects members (nodes, connections: anything named by a key)
// whose latency is a clear outlier against the median of the others, with
// the guardrails of gRPC's outlier detection. Latency is only used to
// remove clearly degraded members, never to rank healthy ones.
//
// Each sample is a latency divided by a cost the caller chooses (1 per
// search; items or KiB per bulk write), so that requests of different
// sizes compare. A member's samples form an exponentially weighted moving
// average. Every Interval, the averages of the members seen recently are
// compared with their median: a member whose average exceeds Ratio × the
// median, and the median by at least MinExcess, in Confirmations
// evaluations in a row (Blame may score members otherwise), is ejected for
// BaseEjectionTime × (its ejection count), capped at MaxEjectionTime. The
// count grows by one per ejection and shrinks by one per BaseEjectionTime
// spent back in service. Guardrails: only members with MinRequests samples
// since they were last reset are judged or count toward the median; no
// ejection when fewer than MinCandidates members would remain in service
// or when MaxEjectionPercent of the members are already out. A returning
// member starts a new average; with Sticky, an ejected member keeps being
// judged and returns only once it is no longer an outlier.
//
// Observe and Ejected are lock-free (atomics); the evaluation runs once
// per Interval inside the Observe call that finds it due, under a mutex.
type Outliers struct {
	cfg OutlierConfig

	mu      sync.Mutex // guards members (writes) and evaluations
	members atomic.Pointer[map[string]*OutlierMember]
	next    atomic.Int64 // unix ns of the next evaluation
	ejects  atomic.Int64 // ejections so far
}

// OutlierConfig configures Outliers. Zero fields take the defaults named.
type OutlierConfig struct {
	// Alpha is the weight of a new sample in the average (default 0.1).
	Alpha float64
	// Confirmations is the evaluations in a row a member must be an
	// outlier in before it is ejected (default 2): a burst of slow
	// samples does not eject.
	Confirmations int
	// Ratio: an average above Ratio × the median is an outlier (default 2).
	Ratio float64
	// MinExcess is the least excess over the median, in the sample unit
	// (ns per cost unit), for an ejection (default 1ms per unit).
	MinExcess float64
	// MinRequests is the samples since its last reset a member needs to
	// be judged and to count toward the median (default 20).
	MinRequests int64
	// MinCandidates: never eject when fewer members than this would stay
	// in service (default 2).
	MinCandidates int
	// MaxEjectionPercent caps the members out at once, as a percentage of
	// the members seen recently, rounded down (default 50).
	MaxEjectionPercent int
	// Interval between evaluations (default 1s). A member with no sample
	// for 10 intervals is not a candidate (it is not being used).
	Interval time.Duration
	// BaseEjectionTime (default 30s) and MaxEjectionTime (default 5m).
	BaseEjectionTime, MaxEjectionTime time.Duration
	// Now is the clock (default time.Now); tests swap it.
	Now func() time.Time

	// Sticky: an ejected member keeps its average (it is still observed:
	// a degraded node still serves the writes for its own primaries) and
	// returns to service only once its ejection time has passed and an
	// evaluation no longer finds it an outlier, or once it has had no
	// sample for 10 intervals (nothing is left to judge it by). Without
	// Sticky, a member returns when its ejection time has passed and
	// starts a new average.
	Sticky bool
	// Blame, if set, gives the score a member is judged by (in place of
	// its own average): avg returns a member's average and whether that
	// member has the volume to be judged (MinRequests samples, recent).
	// It returns false to fall back on the member's own average. The
	// median is taken over the scores of the members in service.
	Blame func(key string, avg func(key string) (float64, bool)) (float64, bool)
	// OnChange, if set, is called when a member is ejected (true) or
	// returns to service (false); from an evaluation, under the
	// detector's lock, or from the Observe that finds a non-sticky
	// member's ejection over. It must not call back into the detector.
	OnChange func(key string, ejected bool)
}

// OutlierMember is one member's state. Get it with Outliers.Member and
// keep it: Observe and Ejected take it without a lookup.
type OutlierMember struct {
	key          string
	ewma         atomic.Uint64 // math.Float64bits of the average; 0 before the first sample
	n            atomic.Int64  // samples since the last reset
	last         atomic.Int64  // unix ns of the last sample
	ejectedUntil atomic.Int64  // unix ns; 0 when in service

	// Guarded by Outliers.mu.
	mult     int   // ejection count, decays while in service
	decaySet int64 // unix ns since which mult decays
	strikes  int   // evaluations in a row found an outlier
}

// Key is the member's key.
func (m *OutlierMember) Key() string { return m.key }

// NewOutliers returns a detector with cfg's defaults applied.
func NewOutliers(cfg OutlierConfig) *Outliers {
	if cfg.Alpha <= 0 || cfg.Alpha > 1 {
		cfg.Alpha = 0.1
	}
	if cfg.Confirmations <= 0 {
		cfg.Confirmations = 2
	}
	if cfg.Ratio <= 1 {
		cfg.Ratio = 2
	}
	if cfg.MinExcess <= 0 {
		cfg.MinExcess = float64(time.Millisecond)
	}
	if cfg.MinRequests <= 0 {
		cfg.MinRequests = 20
	}
	if cfg.MinCandidates <= 0 {
		cfg.MinCandidates = 2
	}
	if cfg.MaxEjectionPercent <= 0 || cfg.MaxEjectionPercent > 100 {
		cfg.MaxEjectionPercent = 50
	}
	if cfg.Interval <= 0 {
		cfg.Interval = time.Second
	}
	if cfg.BaseEjectionTime <= 0 {
		cfg.BaseEjectionTime = 30 * time.Second
	}
	if cfg.MaxEjectionTime < cfg.BaseEjectionTime {
		cfg.MaxEjectionTime = max(5*time.Minute, cfg.BaseEjectionTime)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	o := &Outliers{cfg: cfg}
	empty := map[string]*OutlierMember{}
	o.members.Store(&empty)
	o.next.Store(cfg.Now().Add(cfg.Interval).UnixNano())
	return o
}

// Member returns the member of key, creating it.
func (o *Outliers) Member(key string) *OutlierMember {
	if m, ok := (*o.members.Load())[key]; ok {
		return m
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	cur := *o.members.Load()
	if m, ok := cur[key]; ok {
		return m
	}
	next := make(map[string]*OutlierMember, len(cur)+1)
	for k, v := range cur {
		next[k] = v
	}
	m := &OutlierMember{key: key}
	next[key] = m
	o.members.Store(&next)
	return m
}

// Forget drops a member (a node that left).
func (o *Outliers) Forget(key string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	cur := *o.members.Load()
	if _, ok := cur[key]; !ok {
		return
	}
	next := make(map[string]*OutlierMember, len(cur))
	for k, v := range cur {
		if k != key {
			next[k] = v
		}
	}
	o.members.Store(&next)
}

// Observe records a request of m that took d for cost units (cost ≤ 0
// counts as 1), and runs the evaluation when it is due.
func (o *Outliers) Observe(m *OutlierMember, d time.Duration, cost float64) {
	if cost <= 0 {
		cost = 1
	}
	now := o.cfg.Now().UnixNano()
	if u := m.ejectedUntil.Load(); !o.cfg.Sticky && u != 0 && now >= u && m.ejectedUntil.CompareAndSwap(u, 0) {
		m.reset() // back in service: judged afresh
		o.changed(m.key, false)
	}
	addEWMA(&m.ewma, float64(d)/cost, o.cfg.Alpha)
	m.n.Add(1)
	m.last.Store(now)
	if due := o.next.Load(); now >= due && o.next.CompareAndSwap(due, now+int64(o.cfg.Interval)) {
		o.evaluate(now)
	}
}

// addEWMA adds sample to the exponentially weighted average in v
// (math.Float64bits; 0: no sample yet, so the first sets it) with weight
// alpha, lock-free. The average is never stored as 0.
func addEWMA(v *atomic.Uint64, sample, alpha float64) {
	for {
		old := v.Load()
		avg := sample
		if old != 0 {
			f := math.Float64frombits(old)
			avg = f + alpha*(sample-f)
		}
		if avg == 0 {
			avg = math.SmallestNonzeroFloat64
		}
		if v.CompareAndSwap(old, math.Float64bits(avg)) {
			return
		}
	}
}

func (m *OutlierMember) reset() {
	m.ewma.Store(0)
	m.n.Store(0)
}

// Ejected reports whether m is out of service now.
func (o *Outliers) Ejected(m *OutlierMember) bool {
	u := m.ejectedUntil.Load()
	if o.cfg.Sticky {
		return u != 0 // an evaluation returns it
	}
	return u != 0 && o.cfg.Now().UnixNano() < u
}

func (o *Outliers) changed(key string, ejected bool) {
	if o.cfg.OnChange != nil {
		o.cfg.OnChange(key, ejected)
	}
}

// qualified reports whether m has the volume to be judged at now.
func (o *Outliers) qualified(m *OutlierMember, now int64) bool {
	return m.n.Load() >= o.cfg.MinRequests && m.last.Load() >= now-10*int64(o.cfg.Interval)
}

// scorer returns the function giving a member's score at an evaluation:
// its average, or what Blame makes of the averages.
func (o *Outliers) scorer(all map[string]*OutlierMember, now int64) func(*OutlierMember) float64 {
	if o.cfg.Blame == nil {
		return (*OutlierMember).Average
	}
	avg := func(key string) (float64, bool) {
		m, ok := all[key]
		if !ok {
			return 0, false
		}
		return m.Average(), o.qualified(m, now)
	}
	return func(m *OutlierMember) float64 {
		if v, ok := o.cfg.Blame(m.key, avg); ok {
			return v
		}
		return m.Average()
	}
}

// Average is m's current average in ns per cost unit (0 before a sample).
func (m *OutlierMember) Average() float64 { return math.Float64frombits(m.ewma.Load()) }

// Ejections is the number of ejections so far.
func (o *Outliers) Ejections() int64 { return o.ejects.Load() }

// Evaluate runs an evaluation now (Observe runs them every Interval).
func (o *Outliers) Evaluate() { o.evaluate(o.cfg.Now().UnixNano()) }

func (o *Outliers) evaluate(now int64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	stale := now - 10*int64(o.cfg.Interval)
	base := int64(o.cfg.BaseEjectionTime)
	var (
		candidates, out int
		judged, held    []*OutlierMember // held: sticky, due to return if no longer an outlier
		avgs            []float64
	)
	all := *o.members.Load()
	score := o.scorer(all, now)
	for _, m := range all {
		u := m.ejectedUntil.Load()
		if u != 0 && now >= u && o.cfg.Sticky && m.last.Load() >= stale {
			held = append(held, m)
		} else if u != 0 && now >= u && m.ejectedUntil.CompareAndSwap(u, 0) {
			m.reset()
			m.decaySet = now
			u = 0
			o.changed(m.key, false)
		}
		if u == 0 && m.mult > 0 && now-m.decaySet >= base {
			m.mult--
			m.decaySet = now
		}
		switch {
		case u != 0:
			candidates++
			out++
		case m.last.Load() >= stale:
			candidates++
			if m.n.Load() >= o.cfg.MinRequests {
				judged = append(judged, m)
				avgs = append(avgs, score(m))
			}
		}
	}
	if len(judged) < o.cfg.MinCandidates || len(judged) < 2 {
		return
	}
	slices.Sort(avgs)
	med := avgs[len(avgs)/2]
	if len(avgs)%2 == 0 {
		med = (avgs[len(avgs)/2-1] + med) / 2
	}
	outlier := func(v float64) bool { return v > o.cfg.Ratio*med && v-med >= o.cfg.MinExcess }
	for _, m := range held {
		if m.n.Load() >= o.cfg.MinRequests && !outlier(score(m)) {
			m.ejectedUntil.Store(0)
			m.decaySet = now
			m.strikes = 0
			out--
			o.changed(m.key, false)
		}
	}
	scores := make(map[*OutlierMember]float64, len(judged))
	for _, m := range judged {
		scores[m] = score(m)
	}
	slices.SortFunc(judged, func(a, b *OutlierMember) int {
		switch x, y := scores[a], scores[b]; {
		case x > y:
			return -1
		case x < y:
			return 1
		}
		return 0
	})
	maxOut := candidates * o.cfg.MaxEjectionPercent / 100
	inService := candidates - out
	for _, m := range judged {
		if !outlier(scores[m]) {
			m.strikes = 0
			continue
		}
		m.strikes++
		if m.strikes < o.cfg.Confirmations || out+1 > maxOut || inService-1 < o.cfg.MinCandidates {
			continue
		}
		m.strikes = 0
		m.mult++
		d := min(time.Duration(m.mult)*o.cfg.BaseEjectionTime, o.cfg.MaxEjectionTime)
		m.ejectedUntil.Store(now + int64(d))
		m.decaySet = now + int64(d) // the count decays from its return
		o.ejects.Add(1)
		out++
		inService--
		o.changed(m.key, true)
	}
}
