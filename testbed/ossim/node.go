package ossim

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Node is one emulated OpenSearch node.
type Node struct {
	c     *Cluster
	idx   int
	id    string
	name  string
	zone  string
	roles []string

	// joined: member of the cluster state. Guarded by c.mu.
	joined bool

	publish atomic.Pointer[string] // http.publish_address when set (SetPublishAddress)

	lmu     sync.Mutex // guards srv, ln, port, running transitions
	srv     *http.Server
	port    int
	running atomic.Bool

	bhMu sync.Mutex
	bhCh chan struct{} // non-nil while blackholed; closed to release

	latMean, latJitter atomic.Int64  // ns
	slowness           atomic.Uint64 // float64 bits of the service-time factor; 0 means 1 (SetSlowness)
	rf                 readFaults
	rejectNext         atomic.Int64
	rejectNextBulks    atomic.Int64

	write *pool

	smu    sync.RWMutex // guards stores and pits
	stores map[storeKey]*shardStore
	pits   map[int64]*pitContext

	st counters
}

type storeKey struct {
	uuid  string
	shard int
}

type counters struct {
	bulkRequests, itemsReceived        atomic.Int64
	primaryWrites, itemsPrimary        atomic.Int64
	replicaWrites, itemsReplica        atomic.Int64
	groupsForwarded, itemsForwarded    atomic.Int64
	rejectedGroups, rejectedItems      atomic.Int64
	hopRequests, hopBytes              atomic.Int64
	searchRequests, httpRequests       atomic.Int64
	rxCount, rxBytes, txCount, txBytes atomic.Int64
	forwardRetries, unavailableItems   atomic.Int64
	replicaFailures, rejectedBulks     atomic.Int64
	indexedPrimary, indexedReplica     atomic.Int64
	serviceNanos                       atomic.Int64 // service time waited by shard writes (SetSlowness included)
}

// NodeStats are a node's server-side counters.
type NodeStats struct {
	Index int    `json:"index"`
	ID    string `json:"id"`
	Name  string `json:"name"`
	// Running: the HTTP port answers. Joined: member of the cluster state.
	Running bool `json:"running"`
	Joined  bool `json:"joined"`

	HTTPRequests  int64 `json:"http_requests"`  // every request served, internal included
	BulkRequests  int64 `json:"bulk_requests"`  // client _bulk requests received
	ItemsReceived int64 `json:"items_received"` // items in those requests
	// PrimaryWrites/ItemsPrimary: shard groups and items executed here as
	// primary (locally coordinated or forwarded here).
	PrimaryWrites int64 `json:"primary_writes"`
	ItemsPrimary  int64 `json:"items_primary"`
	ReplicaWrites int64 `json:"replica_writes"`
	ItemsReplica  int64 `json:"items_replica"`
	// IndexedPrimary/IndexedReplica: index and create operations that
	// succeeded here as primary, and that were applied here as replica
	// (deletes and refused items excluded). Their sum is the node's
	// indices.indexing.index_total in GET /_nodes/stats.
	IndexedPrimary int64 `json:"indexed_primary"`
	IndexedReplica int64 `json:"indexed_replica"`
	// GroupsForwarded/ItemsForwarded: shard groups and items this node, as
	// coordinator, forwarded to another node holding their primary.
	GroupsForwarded int64 `json:"groups_forwarded"`
	ItemsForwarded  int64 `json:"items_forwarded"`
	// ForwardRetries: forwards repeated after the primary moved or failed.
	ForwardRetries int64 `json:"forward_retries"`
	// RejectedGroups/RejectedItems: shard groups (and their items) this
	// node rejected as primary with 429.
	RejectedGroups int64 `json:"rejected_groups"`
	RejectedItems  int64 `json:"rejected_items"`
	// RejectedBulks: whole client bulks refused with HTTP 429 by this node
	// as coordinator (RejectNextBulks).
	RejectedBulks int64 `json:"rejected_bulks"`
	// UnavailableItems: items failed with 503 (no primary in time).
	UnavailableItems int64 `json:"unavailable_items"`
	ReplicaFailures  int64 `json:"replica_failures"`
	// HopRequests/HopBytes: internal requests this node sent (forwards and
	// replication) and their body bytes.
	HopRequests int64 `json:"hop_requests"`
	HopBytes    int64 `json:"hop_bytes"`
	// Transport-like totals: internal requests received (rx) and sent (tx).
	RxCount int64 `json:"rx_count"`
	RxBytes int64 `json:"rx_size_in_bytes"`
	TxCount int64 `json:"tx_count"`
	TxBytes int64 `json:"tx_size_in_bytes"`

	SearchRequests  int64 `json:"search_requests"`
	PITContextsOpen int64 `json:"pit_contexts_open"`
	Docs            int64 `json:"docs"` // documents in all shard copies held

	WriteThreads   int64 `json:"write_threads"`
	WriteQueueSize int64 `json:"write_queue_size"`
	WriteActive    int64 `json:"write_active"`
	WriteQueued    int64 `json:"write_queued"`
	WriteRejected  int64 `json:"write_rejected"`
	WriteCompleted int64 `json:"write_completed"`
	// WriteWaitNanos: total time shard writes waited in the write queue.
	WriteWaitNanos int64 `json:"write_wait_nanos"`
	// ServiceNanos: total service time shard writes held a worker here
	// (ServiceBase, ServicePerItem, SetSlowness); over elapsed time ×
	// WriteThreads it is how busy the node's write pool was.
	ServiceNanos int64 `json:"service_nanos"`
}

func newNode(c *Cluster, i int) *Node {
	n := &Node{
		c:      c,
		idx:    i,
		id:     randomID(22),
		name:   "node-" + strconv.Itoa(i),
		write:  newPool(c.opts.WriteThreads, c.opts.WriteQueue),
		stores: map[storeKey]*shardStore{},
		pits:   map[int64]*pitContext{},
	}
	if len(c.opts.Zones) > 0 {
		n.zone = c.opts.Zones[i%len(c.opts.Zones)]
	}
	n.roles = defaultRoles
	if i < len(c.opts.Roles) && c.opts.Roles[i] != nil {
		n.roles = c.opts.Roles[i]
	}
	return n
}

// Index returns the node's position in the cluster.
func (n *Node) Index() int { return n.idx }

// ID returns the node id (as in GET /_nodes).
func (n *Node) ID() string { return n.id }

// Name returns the node name ("node-<i>").
func (n *Node) Name() string { return n.name }

// Zone returns the zone attribute ("" when none).
func (n *Node) Zone() string { return n.zone }

// URL returns the node's base URL.
func (n *Node) URL() string {
	n.lmu.Lock()
	defer n.lmu.Unlock()
	return "http://127.0.0.1:" + strconv.Itoa(n.port)
}

// Running reports whether the node's HTTP port answers.
func (n *Node) Running() bool { return n.running.Load() }

func (n *Node) listen(port int) error {
	n.lmu.Lock()
	defer n.lmu.Unlock()
	if n.running.Load() {
		return nil
	}
	var ln net.Listener
	var err error
	// A just-closed port may take a moment to be free again.
	for attempt := 0; attempt < 50; attempt++ {
		ln, err = net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err == nil || port == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return err
	}
	n.port = ln.Addr().(*net.TCPAddr).Port
	n.smu.Lock()
	n.stores = map[storeKey]*shardStore{}
	n.pits = map[int64]*pitContext{}
	n.smu.Unlock()
	n.srv = &http.Server{Handler: n, ReadHeaderTimeout: 30 * time.Second}
	n.running.Store(true)
	srv := n.srv
	go func() { _ = srv.Serve(ln) }()
	return nil
}

// stop closes the node's server (open connections included). It reports
// whether the node was running. Data and PIT contexts are dropped.
func (n *Node) stop() bool {
	n.lmu.Lock()
	defer n.lmu.Unlock()
	if !n.running.Load() {
		return false
	}
	n.running.Store(false)
	n.releaseBlackhole()
	_ = n.srv.Close()
	n.smu.Lock()
	n.stores = map[storeKey]*shardStore{}
	n.pits = map[int64]*pitContext{}
	n.smu.Unlock()
	return true
}

func (n *Node) shutdown() {
	n.stop()
}

func (n *Node) setBlackhole(on bool) {
	n.bhMu.Lock()
	defer n.bhMu.Unlock()
	if on && n.bhCh == nil {
		n.bhCh = make(chan struct{})
	}
	if !on && n.bhCh != nil {
		close(n.bhCh)
		n.bhCh = nil
	}
}

func (n *Node) releaseBlackhole() { n.setBlackhole(false) }

func (n *Node) blackhole() chan struct{} {
	n.bhMu.Lock()
	defer n.bhMu.Unlock()
	return n.bhCh
}

// ---- shard stores ----

func (n *Node) ensureStore(im *indexMeta, shard int) *shardStore {
	n.smu.Lock()
	defer n.smu.Unlock()
	k := storeKey{im.uuid, shard}
	s := n.stores[k]
	if s == nil {
		s = newShardStore()
		n.stores[k] = s
	}
	return s
}

func (n *Node) store(uuid string, shard int) *shardStore {
	n.smu.RLock()
	defer n.smu.RUnlock()
	return n.stores[storeKey{uuid, shard}]
}

func (n *Node) dropStore(uuid string, shard int) {
	n.smu.Lock()
	defer n.smu.Unlock()
	delete(n.stores, storeKey{uuid, shard})
}

func (n *Node) dropIndex(uuid string) {
	n.smu.Lock()
	defer n.smu.Unlock()
	for k := range n.stores {
		if k.uuid == uuid {
			delete(n.stores, k)
		}
	}
}

// Stats returns node i's counters.
func (c *Cluster) NodeStats(i int) NodeStats { return c.Node(i).Stats() }

// Stats returns every node's counters, in node order.
func (c *Cluster) Stats() []NodeStats {
	out := make([]NodeStats, len(c.nodes))
	for i, n := range c.nodes {
		out[i] = n.Stats()
	}
	return out
}

// ResetStats zeroes every node's counters (not the thread pool's).
func (c *Cluster) ResetStats() {
	for _, n := range c.nodes {
		n.st.reset()
	}
}

// reset zeroes every counter atomically (writers may be running).
func (s *counters) reset() {
	for _, a := range []*atomic.Int64{
		&s.bulkRequests, &s.itemsReceived, &s.primaryWrites, &s.itemsPrimary, &s.replicaWrites, &s.itemsReplica,
		&s.groupsForwarded, &s.itemsForwarded, &s.rejectedGroups, &s.rejectedItems, &s.rejectedBulks, &s.hopRequests, &s.hopBytes,
		&s.searchRequests, &s.httpRequests, &s.rxCount, &s.rxBytes, &s.txCount, &s.txBytes,
		&s.forwardRetries, &s.unavailableItems, &s.replicaFailures, &s.indexedPrimary, &s.indexedReplica, &s.serviceNanos,
	} {
		a.Store(0)
	}
}

// Stats returns the node's counters.
func (n *Node) Stats() NodeStats {
	s := &n.st
	n.c.mu.RLock()
	joined := n.joined
	n.c.mu.RUnlock()
	var docs int64
	n.smu.RLock()
	pits := int64(0)
	now := time.Now().UnixNano()
	for _, p := range n.pits {
		if p.expires.Load() >= now {
			pits++
		}
	}
	for _, st := range n.stores {
		docs += int64(st.count())
	}
	n.smu.RUnlock()
	w := n.write
	active := w.active.Load()
	queued := w.pending.Load() - active
	if queued < 0 {
		queued = 0
	}
	return NodeStats{
		Index: n.idx, ID: n.id, Name: n.name, Running: n.Running(), Joined: joined,
		HTTPRequests: s.httpRequests.Load(),
		BulkRequests: s.bulkRequests.Load(), ItemsReceived: s.itemsReceived.Load(),
		PrimaryWrites: s.primaryWrites.Load(), ItemsPrimary: s.itemsPrimary.Load(),
		ReplicaWrites: s.replicaWrites.Load(), ItemsReplica: s.itemsReplica.Load(),
		IndexedPrimary: s.indexedPrimary.Load(), IndexedReplica: s.indexedReplica.Load(),
		ServiceNanos:    s.serviceNanos.Load(),
		GroupsForwarded: s.groupsForwarded.Load(), ItemsForwarded: s.itemsForwarded.Load(),
		ForwardRetries: s.forwardRetries.Load(),
		RejectedGroups: s.rejectedGroups.Load(), RejectedItems: s.rejectedItems.Load(), RejectedBulks: s.rejectedBulks.Load(),
		UnavailableItems: s.unavailableItems.Load(), ReplicaFailures: s.replicaFailures.Load(),
		HopRequests: s.hopRequests.Load(), HopBytes: s.hopBytes.Load(),
		RxCount: s.rxCount.Load(), RxBytes: s.rxBytes.Load(), TxCount: s.txCount.Load(), TxBytes: s.txBytes.Load(),
		SearchRequests: s.searchRequests.Load(), PITContextsOpen: pits, Docs: docs,
		WriteThreads: int64(w.size), WriteQueueSize: w.queueSize.Load(), WriteActive: active,
		WriteQueued: queued, WriteRejected: w.rejected.Load(), WriteCompleted: w.completed.Load(),
		WriteWaitNanos: w.waitNanos.Load(),
	}
}

// ---- write thread pool ----

// pool models a fixed OpenSearch thread pool: size workers and a bounded
// queue. pending counts active plus queued tasks.
type pool struct {
	size      int
	queueSize atomic.Int64
	sem       chan struct{}
	pending   atomic.Int64

	active, largest, rejected, completed, waitNanos atomic.Int64
}

func newPool(size, queue int) *pool {
	p := &pool{size: size, sem: make(chan struct{}, size)}
	p.queueSize.Store(int64(queue))
	return p
}

// acquire takes a worker, waiting in the queue; ok is false when the queue
// is full (the task is rejected). force never rejects (replica writes).
func (p *pool) acquire(ctx context.Context, force bool) (ok bool) {
	np := p.pending.Add(1)
	if !force && np > int64(p.size)+p.queueSize.Load() {
		p.pending.Add(-1)
		p.rejected.Add(1)
		return false
	}
	start := time.Now()
	select {
	case p.sem <- struct{}{}:
	case <-ctx.Done():
		p.pending.Add(-1)
		return false
	}
	p.waitNanos.Add(int64(time.Since(start)))
	a := p.active.Add(1)
	for {
		l := p.largest.Load()
		if a <= l || p.largest.CompareAndSwap(l, a) {
			break
		}
	}
	return true
}

func (p *pool) release() {
	p.active.Add(-1)
	<-p.sem
	p.pending.Add(-1)
	p.completed.Add(1)
}

// ---- HTTP ----

// ServeHTTP serves the node's REST API.
func (n *Node) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n.st.httpRequests.Add(1)
	if n.cut(w) {
		return
	}
	if ch := n.blackhole(); ch != nil {
		select {
		case <-ch:
		case <-r.Context().Done():
			return
		}
	}
	if d := n.latency(); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-r.Context().Done():
			t.Stop()
			return
		}
	}
	req := &request{n: n, w: w, r: r, q: r.URL.Query()}
	body, err := n.readBody(r)
	if err != nil {
		var tl errTooLarge
		if errors.As(err, &tl) {
			w.Header().Set("Content-Length", "0")
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			return
		}
		req.fail(400, "parse_exception", "failed to read request body: "+err.Error())
		return
	}
	req.body = body
	n.route(req)
}

func (n *Node) latency() time.Duration {
	mean, jit := n.latMean.Load(), n.latJitter.Load()
	if mean == 0 && jit == 0 {
		return 0
	}
	if jit > 0 {
		mean += rand.Int64N(2*jit+1) - jit
	}
	return time.Duration(mean)
}

type errTooLarge struct{}

func (errTooLarge) Error() string { return "request body too large" }

func (n *Node) readBody(r *http.Request) ([]byte, error) {
	max := n.c.opts.MaxContentLength
	if r.ContentLength > max {
		return nil, errTooLarge{}
	}
	var src io.Reader = r.Body
	enc := strings.ToLower(r.Header.Get("Content-Encoding"))
	switch enc {
	case "", "identity":
	case "gzip", "x-gzip":
		zr, err := gzip.NewReader(r.Body)
		if err != nil {
			return nil, fmt.Errorf("invalid gzip body: %w", err)
		}
		defer zr.Close()
		src = zr
	default:
		return nil, fmt.Errorf("unsupported Content-Encoding %q", enc)
	}
	size := int(r.ContentLength)
	if size < 0 || enc != "" {
		size = 512
	}
	buf := make([]byte, 0, size+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		m, err := src.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if int64(len(buf)) > max {
			return nil, errTooLarge{}
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}
