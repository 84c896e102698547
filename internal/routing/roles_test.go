package routing

import (
	"context"
	"testing"
)

func TestRoleRules(t *testing.T) {
	for _, c := range []struct {
		roles            []string
		serves, prefered bool
	}{
		{nil, true, false},
		{[]string{}, true, true},
		{[]string{"remote_cluster_client"}, true, true},
		{[]string{"ingest"}, true, true},
		{[]string{"ingest", "remote_cluster_client"}, true, true},
		{[]string{"cluster_manager"}, false, false},
		{[]string{"master"}, false, false},
		{[]string{"cluster_manager", "voting_only", "remote_cluster_client"}, false, false},
		{[]string{"cluster_manager", "data", "ingest", "remote_cluster_client"}, true, false},
		{[]string{"data"}, true, false},
		{[]string{"data_hot"}, true, false},
		{[]string{"ingest", "cluster_manager"}, true, false},
		{[]string{"search"}, false, false},
		{[]string{"warm"}, false, false},
		{[]string{"search", "remote_cluster_client"}, false, false},
		{[]string{"ml"}, true, false},
	} {
		if s, p := servesRequests(c.roles), preferredUnrouted(c.roles); s != c.serves || p != c.prefered {
			t.Errorf("%v: serves %v preferred %v, want %v %v", c.roles, s, p, c.serves, c.prefered)
		}
	}
}

// A cluster-manager-only node is never contacted (nor probed); a
// coordinating-only node takes the unrouted traffic; routed documents
// still go to their primaries' data nodes.
func TestRolesChooseNodes(t *testing.T) {
	f := threeNodes(t)
	managerHits, mgr := countingServer(t)
	f.nodes = append(f.nodes, "m", "coord")
	f.roles["m"] = []string{"cluster_manager"}
	f.publish["m"] = mgr
	f.roles["coord"] = []string{}
	r := newTestRouter(t, f, nil)
	r.want("logs")
	for i := 0; i < 2; i++ {
		if err := r.Refresh(context.Background(), TriggerStart); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range r.Nodes() {
		if n.Name() == "m" {
			t.Fatal("the cluster-manager-only node is among Nodes()")
		}
	}
	if len(r.Nodes()) != 4 {
		t.Fatalf("Nodes() has %d, want the 3 data nodes and the coordinating one", len(r.Nodes()))
	}
	for i := 0; i < 20; i++ {
		if p := r.Pick(); p.Name() != "coord" {
			t.Fatalf("Pick() = %s, want the coordinating-only node", p.Name())
		}
	}
	if n, why := r.Locate("logs", idOn(1), ""); why != Routed || n.Name() != "n1" {
		t.Fatalf("routed: %v %v", n, why)
	}
	r.sampleRTT(context.Background())
	if err := r.PollStats(context.Background()); err != nil {
		t.Fatal(err)
	}
	if h := managerHits.Load(); h != 0 {
		t.Fatalf("%d requests reached the cluster-manager-only node", h)
	}
	// The coordinating node dead: unrouted traffic goes to the data nodes.
	for _, n := range r.Nodes() {
		if n.Name() == "coord" {
			n.dead.Store(true)
		}
	}
	if p := r.Pick(); p.Name() == "coord" || p.Name() == "m" {
		t.Fatalf("Pick() = %s", p.Name())
	}
}
