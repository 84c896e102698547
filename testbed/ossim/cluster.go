package ossim

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/opensearchrouted/opensearchrouted/internal/routing"
)

// Version is the OpenSearch version the emulator answers as.
const Version = "2.19.6"

// Shard copy states, as _cat/shards names them.
const (
	StateStarted      = "STARTED"
	StateInitializing = "INITIALIZING"
	StateRelocating   = "RELOCATING"
	StateUnassigned   = "UNASSIGNED"
)

// Cluster is a running emulated cluster. Its methods are safe for
// concurrent use.
type Cluster struct {
	opts  Options
	uuid  string
	nodes []*Node
	hc    *http.Client // internal hops

	// mu guards everything below and the membership fields of every Node
	// (joined). Shard data has its own locks (see shardStore).
	mu          sync.RWMutex
	indices     map[string]*indexMeta
	templates   map[string]*indexTemplate
	dataStreams map[string]*dataStream
	aliases     map[string]map[string]*aliasOn // alias → index → properties (alias.go)
	closed      bool
	timers      []*time.Timer
}

type indexMeta struct {
	name, uuid  string
	layout      routing.Layout
	replicas    int
	created     time.Time
	dataStream  string // the data stream this index backs, "" if none
	blocksWrite bool
	explicitP   bool // routing_partition_size given at creation
	// routingRequired: mappings._routing.required (a partitioned index
	// refuses writes without it, as OpenSearch 2.19 does).
	routingRequired bool
	requireName     string // index.routing.allocation.require._name
	perNode         int    // index.routing.allocation.total_shards_per_node, 0 = unlimited
	shards          []*shardGroup
	mapping         *indexMapping
}

type shardGroup struct {
	index       *indexMeta
	num         int
	primaryTerm int64
	copies      []*shardCopy // the primary first when there is one
}

type shardCopy struct {
	primary bool
	node    *Node // nil when unassigned
	state   string
	relocTo *Node // target while RELOCATING
	allocID string
	gen     int64 // bumped on every change; stale timers compare it
	// delayedUntil: a replica lost with its node waits for NodeLeftDelay
	// before it is allocated elsewhere (delayed_unassigned_shards).
	delayedUntil time.Time
}

type indexTemplate struct {
	name       string
	patterns   []string
	dataStream bool
	priority   int64
	settings   map[string]string
	mappings   map[string]any // template.mappings, nil for none
}

type dataStream struct {
	name     string
	template string
	indices  []*indexMeta // the write index is last
}

// Start starts a cluster. Close it when done.
func Start(opts Options) (*Cluster, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Cluster{
		opts:        o,
		uuid:        randomID(22),
		indices:     map[string]*indexMeta{},
		templates:   map[string]*indexTemplate{},
		dataStreams: map[string]*dataStream{},
	}
	tr := &http.Transport{
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 256,
		IdleConnTimeout:     30 * time.Second,
		DisableCompression:  true,
	}
	c.hc = &http.Client{Transport: tr, Timeout: o.HopTimeout}
	for i := 0; i < o.Nodes; i++ {
		n := newNode(c, i)
		c.nodes = append(c.nodes, n)
	}
	for _, n := range c.nodes {
		port := 0
		if o.BasePort != 0 {
			port = o.BasePort + n.idx
		}
		if err := n.listen(port); err != nil {
			c.Close()
			return nil, fmt.Errorf("ossim: start node %d: %w", n.idx, err)
		}
		// The node serves from here on: its handlers read joined under c.mu.
		c.mu.Lock()
		n.joined = true
		c.mu.Unlock()
	}
	return c, nil
}

// StartT starts a cluster for a test and closes it in t.Cleanup. It fails
// the test if the cluster cannot start.
func StartT(t testing.TB, opts Options) *Cluster {
	t.Helper()
	c, err := Start(opts)
	if err != nil {
		t.Fatalf("ossim.Start: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// Options returns the effective options (defaults filled in).
func (c *Cluster) Options() Options { return c.opts }

// Addrs returns every node's base URL ("http://127.0.0.1:port"), in node
// order. A stopped node keeps its address.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.URL()
	}
	return out
}

// Addr returns node i's base URL.
func (c *Cluster) Addr(i int) string { return c.Node(i).URL() }

// Node returns node i (0-based). It panics when i is out of range.
func (c *Cluster) Node(i int) *Node {
	if i < 0 || i >= len(c.nodes) {
		panic(fmt.Sprintf("ossim: node %d out of range [0,%d)", i, len(c.nodes)))
	}
	return c.nodes[i]
}

// Len returns the number of nodes, running or not.
func (c *Cluster) Len() int { return len(c.nodes) }

// Close stops every node and timer. It is idempotent.
func (c *Cluster) Close() {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.closed = true
	for _, t := range c.timers {
		t.Stop()
	}
	c.timers = nil
	c.mu.Unlock()
	for _, n := range c.nodes {
		n.shutdown()
	}
	c.hc.CloseIdleConnections()
}

// after runs f after d unless the cluster is closed first. f runs without
// c.mu held.
func (c *Cluster) after(d time.Duration, f func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.afterLocked(d, f)
}

// afterLocked is after with c.mu held by the caller.
func (c *Cluster) afterLocked(d time.Duration, f func()) {
	if c.closed {
		return
	}
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		c.mu.Lock()
		closed := c.closed
		for i, x := range c.timers {
			if x == t {
				c.timers = append(c.timers[:i], c.timers[i+1:]...)
				break
			}
		}
		c.mu.Unlock()
		if !closed {
			f()
		}
	})
	c.timers = append(c.timers, t)
}

// hopLatency is the one-way latency between two nodes.
func (c *Cluster) hopLatency(a, b *Node) time.Duration {
	if a.zone != b.zone {
		return c.opts.CrossZoneHopLatency
	}
	return c.opts.HopLatency
}

// ---- allocation (all with c.mu held) ----

// joinedNodes returns the nodes that are members of the cluster.
func (c *Cluster) joinedNodes() []*Node {
	var out []*Node
	for _, n := range c.nodes {
		if n.joined {
			out = append(out, n)
		}
	}
	return out
}

// copiesOn counts the assigned shard copies (and incoming relocations) on n.
func (c *Cluster) copiesOn(n *Node) (all, primaries int) {
	for _, im := range c.indices {
		for _, g := range im.shards {
			for _, sc := range g.copies {
				if sc.node == n || sc.relocTo == n {
					all++
					if sc.primary {
						primaries++
					}
				}
			}
		}
	}
	return
}

// pickNode chooses a node for a new copy of g: a joined node holding no
// copy of g, preferring a zone g does not use yet, then the fewest copies,
// then the fewest primaries, then the lowest index after a rotation by
// shard number (so primaries of a new index spread).
func (c *Cluster) pickNode(g *shardGroup, primary bool) *Node {
	used := map[*Node]bool{}
	zones := map[string]bool{}
	for _, sc := range g.copies {
		for _, n := range []*Node{sc.node, sc.relocTo} {
			if n != nil {
				used[n] = true
				zones[n.zone] = true
			}
		}
	}
	var best *Node
	var bestKey [4]int
	nn := len(c.nodes)
	for _, n := range c.joinedNodes() {
		if used[n] || !n.hasRole("data") || g.index.requireName != "" && n.name != g.index.requireName {
			continue
		}
		if g.index.perNode > 0 && c.indexCopiesOn(g.index, n) >= g.index.perNode {
			continue
		}
		all, prim := c.copiesOn(n)
		zoneUsed := 0
		if n.zone != "" && zones[n.zone] {
			zoneUsed = 1
		}
		p := 0
		if primary {
			p = prim
		}
		key := [4]int{zoneUsed, all, p, (n.idx - g.num%nn + nn) % nn}
		if best == nil || less4(key, bestKey) {
			best, bestKey = n, key
		}
	}
	return best
}

// indexCopiesOn counts the copies of im on n.
func (c *Cluster) indexCopiesOn(im *indexMeta, n *Node) int {
	k := 0
	for _, g := range im.shards {
		for _, sc := range g.copies {
			if sc.node == n || sc.relocTo == n {
				k++
			}
		}
	}
	return k
}

func less4(a, b [4]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return false
}

// allocateNew places every copy of a new index; they start STARTED.
func (c *Cluster) allocateNew(im *indexMeta) {
	for _, g := range im.shards {
		for k := 0; k <= im.replicas; k++ {
			sc := &shardCopy{primary: k == 0, state: StateUnassigned, allocID: randomID(22)}
			g.copies = append(g.copies, sc)
			if n := c.pickNode(g, sc.primary); n != nil {
				sc.node = n
				sc.state = StateStarted
				n.ensureStore(im, g.num)
			}
		}
		if !g.copies[0].primary || g.copies[0].node == nil {
			// No node at all: the primary stays unassigned (red).
			g.copies[0].state = StateUnassigned
		}
	}
}

// reallocate assigns unassigned replica copies to free nodes; they pass
// through INITIALIZING for RecoveryTime while they copy the primary's data.
func (c *Cluster) reallocate() {
	for _, im := range c.indices {
		for _, g := range im.shards {
			prim := g.primaryCopy()
			if prim == nil || prim.node == nil {
				continue
			}
			for _, sc := range g.copies {
				if sc.primary || sc.node != nil {
					continue
				}
				n := c.pickNode(g, false)
				if n == nil {
					continue
				}
				sc.node = n
				sc.state = StateInitializing
				sc.delayedUntil = time.Time{}
				sc.gen++
				n.ensureStore(im, g.num)
				gen, copyRef, grp := sc.gen, sc, g
				c.afterLocked(c.opts.RecoveryTime, func() { c.finishRecovery(grp, copyRef, gen) })
			}
		}
	}
}

// finishRecovery copies the primary's documents into a recovering replica
// and marks it STARTED. Writes that arrived during recovery were already
// replicated to it; merge keeps the newest version of each document.
func (c *Cluster) finishRecovery(g *shardGroup, sc *shardCopy, gen int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if sc.gen != gen || sc.node == nil || sc.state != StateInitializing {
		return
	}
	prim := g.primaryCopy()
	if prim == nil || prim.node == nil {
		return
	}
	src := prim.node.store(g.index.uuid, g.num)
	dst := sc.node.store(g.index.uuid, g.num)
	if src != nil && dst != nil {
		dst.mergeFrom(src)
	}
	sc.state = StateStarted
	sc.gen++
}

func (g *shardGroup) primaryCopy() *shardCopy {
	for _, sc := range g.copies {
		if sc.primary {
			return sc
		}
	}
	return nil
}

// nodeLeft removes n from the cluster: its primaries are replaced by a
// started replica (new primary term), its copies become unassigned, and
// replicas are reallocated after NodeLeftDelay.
func (c *Cluster) nodeLeft(n *Node) {
	if !n.joined {
		return
	}
	n.joined = false
	for _, im := range c.indices {
		for _, g := range im.shards {
			for _, sc := range g.copies {
				if sc.relocTo == n {
					sc.relocTo = nil
					sc.state = StateStarted
					sc.gen++
				}
				if sc.node != n {
					continue
				}
				if sc.relocTo != nil {
					// The relocation target takes over (it has the data).
					sc.node, sc.relocTo, sc.state = sc.relocTo, nil, StateStarted
					sc.gen++
					continue
				}
				sc.node = nil
				sc.state = StateUnassigned
				sc.gen++
				if c.opts.NodeLeftDelay > 0 {
					// Counted as delayed once it is a replica (below).
					sc.delayedUntil = time.Now().Add(c.opts.NodeLeftDelay)
				}
			}
			prim := g.primaryCopy()
			if prim != nil && prim.node == nil {
				// Promote a started replica.
				for _, sc := range g.copies {
					if !sc.primary && sc.node != nil && sc.state == StateStarted {
						prim.primary = false
						sc.primary = true
						g.primaryTerm++
						break
					}
				}
				g.sortCopies()
			}
		}
	}
	if c.opts.NodeLeftDelay > 0 {
		c.afterLocked(c.opts.NodeLeftDelay, func() {
			c.mu.Lock()
			defer c.mu.Unlock()
			c.reallocate()
		})
		return
	}
	c.reallocate()
}

// sortCopies puts the primary first.
func (g *shardGroup) sortCopies() {
	sort.SliceStable(g.copies, func(i, j int) bool { return g.copies[i].primary && !g.copies[j].primary })
}

// ---- faults ----

// StopNode stops node i: its port refuses connections at once, its data and
// PIT contexts are gone, and after DetectionDelay the cluster promotes its
// replicas and reallocates. Stopping a stopped node is a no-op.
func (c *Cluster) StopNode(i int) error {
	n, err := c.nodeAt(i)
	if err != nil {
		return err
	}
	if !n.stop() {
		return nil
	}
	c.after(c.opts.DetectionDelay, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if !n.Running() {
			c.nodeLeft(n)
		}
	})
	return nil
}

// RestartNode restarts node i on the same port, empty: no data, no PIT
// contexts. If it was still a member it leaves first (its replicas are
// promoted); then it joins again and receives unassigned replicas.
func (c *Cluster) RestartNode(i int) error { return c.restartNode(i, true) }

func (c *Cluster) restartNode(i int, join bool) error {
	n, err := c.nodeAt(i)
	if err != nil {
		return err
	}
	n.stop()
	c.mu.Lock()
	c.nodeLeft(n)
	c.mu.Unlock()
	if err := n.listen(n.port); err != nil {
		return fmt.Errorf("ossim: restart node %d: %w", i, err)
	}
	if !join {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	n.joined = true
	c.reallocate()
	return nil
}

// SetLatency adds mean ± jitter (uniform) to every request node i serves,
// client-facing and internal. Zero mean and jitter remove it.
func (c *Cluster) SetLatency(i int, mean, jitter time.Duration) error {
	n, err := c.nodeAt(i)
	if err != nil {
		return err
	}
	if mean < 0 || jitter < 0 || jitter > mean && mean > 0 {
		return fmt.Errorf("ossim: SetLatency(%d): need 0 ≤ jitter ≤ mean, got mean %v jitter %v", i, mean, jitter)
	}
	n.latMean.Store(int64(mean))
	n.latJitter.Store(int64(jitter))
	return nil
}

// SetPublishAddress makes node i publish hostPort as its
// http.publish_address (as http.publish_host/http.publish_port do: a
// proxy's, a NAT's or an address nothing listens on), while it still
// listens where URL says. "" publishes the bound address again.
func (c *Cluster) SetPublishAddress(i int, hostPort string) error {
	n, err := c.nodeAt(i)
	if err != nil {
		return err
	}
	if hostPort == "" {
		n.publish.Store(nil)
		return nil
	}
	if _, _, err := net.SplitHostPort(hostPort); err != nil {
		return fmt.Errorf("ossim: SetPublishAddress(%d): %q is not host:port", i, hostPort)
	}
	n.publish.Store(&hostPort)
	return nil
}

// SetQueue sets node i's write queue size (0: no queue, a shard write
// arriving while every worker is busy is rejected).
func (c *Cluster) SetQueue(i, size int) error {
	n, err := c.nodeAt(i)
	if err != nil {
		return err
	}
	if size < 0 {
		return fmt.Errorf("ossim: SetQueue(%d): size must not be negative, got %d", i, size)
	}
	n.write.queueSize.Store(int64(size))
	return nil
}

// Blackhole makes node i accept connections and never answer (on = true),
// or answer again (on = false). Membership is not affected.
func (c *Cluster) Blackhole(i int, on bool) error {
	n, err := c.nodeAt(i)
	if err != nil {
		return err
	}
	n.setBlackhole(on)
	return nil
}

// RejectNext makes node i reject its next k primary shard-level writes
// (each rejects its whole shard group with 429).
func (c *Cluster) RejectNext(i, k int) error {
	n, err := c.nodeAt(i)
	if err != nil {
		return err
	}
	if k < 0 {
		return fmt.Errorf("ossim: RejectNext(%d): k must not be negative, got %d", i, k)
	}
	n.rejectNext.Store(int64(k))
	return nil
}

// RejectNextBulks makes node i refuse its next k client bulk requests as
// a whole (HTTP 429 rejected_execution_exception), as a coordinating node
// does when its write pool cannot take the request.
func (c *Cluster) RejectNextBulks(i, k int) error {
	n, err := c.nodeAt(i)
	if err != nil {
		return err
	}
	if k < 0 {
		return fmt.Errorf("ossim: RejectNextBulks(%d): k must not be negative, got %d", i, k)
	}
	n.rejectNextBulks.Store(int64(k))
	return nil
}

// Relocate moves the primary of index/shard to node toNode. The copy is
// RELOCATING for RecoveryTime (writes reach both), then it lives on toNode.
func (c *Cluster) Relocate(index string, shard, toNode int) error {
	return c.relocate(index, shard, -1, toNode)
}

// relocate moves the copy of index/shard on node from (-1: the primary)
// to node to.
func (c *Cluster) relocate(index string, shard, from, toNode int) error {
	to, err := c.nodeAt(toNode)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	im := c.indices[index]
	if im == nil {
		return fmt.Errorf("ossim: Relocate: no such index [%s]", index)
	}
	if shard < 0 || shard >= len(im.shards) {
		return fmt.Errorf("ossim: Relocate: index [%s] has no shard %d", index, shard)
	}
	g := im.shards[shard]
	sc := g.primaryCopy()
	if from >= 0 {
		sc = nil
		for _, x := range g.copies {
			if x.node != nil && x.node.idx == from {
				sc = x
			}
		}
		if sc == nil {
			return fmt.Errorf("ossim: Relocate: node %d holds no copy of [%s][%d]", from, index, shard)
		}
	}
	if sc == nil || sc.node == nil || sc.state != StateStarted {
		return fmt.Errorf("ossim: Relocate: the copy of [%s][%d] is not STARTED", index, shard)
	}
	if !to.joined {
		return fmt.Errorf("ossim: Relocate: node %d is not in the cluster", toNode)
	}
	for _, x := range g.copies {
		if x.node == to || x.relocTo == to {
			return fmt.Errorf("ossim: Relocate: node %d already holds a copy of [%s][%d]", toNode, index, shard)
		}
	}
	sc.state = StateRelocating
	sc.relocTo = to
	sc.gen++
	to.ensureStore(im, shard)
	gen := sc.gen
	c.afterLocked(c.opts.RecoveryTime, func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		if sc.gen != gen || sc.relocTo != to || sc.node == nil {
			return
		}
		src := sc.node.store(im.uuid, shard)
		if dst := to.store(im.uuid, shard); src != nil && dst != nil {
			dst.mergeFrom(src)
		}
		old := sc.node
		sc.node, sc.relocTo, sc.state = to, nil, StateStarted
		sc.allocID = randomID(22)
		sc.gen++
		old.dropStore(im.uuid, shard)
	})
	return nil
}

func (c *Cluster) nodeAt(i int) (*Node, error) {
	if i < 0 || i >= len(c.nodes) {
		return nil, fmt.Errorf("ossim: node %d out of range [0,%d)", i, len(c.nodes))
	}
	return c.nodes[i], nil
}

// ShardCopy describes one shard copy, as _cat/shards shows it.
type ShardCopy struct {
	Index   string
	Shard   int
	Primary bool
	State   string
	Node    int // node index, -1 when unassigned
	RelocTo int // target node index while RELOCATING, else -1
	// IndexedPrimary and IndexedReplica count the operations this copy
	// executed as primary and applied as replica since its node last
	// (re)started (the copy's indexing.index_total in
	// GET /<index>/_stats?level=shards is their sum).
	IndexedPrimary, IndexedReplica int64
}

// Shards returns every shard copy of an index (primary first per shard).
func (c *Cluster) Shards(index string) ([]ShardCopy, error) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	im := c.indices[index]
	if im == nil {
		return nil, fmt.Errorf("ossim: no such index [%s]", index)
	}
	var out []ShardCopy
	for _, g := range im.shards {
		for _, sc := range g.copies {
			x := ShardCopy{Index: index, Shard: g.num, Primary: sc.primary, State: sc.state, Node: -1, RelocTo: -1}
			if sc.node != nil {
				x.Node = sc.node.idx
				if st := sc.node.store(im.uuid, g.num); st != nil {
					x.IndexedPrimary, x.IndexedReplica = st.indexed()
				}
			}
			if sc.relocTo != nil {
				x.RelocTo = sc.relocTo.idx
			}
			out = append(out, x)
		}
	}
	return out, nil
}

// WaitFor polls cond every 5ms until it is true or d passes.
func WaitFor(d time.Duration, cond func() bool) error {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("ossim: condition not met in time")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// WaitGreen waits until every copy of every index is STARTED.
func (c *Cluster) WaitGreen(d time.Duration) error {
	return WaitFor(d, func() bool { return c.health().status == "green" })
}

func randomID(n int) string {
	b := make([]byte, (n*6+7)/8)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)[:n]
}

// SetSlowness multiplies node i's shard-level service time (ServiceBase +
// ServicePerItem × items, see Options) by k: the primary writes it
// executes and the replica writes it applies, each holding a write worker
// k times as long. k = 1 restores the node; k must be ≥ 1 (a node
// cannot be faster than the model) and finite. With a zero service time
// the factor has nothing to multiply: use CalibratedService or set
// ServiceBase/ServicePerItem.
func (c *Cluster) SetSlowness(i int, k float64) error {
	n, err := c.nodeAt(i)
	if err != nil {
		return err
	}
	if !(k >= 1) || math.IsInf(k, 0) {
		return fmt.Errorf("ossim: SetSlowness(%d): k must be a finite factor ≥ 1, got %v", i, k)
	}
	if k == 1 {
		n.slowness.Store(0)
	} else {
		n.slowness.Store(math.Float64bits(k))
	}
	return nil
}

// Slowness returns node i's service-time factor (1 unless SetSlowness
// changed it).
func (n *Node) Slowness() float64 {
	if b := n.slowness.Load(); b != 0 {
		return math.Float64frombits(b)
	}
	return 1
}

// serviceTime is how long a shard-level write of items operations holds a
// write worker on n.
func (n *Node) serviceTime(items int) time.Duration {
	d := n.c.opts.ServiceBase + time.Duration(items)*n.c.opts.ServicePerItem
	if b := n.slowness.Load(); b != 0 && d > 0 {
		d = time.Duration(float64(d) * math.Float64frombits(b))
	}
	return d
}

// serve waits the service time of a shard-level write (or until ctx ends).
func (n *Node) serve(ctx context.Context, items int) {
	d := n.serviceTime(items)
	if d <= 0 {
		return
	}
	start := time.Now()
	t := time.NewTimer(d)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
	}
	n.st.serviceNanos.Add(int64(time.Since(start)))
}
