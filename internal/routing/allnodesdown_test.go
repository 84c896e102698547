package routing

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// TestAllNodesDown: while some discovered node is alive, a document whose
// primary's node is dead is node_unhealthy; once every discovered node is
// dead, every document (routable or not) is all_nodes_down and Pick falls
// back to the configured endpoints; one node back ends it.
func TestAllNodesDown(t *testing.T) {
	f := threeNodes(t)
	r := newTestRouter(t, f, nil)
	timers := &syncTimers{}
	r.afterDur = timers.after // resurrection only when the test says
	r.want("logs")
	if err := r.Refresh(context.Background(), TriggerStart); err != nil {
		t.Fatal(err)
	}
	ids := map[int]string{}
	for i := 0; len(ids) < 3; i++ {
		s, _ := ShardFor(fmt.Sprint(i), "", 3, 768, 1)
		if _, ok := ids[s]; !ok {
			ids[s] = fmt.Sprint(i)
		}
	}
	nodes := r.Topology().Nodes
	r.MarkDead(nodes[0], errors.New("connection refused"))
	if _, why := r.Locate("logs", ids[0], ""); why != ReasonNodeUnhealthy {
		t.Fatalf("one dead node: %v", why)
	}
	if _, why := r.Locate("logs", ids[1], ""); why != Routed {
		t.Fatalf("an alive primary's node: %v", why)
	}
	if _, why := r.Locate("nope", "x", ""); why != ReasonUnknownIndex {
		t.Fatalf("unknown index with nodes alive: %v", why)
	}
	r.MarkDead(nodes[1], errors.New("connection refused"))
	r.MarkDead(nodes[2], errors.New("connection refused"))
	for s, id := range ids {
		if n, why := r.Locate("logs", id, ""); n != nil || why != ReasonAllNodesDown {
			t.Fatalf("shard %d with every node dead: %v %v", s, n, why)
		}
	}
	if _, why := r.Locate("nope", "x", ""); why != ReasonAllNodesDown {
		t.Fatalf("unknown index with every node dead: %v", why)
	}
	if _, why := r.Locate("logs", "", ""); why != ReasonAllNodesDown {
		t.Fatalf("no id with every node dead: %v", why)
	}
	seeds := map[*Node]bool{}
	for _, s := range r.Seeds() {
		seeds[s] = true
	}
	if p := r.Pick(); !seeds[p] {
		t.Fatalf("Pick with every node dead chose %v, not an endpoint", p.Name())
	}
	if ReasonAllNodesDown.String() != "all_nodes_down" {
		t.Fatal(ReasonAllNodesDown.String())
	}
	r.MarkAlive(nodes[1])
	if _, why := r.Locate("logs", ids[1], ""); why != Routed {
		t.Fatalf("a node back: %v", why)
	}
	if _, why := r.Locate("logs", ids[2], ""); why != ReasonNodeUnhealthy {
		t.Fatalf("a node back, another still dead: %v", why)
	}
}
