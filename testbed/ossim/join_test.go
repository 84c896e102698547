package ossim

import (
	"testing"
	"time"
)

// A node restarted outside the cluster answers GET /, and its local
// health says it has no cluster manager; once joined it says it has, and
// it receives replicas again.
func TestRestartNodeDetachedThenJoin(t *testing.T) {
	c := StartT(t, Options{Nodes: 2, NoHopLatency: true, DetectionDelay: 20 * time.Millisecond, RecoveryTime: 20 * time.Millisecond})
	createIndex(t, c.Addr(0), "j", 2, 1, "")
	if err := c.RestartNodeDetached(1); err != nil {
		t.Fatal(err)
	}
	mustOK(t, "GET", c.Addr(1)+"/", "")
	const local = "/_cluster/health?local=true&filter_path=discovered_master,discovered_cluster_manager,status"
	h := mustOK(t, "GET", c.Addr(1)+local, "")
	if h["discovered_master"] != false || h["discovered_cluster_manager"] != false || h["status"] != "red" {
		t.Fatalf("detached node's local health %v", h)
	}
	if st := c.NodeStats(1); !st.Running || st.Joined {
		t.Fatalf("detached: running %v joined %v", st.Running, st.Joined)
	}
	if h := mustOK(t, "GET", c.Addr(0)+local, ""); h["discovered_cluster_manager"] != true {
		t.Fatalf("member's local health %v", h)
	}
	if err := c.JoinNode(1); err != nil {
		t.Fatal(err)
	}
	if h := mustOK(t, "GET", c.Addr(1)+local, ""); h["discovered_master"] != true || h["discovered_cluster_manager"] != true {
		t.Fatalf("joined node's local health %v", h)
	}
	if err := c.WaitGreen(5 * time.Second); err != nil {
		t.Fatal(err)
	}
}
