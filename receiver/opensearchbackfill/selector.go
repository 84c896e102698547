package opensearchbackfill

import (
	"errors"
	"strings"
	"sync/atomic"

	"github.com/opensearchrouted/opensearchrouted/internal/pit"
	"github.com/opensearchrouted/opensearchrouted/internal/routing"
)

// readSelector is the pit.NodeSelector of the receiver: a read goes to a
// node holding a copy (primary or replica) of a shard of the indices,
// rotating over them, skipping dead and overloaded nodes (seed 002's rule
// for reads: spread over healthy members, eject clearly degraded ones).
// When the topology does not know the indices (patterns, aliases, a
// missing privilege, before the first discovery), any alive node of the
// cluster serves; when none is left, the seeds do.
type readSelector struct {
	router *routing.Router // nil: discovery disabled
	seeds  []string
	rr     atomic.Uint64
}

func newReadSelector(r *routing.Router, seeds []string) *readSelector {
	s := &readSelector{router: r}
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

// pick rotates over the alive, not overloaded nodes; if all of those are
// excluded, over the alive overloaded ones.
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
			if st == routing.NodeDead || (pass == 0 && st == routing.NodeOverloaded) || exclude(nd.URL()) {
				continue
			}
			return nd.URL(), true
		}
	}
	return "", false
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
