package opensearchbackfill

import (
	"errors"
	"strings"
	"sync/atomic"
	"time"

	"github.com/opensearchrouted/opensearchrouted/internal/pit"
	"github.com/opensearchrouted/opensearchrouted/internal/routing"
)

// readSelector is the pit.NodeSelector of the receiver: a read goes to a
// node holding a copy (primary or replica) of a shard of the indices,
// rotating over them, skipping dead and overloaded nodes (seed 002's rule
// for reads: spread over healthy members, eject clearly degraded ones).
// When the topology does not know the indices (patterns, aliases, a
// missing privilege, before the first discovery), any alive node of the
// cluster serves; when none is left, the seeds do. Nodes whose publish
// address did not answer are never chosen.
type readSelector struct {
	router *routing.Router // nil: discovery disabled
	seeds  []string
	rr     atomic.Uint64
	out    *routing.Outliers // nil: latency is not used
}

func newReadSelector(r *routing.Router, seeds []string, out *routing.Outliers) *readSelector {
	s := &readSelector{router: r, out: out}
	for _, u := range seeds {
		s.seeds = append(s.seeds, strings.TrimRight(u, "/"))
	}
	return s
}

// ReadNode implements pit.NodeSelector.
func (s *readSelector) ReadNode(indices []string, exclude func(string) bool) (string, bool) {
	if s.router != nil {
		if u, ok := s.pick(s.holders(indices), exclude); ok {
			return u, true
		}
		if u, ok := s.pick(s.router.Nodes(), exclude); ok {
			return u, true
		}
	}
	start := s.rr.Add(1) - 1
	for i := range uint64(len(s.seeds)) {
		u := s.seeds[(start+i)%uint64(len(s.seeds))]
		if !exclude(u) {
			return u, true
		}
	}
	return "", false
}

// holders lists, without repeats, the nodes holding a readable copy of a
// shard of the indices the topology knows (a data stream: its write index).
func (s *readSelector) holders(indices []string) []*routing.Node {
	t := s.router.Topology()
	if t == nil {
		return nil
	}
	var out []*routing.Node
	seen := map[*routing.Node]bool{}
	addCopy := func(c routing.ShardCopy) {
		if c.Node != nil && !seen[c.Node] && (c.State == routing.StateStarted || c.State == routing.StateRelocating) {
			seen[c.Node] = true
			out = append(out, c.Node)
		}
	}
	for _, name := range indices {
		idx, ok := t.Indices[name]
		if !ok {
			idx, ok = t.WriteIndex(name)
		}
		if !ok || idx == nil {
			continue
		}
		for _, sh := range idx.Shards {
			addCopy(sh.Primary)
			for _, r := range sh.Replicas {
				addCopy(r)
			}
		}
	}
	return out
}

// pick rotates over the alive nodes that are neither overloaded nor
// ejected as latency outliers; if all of those are excluded, over every
// alive one. A node whose publish address did not answer the reachability
// probe is never picked (a shard's holder may be one: behind a proxy or
// NAT, a reachable node forwards the search).
func (s *readSelector) pick(nodes []*routing.Node, exclude func(string) bool) (string, bool) {
	if len(nodes) == 0 {
		return "", false
	}
	start := s.rr.Add(1) - 1
	n := uint64(len(nodes))
	for pass := 0; pass < 2; pass++ {
		for i := range n {
			nd := nodes[(start+i)%n]
			st := nd.State()
			if st == routing.NodeDead || !nd.Reachable() || (pass == 0 && (st == routing.NodeOverloaded || s.ejected(nd.URL()))) || exclude(nd.URL()) {
				continue
			}
			return nd.URL(), true
		}
	}
	return "", false
}

func (s *readSelector) ejected(u string) bool {
	return s.out != nil && s.out.Ejected(s.out.Member(u))
}

// ObserveLatency implements pit.LatencyObserver: a page search's latency
// feeds the node's outlier detection (cost 1 per search).
func (s *readSelector) ObserveLatency(u string, d time.Duration) {
	if s.out != nil {
		s.out.Observe(s.out.Member(u), d, 1)
	}
}

// preference is the preference of a new PIT: when nodes are ejected as
// latency outliers, its shard copies are picked on the others
// (_prefer_nodes: a shard with no copy elsewhere still uses one on an
// ejected node). "" when none is ejected or discovery is off.
func (s *readSelector) preference() string {
	if s.out == nil || s.router == nil {
		return ""
	}
	var healthy []string
	any := false
	for _, n := range s.router.Nodes() {
		if n.State() == routing.NodeDead {
			continue
		}
		if s.ejected(n.URL()) {
			any = true
			continue
		}
		healthy = append(healthy, n.ID())
	}
	if !any || len(healthy) == 0 {
		return ""
	}
	return "_prefer_nodes:" + strings.Join(healthy, ",")
}

// ObserveRead implements pit.FailureObserver: a transport failure marks the
// node dead in the shared router (which probes it back), a success marks
// it alive.
func (s *readSelector) ObserveRead(u string, err error) {
	if s.router == nil {
		return
	}
	var te *pit.TransportError
	if err != nil && !errors.As(err, &te) {
		return // an HTTP 5xx: the node answered
	}
	for _, n := range s.router.Nodes() {
		if n.URL() != u {
			continue
		}
		if err != nil {
			s.router.MarkDead(n, err)
		} else {
			s.router.MarkAlive(n)
		}
		return
	}
}

// want makes the router fetch the indices' shard tables at every refresh
// (pinned: no document is located to them, so a router would otherwise
// forget them after wantedIdle); a name it did not know triggers a
// refresh.
func (s *readSelector) want(indices []string) {
	if s.router == nil {
		return
	}
	for _, ix := range indices {
		if !strings.ContainsAny(ix, "*?") { // patterns are not resolved by discovery
			s.router.Pin(ix)
		}
	}
}
