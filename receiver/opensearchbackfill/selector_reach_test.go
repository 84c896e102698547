package opensearchbackfill

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/opensearchrouted/opensearchrouted/internal/routing"
)

// TestReadSelectorSkipsUnreachableHolders: the only node holding a copy of
// an index publishes an HTTP address that does not answer (a proxy or NAT
// in between): reads never go to that address but to a node whose address
// answered (which forwards the search), and only the reachability probe
// ever tried it.
func TestReadSelectorSkipsUnreachableHolders(t *testing.T) {
	c := newCluster(t)
	createIndex(t, c.Addr(0), "solo", 1, 0)
	if err := c.WaitGreen(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	copies, err := c.Shards("solo")
	if err != nil || len(copies) != 1 {
		t.Fatalf("shards %v %v", copies, err)
	}
	holder := copies[0].Node
	// An address that refuses: a port just closed.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	if err := c.SetPublishAddress(holder, dead); err != nil {
		t.Fatal(err)
	}
	seed := c.Addr((holder + 1) % 3)
	r, err := routing.New(routing.Options{Client: http.DefaultClient, Seeds: []string{seed}, StatsInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s := newReadSelector(r, []string{seed}, nil)
	s.want([]string{"solo"})
	if err := r.Refresh(context.Background(), "test"); err != nil {
		t.Fatal(err)
	}
	idx, ok := r.Topology().WriteIndex("solo")
	if !ok || idx.Shards[0].Primary.Node == nil || idx.Shards[0].Primary.Node.URL() != "http://"+dead || idx.Shards[0].Primary.Node.Reachable() {
		t.Fatalf("the topology does not show the holder at its unreachable address: %+v", idx)
	}
	reachable := map[string]bool{}
	for i := range 3 {
		if i != holder {
			reachable[c.Addr(i)] = true
		}
	}
	for range 12 {
		u, ok := s.ReadNode([]string{"solo"}, func(string) bool { return false })
		if !ok || !reachable[u] {
			t.Fatalf("read of solo went to %q (the holder publishes %s)", u, dead)
		}
	}
}
