package routing

import (
	"math"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// NodeInfo is what discovery learnt about a node. Immutable once published.
type NodeInfo struct {
	ID    string
	Name  string
	URL   string // HTTP base URL, e.g. "http://127.0.0.1:9200"
	Roles []string
	Zone  string
	// Processors is os.allocated_processors (0 = unknown).
	Processors int
	// WriteThreads and WriteQueue are thread_pool.write.size and
	// .queue_size (0 = unknown).
	WriteThreads int
	WriteQueue   int
	// MaxContentLength is http.max_content_length in bytes (0 = unknown).
	MaxContentLength int64
}

// NodeState is a node's health as the router sees it.
type NodeState uint8

const (
	// NodeAlive: requests go to the node.
	NodeAlive NodeState = iota
	// NodeOverloaded: alive, but its node stats show heap ≥ 85 % or a
	// circuit breaker ≥ 90 % of its limit. Unrouted traffic avoids it;
	// routed traffic for its primaries still goes there, under its window.
	NodeOverloaded
	// NodeDead: a request failed at the connection level or timed out; a
	// health check (GET /) after the resurrection timeout brings it back.
	NodeDead
	// NodeDegraded: alive, but its bulk requests take much longer per item
	// than the other nodes' (an outlier of the write-latency detector).
	// Routed traffic for its primaries still goes there; content-id
	// documents may be steered to shards without a copy on it.
	NodeDegraded
)

func (s NodeState) String() string {
	return [...]string{"alive", "overloaded", "dead", "degraded"}[s]
}

// Node is the router's persistent state for one node: identity, health,
// congestion window and load. A Node survives topology refreshes (keyed by
// node id); the Topology snapshots point at it.
type Node struct {
	id     string
	info   atomic.Pointer[NodeInfo]
	window *Window

	dead       atomic.Bool
	overloaded atomic.Bool
	degraded   atomic.Bool
	// reachable: the node's URL answered a reachability probe (seeds are
	// reachable by definition: the user configured them).
	reachable atomic.Bool

	mu          sync.Mutex // guards the fields below
	failures    int        // consecutive failures while dead
	timer       *time.Timer
	timerGen    uint64 // bumped at every arming: a fired timer knows whether it is still n.timer
	rtt         [8]time.Duration
	rttN        int
	lastRejects int64
	haveBase    bool      // lastRejects holds a baseline from a previous poll
	ceilingSet  bool      // the window ceiling came from config, not discovery
	retired     bool      // no longer in the topology
	probedURL   string    // the URL the last reachability probe went to
	probedAt    time.Time // when
	unreachable string    // why that probe failed ("" = it answered)
}

func newNode(info *NodeInfo, ceiling int, fixedCeiling bool) *Node {
	n := &Node{id: info.ID, window: NewWindow(ceiling), ceilingSet: fixedCeiling}
	n.info.Store(info)
	return n
}

// ID is the node's id (for a seed endpoint before discovery: its URL).
func (n *Node) ID() string { return n.id }

// Info returns the latest discovered facts about the node.
func (n *Node) Info() *NodeInfo { return n.info.Load() }

// URL is the node's HTTP base URL.
func (n *Node) URL() string { return n.info.Load().URL }

// Name is the node's name (its URL for a seed endpoint).
func (n *Node) Name() string { return n.info.Load().Name }

// Window is the node's write congestion window.
func (n *Node) Window() *Window { return n.window }

// State returns the node's health.
func (n *Node) State() NodeState {
	switch {
	case n.dead.Load():
		return NodeDead
	case n.degraded.Load():
		return NodeDegraded
	case n.overloaded.Load():
		return NodeOverloaded
	}
	return NodeAlive
}

// Reachable reports whether the node's address answered the reachability
// probe (always true for a configured endpoint).
func (n *Node) Reachable() bool { return n.reachable.Load() }

// Degraded reports whether the node is marked degraded (see NodeDegraded).
func (n *Node) Degraded() bool { return n.degraded.Load() }

// Alive reports whether requests may be sent to the node.
func (n *Node) Alive() bool { return !n.dead.Load() }

// observeRTT records one health-check round-trip time.
func (n *Node) observeRTT(d time.Duration) {
	n.mu.Lock()
	n.rtt[n.rttN%len(n.rtt)] = d
	n.rttN++
	n.mu.Unlock()
}

// RTTBucket is the power-of-two bucket of the median of the recent
// health-check RTTs, in microseconds: floor(log2(µs)), never below 8
// (256 µs), so same-zone peers compete on load alone. 8 when unmeasured.
func (n *Node) RTTBucket() int {
	n.mu.Lock()
	k := min(n.rttN, len(n.rtt))
	var buf [8]time.Duration
	copy(buf[:], n.rtt[:k])
	n.mu.Unlock()
	if k == 0 {
		return 8
	}
	s := buf[:k]
	slices.Sort(s)
	us := s[k/2].Microseconds()
	if us <= 0 {
		return 8
	}
	return max(8, bits.Len64(uint64(us))-1)
}

// Score is rttBucket × (inFlight+1)/cwnd (seed 000 §4): lower is better.
// A dead node scores +Inf.
func (n *Node) Score() float64 {
	if n.dead.Load() {
		return math.Inf(1)
	}
	return float64(n.RTTBucket()) * n.window.Load()
}
