package opensearchrouted

import (
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// smTestSpan adds span id (parent pid, 0 for none) of trace t to c.
func smTestSpan(c *smCall, t pcommon.TraceID, id, pid byte, service, name string, kind ptrace.SpanKind) {
	sp := ptrace.NewSpan()
	sp.SetName(name)
	sp.SetKind(kind)
	var parent pcommon.SpanID
	if pid != 0 {
		parent = pcommon.SpanID{pid}
	}
	c.add(t, pcommon.SpanID{id}, parent, service, sp)
}

func groupsKnown(names map[pcommon.TraceID]string) func(pcommon.TraceID) (string, bool) {
	return func(t pcommon.TraceID) (string, bool) {
		n, ok := names[t]
		return n, ok
	}
}

// Pairs across services make two edges each, found within a call, with a
// parent from an earlier call, and with a child from an earlier call; the
// same edge is queued once and, once written, not again.
func TestServiceMapPairs(t *testing.T) {
	m := newServiceMap(100, 100, time.Minute)
	tr := tid(1)
	known := groupsKnown(map[pcommon.TraceID]string{tr: "GET /"})

	// Call 1: the root (a) and its client span (b); cart's server span
	// (d, child of c) whose parent c comes later.
	c1 := &smCall{groups: known, traceIDs: []pcommon.TraceID{tr}}
	smTestSpan(c1, tr, 0xa, 0, "frontend", "GET /", ptrace.SpanKindServer)
	smTestSpan(c1, tr, 0xb, 0xa, "frontend", "call cart", ptrace.SpanKindClient)
	smTestSpan(c1, tr, 0xd, 0xc, "payment", "charge", ptrace.SpanKindServer)
	if d := m.observe(c1); d != 0 || m.pendingLen() != 0 {
		t.Fatalf("call 1: dropped %d, %d pending; want none (no pair across services yet)", d, m.pendingLen())
	}
	// Call 2: c (cart, child of b from call 1, parent of d from call 1).
	c2 := &smCall{groups: known, traceIDs: []pcommon.TraceID{tr}}
	smTestSpan(c2, tr, 0xc, 0xb, "cart", "POST /cart", ptrace.SpanKindServer)
	m.observe(c2)
	if n := m.pendingLen(); n != 4 {
		t.Fatalf("%d edges pending, want 4 (b→c and c→d, two each)", n)
	}
	got := m.take(10)
	var ids []string
	services := map[string]int{}
	for _, p := range got {
		ids = append(ids, p.edge.ID())
		services[p.edge.ServiceName]++
		if p.edge.TraceGroupName != "GET /" {
			t.Errorf("edge %+v: group %q", p.edge, p.edge.TraceGroupName)
		}
	}
	if services["frontend"] != 1 || services["cart"] != 2 || services["payment"] != 1 {
		t.Fatalf("edges by service %v", services)
	}
	m.done(ids)
	// The same pairs in another trace of the same group: already written.
	tr2 := tid(2)
	c3 := &smCall{groups: groupsKnown(map[pcommon.TraceID]string{tr2: "GET /"}), traceIDs: []pcommon.TraceID{tr2}}
	smTestSpan(c3, tr2, 0xb, 0xa, "frontend", "call cart", ptrace.SpanKindClient)
	smTestSpan(c3, tr2, 0xc, 0xb, "cart", "POST /cart", ptrace.SpanKindServer)
	m.observe(c3)
	if n := m.pendingLen(); n != 0 {
		t.Fatalf("%d edges pending for pairs written already", n)
	}
}

// The edges of a trace whose root is unknown wait for it; a later call
// that knows the group releases them with it; past the ttl they go
// without one.
func TestServiceMapDeferred(t *testing.T) {
	m := newServiceMap(100, 100, time.Minute)
	now := time.Unix(1_700_000_000, 0)
	m.now = func() time.Time { return now }
	unknown := groupsKnown(nil)
	a, b := tid(1), tid(2)
	for _, tr := range []pcommon.TraceID{a, b} {
		c := &smCall{groups: unknown, traceIDs: []pcommon.TraceID{tr}}
		smTestSpan(c, tr, 0xb, 0xa, "frontend", "call cart", ptrace.SpanKindClient)
		smTestSpan(c, tr, 0xc, 0xb, "cart", "POST /cart", ptrace.SpanKindServer)
		m.observe(c)
	}
	if m.pendingLen() != 0 || len(m.deferred) != 2 {
		t.Fatalf("%d pending, %d deferred; want the edges deferred", m.pendingLen(), len(m.deferred))
	}
	// Trace a's root comes (a call holding a span of trace a knows it).
	c := &smCall{groups: groupsKnown(map[pcommon.TraceID]string{a: "GET /a"}), traceIDs: []pcommon.TraceID{a}}
	smTestSpan(c, a, 0xa, 0, "frontend", "GET /a", ptrace.SpanKindServer)
	m.observe(c)
	got := m.take(10)
	if len(got) != 2 || got[0].edge.TraceGroupName != "GET /a" {
		t.Fatalf("released %+v", got)
	}
	now = now.Add(time.Minute)
	if d := m.expireDeferred(); d != 0 {
		t.Fatalf("dropped %d", d)
	}
	got = m.take(10)
	if len(got) != 2 || got[0].edge.TraceGroupName != "" || len(m.deferred) != 0 {
		t.Fatalf("after the ttl: %+v, %d deferred", got, len(m.deferred))
	}
}

// Remembered spans and orphans stay within the size; queued edges within
// maxPending, every edge found beyond it counted dropped.
func TestServiceMapBounds(t *testing.T) {
	m := newServiceMap(50, 3, time.Minute)
	dropped := 0
	for i := 0; i < 40; i++ {
		tr := tid(i)
		c := &smCall{groups: groupsKnown(map[pcommon.TraceID]string{tr: "g"}), traceIDs: []pcommon.TraceID{tr}}
		smTestSpan(c, tr, 0xb, 0xa, "frontend", "call", ptrace.SpanKindClient)
		smTestSpan(c, tr, 0xc, 0xb, "svc-"+string(rune('a'+i%26)), "serve", ptrace.SpanKindServer)
		smTestSpan(c, tr, 0xe, 0xd, "orphan", "x", ptrace.SpanKindServer)
		dropped += m.observe(c)
	}
	if len(m.spans)+len(m.orphans) > 50 {
		t.Fatalf("%d spans + %d orphans remembered, size 50", len(m.spans), len(m.orphans))
	}
	if m.pendingLen() != 3 {
		t.Fatalf("%d pending, want the bound 3", m.pendingLen())
	}
	// 40 pairs, 2 edges each, over 26 services; the first 3 edges are
	// kept and their repeats (traces 26 and 27) are not counted again;
	// every other edge found is counted each time it is dropped.
	if want := 40*2 - 3 - 3; dropped != want {
		t.Fatalf("dropped %d, want %d", dropped, want)
	}
}
