package routing

import (
	"math"
	"math/bits"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
)

// Shard steering: a document whose id the exporter chooses (a content id)
// can be given a salted id that lands in a shard with no copy on a
// degraded node. The choice must be the same on every attempt of a record
// (a retry after a lost answer must be refused as a duplicate, not stored
// again), while the degraded nodes and the shard copies change over time.
// So it is a pure function of the record and of a steering history: per
// write target, the sets of shards to avoid (SteerSet) from the moment the
// history learnt them on. A record is decided by the set in force at its
// own timestamp, which every attempt made after that timestamp sees alike:
// a set is only ever added with a start later than every "now" a
// SteerView has handed out.

// SaltSep separates a content id from its steering salt: "<id>~<k>". The
// content ids of ss4o.AppendID are URL-safe base64 with an optional
// "-<occurrence>", which never contain it, so a steered id never equals an
// unsteered one, and distinct salts give distinct ids.
const SaltSep = '~'

// MaxSalt is the largest salt tried: with at least half of the shards
// free, the chance that none of MaxSalt salts lands in one is at most
// 2^-16; such a document keeps its unsteered id.
const MaxSalt = 16

// AppendSalt appends the steering salt k (≥ 1) to an id.
func AppendSalt(dst []byte, k int) []byte {
	dst = append(dst, SaltSep)
	return strconv.AppendInt(dst, int64(k), 10)
}

// SteerSet is the set of shards of one target to steer away from, as it
// stood from From (unix ns) on: the shards having a copy (primary or
// replica, in any state) on a degraded node, under the layout of the
// target's write index at that time. Immutable.
type SteerSet struct {
	From   int64
	Layout Layout
	bad    []uint64 // bit s: shard s is avoided
	good   int      // shards not avoided
}

// Empty reports whether s avoids no shard (nil is empty).
func (s *SteerSet) Empty() bool { return s == nil || len(s.bad) == 0 }

// Bad reports whether shard is avoided.
func (s *SteerSet) Bad(shard int) bool {
	if s.Empty() || shard < 0 || shard/64 >= len(s.bad) {
		return false
	}
	return s.bad[shard/64]&(1<<(shard%64)) != 0
}

// Avoided is how many shards s avoids.
func (s *SteerSet) Avoided() int {
	if s.Empty() {
		return 0
	}
	return s.Layout.Shards - s.good
}

// Steers reports whether s steers at all: it avoids some shard and leaves
// at least half of them (and one) free. Fewer free shards would pile the
// target's whole write load onto them.
func (s *SteerSet) Steers() bool {
	return !s.Empty() && s.good >= 1 && 2*s.good >= s.Layout.Shards
}

// Salt returns the salt k for a document with this id (a content id, no
// routing): 0 when the id's own shard is not avoided or s does not steer,
// else the smallest k in [1, MaxSalt] such that id~k lands in a shard s
// does not avoid (0 when none does).
func (s *SteerSet) Salt(id string) int {
	if !s.Steers() || s.Layout.PartitionSize != 1 {
		return 0
	}
	var m saltHasher
	m.writeString(id)
	if m.or >= utf8RuneSelf {
		return s.saltSlow(id)
	}
	if !s.Bad(s.shardOf(m.sum())) {
		return 0
	}
	for k := 1; k <= MaxSalt; k++ {
		x := m // the id's state: only the salt is hashed
		x.writeByte(SaltSep)
		if k >= 10 {
			x.writeByte(byte('0' + k/10))
		}
		x.writeByte(byte('0' + k%10))
		if !s.Bad(s.shardOf(x.sum())) {
			return k
		}
	}
	return 0
}

// shardOf is the shard of a document whose routing hash is h (no
// partitioning).
func (s *SteerSet) shardOf(h int32) int {
	return floorMod(h, s.Layout.RoutingShards) / (s.Layout.RoutingShards / s.Layout.Shards)
}

const utf8RuneSelf = 0x80

// saltSlow is Salt for an id that is not ASCII (no content id is).
func (s *SteerSet) saltSlow(id string) int {
	if sh, err := s.Layout.Shard(id, ""); err != nil || !s.Bad(sh) {
		return 0
	}
	var stack [96]byte
	buf := append(stack[:0], id...)
	n := len(buf)
	for k := 1; k <= MaxSalt; k++ {
		buf = AppendSalt(buf[:n], k)
		sh, err := s.Layout.Shard(unsafe.String(&buf[0], len(buf)), "")
		if err == nil && !s.Bad(sh) {
			return k
		}
	}
	return 0
}

// saltHasher is Hash of an ASCII string fed in pieces (murmur3 x86_32,
// seed 0, over its UTF-16LE units), so that the salted ids "<id>~k"
// continue from the id's state instead of hashing it again. or collects
// the bytes: a byte ≥ 0x80 makes the sum meaningless.
type saltHasher struct {
	h, pend uint32 // the state; a character waiting for its pair
	odd     bool   // pend holds one
	n       int    // characters
	or      uint32
}

func (m *saltHasher) writeString(s string) {
	i := 0
	if m.odd && len(s) > 0 {
		m.writeByte(s[0])
		i = 1
	}
	h, or, start := m.h, m.or, i
	for ; i+1 < len(s); i += 2 { // two characters, one block
		a, b := uint32(s[i]), uint32(s[i+1])
		or |= a | b
		h ^= murmurK(a | b<<16)
		h = bits.RotateLeft32(h, 13)
		h = h*5 + 0xe6546b64
	}
	m.h, m.or, m.n = h, or, m.n+i-start
	if i < len(s) {
		m.writeByte(s[i])
	}
}

func (m *saltHasher) writeByte(c byte) {
	x := uint32(c)
	m.or |= x
	m.n++
	if !m.odd {
		m.pend, m.odd = x, true
		return
	}
	m.odd = false
	m.h ^= murmurK(m.pend | x<<16)
	m.h = bits.RotateLeft32(m.h, 13)
	m.h = m.h*5 + 0xe6546b64
}

func (m saltHasher) sum() int32 {
	h := m.h
	if m.odd {
		h ^= murmurK(m.pend)
	}
	h ^= uint32(2 * m.n)
	h ^= h >> 16
	h *= 0x85ebca6b
	h ^= h >> 13
	h *= 0xc2b2ae35
	h ^= h >> 16
	return int32(h)
}

func murmurK(k uint32) uint32 {
	k *= 0xcc9e2d51
	k = bits.RotateLeft32(k, 15)
	return k * 0x1b873593
}

func (s *SteerSet) same(o *SteerSet) bool {
	if s.Empty() || o.Empty() {
		return s.Empty() == o.Empty()
	}
	if s.Layout != o.Layout || len(s.bad) != len(o.bad) {
		return false
	}
	for i := range s.bad {
		if s.bad[i] != o.bad[i] {
			return false
		}
	}
	return true
}

// SteerHistory is one target's sets, by From. Immutable once published.
type SteerHistory struct {
	sets []*SteerSet
}

// at returns the set in force at ts: the last one with From ≤ ts (nil:
// none, the target avoided nothing then, or what it avoided is forgotten).
func (h *SteerHistory) at(ts int64) *SteerSet {
	if h == nil {
		return nil
	}
	i := sort.Search(len(h.sets), func(i int) bool { return h.sets[i].From > ts })
	if i == 0 {
		return nil
	}
	return h.sets[i-1]
}

func (h *SteerHistory) last() *SteerSet {
	if h == nil || len(h.sets) == 0 {
		return nil
	}
	return h.sets[len(h.sets)-1]
}

func (h *SteerHistory) steers() bool {
	if h == nil {
		return false
	}
	for _, s := range h.sets {
		if !s.Empty() {
			return true
		}
	}
	return false
}

// Risk says why another attempt of a record could choose another id than
// this one: the history cannot vouch for the decision.
type Risk uint8

const (
	// RiskNone: every attempt of the record within this history decides
	// alike.
	RiskNone Risk = iota
	// RiskFutureDated: the record's timestamp is later than now; a set
	// added before that timestamp would change its decision. Such a
	// record is decided by the latest set.
	RiskFutureDated
	// RiskBeforeStart: the record's timestamp is earlier than the start of
	// this history (the exporter's start): an earlier process or exporter
	// instance may have steered it (a persistent queue, a restart); this
	// one decides as if nothing was avoided then.
	RiskBeforeStart
	// RiskForgotten: the record's timestamp falls where sets were
	// forgotten (older than the horizon, or beyond the cap of sets per
	// target), so it is decided as if nothing was avoided then.
	RiskForgotten
	NumRisks
)

var riskNames = [NumRisks]string{"none", "future_dated", "before_start", "forgotten"}

func (r Risk) String() string {
	if r < NumRisks {
		return riskNames[r]
	}
	return "unknown"
}

// Steering limits.
const (
	// DefaultSteerHorizon is how long a set is kept after it stopped
	// being in force.
	DefaultSteerHorizon = 24 * time.Hour
	maxSteerTargets     = 1024
	maxSteerSets        = 256
)

// Steering is the steering history of one router's targets. Safe for
// concurrent use; View costs a few atomic operations and a clock read.
type Steering struct {
	topo    func() *Topology
	now     func() time.Time
	horizon time.Duration
	start   int64

	snap atomic.Pointer[steerSnap]
	hw   atomic.Int64 // the latest now a view handed out (or a set's From)

	// mu: a set's From is taken under mu.Lock, above hw; a view reads hw
	// and raises it under mu.RLock, so no view can hand out a now at or
	// after a From it does not see.
	mu   sync.RWMutex
	lost int64 // guarded by mu: sets were forgotten for timestamps before it
}

type steerSnap struct {
	topo     *Topology
	degraded []*Node // the degraded nodes of topo, in its order
	targets  map[string]*SteerHistory
	steers   bool // some history has a non-empty set
}

// NewSteering returns an empty history over the router's topology and its
// nodes' degraded marks, starting now.
func NewSteering(r *Router) *Steering {
	return newSteering(r.Topology, time.Now, DefaultSteerHorizon)
}

func newSteering(topo func() *Topology, now func() time.Time, horizon time.Duration) *Steering {
	st := &Steering{topo: topo, now: now, horizon: horizon}
	st.start = now().UnixNano()
	st.hw.Store(st.start)
	st.snap.Store(&steerSnap{targets: map[string]*SteerHistory{}})
	return st
}

// SteerView is one export call's look at the history: every record of the
// call is decided against the same sets and the same now.
type SteerView struct {
	st               *Steering
	s                *steerSnap
	now, start, lost int64
}

// View records any change of the degraded nodes or of the topology, then
// returns a view for one call.
func (st *Steering) View() *SteerView {
	t := st.topo()
	if s := st.snap.Load(); s.topo != t || !sameDegraded(t, s.degraded) {
		st.update(t)
	}
	st.mu.RLock()
	s := st.snap.Load()
	now := max(st.now().UnixNano(), st.hw.Load())
	for {
		hw := st.hw.Load()
		if hw >= now || st.hw.CompareAndSwap(hw, now) {
			break
		}
	}
	lost := st.lost
	st.mu.RUnlock()
	return &SteerView{st: st, s: s, now: now, start: st.start, lost: lost}
}

// Idle reports whether no record of the call can be steered: no node is
// degraded and no target's history avoids anything.
func (v *SteerView) Idle() bool { return !v.s.steers && len(v.s.degraded) == 0 }

// Risk classifies a record with timestamp ts (unix ns, > 0).
func (v *SteerView) Risk(ts int64) Risk {
	switch {
	case ts > v.now:
		return RiskFutureDated
	case ts < v.start:
		return RiskBeforeStart
	case ts < v.lost:
		return RiskForgotten
	}
	return RiskNone
}

// History returns target's history (nil: it avoids nothing). A target
// the history does not track while some node is degraded is tracked from
// now on: its sets start after this view's now, so this call and every
// later attempt of its records decide alike.
func (v *SteerView) History(target string) *SteerHistory {
	h, ok := v.s.targets[target]
	if !ok && len(v.s.degraded) > 0 && len(v.s.targets) < maxSteerTargets {
		v.st.track(target)
	}
	return h
}

// Set returns the set a record of h with timestamp ts (unix ns, > 0) is
// decided by: the one in force at ts, or the latest for a record dated
// after now.
func (v *SteerView) Set(h *SteerHistory, ts int64) *SteerSet {
	if ts > v.now {
		return h.last()
	}
	return h.at(ts)
}

// Span is Set, and the timestamps [from, to] whose records this view
// decides by the same set.
func (v *SteerView) Span(h *SteerHistory, ts int64) (s *SteerSet, from, to int64) {
	if ts > v.now {
		return h.last(), v.now + 1, math.MaxInt64
	}
	var i int
	if h != nil {
		i = sort.Search(len(h.sets), func(i int) bool { return h.sets[i].From > ts })
	}
	from, to = math.MinInt64, v.now
	if i > 0 {
		s, from = h.sets[i-1], h.sets[i-1].From
	}
	if h != nil && i < len(h.sets) {
		to = min(to, h.sets[i].From-1)
	}
	return s, from, to
}

// Now is the view's now (unix ns).
func (v *SteerView) Now() int64 { return v.now }

func sameDegraded(t *Topology, d []*Node) bool {
	j := 0
	if t != nil {
		for _, n := range t.Nodes {
			if n.Degraded() {
				if j >= len(d) || d[j] != n {
					return false
				}
				j++
			}
		}
	}
	return j == len(d)
}

func degradedOf(t *Topology) []*Node {
	var d []*Node
	if t != nil {
		for _, n := range t.Nodes {
			if n.Degraded() {
				d = append(d, n)
			}
		}
	}
	return d
}

// from returns a set start later than every now handed out; under mu.
func (st *Steering) from() int64 {
	at := max(st.now().UnixNano(), st.hw.Load()) + 1
	st.hw.Store(at)
	return at
}

// update records the sets of every tracked target under topology t and
// the nodes degraded now.
func (st *Steering) update(t *Topology) {
	st.mu.Lock()
	defer st.mu.Unlock()
	t = st.topo() // the latest: a call that read an older one must not bring it back
	s := st.snap.Load()
	if s.topo == t && sameDegraded(t, s.degraded) {
		return // another call recorded it
	}
	at := st.from()
	ns := &steerSnap{topo: t, degraded: degradedOf(t), targets: make(map[string]*SteerHistory, len(s.targets))}
	for name, h := range s.targets {
		h = st.extend(h, setFor(t, name, at), at)
		if h.steers() || len(ns.degraded) > 0 {
			ns.targets[name] = h
			ns.steers = ns.steers || h.steers()
		}
	}
	st.snap.Store(ns)
}

// track starts the history of target, under the snapshot's topology.
func (st *Steering) track(target string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	s := st.snap.Load()
	if _, ok := s.targets[target]; ok || len(s.targets) >= maxSteerTargets {
		return
	}
	at := st.from()
	ns := &steerSnap{topo: s.topo, degraded: s.degraded, targets: make(map[string]*SteerHistory, len(s.targets)+1), steers: s.steers}
	for k, h := range s.targets {
		ns.targets[k] = h
	}
	h := st.extend(&SteerHistory{}, setFor(s.topo, target, at), at)
	ns.targets[target] = h
	ns.steers = ns.steers || h.steers()
	st.snap.Store(ns)
}

// extend returns h with set appended when it differs from h's latest,
// without the sets no longer needed: those that stopped being in force
// more than the horizon ago, the oldest beyond maxSteerSets. Forgetting a
// non-empty set raises lost. Every update calls it, so a history that
// avoids nothing any more is dropped a horizon after its last change.
// Under mu.
func (st *Steering) extend(h *SteerHistory, set *SteerSet, at int64) *SteerHistory {
	add := !set.same(h.last()) && (len(h.sets) > 0 || !set.Empty())
	cutoff := at - int64(st.horizon)
	if !add && (len(h.sets) < 2 || h.sets[1].From >= cutoff) {
		return h
	}
	sets := append(make([]*SteerSet, 0, len(h.sets)+1), h.sets...)
	if add {
		if set == nil {
			set = &SteerSet{From: at}
		}
		sets = append(sets, set)
	}
	for len(sets) > 1 && (sets[1].From < cutoff || len(sets) > maxSteerSets) {
		if !sets[0].Empty() {
			st.lost = max(st.lost, sets[1].From)
		}
		sets = sets[1:]
	}
	if len(sets) == 1 && sets[0].Empty() {
		sets = nil // avoids nothing from its start on, nothing before: nothing
	}
	return &SteerHistory{sets: sets}
}

// setFor is target's set under t from at on: nil when it avoids nothing,
// or when t does not know it or the shard of a document does not follow
// from its id (an alias with index_routing, a partitioned index).
func setFor(t *Topology, target string, at int64) *SteerSet {
	if t == nil {
		return nil
	}
	tg, ok := t.targets[target]
	if !ok || tg.routing != "" || tg.index.Layout.PartitionSize != 1 {
		return nil
	}
	idx := tg.index
	n := idx.Layout.Shards
	bad := make([]uint64, (n+63)/64)
	avoided := 0
	for i, sh := range idx.Shards {
		if onDegraded(sh) {
			bad[i/64] |= 1 << (i % 64)
			avoided++
		}
	}
	if avoided == 0 {
		return nil
	}
	return &SteerSet{From: at, Layout: idx.Layout, bad: bad, good: n - avoided}
}

// onDegraded reports whether a copy of sh is on a degraded node.
func onDegraded(sh Shard) bool {
	if sh.Primary.Node != nil && sh.Primary.Node.Degraded() {
		return true
	}
	for _, r := range sh.Replicas {
		if r.Node != nil && r.Node.Degraded() {
			return true
		}
	}
	return false
}

// ShardsOnDegraded lists the shards of target's write index having a copy
// on a degraded node, as t knows them (for tests and diagnostics).
func (t *Topology) ShardsOnDegraded(target string) []int {
	s := setFor(t, target, 0)
	var out []int
	if s != nil {
		for w, word := range s.bad {
			for word != 0 {
				b := bits.TrailingZeros64(word)
				out = append(out, w*64+b)
				word &^= 1 << b
			}
		}
	}
	return out
}
