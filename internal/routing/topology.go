package routing

import (
	"sync/atomic"
	"time"
)

// Reason says why a document is (or is not) routed to its primary's node.
type Reason uint8

const (
	// Routed: the document goes straight to the node holding its primary.
	Routed Reason = iota
	// ReasonNoTopology: no topology has been discovered (yet, or at all,
	// e.g. without the monitor privileges).
	ReasonNoTopology
	// ReasonUnknownIndex: the target is not (yet) in the topology: a new
	// name (routable after the next refresh), an alias, or a missing index.
	ReasonUnknownIndex
	// ReasonUnassigned: the primary is not assigned to any node.
	ReasonUnassigned
	// ReasonPrimaryMoving: the primary is relocating or initializing.
	ReasonPrimaryMoving
	// ReasonRoutingRequired: the index has routing_partition_size > 1 and
	// the document has no routing value; the server decides (and rejects).
	ReasonRoutingRequired
	// ReasonNodeUnhealthy: the primary's node is marked dead.
	ReasonNodeUnhealthy
	// ReasonNoID: the document has no id (the server assigns one), so its
	// shard cannot be known in advance.
	ReasonNoID
	// ReasonDisabled: routing is turned off.
	ReasonDisabled
	// ReasonUnreachable: the primary's node publishes an HTTP address that
	// did not answer this collector's probe (a load balancer, proxy, NAT or
	// Kubernetes Service in between, or a certificate that does not verify).
	ReasonUnreachable
	// ReasonAllNodesDown: every discovered node requests can go to (the
	// reachable ones, roles.go) is marked dead, so documents go through the
	// configured endpoints, whatever else would have been their reason.
	ReasonAllNodesDown
	numReasons
)

var reasonNames = [numReasons]string{
	Routed:                "routed",
	ReasonNoTopology:      "no_topology",
	ReasonUnknownIndex:    "unknown_index",
	ReasonUnassigned:      "shard_unassigned",
	ReasonPrimaryMoving:   "primary_moving",
	ReasonRoutingRequired: "routing_required",
	ReasonNodeUnhealthy:   "node_unhealthy",
	ReasonNoID:            "no_id",
	ReasonDisabled:        "disabled",
	ReasonUnreachable:     "unreachable",
	ReasonAllNodesDown:    "all_nodes_down",
}

func (r Reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return "unknown"
}

// Reasons lists every Reason, for metrics that enumerate them.
func Reasons() []Reason {
	out := make([]Reason, numReasons)
	for i := range out {
		out[i] = Reason(i)
	}
	return out
}

// ShardState is a shard copy's state as _cat/shards reports it.
type ShardState uint8

const (
	StateUnknown ShardState = iota
	StateStarted
	StateRelocating
	StateInitializing
	StateUnassigned
)

func parseShardState(s string) ShardState {
	switch s {
	case "STARTED":
		return StateStarted
	case "RELOCATING":
		return StateRelocating
	case "INITIALIZING":
		return StateInitializing
	case "UNASSIGNED":
		return StateUnassigned
	}
	return StateUnknown
}

func (s ShardState) String() string {
	return [...]string{"UNKNOWN", "STARTED", "RELOCATING", "INITIALIZING", "UNASSIGNED"}[s]
}

// ShardCopy is one copy of a shard: the node holding it (nil when
// unassigned or on a node the topology does not know) and its state.
type ShardCopy struct {
	Node  *Node
	State ShardState
}

// Shard is one shard of an index: its primary and replicas.
type Shard struct {
	Primary  ShardCopy
	Replicas []ShardCopy
}

// Index is a concrete index in the topology.
type Index struct {
	Name   string
	Layout Layout
	Shards []Shard // len == Layout.Shards; copies not reported stay unassigned
}

// target is what a name given to Locate resolves to.
type target struct {
	index      *Index
	dataStream bool
	alias      bool
	routing    string      // an alias's index_routing: every write through it uses it
	use        *wantedName // marked by Locate; nil in topologies not made by a Router
}

// Topology is an immutable snapshot of the cluster. It is swapped
// atomically by the Router; readers take no lock and must not modify it.
type Topology struct {
	// Nodes known in this snapshot, in a stable order (by node id).
	Nodes []*Node
	// Reachable are the Nodes whose publish address answered the
	// reachability probe and whose roles let them serve requests
	// (roles.go): the only ones requests go to.
	Reachable []*Node
	// preferred are the Reachable nodes unrouted documents prefer:
	// coordinating-only and ingest-only nodes.
	preferred []*Node
	// Indices by concrete name.
	Indices map[string]*Index
	// DataStreams maps a data stream name to its write index (the last
	// entry of its backing indices).
	DataStreams map[string]string
	// Fetched is when the snapshot was built.
	Fetched time.Time

	targets map[string]target // index names and data stream names

	// moving is set by the first Locate that finds a primary relocating,
	// initializing or unassigned: one refresh per snapshot is asked for.
	moving atomic.Bool
}

// WriteIndex resolves a target name to the concrete index a write lands in:
// a data stream's write index, or the index itself.
func (t *Topology) WriteIndex(name string) (*Index, bool) {
	if t == nil {
		return nil, false
	}
	tg, ok := t.targets[name]
	return tg.index, ok
}

// IsDataStream tells whether name is a known data stream.
func (t *Topology) IsDataStream(name string) bool {
	if t == nil {
		return false
	}
	return t.targets[name].dataStream
}

// IsAlias tells whether name is a known write alias.
func (t *Topology) IsAlias(name string) bool {
	if t == nil {
		return false
	}
	return t.targets[name].alias
}

// NodeByID returns the node with this id, or nil.
func (t *Topology) NodeByID(id string) *Node {
	if t == nil {
		return nil
	}
	for _, n := range t.Nodes {
		if n.ID() == id {
			return n
		}
	}
	return nil
}

// Locate returns the node holding the primary of the shard that a document
// with this id and routing ("" = none) lands in when written to target (an
// index, a data stream or a write alias name). It never guesses:
// when the answer is not certain it returns nil and the reason. Health is
// not checked here (see Router.Locate).
func (t *Topology) Locate(name, id, routing string) (*Node, Reason) {
	if t == nil {
		return nil, ReasonNoTopology
	}
	tg, ok := t.targets[name]
	if ok {
		tg.use.mark()
	}
	if id == "" {
		return nil, ReasonNoID
	}
	if !ok {
		return nil, ReasonUnknownIndex
	}
	idx := tg.index
	if tg.routing != "" {
		routing = tg.routing // as the server applies an alias's index_routing
	}
	shard, err := idx.Layout.Shard(id, routing)
	if err != nil {
		return nil, ReasonRoutingRequired
	}
	p := idx.Shards[shard].Primary
	switch {
	case p.State == StateRelocating || p.State == StateInitializing:
		return nil, ReasonPrimaryMoving
	case p.Node == nil || p.State != StateStarted:
		return nil, ReasonUnassigned
	}
	return p.Node, Routed
}
