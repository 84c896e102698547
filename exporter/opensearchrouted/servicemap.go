package opensearchrouted

import (
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/opensearchrouted/opensearchrouted/internal/otelv1"
)

// serviceMap derives the otel-v1 service map from the spans exported: a
// parent span and a child span of another service make two edges
// (otelv1.EdgesOf), written to the service-map index with deterministic
// ids, so a repeat is a 409 (counted duplicate), never a second document.
//
// Pairs are found within a call and across calls: the recent spans are
// remembered (by trace and span id), and so are the recent children whose
// parent has not come yet (by their parent's id), both within size
// entries, the oldest forgotten first. An edge needs its trace's group
// (the root span's name): the edges of a trace whose root is not known
// yet wait for it (released by the first call that knows it), at most ttl,
// then go with an empty group.
//
// Edges to write wait in pending (at most maxPending; more are counted
// dropped) until the flush loop writes them; the ids written recently are
// remembered so that the same edge from the next trace is not sent again.
type serviceMap struct {
	mu   sync.Mutex
	now  func() time.Time
	size int
	ttl  time.Duration

	spans   map[spanKey]smSpan   // recent spans, by their own id
	orphans map[spanKey][]smSpan // recent children, by their parent's id
	order   []spanKey            // spans and orphans in insertion order (the fifo)
	head    int

	deferred map[pcommon.TraceID]*deferredEdges

	maxPending int
	pending    map[string]*pendingEdge // by edge id
	written    map[string]struct{}     // ids written recently
	writtenQ   []string
	// seen holds the pairs (with their group) whose edges are pending or
	// written: the same pair from the next trace costs one lookup, not
	// two edges and their hashes.
	seen  map[pairKey]struct{}
	seenQ []pairKey
}

// pairKey is what an edge pair's documents are made of.
type pairKey struct {
	parentService, childService, childName, group string
	parentKind, childKind                         ptrace.SpanKind
}

// maxOrphansPerParent bounds the children remembered for one parent that
// has not come (a fan-out of many children of one name makes the same
// edges anyway).
const maxOrphansPerParent = 256

type spanKey struct {
	trace pcommon.TraceID
	span  pcommon.SpanID
}

// smSpan is what an edge needs of a span.
type smSpan struct {
	service, name string
	kind          ptrace.SpanKind
	orphanOf      pcommon.SpanID // for orphans: the span's own id
}

type deferredEdges struct {
	pairs []smPair
	since time.Time
}

type smPair struct{ parent, child smSpan }

type pendingEdge struct {
	edge     otelv1.Edge
	attempts int
}

func newServiceMap(size, maxPending int, ttl time.Duration) *serviceMap {
	return &serviceMap{
		now: time.Now, size: size, ttl: ttl, maxPending: maxPending,
		spans:    map[spanKey]smSpan{},
		orphans:  map[spanKey][]smSpan{},
		deferred: map[pcommon.TraceID]*deferredEdges{},
		pending:  map[string]*pendingEdge{},
		written:  map[string]struct{}{},
		seen:     map[pairKey]struct{}{},
	}
}

// smCall is one call's spans for the service map.
type smCall struct {
	keys  []spanKey
	spans []smSpan
	local map[spanKey]int32
	// groups gives a trace's group name; ok false when its root is not
	// known.
	groups func(pcommon.TraceID) (name string, ok bool)
	// traceIDs are the call's traces.
	traceIDs []pcommon.TraceID
	pairs    []smPair
	traces   []pcommon.TraceID // per pair
}

// add records one span of the call (with its parent's id, empty for a
// root).
func (c *smCall) add(trace pcommon.TraceID, id, parent pcommon.SpanID, service string, span ptrace.Span) {
	if c.local == nil {
		c.local = map[spanKey]int32{}
	}
	k := spanKey{trace, id}
	c.local[k] = int32(len(c.keys))
	c.keys = append(c.keys, k)
	c.spans = append(c.spans, smSpan{service: service, name: span.Name(), kind: span.Kind(), orphanOf: parent})
}

func (c *smCall) reset() {
	c.keys, c.spans, c.pairs, c.traces, c.traceIDs = c.keys[:0], c.spans[:0], c.pairs[:0], c.traces[:0], nil
	clear(c.local)
	c.groups = nil
}

// observe pairs the call's spans with their parents (in the call, or
// remembered) and with the remembered children whose parent they are,
// remembers them, and queues the edges of the pairs across services
// (deferred while their trace's group is unknown). It returns the edges
// dropped because pending is full.
func (m *serviceMap) observe(c *smCall) (dropped int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	for i, k := range c.keys {
		child := c.spans[i]
		parent := child.orphanOf // the parent's span id
		if parent.IsEmpty() {
			continue
		}
		pk := spanKey{k.trace, parent}
		if j, ok := c.local[pk]; ok {
			m.pairLocked(c, k.trace, c.spans[j], child)
		} else if p, ok := m.spans[pk]; ok {
			m.pairLocked(c, k.trace, p, child)
		} else {
			o := child
			o.orphanOf = k.span
			if kids := m.orphans[pk]; len(kids) < maxOrphansPerParent {
				if len(kids) == 0 {
					m.order = append(m.order, pk)
				}
				m.orphans[pk] = append(kids, o)
			}
		}
	}
	for i, k := range c.keys {
		if kids, ok := m.orphans[k]; ok {
			for _, kid := range kids {
				m.pairLocked(c, k.trace, c.spans[i], kid)
			}
			delete(m.orphans, k)
		}
		s := c.spans[i]
		s.orphanOf = pcommon.SpanID{}
		if _, ok := m.spans[k]; !ok {
			m.order = append(m.order, k)
		}
		m.spans[k] = s
	}
	for len(m.spans)+len(m.orphans) > m.size && m.head < len(m.order) {
		k := m.order[m.head]
		m.order[m.head] = spanKey{}
		m.head++
		delete(m.spans, k)
		delete(m.orphans, k)
	}
	if m.head > 1024 && m.head*2 > len(m.order) {
		n := copy(m.order, m.order[m.head:])
		m.order, m.head = m.order[:n], 0
	}
	for i, p := range c.pairs {
		t := c.traces[i]
		if name, ok := c.groups(t); ok {
			dropped += m.queueLocked(p, name)
			continue
		}
		d, ok := m.deferred[t]
		if !ok {
			if len(m.deferred) >= m.size { // full: no group rather than no edge
				dropped += m.queueLocked(p, "")
				continue
			}
			d = &deferredEdges{since: now}
			m.deferred[t] = d
		}
		d.pairs = append(d.pairs, p)
	}
	// Deferred edges of traces whose group this call knows.
	for _, t := range c.traceIDs {
		d, ok := m.deferred[t]
		if !ok {
			continue
		}
		if name, ok := c.groups(t); ok {
			for _, p := range d.pairs {
				dropped += m.queueLocked(p, name)
			}
			delete(m.deferred, t)
		}
	}
	return dropped
}

// expireDeferred queues, with no group, the edges of the traces whose
// root has not come within ttl; it returns the edges dropped.
func (m *serviceMap) expireDeferred() (dropped int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	for t, d := range m.deferred {
		if now.Sub(d.since) >= m.ttl {
			for _, p := range d.pairs {
				dropped += m.queueLocked(p, "")
			}
			delete(m.deferred, t)
		}
	}
	return dropped
}

// pairLocked adds the pair (parent, child) of trace t to the call when
// their services differ.
func (m *serviceMap) pairLocked(c *smCall, t pcommon.TraceID, parent, child smSpan) {
	if parent.service == "" || child.service == "" || parent.service == child.service {
		return
	}
	c.pairs = append(c.pairs, smPair{parent, child})
	c.traces = append(c.traces, t)
}

// queueLocked queues the edges of p in a trace of group name, unless
// written recently or queued already; it returns how many were dropped
// (pending full).
func (m *serviceMap) queueLocked(p smPair, group string) (dropped int) {
	key := pairKey{p.parent.service, p.child.service, p.child.name, group, p.parent.kind, p.child.kind}
	if _, ok := m.seen[key]; ok {
		return 0
	}
	defer func() {
		if dropped > 0 {
			return // not all queued: the next such pair tries again
		}
		m.seen[key] = struct{}{}
		m.seenQ = append(m.seenQ, key)
		for len(m.seen) > m.size && len(m.seenQ) > 0 {
			delete(m.seen, m.seenQ[0])
			m.seenQ[0] = pairKey{}
			m.seenQ = m.seenQ[1:]
		}
	}()
	ps, cs := ptrace.NewSpan(), ptrace.NewSpan()
	ps.SetName(p.parent.name)
	ps.SetKind(p.parent.kind)
	cs.SetName(p.child.name)
	cs.SetKind(p.child.kind)
	for _, e := range otelv1.EdgesOf(ps, p.parent.service, cs, p.child.service, group) {
		id := e.ID()
		if _, ok := m.written[id]; ok {
			continue
		}
		if _, ok := m.pending[id]; ok {
			continue
		}
		if len(m.pending) >= m.maxPending {
			dropped++
			continue
		}
		m.pending[id] = &pendingEdge{edge: e}
	}
	return dropped
}

// take removes and returns up to max pending edges.
func (m *serviceMap) take(max int) []*pendingEdge {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]*pendingEdge, 0, min(max, len(m.pending)))
	for id, p := range m.pending {
		if len(out) == max {
			break
		}
		out = append(out, p)
		delete(m.pending, id)
	}
	return out
}

// done records the edges stored (written or already there): the next
// repeats are not sent.
func (m *serviceMap) done(ids []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range ids {
		if _, ok := m.written[id]; ok {
			continue
		}
		m.written[id] = struct{}{}
		m.writtenQ = append(m.writtenQ, id)
	}
	for len(m.written) > m.size && len(m.writtenQ) > 0 {
		delete(m.written, m.writtenQ[0])
		m.writtenQ[0] = ""
		m.writtenQ = m.writtenQ[1:]
	}
}

// retry puts back an edge whose write is to be tried again; false when it
// has had maxAttempts (the caller counts it failed, and calls forget).
func (m *serviceMap) retry(p *pendingEdge, maxAttempts int) bool {
	p.attempts++
	if p.attempts >= maxAttempts {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pending[p.edge.ID()] = p
	return true
}

// forget clears the pairs seen after an edge failed: the pairs that make
// it are queued again when they come again.
func (m *serviceMap) forget() {
	m.mu.Lock()
	defer m.mu.Unlock()
	clear(m.seen)
	m.seenQ = m.seenQ[:0]
}

// flushDeferred queues every deferred edge (with the group found since,
// else none) and returns how many were dropped: at shutdown nothing waits.
func (m *serviceMap) flushDeferred(groups func(pcommon.TraceID) (string, bool)) (dropped int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for t, d := range m.deferred {
		name, _ := groups(t)
		for _, p := range d.pairs {
			dropped += m.queueLocked(p, name)
		}
		delete(m.deferred, t)
	}
	return dropped
}

func (m *serviceMap) pendingLen() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.pending)
}
