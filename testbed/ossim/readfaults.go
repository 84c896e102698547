package ossim

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync/atomic"
	"time"
)

// readFaults are the faults of a node that concern reads: a cut HTTP port
// and the time a search takes.
type readFaults struct {
	unreachable atomic.Bool
	searchMean  atomic.Int64 // ns
	searchJit   atomic.Int64 // ns
	searches    atomic.Int64 // searches coordinated
}

// SetUnreachable cuts node i off (on) or restores it: while cut, its HTTP
// port accepts connections and closes them without an answer (a network
// cut, a node whose HTTP layer hangs up). The node stays a member of the
// cluster: its data and PIT contexts survive, nothing is reallocated.
func (c *Cluster) SetUnreachable(i int, on bool) error {
	n, err := c.nodeAt(i)
	if err != nil {
		return err
	}
	n.rf.unreachable.Store(on)
	return nil
}

// SetSearchLatency makes every search node i coordinates (every _search
// it receives, PIT searches included) take mean ± jitter (uniform)
// longer: a node slow to serve the searches sent to it. The shard reads
// it does for searches coordinated elsewhere are not slowed. Zero mean and
// jitter remove it.
func (c *Cluster) SetSearchLatency(i int, mean, jitter time.Duration) error {
	n, err := c.nodeAt(i)
	if err != nil {
		return err
	}
	if mean < 0 || jitter < 0 || jitter > mean {
		return fmt.Errorf("ossim: SetSearchLatency(%d): need 0 ≤ jitter ≤ mean, got mean %v jitter %v", i, mean, jitter)
	}
	n.rf.searchMean.Store(int64(mean))
	n.rf.searchJit.Store(int64(jitter))
	return nil
}

// cut closes the connection of a request to an unreachable node; it
// reports whether it did.
func (n *Node) cut(w http.ResponseWriter) bool {
	if !n.rf.unreachable.Load() {
		return false
	}
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return true
		}
	}
	panic(http.ErrAbortHandler) // closes the connection without an answer
}

func (n *Node) searchLatency() time.Duration {
	mean, jit := n.rf.searchMean.Load(), n.rf.searchJit.Load()
	if jit > 0 {
		mean += rand.Int64N(2*jit+1) - jit
	}
	return time.Duration(mean)
}

// searchDelay waits the search latency of a search coordinated by coord
// and counts it.
func searchDelay(ctx context.Context, coord *Node) {
	coord.rf.searches.Add(1)
	d := coord.searchLatency()
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// CoordinatedSearches is the number of _search requests node i received
// (PIT searches included) since it started.
func (c *Cluster) CoordinatedSearches(i int) int64 {
	n, err := c.nodeAt(i)
	if err != nil {
		return 0
	}
	return n.rf.searches.Load()
}

// preference is the subset of OpenSearch's search preference the emulator
// honours when it picks the shard copies of a PIT: _local, _only_local,
// _prefer_nodes:ids and _only_nodes:ids (node ids, comma-separated). Any
// other value picks as without one.
type preference struct {
	kind  string // "", "prefer-local", "only-local", "prefer", "only"
	nodes map[string]bool
	list  string
}

// only tells whether a shard with no copy on the wanted nodes fails.
func (p preference) only() bool { return p.kind == "only" || p.kind == "only-local" }

func parsePreference(v string) preference {
	switch {
	case v == "_local":
		return preference{kind: "prefer-local"}
	case v == "_only_local":
		return preference{kind: "only-local"}
	case strings.HasPrefix(v, "_prefer_nodes:"), strings.HasPrefix(v, "_only_nodes:"):
		kind, list, _ := strings.Cut(v, ":")
		p := preference{kind: "prefer", nodes: map[string]bool{}, list: list}
		if kind == "_only_nodes" {
			p.kind = "only"
		}
		for _, id := range strings.Split(list, ",") {
			p.nodes[strings.TrimSpace(id)] = true
		}
		return p
	}
	return preference{}
}

// copy picks the node whose copy of g serves a read coordinated by local.
func (p preference) copy(g *shardGroup, local *Node) *Node {
	want := func(n *Node) bool {
		switch p.kind {
		case "prefer-local", "only-local":
			return n == local
		case "prefer", "only":
			return p.nodes[n.id]
		}
		return false
	}
	if p.kind != "" {
		for _, sc := range g.copies {
			if sc.node != nil && sc.node.Running() && (sc.state == StateStarted || sc.state == StateRelocating) && want(sc.node) {
				return sc.node
			}
		}
		if p.only() {
			return nil
		}
	}
	return readCopy(g, local)
}
