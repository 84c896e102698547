package opensearchrouted

import (
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// groupStore is what the exporter remembers to give every otel-v1 span
// its trace group when the trace's root span is not in the same export
// call: the groups of recent roots, and the spans written without a group
// (index and _id), waiting for their root. Both are bounded: at most size
// roots for at most ttl each (the oldest evicted first), at most
// maxPending waiting spans, each waiting at most ttl for its root.
//
// A span written without its group waits; when its root arrives (resolve
// sees it) its trace becomes ready, and the fix-up takes it (takeReady),
// updates its spans in place and reports what it could not update
// (retryLater): nothing is forgotten without being counted unresolved.
//
// G is the group (otelv1.TraceGroup); the store only keeps it.
type groupStore[G any] struct {
	mu  sync.Mutex
	now func() time.Time

	ttl  time.Duration
	size int

	roots map[pcommon.TraceID]rootEntry[G]
	fifo  []fifoEntry // roots in insertion order, from head on
	head  int

	maxPending int
	pendingN   int // spans waiting or ready
	waiting    map[pcommon.TraceID]*waitingTrace[G]
	ready      []*waitingTrace[G] // root known, not yet taken
}

type rootEntry[G any] struct {
	g       G
	expires time.Time
}

type fifoEntry struct {
	id      pcommon.TraceID
	expires time.Time
}

// waitingTrace is one trace's spans written without their group.
type waitingTrace[G any] struct {
	trace    pcommon.TraceID
	spans    []docRef
	since    time.Time // when its first span was remembered
	group    G         // once ready
	ready    bool
	attempts int // fix-up passes that failed to update some of its spans
}

// docRef is where a document was written: its concrete index (not an
// alias: a rollover since must not send the update to the new index) and
// its _id.
type docRef struct{ index, id string }

func newGroupStore[G any](size int, ttl time.Duration, maxPending int) *groupStore[G] {
	return &groupStore[G]{
		now: time.Now, ttl: ttl, size: size, maxPending: maxPending,
		roots:   make(map[pcommon.TraceID]rootEntry[G]),
		waiting: make(map[pcommon.TraceID]*waitingTrace[G]),
	}
}

// groupSource says where a span's group came from in one call.
type groupSource uint8

const (
	groupNone   groupSource = iota // not known: written without, remembered
	groupInline                    // its root is in the same call
	groupCache                     // its root came in an earlier call
)

// callGroup is a trace's group for one call.
type callGroup[G any] struct {
	g   G
	src groupSource
}

// resolve completes one call's groups, under one lock: groups[i] is the
// group of trace traces[i], with src groupInline for the traces whose root
// is in the call (g set) and groupNone for the others. The call's roots are
// remembered (waking the spans that waited for them), and the others get
// their group from the roots remembered, if any (src groupCache).
func (s *groupStore[G]) resolve(traces []pcommon.TraceID, groups []callGroup[G]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.expireRootsLocked(now)
	for i, id := range traces {
		switch groups[i].src {
		case groupInline:
			s.putLocked(id, groups[i].g, now)
		case groupNone:
			if e, ok := s.roots[id]; ok && now.Before(e.expires) {
				groups[i] = callGroup[G]{e.g, groupCache}
			}
		}
	}
}

// putLocked remembers root id's group, evicting the oldest root when full.
// A root seen again keeps its place and expiry.
func (s *groupStore[G]) putLocked(id pcommon.TraceID, g G, now time.Time) {
	if e, ok := s.roots[id]; ok {
		e.g = g
		s.roots[id] = e
	} else {
		for len(s.roots) >= s.size && s.head < len(s.fifo) {
			s.popLocked()
		}
		exp := now.Add(s.ttl)
		s.roots[id] = rootEntry[G]{g, exp}
		s.fifo = append(s.fifo, fifoEntry{id, exp})
	}
	if w, ok := s.waiting[id]; ok && !w.ready {
		w.ready, w.group = true, g
		s.ready = append(s.ready, w)
	}
}

// popLocked forgets the oldest root (its fifo entry may be stale: the root
// expired and was dropped already).
func (s *groupStore[G]) popLocked() {
	f := s.fifo[s.head]
	s.fifo[s.head] = fifoEntry{}
	s.head++
	if e, ok := s.roots[f.id]; ok && e.expires.Equal(f.expires) {
		delete(s.roots, f.id)
	}
	if s.head > 1024 && s.head*2 > len(s.fifo) {
		n := copy(s.fifo, s.fifo[s.head:])
		clear(s.fifo[n:])
		s.fifo, s.head = s.fifo[:n], 0
	}
}

// expireRootsLocked forgets the roots older than ttl (the fifo is in
// expiry order).
func (s *groupStore[G]) expireRootsLocked(now time.Time) {
	for s.head < len(s.fifo) && !now.Before(s.fifo[s.head].expires) {
		s.popLocked()
	}
}

// remember records spans of trace id written without their group and
// returns how many it keeps; the rest (beyond maxPending) the caller
// counts unresolved. A trace whose root arrived meanwhile (another call
// resolved it after this one did) is ready at once.
func (s *groupStore[G]) remember(id pcommon.TraceID, spans []docRef) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := min(len(spans), s.maxPending-s.pendingN)
	if n <= 0 {
		return 0
	}
	w, ok := s.waiting[id]
	if !ok {
		w = &waitingTrace[G]{trace: id, since: s.now()}
		s.waiting[id] = w
		if e, ok := s.roots[id]; ok && s.now().Before(e.expires) {
			w.ready, w.group = true, e.g
			s.ready = append(s.ready, w)
		}
	}
	w.spans = append(w.spans, spans[:n]...)
	s.pendingN += n
	return n
}

// takeReady removes and returns ready traces, up to about max spans (at
// least one trace when any is ready).
func (s *groupStore[G]) takeReady(max int) []*waitingTrace[G] {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, n := 0, 0
	for k < len(s.ready) && (k == 0 || n+len(s.ready[k].spans) <= max) {
		n += len(s.ready[k].spans)
		k++
	}
	out := make([]*waitingTrace[G], k)
	copy(out, s.ready[:k])
	rest := copy(s.ready, s.ready[k:])
	clear(s.ready[rest:])
	s.ready = s.ready[:rest]
	for _, w := range out {
		delete(s.waiting, w.trace)
		s.pendingN -= len(w.spans)
	}
	return out
}

// retryLater puts back w with the spans a fix-up pass could not update
// yet. A trace that has failed maxAttempts passes is given up: the number
// of its spans is returned, for the caller to count unresolved.
func (s *groupStore[G]) retryLater(w *waitingTrace[G], spans []docRef, maxAttempts int) (dropped int) {
	if len(spans) == 0 {
		return 0
	}
	w.attempts++
	if w.attempts >= maxAttempts {
		return len(spans)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	w.spans = spans
	if prev, ok := s.waiting[w.trace]; ok {
		// More spans of the trace were remembered since it was taken.
		prev.spans = append(prev.spans, spans...)
		s.pendingN += len(spans)
		return 0
	}
	s.waiting[w.trace] = w
	s.pendingN += len(spans)
	s.ready = append(s.ready, w)
	return 0
}

// expireWaiting forgets the traces whose root has not arrived within ttl
// and returns how many spans they held (unresolved).
func (s *groupStore[G]) expireWaiting() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	n := 0
	for id, w := range s.waiting {
		if !w.ready && now.Sub(w.since) >= s.ttl {
			n += len(w.spans)
			s.pendingN -= len(w.spans)
			delete(s.waiting, id)
		}
	}
	return n
}

// pending is the number of spans waiting for their root or for the fix-up.
func (s *groupStore[G]) pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pendingN
}

// rootGroup is trace id's root's group, if remembered.
func (s *groupStore[G]) rootGroup(id pcommon.TraceID) (G, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.roots[id]
	return e.g, ok && s.now().Before(e.expires)
}

// drain forgets every span still waiting and returns how many there were
// (at shutdown: unresolved).
func (s *groupStore[G]) drain() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := s.pendingN
	clear(s.waiting)
	clear(s.ready)
	s.ready, s.pendingN = s.ready[:0], 0
	return n
}
