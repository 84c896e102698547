package opensearchrouted

import (
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

type handClock struct{ t time.Time }

func (c *handClock) now() time.Time          { return c.t }
func (c *handClock) add(d time.Duration)     { c.t = c.t.Add(d) }
func tid(n int) pcommon.TraceID              { return pcommon.TraceID{byte(n >> 8), byte(n), 1} }
func refs(n int, prefix string) (r []docRef) { return refsFrom(0, n, prefix) }

func refsFrom(from, n int, prefix string) (r []docRef) {
	for i := from; i < from+n; i++ {
		r = append(r, docRef{"idx-000001", prefix + string(rune('a'+i%26)) + string(rune('a'+i/26))})
	}
	return r
}

// resolveMap is resolve over a map of the call's traces.
func resolveMap(s *groupStore[string], m map[pcommon.TraceID]callGroup[string]) {
	var ids []pcommon.TraceID
	var gs []callGroup[string]
	for id, g := range m {
		ids = append(ids, id)
		gs = append(gs, g)
	}
	s.resolve(ids, gs)
	for i, id := range ids {
		m[id] = gs[i]
	}
}

func newTestStore(size int, ttl time.Duration, maxPending int) (*groupStore[string], *handClock) {
	s := newGroupStore[string](size, ttl, maxPending)
	c := &handClock{t: time.Unix(1_700_000_000, 0)}
	s.now = c.now
	return s, c
}

// A call's own roots give their trace's spans the group inline; a later
// call's spans get it from the cache, until the root expires or is evicted.
func TestGroupStoreResolve(t *testing.T) {
	s, clock := newTestStore(2, time.Minute, 100)
	call := map[pcommon.TraceID]callGroup[string]{tid(1): {"root1", groupInline}, tid(2): {"", groupNone}}
	resolveMap(s, call)
	if call[tid(2)].src != groupNone {
		t.Fatalf("trace 2 has no root anywhere, got %+v", call[tid(2)])
	}
	later := map[pcommon.TraceID]callGroup[string]{tid(1): {}, tid(2): {}}
	resolveMap(s, later)
	if g := later[tid(1)]; g.src != groupCache || g.g != "root1" {
		t.Fatalf("trace 1 from the cache: got %+v", g)
	}
	// Two more roots: the oldest (trace 1) is evicted (size 2).
	resolveMap(s, map[pcommon.TraceID]callGroup[string]{tid(3): {"root3", groupInline}})
	resolveMap(s, map[pcommon.TraceID]callGroup[string]{tid(4): {"root4", groupInline}})
	again := map[pcommon.TraceID]callGroup[string]{tid(1): {}, tid(3): {}, tid(4): {}}
	resolveMap(s, again)
	if again[tid(1)].src != groupNone || again[tid(3)].g != "root3" || again[tid(4)].g != "root4" {
		t.Fatalf("after eviction: %+v", again)
	}
	if len(s.roots) != 2 {
		t.Fatalf("%d roots kept, want the size 2", len(s.roots))
	}
	clock.add(time.Minute)
	expired := map[pcommon.TraceID]callGroup[string]{tid(3): {}}
	resolveMap(s, expired)
	if expired[tid(3)].src != groupNone || len(s.roots) != 0 {
		t.Fatalf("after the ttl: %+v, %d roots", expired, len(s.roots))
	}
}

// Spans remembered without a group become ready when their root arrives,
// in either order (root resolved before or after they are remembered), and
// are taken once; what the store cannot keep or hold long enough is
// returned to be counted, never dropped silently.
func TestGroupStoreWaiting(t *testing.T) {
	s, clock := newTestStore(10, time.Minute, 5)
	if n := s.remember(tid(1), refs(3, "x")); n != 3 {
		t.Fatalf("kept %d of 3", n)
	}
	if n := s.remember(tid(2), refs(3, "y")); n != 2 {
		t.Fatalf("kept %d, want 2 (max_pending 5)", n)
	}
	if got := s.takeReady(100); len(got) != 0 {
		t.Fatalf("no root arrived, %d ready", len(got))
	}
	resolveMap(s, map[pcommon.TraceID]callGroup[string]{tid(1): {"root1", groupInline}})
	got := s.takeReady(100)
	if len(got) != 1 || got[0].group != "root1" || len(got[0].spans) != 3 {
		t.Fatalf("ready: %+v", got)
	}
	if s.pending() != 2 {
		t.Fatalf("pending %d, want 2", s.pending())
	}
	// A trace whose root is already known is ready as soon as remembered.
	resolveMap(s, map[pcommon.TraceID]callGroup[string]{tid(3): {"root3", groupInline}})
	s.remember(tid(3), refs(1, "z"))
	if got := s.takeReady(100); len(got) != 1 || got[0].group != "root3" {
		t.Fatalf("ready after a known root: %+v", got)
	}
	// Trace 2's root never comes: after the ttl, its spans are given up.
	clock.add(59 * time.Second)
	if n := s.expireWaiting(); n != 0 {
		t.Fatalf("expired %d before the ttl", n)
	}
	clock.add(time.Second)
	if n := s.expireWaiting(); n != 2 {
		t.Fatalf("expired %d, want trace 2's 2", n)
	}
	if s.pending() != 0 {
		t.Fatalf("pending %d after expiry", s.pending())
	}
}

// A trace whose fix-up failed comes back for the next pass, until it has
// failed fixup_attempts passes.
func TestGroupStoreRetryLater(t *testing.T) {
	s, _ := newTestStore(10, time.Minute, 100)
	s.remember(tid(1), refs(4, "x"))
	resolveMap(s, map[pcommon.TraceID]callGroup[string]{tid(1): {"root1", groupInline}})
	for pass := 1; pass <= 3; pass++ {
		got := s.takeReady(100)
		if len(got) != 1 {
			t.Fatalf("pass %d: %d ready", pass, len(got))
		}
		w := got[0]
		if pass == 1 && len(w.spans) != 4 || pass > 1 && len(w.spans) != 2 {
			t.Fatalf("pass %d: %d spans", pass, len(w.spans))
		}
		dropped := s.retryLater(w, w.spans[:2], 3)
		if pass < 3 && dropped != 0 || pass == 3 && dropped != 2 {
			t.Fatalf("pass %d: dropped %d", pass, dropped)
		}
	}
	if got := s.takeReady(100); len(got) != 0 || s.pending() != 0 {
		t.Fatalf("after giving up: %d ready, %d pending", len(got), s.pending())
	}
}

// takeReady bounds a pass by spans, but always takes one trace.
func TestGroupStoreTakeReadyBound(t *testing.T) {
	s, _ := newTestStore(100, time.Minute, 1000)
	for i := 1; i <= 5; i++ {
		s.remember(tid(i), refs(30, "x"))
		resolveMap(s, map[pcommon.TraceID]callGroup[string]{tid(i): {"r", groupInline}})
	}
	if got := s.takeReady(10); len(got) != 1 {
		t.Fatalf("took %d traces, want 1 (bigger than the bound)", len(got))
	}
	if got := s.takeReady(65); len(got) != 2 {
		t.Fatalf("took %d traces, want 2 (60 spans)", len(got))
	}
	if got := s.takeReady(1000); len(got) != 2 || s.pending() != 0 {
		t.Fatalf("took %d, pending %d", len(got), s.pending())
	}
}

// The root fifo stays bounded when roots keep coming.
func TestGroupStoreFifoBounded(t *testing.T) {
	s, clock := newTestStore(100, time.Second, 10)
	for i := 0; i < 20000; i++ {
		resolveMap(s, map[pcommon.TraceID]callGroup[string]{tid(i): {"r", groupInline}})
		if i%500 == 0 {
			clock.add(300 * time.Millisecond)
		}
	}
	if len(s.roots) > 100 || len(s.fifo)-s.head > 100 || len(s.fifo) > 3000 {
		t.Fatalf("roots %d, fifo %d (head %d)", len(s.roots), len(s.fifo), s.head)
	}
}
