package routing

import (
	"math"
	"math/bits"
	"slices"
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
// its blame (see blame): a node slow at everything it does is in every
// slow stream, a healthy one is also in a fast one.
type writeDetector struct {
	r      *Router
	perKiB bool
	ratio  float64
	out    *Outliers
	nodes  sync.Map // node id → *Node, the nodes observed

	partners atomic.Pointer[partnerMap]

	// The latency per unit of the sub-bulks of the nodes not marked
	// degraded, by size class and over all sizes (see ObserveWrite).
	classes [sizeClasses]sizeRef
	overall sizeRef
}

// sizeRef is an average latency per unit (EWMA, refAlpha) and when it was
// last fed.
type sizeRef struct {
	avg  atomic.Uint64 // math.Float64bits; 0 before the first sample
	last atomic.Int64  // unix ns
}

// sizeClasses: a sub-bulk's size class is the bit length of its cost in
// units (1, 2–3, 4–7, … items or KiB).
const sizeClasses = 24

// refAlpha is the weight of a sample in the size-class references.
const refAlpha = 0.05

// partnerMap is, for one topology snapshot, the node ids whose routed
// sub-bulks each node takes part in (itself and the primaries it holds a
// replica of), and the ids of the nodes holding replicas of its primaries.
type partnerMap struct {
	topo     *Topology
	of       map[string][]string
	replicas map[string][]string
	ids      []string
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
	d.ratio = d.out.cfg.Ratio
	return d
}

// ObserveWrite records a routed sub-bulk sent to n (every item's primary
// on n) that took elapsed from its send to its answer (not its wait for
// the window), with items items in a body of bytes bytes. Only successful
// requests should be observed. It does nothing when detection is off.
//
// A sub-bulk's latency has a fixed part, so a small one costs more per
// item than a large one, and the nodes do not all get the same sizes: a
// node marked degraded gets only what steering cannot move (documents
// with span or attribute ids), in small sub-bulks. So a sample is judged
// against the sub-bulks of its size class: its latency per unit is scaled
// by the ratio of the all-sizes reference to its class's, which keeps it
// in ns per unit of a typical sub-bulk and makes a node's average
// independent of its mix of sizes. Only the nodes not marked degraded feed
// the references (a degraded node's own samples would make its size class
// look normal), and
// a reference not fed for 10 intervals is not used: the sample is then
// taken as it is.
func (r *Router) ObserveWrite(n *Node, elapsed time.Duration, items int, bytes int64) {
	d := r.writes
	if d == nil || n == nil || items <= 0 {
		return
	}
	if v, ok := d.nodes.Load(n.ID()); !ok || v.(*Node) != n {
		d.nodes.Store(n.ID(), n)
		if ok {
			// The node left the topology and came back under its id (a
			// restart): a new Node, marked from now on, judged afresh.
			d.out.Forget(n.ID())
		}
	}
	cost := float64(items)
	if d.perKiB {
		cost = float64(bytes) / 1024
	}
	if cost > 0 {
		per := float64(elapsed) / cost
		ref := &d.classes[min(bits.Len64(uint64(cost)), sizeClasses-1)]
		now := r.now().UnixNano()
		if !n.Degraded() {
			ref.add(per, now)
			d.overall.add(per, now)
		}
		stale := now - 10*int64(d.out.cfg.Interval)
		if c, ok := ref.get(stale); ok {
			if all, ok := d.overall.get(stale); ok {
				elapsed = time.Duration(float64(elapsed) * all / c)
			}
		}
	}
	d.out.Observe(d.out.Member(n.ID()), elapsed, cost)
}

// add feeds sample to the average at now; the first sample sets it.
func (v *sizeRef) add(sample float64, now int64) {
	addEWMA(&v.avg, sample, refAlpha)
	v.last.Store(now)
}

// get returns the average, false if it was last fed before stale.
func (v *sizeRef) get(stale int64) (float64, bool) {
	b := v.avg.Load()
	return math.Float64frombits(b), b != 0 && v.last.Load() >= stale
}

// WriteLatency is n's average routed write latency in ns per item (or per
// KiB) of a typical sub-bulk (see ObserveWrite), 0 before a sample or with
// detection off.
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

// blame is the score node id is judged by, from the averages of the
// streams (a stream: the routed sub-bulks sent to one node):
//
//   - common: the lowest average among the qualified streams id takes part
//     in (its own, and those of the primaries it holds a replica of). A node
//     slow at every write (a slow disk: its primaries and its replica
//     writes) is slow in all of them; a healthy node whose primaries
//     replicate to a slow one also takes part in a fast stream.
//   - its own stream's average, when that stream is an outlier (above
//     ratio × the median of the streams) that no other node explains: none
//     of the nodes holding replicas of its primaries has an outlying common
//     score. This is a node slow only where the exporter meets it (its HTTP
//     layer, the network path to it), its replica writes unaffected.
//
// The higher of the two. False when id takes part in no qualified stream.
func (d *writeDetector) blame(id string, avg func(string) (float64, bool)) (float64, bool) {
	pm := d.partnerMap()
	common, ok := d.common(pm, id, avg)
	if !ok {
		return 0, false
	}
	own, q := avg(id)
	if !q || own <= common {
		return common, true
	}
	var streams []float64
	for _, x := range pm.ids {
		if v, q := avg(x); q {
			streams = append(streams, v)
		}
	}
	med := median(streams)
	if own <= d.ratio*med {
		return common, true
	}
	for _, r := range pm.replicas[id] {
		if c, ok := d.common(pm, r, avg); ok && c > d.ratio*med {
			return common, true // the replica's node explains the stream
		}
	}
	return own, true
}

// common is the lowest average among the qualified streams id takes part
// in.
func (d *writeDetector) common(pm *partnerMap, id string, avg func(string) (float64, bool)) (float64, bool) {
	of, known := pm.of[id]
	if !known {
		of = []string{id}
	}
	best, ok := math.Inf(1), false
	for _, p := range of {
		if v, q := avg(p); q && v < best {
			best, ok = v, true
		}
	}
	return best, ok
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	m := v[len(v)/2]
	if len(v)%2 == 0 {
		m = (v[len(v)/2-1] + m) / 2
	}
	return m
}

func (d *writeDetector) partnerMap() *partnerMap {
	t := d.r.topo.Load()
	pm := d.partners.Load()
	if pm == nil || pm.topo != t {
		pm = partners(t)
		d.partners.Store(pm)
	}
	return pm
}

// partners maps each node id of t to the ids of the nodes holding
// primaries it has a copy of (itself included), and to the ids of the
// nodes holding replicas of its primaries, over every index of t.
func partners(t *Topology) *partnerMap {
	pm := &partnerMap{topo: t, of: map[string][]string{}, replicas: map[string][]string{}}
	if t == nil {
		return pm
	}
	add := func(m map[string][]string, k, v *Node) {
		if k == nil || v == nil || slices.Contains(m[k.ID()], v.ID()) {
			return
		}
		m[k.ID()] = append(m[k.ID()], v.ID())
	}
	for _, n := range t.Nodes {
		add(pm.of, n, n)
		pm.ids = append(pm.ids, n.ID())
	}
	for _, idx := range t.Indices {
		for _, s := range idx.Shards {
			p := s.Primary.Node
			for _, c := range s.Replicas {
				add(pm.of, c.Node, p)
				add(pm.replicas, p, c.Node)
			}
		}
	}
	return pm
}
