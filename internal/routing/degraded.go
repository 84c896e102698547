package routing

import (
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// DegradedConfig configures the write-latency detector that marks nodes
// degraded (NodeDegraded).
type DegradedConfig struct {
	// Enabled turns the detector on.
	Enabled bool
	// PerKiB normalises a sub-bulk's latency by its body in KiB instead of
	// by its items.
	PerKiB bool
	// Outliers holds the thresholds and guardrails (Sticky, Blame and
	// OnChange are set by the router). Zero fields take the defaults of
	// NewOutliers, except MinExcess: 10µs per item (or per KiB).
	Outliers OutlierConfig
}

// DefaultDegradedMinExcess is the least excess over the median, per item
// or per KiB, for a node to be marked degraded: a few times the per-item
// indexing cost of a healthy node, so that a fixed delay spread over a
// large sub-bulk (which costs the pipeline next to nothing) is not one.
const DefaultDegradedMinExcess = 10 * time.Microsecond

// writeDetector feeds routed sub-bulk latencies to an Outliers detector
// keyed by node id and marks its ejections with SetDegraded.
//
// A sub-bulk to a node holding primaries waits for their replicas too
// (replication is synchronous), so a healthy node whose primaries have a
// replica on a slow node is slow as well. A node is therefore judged by
// its blame: the lowest average among the nodes whose sub-bulks it takes
// part in (its own, and those of the primaries it holds a replica of). A
// slow node is in every slow stream; a healthy one is also in a fast one.
type writeDetector struct {
	r      *Router
	perKiB bool
	out    *Outliers
	nodes  sync.Map // node id → *Node, the nodes observed

	partners atomic.Pointer[partnerMap]
}

// partnerMap is, for one topology snapshot, the node ids whose routed
// sub-bulks each node takes part in.
type partnerMap struct {
	topo *Topology
	of   map[string][]string
}

func newWriteDetector(r *Router, cfg DegradedConfig) *writeDetector {
	if !cfg.Enabled {
		return nil
	}
	d := &writeDetector{r: r, perKiB: cfg.PerKiB}
	oc := cfg.Outliers
	if oc.MinExcess <= 0 {
		oc.MinExcess = float64(DefaultDegradedMinExcess)
	}
	oc.Sticky = true
	oc.Blame = d.blame
	oc.OnChange = d.changed
	if oc.Now == nil {
		oc.Now = func() time.Time { return r.now() } // tests swap r.now
	}
	d.out = NewOutliers(oc)
	return d
}

// ObserveWrite records a routed sub-bulk sent to n (every item's primary
// on n) that took elapsed from its send to its answer (not its wait for
// the window), with items items in a body of bytes bytes. Only successful
// requests should be observed. It does nothing when detection is off.
func (r *Router) ObserveWrite(n *Node, elapsed time.Duration, items int, bytes int64) {
	d := r.writes
	if d == nil || n == nil || items <= 0 {
		return
	}
	if _, ok := d.nodes.Load(n.ID()); !ok {
		d.nodes.Store(n.ID(), n)
	}
	cost := float64(items)
	if d.perKiB {
		cost = float64(bytes) / 1024
	}
	d.out.Observe(d.out.Member(n.ID()), elapsed, cost)
}

// WriteLatency is n's average routed write latency in ns per item (or per
// KiB), 0 before a sample or with detection off.
func (r *Router) WriteLatency(n *Node) float64 {
	if r.writes == nil {
		return 0
	}
	return r.writes.out.Member(n.ID()).Average()
}

// changed marks a node degraded or not as the detector ejects it or
// returns it.
func (d *writeDetector) changed(id string, ejected bool) {
	if v, ok := d.nodes.Load(id); ok {
		d.r.SetDegraded(v.(*Node), ejected)
	}
}

// revive forgets n's write latency and degraded mark: a node back from
// dead is judged afresh.
func (d *writeDetector) revive(n *Node) {
	if d == nil {
		return
	}
	d.out.Forget(n.ID())
	d.r.SetDegraded(n, false)
}

// blame is the lowest average among the qualified streams id takes part
// in; false when none is qualified.
func (d *writeDetector) blame(id string, avg func(string) (float64, bool)) (float64, bool) {
	best, ok := math.Inf(1), false
	for _, p := range d.partnersOf(id) {
		if v, q := avg(p); q && v < best {
			best, ok = v, true
		}
	}
	return best, ok
}

func (d *writeDetector) partnersOf(id string) []string {
	t := d.r.topo.Load()
	pm := d.partners.Load()
	if pm == nil || pm.topo != t {
		pm = &partnerMap{topo: t, of: partners(t)}
		d.partners.Store(pm)
	}
	if p, ok := pm.of[id]; ok {
		return p
	}
	return []string{id}
}

// partners maps each node id to the ids of the nodes holding primaries it
// has a copy of (itself included), over every index of t.
func partners(t *Topology) map[string][]string {
	out := map[string][]string{}
	if t == nil {
		return out
	}
	add := func(n, p *Node) {
		if n == nil || p == nil {
			return
		}
		for _, x := range out[n.ID()] {
			if x == p.ID() {
				return
			}
		}
		out[n.ID()] = append(out[n.ID()], p.ID())
	}
	for _, n := range t.Nodes {
		add(n, n)
	}
	for _, idx := range t.Indices {
		for _, s := range idx.Shards {
			p := s.Primary.Node
			for _, c := range s.Replicas {
				add(c.Node, p)
			}
		}
	}
	return out
}
