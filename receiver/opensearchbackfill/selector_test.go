package opensearchbackfill

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/opensearchrouted/opensearchrouted/internal/pit"
	"github.com/opensearchrouted/opensearchrouted/internal/routing"
)

func TestReadSelectorPrefersShardHolders(t *testing.T) {
	c := newCluster(t)
	createIndex(t, c.Addr(0), "solo", 1, 0)
	createIndex(t, c.Addr(0), "spread", 3, 1)
	if err := c.WaitGreen(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	r, err := routing.New(routing.Options{Client: http.DefaultClient, Seeds: c.Addrs()[:1], StatsInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	s := newReadSelector(r, c.Addrs()[:1], nil)
	none := func(string) bool { return false }

	// Before discovery: the seed.
	if u, ok := s.ReadNode([]string{"solo"}, none); !ok || u != c.Addr(0) {
		t.Fatalf("before discovery: %q", u)
	}
	s.want([]string{"solo", "spread", "logs-*"})
	if err := r.Refresh(context.Background(), "test"); err != nil {
		t.Fatal(err)
	}
	copies, err := c.Shards("solo")
	if err != nil || len(copies) != 1 {
		t.Fatalf("shards %v %v", copies, err)
	}
	holder := c.Addr(copies[0].Node)
	for range 6 {
		if u, _ := s.ReadNode([]string{"solo"}, none); u != holder {
			t.Fatalf("read of solo went to %s, holder is %s", u, holder)
		}
	}
	// Reads of an index with copies everywhere are spread over every node.
	seen := map[string]int{}
	for range 30 {
		u, _ := s.ReadNode([]string{"spread"}, none)
		seen[u]++
	}
	spread, _ := c.Shards("spread")
	want := map[string]bool{}
	for _, sc := range spread {
		want[c.Addr(sc.Node)] = true
	}
	if len(seen) != len(want) || len(want) < 2 {
		t.Errorf("spread reads went to %v, copies are on %v", seen, want)
	}
	for u := range seen {
		if !want[u] {
			t.Errorf("a read went to %s, which holds no copy", u)
		}
	}
	// The holder fails at the transport level: marked dead, reads go to an
	// alive node of the cluster.
	s.ObserveRead(holder, &pit.TransportError{Op: "search", Node: holder, Err: errors.New("connection refused")})
	for range 6 {
		if u, ok := s.ReadNode([]string{"solo"}, none); !ok || u == holder {
			t.Fatalf("read went to the dead holder (%q)", u)
		}
	}
	// An HTTP 5xx is an answer: it does not mark the node dead.
	other, _ := s.ReadNode([]string{"spread"}, func(u string) bool { return u == holder })
	s.ObserveRead(other, errors.New("HTTP 503"))
	for _, n := range r.Nodes() {
		if n.URL() == other && !n.Alive() {
			t.Error("a 5xx marked the node dead")
		}
	}
	// A success brings the holder back.
	s.ObserveRead(holder, nil)
	if u, _ := s.ReadNode([]string{"solo"}, none); u != holder {
		t.Errorf("after recovery: %s", u)
	}
	// Everything excluded: the seeds are still offered only if not excluded.
	if _, ok := s.ReadNode([]string{"solo"}, func(string) bool { return true }); ok {
		t.Error("a node was offered although all are excluded")
	}
	// Without discovery: rotation over the seeds.
	plain := newReadSelector(nil, []string{"http://a/", "http://b"}, nil)
	a, _ := plain.ReadNode(nil, none)
	b, _ := plain.ReadNode(nil, none)
	if a == b || (a != "http://a" && a != "http://b") {
		t.Errorf("seeds %q %q", a, b)
	}
}
