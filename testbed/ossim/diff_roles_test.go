package ossim

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/opensearchrouted/opensearchrouted/testbed/cluster"
)

// rolesScenario: a cluster of 3 data nodes (default roles), a
// cluster-manager-only node (3) and a coordinating-only node (4): what
// _nodes, _cat/nodes and _cat/shards say about them, that no shard copy
// lands on nodes 3 and 4, and that both coordinate writes and searches.
func rolesScenario(r *recorder, nodes int) {
	t := r.t
	index := func(name string) string {
		for i := 0; i < nodes; i++ {
			if r.tg.NodeName(i) == name {
				return fmt.Sprint(i)
			}
		}
		return "unknown:" + name
	}
	r.call("create through the coordinating-only node", 4, "PUT", "/ro", `{"settings":{"number_of_shards":3,"number_of_replicas":1}}`)
	r.waitGreen("ro")
	_, nm := r.call("", 0, "GET", "/_nodes", "")
	var rows []string
	for _, n := range asMap(get(nm, "nodes")) {
		rows = append(rows, fmt.Sprintf("%s roles=%v", index(fmt.Sprint(get(n, "name"))), get(n, "roles")))
	}
	sort.Strings(rows)
	r.note("nodes roles", map[string]any{"header": get(nm, "_nodes"), "nodes": rows})
	_, local := r.call("", 4, "GET", "/_nodes/_local", "")
	for _, n := range asMap(get(local, "nodes")) {
		r.note("coordinating-only node's own roles", get(n, "roles"))
	}
	st, raw := doRaw(t, "GET", r.tg.Addr(1)+"/_cat/nodes?format=json&h=name,node.role,cluster_manager", "", nil)
	var cat []map[string]any
	_ = json.Unmarshal(raw, &cat)
	rows = nil
	elected := ""
	for _, row := range cat {
		rows = append(rows, fmt.Sprintf("%s %v", index(fmt.Sprint(row["name"])), row["node.role"]))
		if row["cluster_manager"] == "*" {
			elected += index(fmt.Sprint(row["name"]))
		}
	}
	sort.Strings(rows)
	// Which eligible node is elected may differ: one of 0..3, never 4.
	r.note("cat nodes", map[string]any{"status": st, "rows": rows, "one elected, eligible": len(elected) == 1 && elected != "4"})
	st, raw = doRaw(t, "GET", r.tg.Addr(3)+"/_cat/shards/ro?format=json&h=index,shard,prirep,state,node", "", nil)
	_ = json.Unmarshal(raw, &cat)
	rows = nil
	holders := map[string]int{}
	for _, row := range cat {
		rows = append(rows, fmt.Sprintf("%v/%v/%v", row["shard"], row["prirep"], row["state"]))
		holders[index(fmt.Sprint(row["node"]))]++
	}
	sort.Strings(rows)
	var held []string
	for h := range holders {
		held = append(held, h)
	}
	sort.Strings(held)
	// The real balancer puts 2 of the 6 copies on each data node.
	r.note("cat shards", map[string]any{"status": st, "rows": rows, "holders": held})
	r.call("health", 3, "GET", "/_cluster/health/ro", "")
	body := bulkBody(`{"create":{"_index":"ro","_id":"a"}}`, `{"n":1}`, `{"create":{"_index":"ro","_id":"b"}}`, `{"n":2}`)
	r.call("bulk through the coordinating-only node", 4, "POST", "/_bulk?refresh=true", body)
	r.call("bulk through the cluster-manager-only node", 3, "POST", "/_bulk?refresh=true", bulkBody(`{"create":{"_index":"ro","_id":"c"}}`, `{"n":3}`))
	r.call("search through the coordinating-only node", 4, "POST", "/ro/_search", `{"sort":["n"],"_source":false}`)
	r.call("count through the cluster-manager-only node", 3, "GET", "/ro/_count", "")
	_, root := r.call("", 4, "GET", "/", "")
	r.note("root of the coordinating-only node", strings.HasPrefix(fmt.Sprint(get(root, "version", "number")), "2."))
}

// TestDifferentialRoles runs rolesScenario on the emulator and on real
// OpenSearch with the same roles.
func TestDifferentialRoles(t *testing.T) {
	emu := StartT(t, Options{Nodes: 5, NoHopLatency: true, DetectionDelay: 50 * time.Millisecond,
		Roles: [][]string{nil, nil, nil, {"cluster_manager"}, {}}})
	er := &recorder{t: t, tg: emuTarget{emu}}
	rolesScenario(er, 5)
	if t.Failed() {
		return
	}
	real := cluster.Start(t, cluster.Options{Nodes: 5, PerNode: []cluster.NodeOptions{{}, {}, {},
		{Settings: map[string]string{"node.roles": "cluster_manager"}},
		{Settings: map[string]string{"node.roles": "[]"}}}}) // the empty list: coordinating-only
	rr := &recorder{t: t, tg: real}
	rolesScenario(rr, 5)
	compareObservations(t, er.obs, rr.obs)
}
