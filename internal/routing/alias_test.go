package routing

import (
	"context"
	"fmt"
	"testing"
)

func TestWriteAliasesResolved(t *testing.T) {
	f := threeNodes(t)
	f.indices["logs-000001"] = &fakeIndex{N: 3, R: 768, P: 1, Primary: []string{"n2", "n0", "n1"}}
	f.aliases = []catAlias{
		{Alias: "logs-write", Index: "logs-000001", IndexRouting: "-", IsWriteIndex: "false"},
		{Alias: "logs-write", Index: "logs", IndexRouting: "-", IsWriteIndex: "true"},
		{Alias: "single", Index: "logs-000001", IndexRouting: "-", IsWriteIndex: "-"},
		{Alias: "routed", Index: "logs", IndexRouting: "tenant-7", IsWriteIndex: "-"},
		{Alias: "readonly", Index: "logs", IndexRouting: "-", IsWriteIndex: "-"},
		{Alias: "readonly", Index: "logs-000001", IndexRouting: "-", IsWriteIndex: "-"},
	}
	r := newTestRouter(t, f, nil)
	for _, n := range []string{"logs-write", "single", "routed", "readonly"} {
		r.want(n)
	}
	if err := r.Refresh(context.Background(), TriggerStart); err != nil {
		t.Fatal(err)
	}
	topo := r.Topology()
	if wi, ok := topo.WriteIndex("logs-write"); !ok || wi.Name != "logs" || !topo.IsAlias("logs-write") || topo.IsAlias("logs") {
		t.Fatalf("is_write_index alias: %v %v", wi, ok)
	}
	if wi, ok := topo.WriteIndex("single"); !ok || wi.Name != "logs-000001" {
		t.Fatalf("single-index alias: %v %v", wi, ok)
	}
	if _, why := r.Locate("readonly", "a", ""); why != ReasonUnknownIndex {
		t.Fatalf("alias without a write index: %v", why)
	}
	rs, _ := ShardFor("x", "tenant-7", 3, 768, 1)
	for i := 0; i < 100; i++ {
		id := fmt.Sprint("doc-", i)
		s, _ := ShardFor(id, "", 3, 768, 1)
		if n, why := r.Locate("logs-write", id, ""); why != Routed || n.Name() != fmt.Sprintf("n%d", s) {
			t.Fatalf("logs-write %s: %v %v, want n%d", id, n, why, s)
		}
		want := []string{"n2", "n0", "n1"}[s]
		if n, why := r.Locate("single", id, ""); why != Routed || n.Name() != want {
			t.Fatalf("single %s: %v %v, want %s", id, n, why, want)
		}
		// index_routing decides the shard, whatever the id.
		if n, why := r.Locate("routed", id, ""); why != Routed || n.Name() != fmt.Sprintf("n%d", rs) {
			t.Fatalf("routed %s: %v %v, want n%d", id, n, why, rs)
		}
	}
}
