package cluster

// Proofs against a real OpenSearch cluster (issue 3): the cluster forms and
// works, the shard math of internal/routing matches the server, and the
// response shapes of shared/spec/opensearch.md §2–§4 are what the server
// sends. Where the server differs from the spec, the test asserts the real
// shape and says so in a comment starting with "SPEC DIFFERS".
//
// Test order matters: the tests sharing the 3-node cluster come first; the
// kill/restart test changes it (and restores it); the tiny-write-queue test
// closes it to take the machine lock for a cluster of its own.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/opensearchrouted/opensearchrouted/internal/routing"
)

func TestClusterForms(t *testing.T) {
	c := sharedCluster(t)
	for i := 0; i < c.Len(); i++ {
		m := mustCall(t, c, i, "GET", "/", "", 200)
		if m["name"] != c.NodeName(i) || m["cluster_name"] != "osr-test" {
			t.Errorf("GET / on node %d: name %v cluster_name %v", i, m["name"], m["cluster_name"])
		}
		if at(m, "version", "number") != c.Version() || at(m, "version", "distribution") != "opensearch" {
			t.Errorf("GET / version = %v", m["version"])
		}
	}
	h := mustCall(t, c, 1, "GET", "/_cluster/health", "", 200)
	if h["status"] != "green" || num(t, h["number_of_nodes"], "number_of_nodes") != 3 {
		t.Fatalf("health = %v", h)
	}
	code, out := call(t, c, 2, "GET", "/_cat/nodes?format=json&h=name,ip,node.role", "")
	if code != 200 {
		t.Fatalf("_cat/nodes: %d %s", code, out)
	}
	var names []string
	for _, n := range decodeList(t, out) {
		names = append(names, str(t, n["name"], "_cat/nodes name"))
		if n["ip"] != "127.0.0.1" {
			t.Errorf("_cat/nodes ip = %v", n["ip"])
		}
	}
	sort.Strings(names)
	if !slices.Equal(names, []string{"node-0", "node-1", "node-2"}) {
		t.Fatalf("_cat/nodes names = %v", names)
	}

	// Memory per node is bounded by the heap flag (512m by default).
	st := mustCall(t, c, 0, "GET", "/_nodes/stats/jvm", "", 200)
	nodes := obj(t, st["nodes"], "nodes")
	if len(nodes) != 3 {
		t.Fatalf("_nodes/stats/jvm has %d nodes", len(nodes))
	}
	for id, n := range nodes {
		max := num(t, at(n, "jvm", "mem", "heap_max_in_bytes"), "heap_max_in_bytes")
		if max > 512<<20 || max < 400<<20 {
			t.Errorf("node %s heap_max_in_bytes = %d, want about 512 MiB", id, max)
		}
	}

	// A bulk is accepted and its documents are served by every node.
	createIndex(t, c, "forms", `{"settings":{"number_of_shards":3,"number_of_replicas":1}}`)
	var b strings.Builder
	for k := 0; k < 200; k++ {
		b.WriteString(bulkLine("index", "forms", fmt.Sprintf("f%03d", k), ""))
		fmt.Fprintf(&b, `{"n":%d,"msg":"hello %d"}`+"\n", k, k)
	}
	m := mustCall(t, c, 0, "POST", "/_bulk?refresh=wait_for", b.String(), 200)
	if m["errors"] != false {
		t.Fatalf("bulk errors: %v", tail(fmt.Sprint(m), 1000))
	}
	items := list(t, m["items"], "items")
	if len(items) != 200 {
		t.Fatalf("bulk returned %d items", len(items))
	}
	for k, it := range items {
		if at(it, "index", "_id") != fmt.Sprintf("f%03d", k) || num(t, at(it, "index", "status"), "status") != 201 {
			t.Fatalf("item %d = %v: items must come back in request order with status 201", k, it)
		}
	}
	for i := 0; i < 3; i++ {
		r := mustCall(t, c, i, "POST", "/forms/_search", `{"query":{"match":{"msg":"hello"}},"size":0,"track_total_hits":true}`, 200)
		if n := num(t, at(r, "hits", "total", "value"), "hits.total.value"); n != 200 {
			t.Errorf("search on node %d: %d hits, want 200", i, n)
		}
	}
}

type vector struct {
	row              int
	id, routing      string
	n, r, p          int
	hash             int32
	shard            int
	effectiveRouting string
}

func loadVectors(t *testing.T) []vector {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "internal", "routing", "testdata", "routing_vectors.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []vector
	sc := bufio.NewScanner(f)
	first := true
	for sc.Scan() {
		if first {
			first = false
			continue
		}
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 7 {
			t.Fatalf("bad vector line %q", sc.Text())
		}
		atoi := func(s string) int {
			v, err := strconv.Atoi(s)
			if err != nil {
				t.Fatalf("bad number %q in %q", s, sc.Text())
			}
			return v
		}
		v := vector{row: len(out), id: f[0], routing: f[1], n: atoi(f[2]), r: atoi(f[3]), p: atoi(f[4]),
			hash: int32(atoi(f[5])), shard: atoi(f[6])}
		v.effectiveRouting = v.routing
		if v.effectiveRouting == "" {
			v.effectiveRouting = v.id
		}
		out = append(out, v)
	}
	if len(out) != 42 {
		t.Fatalf("%d vectors, want 42", len(out))
	}
	return out
}

// partitionShards is the set of shards a routing value may reach on a
// partitioned index: offsets 0..p-1 added to its hash.
func partitionShards(routingValue string, n, r, p int) []int {
	set := map[int]bool{}
	h := int64(routing.Hash(routingValue))
	for o := 0; o < p; o++ {
		sum := int64(int32(h + int64(o)))
		m := ((sum % int64(r)) + int64(r)) % int64(r)
		set[int(m)/(r/n)] = true
	}
	var out []int
	for s := range set {
		out = append(out, s)
	}
	sort.Ints(out)
	return out
}

func TestRoutingVectorsAgainstServer(t *testing.T) {
	c := sharedCluster(t)
	vs := loadVectors(t)
	type layout struct{ n, r, p int }
	indexOf := func(l layout) string { return fmt.Sprintf("rv-%d-%d-%d", l.n, l.r, l.p) }
	layouts := map[layout]bool{}
	for _, v := range vs {
		layouts[layout{v.n, v.r, v.p}] = true
	}
	for l := range layouts {
		settings := fmt.Sprintf(`"number_of_shards":%d,"number_of_routing_shards":%d,"number_of_replicas":0`, l.n, l.r)
		mappings := `"properties":{"row":{"type":"integer"}}`
		if l.p > 1 {
			settings += fmt.Sprintf(`,"routing_partition_size":%d`, l.p)
			// SPEC DIFFERS (detail): 2.19.6 accepts a partitioned index
			// without "_routing":{"required":true}, but then refuses every
			// write to it (400 illegal_argument_exception "mapping type
			// [_doc] must have routing required for partitioned index").
			mappings += `,"_routing":{"required":true}`
		}
		mustCall(t, c, 0, "PUT", "/"+indexOf(l)+"?wait_for_active_shards=0", `{"settings":{`+settings+`},"mappings":{`+mappings+`}}`, 200)
	}
	mustCall(t, c, 0, "GET", "/_cluster/health/rv-*?wait_for_status=green&timeout=120s", "", 200)
	for l := range layouts {
		// R, N, p as the spec says to read them.
		md := mustCall(t, c, 1, "GET", "/_cluster/state/metadata/"+indexOf(l)+
			"?filter_path=metadata.indices.*.routing_num_shards,metadata.indices.*.settings.index.number_of_shards,metadata.indices.*.settings.index.routing_partition_size", "", 200)
		im := at(md, "metadata", "indices", indexOf(l))
		if got := num(t, at(im, "routing_num_shards"), "routing_num_shards"); got != int64(l.r) {
			t.Errorf("%s routing_num_shards = %d, want %d", indexOf(l), got, l.r)
		}
		if got := str(t, at(im, "settings", "index", "number_of_shards"), "number_of_shards"); got != strconv.Itoa(l.n) {
			t.Errorf("%s number_of_shards = %q", indexOf(l), got)
		}
		if l.p > 1 {
			if got := str(t, at(im, "settings", "index", "routing_partition_size"), "routing_partition_size"); got != strconv.Itoa(l.p) {
				t.Errorf("%s routing_partition_size = %q", indexOf(l), got)
			}
		} else if v := at(im, "settings", "index", "routing_partition_size"); v != nil {
			t.Errorf("%s: routing_partition_size present (%v) although p = 1", indexOf(l), v)
		}
	}

	var b strings.Builder
	for _, v := range vs {
		b.WriteString(bulkLine("index", indexOf(layout{v.n, v.r, v.p}), v.id, v.routing))
		fmt.Fprintf(&b, `{"row":%d}`+"\n", v.row)
	}
	m := mustCall(t, c, 2, "POST", "/_bulk?refresh=true", b.String(), 200)
	if m["errors"] != false {
		t.Fatalf("bulk of the vectors failed: %v", tail(fmt.Sprint(m), 2000))
	}

	for _, v := range vs {
		idx := indexOf(layout{v.n, v.r, v.p})
		// Our math against the table.
		if h := routing.Hash(v.effectiveRouting); h != v.hash {
			t.Errorf("row %d: Hash(%q) = %d, tsv %d", v.row, v.effectiveRouting, h, v.hash)
		}
		got, err := routing.ShardFor(v.id, v.routing, v.n, v.r, v.p)
		if err != nil || got != v.shard {
			t.Errorf("row %d: ShardFor = %d, %v; tsv shard %d", v.row, got, err, v.shard)
		}
		// The server: where the document really is.
		r := mustCall(t, c, v.row%3, "POST", "/"+idx+"/_search",
			fmt.Sprintf(`{"query":{"term":{"row":%d}},"explain":true,"_source":false}`, v.row), 200)
		hits := list(t, at(r, "hits", "hits"), "hits")
		if len(hits) != 1 {
			t.Fatalf("row %d: %d hits in %s", v.row, len(hits), idx)
		}
		if s := shardOf(t, at(hits[0], "_shard")); s != v.shard {
			t.Errorf("row %d (%q, routing %q, N=%d R=%d p=%d): server put it in shard %d, tsv/ShardFor say %d",
				v.row, v.id, v.routing, v.n, v.r, v.p, s, v.shard)
		}
		// The server's routing table for the routing value.
		ss := mustCall(t, c, 0, "GET", "/"+idx+"/_search_shards?routing="+url.QueryEscape(v.effectiveRouting), "", 200)
		var shards []int
		for _, g := range list(t, ss["shards"], "shards") {
			// One copy per group with 0 replicas, but two while the balancer
			// relocates it (source and target): all name the same shard.
			group := list(t, g, "shard group")
			if len(group) == 0 {
				t.Fatalf("row %d: empty shard group", v.row)
			}
			s := num(t, at(group[0], "shard"), "shard")
			for _, cp := range group[1:] {
				if num(t, at(cp, "shard"), "shard") != s {
					t.Fatalf("row %d: shard group mixes shards: %v", v.row, group)
				}
			}
			shards = append(shards, int(s))
		}
		sort.Ints(shards)
		if v.p == 1 {
			if len(shards) != 1 || shards[0] != v.shard {
				t.Errorf("row %d: _search_shards?routing=%q = %v, want [%d]", v.row, v.effectiveRouting, shards, v.shard)
			}
		} else {
			// A partitioned index: p consecutive offsets, which may map to
			// fewer than p distinct shards (R/N > 1).
			want := partitionShards(v.effectiveRouting, v.n, v.r, v.p)
			if !slices.Equal(shards, want) || !slices.Contains(shards, v.shard) {
				t.Errorf("row %d: _search_shards?routing=%q = %v, want %v (containing %d)", v.row, v.effectiveRouting, shards, want, v.shard)
			}
		}
	}
}

func TestSplitKeepsRoutingShards(t *testing.T) {
	c := sharedCluster(t)
	// R = 12 is not what a fresh 6-shard index would get (768): after the
	// split the server must keep 12, so R must be read, never recomputed.
	createIndex(t, c, "split-src", `{"settings":{"number_of_shards":3,"number_of_routing_shards":12,"number_of_replicas":0}}`)
	var b strings.Builder
	var ids []string
	for k := 0; k < 60; k++ {
		id := fmt.Sprintf("s%d", k)
		ids = append(ids, id)
		b.WriteString(bulkLine("index", "split-src", id, ""))
		b.WriteString(`{"k":1}` + "\n")
	}
	if m := mustCall(t, c, 0, "POST", "/_bulk?refresh=true", b.String(), 200); m["errors"] != false {
		t.Fatalf("bulk: %v", m)
	}
	mustCall(t, c, 0, "PUT", "/split-src/_settings", `{"index.blocks.write":true}`, 200)
	mustCall(t, c, 0, "POST", "/split-src/_split/split-dst?wait_for_active_shards=all",
		`{"settings":{"index.number_of_shards":6,"index.number_of_replicas":0}}`, 200)
	mustCall(t, c, 0, "GET", "/_cluster/health/split-dst?wait_for_status=green&timeout=60s", "", 200)
	md := mustCall(t, c, 1, "GET", "/_cluster/state/metadata/split-dst?filter_path=metadata.indices.*.routing_num_shards,metadata.indices.*.settings.index.number_of_shards", "", 200)
	if r := num(t, at(md, "metadata", "indices", "split-dst", "routing_num_shards"), "routing_num_shards"); r != 12 {
		t.Fatalf("split-dst routing_num_shards = %d, want 12 (kept from the source; DefaultRoutingShards(6) = %d)", r, routing.DefaultRoutingShards(6))
	}
	if n := at(md, "metadata", "indices", "split-dst", "settings", "index", "number_of_shards"); n != "6" {
		t.Fatalf("split-dst number_of_shards = %v", n)
	}
	// _settings does not show the R a split kept.
	st := mustCall(t, c, 0, "GET", "/split-dst/_settings?flat_settings=true", "", 200)
	if v := at(st, "split-dst", "settings", "index.number_of_routing_shards"); v != nil && v != "12" {
		t.Errorf("split-dst _settings number_of_routing_shards = %v", v)
	}
	idsJSON, _ := json.Marshal(ids)
	r := mustCall(t, c, 2, "POST", "/split-dst/_search?size=100", `{"query":{"ids":{"values":`+string(idsJSON)+`}},"explain":true,"_source":false}`, 200)
	hits := list(t, at(r, "hits", "hits"), "hits")
	if len(hits) != 60 {
		t.Fatalf("split-dst has %d of the 60 documents", len(hits))
	}
	moved := 0
	for _, h := range hits {
		id := str(t, at(h, "_id"), "_id")
		want, err := routing.ShardFor(id, "", 6, 12, 1)
		if err != nil {
			t.Fatal(err)
		}
		if got := shardOf(t, at(h, "_shard")); got != want {
			t.Errorf("%s in split-dst shard %d, want %d", id, got, want)
		}
		if old, _ := routing.ShardFor(id, "", 3, 12, 1); old*2 != want {
			moved++
		}
		if wrong, _ := routing.ShardFor(id, "", 6, routing.DefaultRoutingShards(6), 1); wrong != want {
			moved++
		}
	}
	if moved == 0 {
		t.Fatalf("every id lands alike under R=12 and R=768: the test proves nothing")
	}
}

func TestTopologyShapes(t *testing.T) {
	c := sharedCluster(t)
	createIndex(t, c, "topo", `{"settings":{"number_of_shards":3,"number_of_replicas":1}}`)
	mustCall(t, c, 0, "GET", "/_cluster/health?wait_for_status=green&wait_for_no_relocating_shards=true&timeout=90s", "", 200)

	// _cat/shards: strings only, p/r, STARTED, node names.
	code, out := call(t, c, 1, "GET", "/_cat/shards/topo?format=json&h=index,shard,prirep,state,node", "")
	if code != 200 {
		t.Fatalf("_cat/shards: %d %s", code, out)
	}
	rows := decodeList(t, out)
	if len(rows) != 6 {
		t.Fatalf("_cat/shards topo: %d rows, want 6", len(rows))
	}
	copies := map[string][]string{}
	for _, r := range rows {
		for _, k := range []string{"index", "shard", "prirep", "state", "node"} {
			str(t, r[k], "_cat/shards "+k)
		}
		if r["state"] != "STARTED" || (r["prirep"] != "p" && r["prirep"] != "r") {
			t.Errorf("_cat/shards row %v", r)
		}
		if !strings.HasPrefix(r["node"].(string), "node-") {
			t.Errorf("_cat/shards node %q is not a node name", r["node"])
		}
		copies[r["shard"].(string)] = append(copies[r["shard"].(string)], r["prirep"].(string)+"@"+r["node"].(string))
	}
	for s, cs := range copies {
		sort.Strings(cs)
		if len(cs) != 2 || cs[0][0] != 'p' || cs[1][0] != 'r' || cs[0][2:] == cs[1][2:] {
			t.Errorf("shard %s copies %v: want one primary and one replica on different nodes", s, cs)
		}
	}

	// _nodes/http: name, roles, attributes.zone, http.publish_address ip:port.
	nh := mustCall(t, c, 0, "GET", "/_nodes/http", "", 200)
	nodes := obj(t, nh["nodes"], "nodes")
	if len(nodes) != 3 {
		t.Fatalf("_nodes/http: %d nodes", len(nodes))
	}
	for id, n := range nodes {
		name := str(t, at(n, "name"), "name")
		i, err := strconv.Atoi(strings.TrimPrefix(name, "node-"))
		if err != nil || i < 0 || i > 2 {
			t.Fatalf("node %s name %q", id, name)
		}
		var roles []string
		for _, r := range list(t, at(n, "roles"), "roles") {
			roles = append(roles, str(t, r, "role"))
		}
		if !slices.Contains(roles, "data") || !slices.Contains(roles, "cluster_manager") || !slices.Contains(roles, "ingest") {
			t.Errorf("%s roles = %v", name, roles)
		}
		if z := at(n, "attributes", "zone"); z != string(rune('a'+i)) {
			t.Errorf("%s attributes.zone = %v, want %c", name, z, 'a'+i)
		}
		pub := str(t, at(n, "http", "publish_address"), "http.publish_address")
		want := strings.TrimPrefix(c.Addr(i), "http://")
		if i == 2 {
			// http.publish_port: published, not bound.
			want = "127.0.0.1:" + strconv.Itoa(shared.publishPort)
		}
		if pub != want {
			t.Errorf("%s http.publish_address = %q, want %q", name, pub, want)
		}
		bound := list(t, at(n, "http", "bound_address"), "http.bound_address")
		if len(bound) == 0 || bound[0] != strings.TrimPrefix(c.Addr(i), "http://") {
			t.Errorf("%s http.bound_address = %v, want [%s]", name, bound, c.Addr(i))
		}
	}

	// Metadata: R is an integer, N a string; p absent when 1. _settings has no R.
	md := mustCall(t, c, 2, "GET", "/_cluster/state/metadata/topo?filter_path=metadata.indices.*.routing_num_shards,metadata.indices.*.settings.index.number_of_shards,metadata.indices.*.settings.index.routing_partition_size", "", 200)
	if r := num(t, at(md, "metadata", "indices", "topo", "routing_num_shards"), "routing_num_shards"); r != int64(routing.DefaultRoutingShards(3)) {
		t.Errorf("topo routing_num_shards = %d, want %d", r, routing.DefaultRoutingShards(3))
	}
	if n := str(t, at(md, "metadata", "indices", "topo", "settings", "index", "number_of_shards"), "number_of_shards"); n != "3" {
		t.Errorf("number_of_shards = %q", n)
	}
	if p := at(md, "metadata", "indices", "topo", "settings", "index", "routing_partition_size"); p != nil {
		t.Errorf("routing_partition_size = %v for an unpartitioned index", p)
	}
	st := mustCall(t, c, 0, "GET", "/topo/_settings?flat_settings=true&include_defaults=false", "", 200)
	if v := at(st, "topo", "settings", "index.number_of_routing_shards"); v != nil {
		t.Errorf("_settings shows number_of_routing_shards = %v (the spec says it does not)", v)
	}

	// Thread pool stats of the local node.
	ts := mustCall(t, c, 1, "GET", "/_nodes/_local/stats/thread_pool", "", 200)
	local := obj(t, ts["nodes"], "nodes")
	if len(local) != 1 {
		t.Fatalf("_nodes/_local/stats: %d nodes", len(local))
	}
	for _, n := range local {
		if at(n, "name") != c.NodeName(1) {
			t.Errorf("_nodes/_local answered for %v, asked node-1", at(n, "name"))
		}
		for _, pool := range []string{"write", "search", "get"} {
			for _, f := range []string{"threads", "queue", "active", "rejected", "largest", "completed"} {
				num(t, at(n, "thread_pool", pool, f), "thread_pool."+pool+"."+f)
			}
		}
		// SPEC DIFFERS: total_wait_time_in_nanos exists for the search pool
		// only, not for write (the spec lists it for every pool).
		num(t, at(n, "thread_pool", "search", "total_wait_time_in_nanos"), "thread_pool.search.total_wait_time_in_nanos")
		if v := at(n, "thread_pool", "write", "total_wait_time_in_nanos"); v != nil {
			t.Errorf("thread_pool.write.total_wait_time_in_nanos = %v: the spec difference noted here is gone", v)
		}
	}
	all := mustCall(t, c, 1, "GET", "/_nodes/stats/thread_pool", "", 200)
	if len(obj(t, all["nodes"], "nodes")) != 3 {
		t.Errorf("_nodes/stats/thread_pool: want 3 nodes")
	}

	// Local info: allocated processors, write pool size and queue.
	info := mustCall(t, c, 0, "GET", "/_nodes/_local/http,os,thread_pool", "", 200)
	for _, n := range obj(t, info["nodes"], "nodes") {
		if p := num(t, at(n, "os", "allocated_processors"), "os.allocated_processors"); p < 1 {
			t.Errorf("allocated_processors = %d", p)
		}
		if s := num(t, at(n, "thread_pool", "write", "size"), "thread_pool.write.size"); s < 1 {
			t.Errorf("write size = %d", s)
		}
		if q := num(t, at(n, "thread_pool", "write", "queue_size"), "thread_pool.write.queue_size"); q != 10000 {
			t.Errorf("write queue_size = %d, want the default 10000", q)
		}
		str(t, at(n, "http", "publish_address"), "http.publish_address")
	}

	h := mustCall(t, c, 0, "GET", "/_cluster/health", "", 200)
	str(t, h["status"], "status")
	for _, f := range []string{"number_of_nodes", "initializing_shards", "relocating_shards", "unassigned_shards"} {
		num(t, h[f], f)
	}

	// §5: transport counters per node.
	tr := mustCall(t, c, 0, "GET", "/_nodes/stats/transport", "", 200)
	for id, n := range obj(t, tr["nodes"], "nodes") {
		for _, f := range []string{"rx_count", "tx_count", "rx_size_in_bytes", "tx_size_in_bytes"} {
			if v := num(t, at(n, "transport", f), "transport."+f); v <= 0 {
				t.Errorf("node %s transport.%s = %d, want > 0 in a formed cluster", id, f, v)
			}
		}
	}
}

func TestWriteShapes(t *testing.T) {
	c := sharedCluster(t)
	createIndex(t, c, "writes", `{"settings":{"number_of_shards":2,"number_of_replicas":1},"mappings":{"properties":{"n":{"type":"long"}}}}`)
	first := bulkLine("create", "writes", "w1", "") + `{"n":1}` + "\n" +
		bulkLine("index", "writes", "w2", "") + `{"n":2}` + "\n"
	m := mustCall(t, c, 0, "POST", "/_bulk", first, 200)
	if m["errors"] != false {
		t.Fatalf("first bulk: %v", m)
	}
	num(t, m["took"], "took")
	ok := obj(t, at(m, "items", "0", "create"), "items[0].create")
	for _, f := range []string{"_index", "_id", "result"} {
		str(t, ok[f], f)
	}
	for _, f := range []string{"_version", "_seq_no", "_primary_term", "status"} {
		num(t, ok[f], f)
	}
	if ok["result"] != "created" || num(t, ok["status"], "status") != 201 {
		t.Errorf("create item = %v", ok)
	}
	sh := obj(t, ok["_shards"], "_shards")
	if num(t, sh["total"], "_shards.total") != 2 {
		t.Errorf("_shards = %v, want total 2 (1 replica)", sh)
	}

	// Second bulk: create of an existing id (409), overwrite (200), bad
	// mapping (400), a new create (201) — all in request order.
	second := bulkLine("create", "writes", "w1", "") + `{"n":1}` + "\n" +
		bulkLine("index", "writes", "w2", "") + `{"n":22}` + "\n" +
		bulkLine("index", "writes", "w3", "") + `{"n":"not a number"}` + "\n" +
		bulkLine("create", "writes", "w4", "") + `{"n":4}` + "\n"
	m = mustCall(t, c, 1, "POST", "/_bulk", second, 200) // HTTP 200 with errors:true
	if m["errors"] != true {
		t.Fatalf("second bulk errors = %v", m["errors"])
	}
	items := list(t, m["items"], "items")
	wantOps := []string{"create", "index", "index", "create"}
	wantStatus := []int64{409, 200, 400, 201}
	for k, it := range items {
		item := obj(t, at(it, wantOps[k]), fmt.Sprintf("items[%d].%s", k, wantOps[k]))
		if item["_id"] != fmt.Sprintf("w%d", k+1) || num(t, item["status"], "status") != wantStatus[k] {
			t.Errorf("item %d = %v, want _id w%d status %d", k, item, k+1, wantStatus[k])
		}
		if item["_index"] != "writes" {
			t.Errorf("item %d _index = %v", k, item["_index"])
		}
	}
	conflict := obj(t, at(items[0], "create", "error"), "409 error")
	if conflict["type"] != "version_conflict_engine_exception" {
		t.Errorf("409 error type = %v", conflict["type"])
	}
	str(t, conflict["reason"], "reason")
	str(t, conflict["index_uuid"], "index_uuid")
	if conflict["index"] != "writes" {
		t.Errorf("409 error index = %v", conflict["index"])
	}
	// The shard of the failed item is a JSON string.
	want, _ := routing.ShardFor("w1", "", 2, routing.DefaultRoutingShards(2), 1)
	if s := str(t, conflict["shard"], "409 error.shard"); s != strconv.Itoa(want) {
		t.Errorf("409 error shard = %q, want %d", s, want)
	}
	if at(items[1], "index", "result") != "updated" || num(t, at(items[1], "index", "_version"), "_version") != 2 {
		t.Errorf("overwrite item = %v", items[1])
	}
	bad := obj(t, at(items[2], "index", "error"), "400 error")
	if bad["type"] != "mapper_parsing_exception" {
		t.Errorf("400 error type = %v", bad["type"])
	}
	// SPEC DIFFERS: a mapping failure's error has only type, reason and
	// caused_by: no index, shard or index_uuid (only engine-level failures
	// such as the 409 carry those).
	for _, f := range []string{"index", "shard", "index_uuid"} {
		if _, has := bad[f]; has {
			t.Errorf("mapper_parsing_exception item has %q: the spec difference noted here is gone", f)
		}
	}
	if at(bad, "caused_by", "type") != "illegal_argument_exception" {
		t.Errorf("mapper_parsing_exception caused_by = %v", bad["caused_by"])
	}
}

func TestDataStreamShapes(t *testing.T) {
	c := sharedCluster(t)
	mustCall(t, c, 0, "PUT", "/_index_template/osr-logs", `{"index_patterns":["osr-logs-*"],"data_stream":{},"template":{"settings":{"number_of_shards":2,"number_of_replicas":0}}}`, 200)
	ids := []string{"d1", "d2", "d3", "d4", "d5", "d6"}
	var b strings.Builder
	for _, id := range ids {
		b.WriteString(bulkLine("create", "osr-logs-app", id, ""))
		b.WriteString(`{"@timestamp":"2026-01-01T00:00:00Z","msg":"x"}` + "\n")
	}
	b.WriteString(bulkLine("index", "osr-logs-app", "bad-op", ""))
	b.WriteString(`{"@timestamp":"2026-01-01T00:00:00Z"}` + "\n")
	b.WriteString(bulkLine("create", "osr-logs-app", "bad-routing", "r1"))
	b.WriteString(`{"@timestamp":"2026-01-01T00:00:00Z"}` + "\n")
	m := mustCall(t, c, 1, "POST", "/_bulk?refresh=true", b.String(), 200)
	items := list(t, m["items"], "items")
	if len(items) != 8 {
		t.Fatalf("%d items", len(items))
	}
	for k := range ids {
		if at(items[k], "create", "_index") != ".ds-osr-logs-app-000001" || num(t, at(items[k], "create", "status"), "status") != 201 {
			t.Errorf("item %d = %v, want created in .ds-osr-logs-app-000001", k, items[k])
		}
	}
	if num(t, at(items[6], "index", "status"), "status") != 400 || at(items[6], "index", "error", "type") != "illegal_argument_exception" {
		t.Errorf("index op through a data stream = %v, want 400 illegal_argument_exception", items[6])
	}
	if num(t, at(items[7], "create", "status"), "status") != 400 || at(items[7], "create", "error", "type") != "illegal_argument_exception" {
		t.Errorf("custom routing through a data stream = %v, want 400 illegal_argument_exception", items[7])
	}
	// A failed item through a stream still names the backing write index.
	if at(items[7], "create", "_index") != ".ds-osr-logs-app-000001" {
		t.Errorf("failed data stream item _index = %v", at(items[7], "create", "_index"))
	}

	ds := mustCall(t, c, 2, "GET", "/_data_stream/osr-logs-app", "", 200)
	d := obj(t, at(ds, "data_streams", "0"), "data_streams[0]")
	if d["name"] != "osr-logs-app" || at(d, "timestamp_field", "name") != "@timestamp" || d["template"] != "osr-logs" {
		t.Errorf("data stream = %v", d)
	}
	str(t, d["status"], "status")
	if num(t, d["generation"], "generation") != 1 {
		t.Errorf("generation = %v", d["generation"])
	}
	idx := list(t, d["indices"], "indices")
	if len(idx) != 1 || at(idx[0], "index_name") != ".ds-osr-logs-app-000001" {
		t.Fatalf("indices = %v", idx)
	}
	str(t, at(idx[0], "index_uuid"), "index_uuid")

	// The shard is computed from _id in the write index (N=2, default R).
	r := mustCall(t, c, 0, "POST", "/osr-logs-app/_search?size=20", `{"query":{"match_all":{}},"explain":true,"_source":false}`, 200)
	for _, h := range list(t, at(r, "hits", "hits"), "hits") {
		id := str(t, at(h, "_id"), "_id")
		want, _ := routing.ShardFor(id, "", 2, routing.DefaultRoutingShards(2), 1)
		if got := shardOf(t, at(h, "_shard")); got != want || at(h, "_index") != ".ds-osr-logs-app-000001" {
			t.Errorf("%s in %v shard %d, want shard %d", id, at(h, "_index"), got, want)
		}
	}

	ro := mustCall(t, c, 0, "POST", "/osr-logs-app/_rollover", "", 200)
	if ro["old_index"] != ".ds-osr-logs-app-000001" || ro["new_index"] != ".ds-osr-logs-app-000002" || ro["rolled_over"] != true {
		t.Errorf("rollover = %v", ro)
	}
	ds = mustCall(t, c, 2, "GET", "/_data_stream/osr-logs-app", "", 200)
	idx = list(t, at(ds, "data_streams", "0", "indices"), "indices")
	if len(idx) != 2 || at(idx[len(idx)-1], "index_name") != ".ds-osr-logs-app-000002" {
		t.Errorf("after rollover indices = %v: the write index must be last", idx)
	}
	if num(t, at(ds, "data_streams", "0", "generation"), "generation") != 2 {
		t.Errorf("generation after rollover = %v", at(ds, "data_streams", "0", "generation"))
	}
	m = mustCall(t, c, 1, "POST", "/_bulk", bulkLine("create", "osr-logs-app", "after", "")+`{"@timestamp":"2026-01-02T00:00:00Z"}`+"\n", 200)
	if at(m, "items", "0", "create", "_index") != ".ds-osr-logs-app-000002" {
		t.Errorf("write after rollover = %v", m["items"])
	}
}

// pitSearch pages through a PIT, 7 hits a page unless extra sets "size".
func TestCatShardsRelocatingShape(t *testing.T) {
	c := sharedCluster(t)
	// A slow recovery keeps the shard RELOCATING long enough to look at it.
	createIndex(t, c, "reloc", `{"settings":{"number_of_shards":1,"number_of_replicas":0,"index.routing.allocation.require._name":"node-0"}}`)
	var b strings.Builder
	for k := 0; k < 3000; k++ {
		b.WriteString(bulkLine("index", "reloc", "", ""))
		fmt.Fprintf(&b, `{"k":%d,"pad":"%s"}`+"\n", k, strings.Repeat("x", 100))
	}
	mustCall(t, c, 0, "POST", "/_bulk?refresh=true", b.String(), 200)
	mustCall(t, c, 0, "POST", "/reloc/_flush", "", 200)
	mustCall(t, c, 0, "PUT", "/_cluster/settings", `{"transient":{"indices.recovery.max_bytes_per_sec":"20kb"}}`, 200)
	defer func() {
		mustCall(t, c, 0, "PUT", "/_cluster/settings", `{"transient":{"indices.recovery.max_bytes_per_sec":null}}`, 200)
		mustCall(t, c, 0, "GET", "/_cluster/health?wait_for_status=green&wait_for_no_relocating_shards=true&timeout=90s", "", 200)
	}()
	mustCall(t, c, 0, "PUT", "/reloc/_settings", `{"index.routing.allocation.require._name":"node-1"}`, 200)
	ids := map[string]string{}
	nh := mustCall(t, c, 0, "GET", "/_nodes/http", "", 200)
	for id, n := range obj(t, nh["nodes"], "nodes") {
		ids[str(t, at(n, "name"), "name")] = id
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, out := call(t, c, 2, "GET", "/_cat/shards/reloc?format=json&h=index,shard,prirep,state,node", "")
		if code != 200 {
			t.Fatalf("_cat/shards: %d %s", code, out)
		}
		rows := decodeList(t, out)
		if len(rows) == 1 && rows[0]["state"] == "RELOCATING" {
			// "src -> dstIp dstId dstName"
			want := "node-0 -> 127.0.0.1 " + ids["node-1"] + " node-1"
			if rows[0]["node"] != want {
				t.Errorf("relocating _cat/shards node = %q, want %q", rows[0]["node"], want)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("reloc never seen RELOCATING: %v", rows)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func pitSearch(t *testing.T, c *Cluster, i int, pit string, extra string) (int, map[string]any) {
	t.Helper()
	size := ""
	if !strings.Contains(extra, `"size"`) {
		size = `"size":7,`
	}
	body := fmt.Sprintf(`{"pit":{"id":%q,"keep_alive":"5m"},%s"sort":[{"n":"asc"}]%s}`, pit, size, extra)
	code, out := call(t, c, i, "POST", "/_search", body)
	return code, decode(t, out)
}

func TestPITShapes(t *testing.T) {
	c := sharedCluster(t)
	createIndex(t, c, "pit", `{"settings":{"number_of_shards":3,"number_of_replicas":0},"mappings":{"properties":{"n":{"type":"long"}}}}`)
	var b strings.Builder
	for k := 0; k < 50; k++ {
		b.WriteString(bulkLine("index", "pit", fmt.Sprintf("p%d", k), ""))
		fmt.Fprintf(&b, `{"n":%d,"@timestamp":"2026-01-01T00:00:%02dZ"}`+"\n", k, k)
	}
	mustCall(t, c, 0, "POST", "/_bulk?refresh=true", b.String(), 200)

	cr := mustCall(t, c, 0, "POST", "/pit/_search/point_in_time?keep_alive=5m", "", 200)
	pit := str(t, cr["pit_id"], "pit_id")
	num(t, cr["creation_time"], "creation_time")
	for f, want := range map[string]int64{"total": 3, "successful": 3, "skipped": 0, "failed": 0} {
		if got := num(t, at(cr, "_shards", f), "_shards."+f); got != want {
			t.Errorf("create _shards.%s = %d, want %d", f, got, want)
		}
	}
	// Documents written after the PIT are not seen through it.
	mustCall(t, c, 1, "POST", "/_bulk?refresh=true", bulkLine("index", "pit", "late", "")+`{"n":1000}`+"\n", 200)

	var seen []int64
	var after string
	for page := 0; page < 20; page++ {
		code, r := pitSearch(t, c, page%3, pit, after)
		if code != 200 {
			t.Fatalf("PIT page %d: HTTP %d %v", page, code, r)
		}
		pit = str(t, r["pit_id"], "pit_id") // always use the newest
		hits := list(t, at(r, "hits", "hits"), "hits")
		if len(hits) == 0 {
			break
		}
		for _, h := range hits {
			sv := list(t, at(h, "sort"), "hit.sort")
			seen = append(seen, num(t, sv[0], "sort[0]"))
		}
		last, _ := json.Marshal(at(hits[len(hits)-1], "sort"))
		after = `,"search_after":` + string(last)
	}
	if len(seen) != 50 || !slices.IsSorted(seen) || seen[0] != 0 || seen[49] != 49 {
		t.Fatalf("PIT pages saw %d values %v, want 0..49 once each", len(seen), seen)
	}

	// Slices split the documents into disjoint parts.
	got := map[string]int{}
	for s := 0; s < 2; s++ {
		code, r := pitSearch(t, c, 0, pit, fmt.Sprintf(`,"slice":{"id":%d,"max":2}`, s))
		if code != 200 {
			t.Fatalf("slice %d: %d %v", s, code, r)
		}
		// size 7 per page is too small for a slice: page through it.
		for {
			hits := list(t, at(r, "hits", "hits"), "hits")
			if len(hits) == 0 {
				break
			}
			for _, h := range hits {
				got[str(t, at(h, "_id"), "_id")]++
			}
			last, _ := json.Marshal(at(hits[len(hits)-1], "sort"))
			code, r = pitSearch(t, c, 0, pit, fmt.Sprintf(`,"slice":{"id":%d,"max":2},"search_after":%s`, s, last))
			if code != 200 {
				t.Fatalf("slice %d page: %d %v", s, code, r)
			}
		}
	}
	if len(got) != 50 {
		t.Errorf("slices together saw %d documents, want 50", len(got))
	}
	for id, n := range got {
		if n != 1 {
			t.Errorf("%s seen in %d slices", id, n)
		}
	}

	// An index in the path is refused.
	code, out := call(t, c, 0, "POST", "/pit/_search", fmt.Sprintf(`{"pit":{"id":%q}}`, pit))
	if code != 400 || at(decode(t, out), "error", "type") != "action_request_validation_exception" {
		t.Errorf("PIT search with an index in the path: %d %s", code, out)
	}

	del := mustCall(t, c, 2, "DELETE", "/_search/point_in_time", fmt.Sprintf(`{"pit_id":[%q]}`, pit), 200)
	p := obj(t, at(del, "pits", "0"), "pits[0]")
	if p["successful"] != true || p["pit_id"] != pit {
		t.Errorf("delete = %v", del)
	}
	// A deleted PIT: every context is missing.
	code, r := pitSearch(t, c, 0, pit, "")
	checkAllContextsMissing(t, code, r, "deleted PIT")
}

// checkAllContextsMissing: all shards lost their PIT context.
func checkAllContextsMissing(t *testing.T, code int, r map[string]any, what string) {
	t.Helper()
	if code != 404 || at(r, "error", "type") != "search_phase_execution_exception" || at(r, "error", "root_cause", "0", "type") != "search_context_missing_exception" {
		t.Errorf("%s: HTTP %d %v; want 404 search_phase_execution_exception with root cause search_context_missing_exception", what, code, tail(fmt.Sprint(r), 1500))
	}
}

func TestPITContextLossAfterKill(t *testing.T) {
	c := sharedCluster(t)
	// The victim is a node that is not the elected cluster manager (a quicker
	// recovery); the spread index has one shard on each node, the "one"
	// index has all its shards on the victim.
	code, out := call(t, c, 0, "GET", "/_cat/cluster_manager?format=json", "")
	if code != 200 {
		t.Fatalf("_cat/cluster_manager: %d %s", code, out)
	}
	manager := str(t, decodeList(t, out)[0]["node"], "cluster manager name")
	victim := -1
	for i := 0; i < c.Len(); i++ {
		if c.NodeName(i) != manager {
			victim = i
			break
		}
	}
	ask := (victim + 1) % c.Len()
	createIndex(t, c, "pit-spread", `{"settings":{"number_of_shards":3,"number_of_replicas":0,"index.routing.allocation.total_shards_per_node":1}}`)
	createIndex(t, c, "pit-one", fmt.Sprintf(`{"settings":{"number_of_shards":2,"number_of_replicas":0,"index.routing.allocation.require._name":%q}}`, c.NodeName(victim)))
	var b strings.Builder
	for k := 0; k < 30; k++ {
		for _, idx := range []string{"pit-spread", "pit-one"} {
			b.WriteString(bulkLine("index", idx, fmt.Sprintf("%s-%d", idx, k), ""))
			fmt.Fprintf(&b, `{"n":%d}`+"\n", k)
		}
	}
	if m := mustCall(t, c, ask, "POST", "/_bulk?refresh=true", b.String(), 200); m["errors"] != false {
		t.Fatalf("bulk: %v", m)
	}
	code, out = call(t, c, ask, "GET", "/_cat/shards/pit-spread?format=json&h=shard,node", "")
	if code != 200 {
		t.Fatal(code)
	}
	lost := -1
	for _, r := range decodeList(t, out) {
		if r["node"] == c.NodeName(victim) {
			lost, _ = strconv.Atoi(r["shard"].(string))
		}
	}
	if lost < 0 {
		t.Fatalf("no pit-spread shard on %s: %s", c.NodeName(victim), out)
	}
	survivors := 0
	for k := 0; k < 30; k++ {
		if s, _ := routing.ShardFor(fmt.Sprintf("pit-spread-%d", k), "", 3, routing.DefaultRoutingShards(3), 1); s != lost {
			survivors++
		}
	}
	pitSpread := str(t, mustCall(t, c, ask, "POST", "/pit-spread/_search/point_in_time?keep_alive=5m", "", 200)["pit_id"], "pit_id")
	pitOne := str(t, mustCall(t, c, ask, "POST", "/pit-one/_search/point_in_time?keep_alive=5m", "", 200)["pit_id"], "pit_id")

	// Crash the victim; wait until the others have removed it.
	if err := c.Kill(victim); err != nil {
		t.Fatal(err)
	}
	if c.PID(victim) != 0 {
		t.Fatalf("killed node still has a pid")
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		h := mustCall(t, c, ask, "GET", "/_cluster/health", "", 200)
		if num(t, h["number_of_nodes"], "number_of_nodes") == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster still has %v nodes 60s after Kill", h["number_of_nodes"])
		}
		time.Sleep(200 * time.Millisecond)
	}

	// Unassigned copies: state UNASSIGNED, node JSON null.
	code, out = call(t, c, ask, "GET", "/_cat/shards/pit-one?format=json&h=index,shard,prirep,state,node", "")
	if code != 200 {
		t.Fatalf("_cat/shards: %d %s", code, out)
	}
	for _, r := range decodeList(t, out) {
		if v, has := r["node"]; r["state"] != "UNASSIGNED" || !has || v != nil {
			t.Errorf("_cat/shards row of a dead node's shard = %v, want state UNASSIGNED and node null", r)
		}
	}

	// Node gone. SPEC DIFFERS: while the node is out of the cluster the
	// failure is not search_context_missing_exception but
	// illegal_state_exception ("no node found for id: ..."); all lost gives
	// HTTP 500, not 404.
	code, r := pitSearch(t, c, ask, pitSpread, `,"size":100`)
	checkPartial(t, code, r, lost, survivors, "illegal_state_exception", "node down")
	code, r = pitSearch(t, c, ask, pitOne, "")
	if code != 500 || at(r, "error", "type") != "search_phase_execution_exception" || at(r, "error", "root_cause", "0", "type") != "illegal_state_exception" {
		t.Errorf("all contexts on a dead node: HTTP %d %v", code, tail(fmt.Sprint(r), 1500))
	}

	// Same node back with the same data: contexts are gone for good.
	if err := c.Restart(victim); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealth(t.Context(), "green"); err != nil {
		t.Fatal(err)
	}
	code, r = pitSearch(t, c, ask, pitSpread, `,"size":100`)
	checkPartial(t, code, r, lost, survivors, "search_context_missing_exception", "node restarted")
	code, r = pitSearch(t, c, ask, pitOne, "")
	checkAllContextsMissing(t, code, r, "all contexts lost by a restart")

	// The restarted node kept its data (same data dir).
	cnt := mustCall(t, c, victim, "GET", "/pit-one/_count", "", 200)
	if n := num(t, cnt["count"], "count"); n != 30 {
		t.Errorf("pit-one has %d documents after Restart, want 30", n)
	}
}

// checkPartial: HTTP 200, one failed shard (the lost one) with reason type
// wantType, and the hits of the other shards.
func checkPartial(t *testing.T, code int, r map[string]any, lost, survivors int, wantType, what string) {
	t.Helper()
	if code != 200 {
		t.Errorf("%s: partial loss gave HTTP %d %v", what, code, tail(fmt.Sprint(r), 1500))
		return
	}
	if f := num(t, at(r, "_shards", "failed"), "_shards.failed"); f != 1 {
		t.Errorf("%s: _shards.failed = %d, want 1 (%v)", what, f, r["_shards"])
	}
	fl := obj(t, at(r, "_shards", "failures", "0"), "_shards.failures[0]")
	if at(fl, "reason", "type") != wantType || num(t, fl["shard"], "failure shard") != int64(lost) {
		t.Errorf("%s: failure = %v, want shard %d with reason.type %s", what, fl, lost, wantType)
	}
	if n := num(t, at(r, "hits", "total", "value"), "hits.total.value"); n != int64(survivors) {
		t.Errorf("%s: %d hits, want the %d documents of the other shards", what, n, survivors)
	}
}

// TestTinyWriteQueue needs a cluster of its own (write queue of 1): it closes
// the shared one, so it runs last.
func TestTinyWriteQueue(t *testing.T) {
	closeShared()
	// The first ports offered are taken: Start must retry on new ones.
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	busyPort := busy.Addr().(*net.TCPAddr).Port
	offered := 0
	pickPorts = func(n int) ([]int, error) {
		offered++
		if offered == 1 {
			p, err := freePorts(n)
			if err == nil {
				p[0] = busyPort
			}
			return p, err
		}
		return freePorts(n)
	}
	defer func() { pickPorts = freePorts }()
	c := Start(t, Options{Nodes: 1, WriteThreads: 1, WriteQueueSize: 1})
	if offered != 2 || c.Addr(0) == "http://127.0.0.1:"+strconv.Itoa(busyPort) {
		t.Fatalf("ports offered %d times, node on %s (busy port %d): want a retry on new ports", offered, c.Addr(0), busyPort)
	}
	info := mustCall(t, c, 0, "GET", "/_nodes/_local/http,os,thread_pool", "", 200)
	for _, n := range obj(t, info["nodes"], "nodes") {
		if num(t, at(n, "thread_pool", "write", "size"), "size") != 1 || num(t, at(n, "thread_pool", "write", "queue_size"), "queue_size") != 1 {
			t.Fatalf("write pool = %v", at(n, "thread_pool", "write"))
		}
	}
	const shards = 8
	createIndex(t, c, "burst", fmt.Sprintf(`{"settings":{"number_of_shards":%d,"number_of_replicas":0}}`, shards))

	// A bounded burst: 6 senders × up to 8 bulks of 200 documents over 8 shards.
	type result struct {
		code int
		body map[string]any
		ids  []string
	}
	var mu sync.Mutex
	var results []result
	var wg sync.WaitGroup
	for g := 0; g < 6; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for k := 0; k < 8; k++ {
				var b strings.Builder
				var ids []string
				for d := 0; d < 200; d++ {
					id := fmt.Sprintf("g%d-b%d-d%d", g, k, d)
					ids = append(ids, id)
					b.WriteString(bulkLine("create", "burst", id, ""))
					b.WriteString(`{"msg":"burst"}` + "\n")
				}
				code, out, err := c.do(t.Context(), 0, "POST", "/_bulk", []byte(b.String()))
				if err != nil {
					t.Errorf("bulk: %v", err)
					return
				}
				var m map[string]any
				d := json.NewDecoder(strings.NewReader(string(out)))
				d.UseNumber()
				if err := d.Decode(&m); err != nil {
					t.Errorf("bulk answer %s: %v", tail(string(out), 300), err)
					return
				}
				mu.Lock()
				results = append(results, result{code, m, ids})
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	created, rejectedItems, wholeRejected := 0, 0, 0
	for _, res := range results {
		if res.code == 429 {
			// The coordinating node refused the whole request.
			wholeRejected++
			if tp := at(res.body, "error", "type"); tp != "rejected_execution_exception" && tp != "es_rejected_execution_exception" {
				t.Errorf("HTTP 429 body type = %v", tp)
			}
			continue
		}
		if res.code != 200 {
			t.Fatalf("bulk HTTP %d: %v", res.code, tail(fmt.Sprint(res.body), 500))
		}
		items := list(t, res.body["items"], "items")
		byShard := map[int][]int64{}
		rejectedHere := 0
		for k, it := range items {
			item := obj(t, at(it, "create"), "create")
			if item["_id"] != res.ids[k] {
				t.Fatalf("item %d is %v, want %s (request order)", k, item["_id"], res.ids[k])
			}
			st := num(t, item["status"], "status")
			s, _ := routing.ShardFor(res.ids[k], "", shards, routing.DefaultRoutingShards(shards), 1)
			byShard[s] = append(byShard[s], st)
			switch st {
			case 201:
				created++
			case 429:
				rejectedItems++
				rejectedHere++
				if tp := at(item, "error", "type"); tp != "rejected_execution_exception" && tp != "es_rejected_execution_exception" {
					t.Errorf("429 item error type = %v", tp)
				}
			default:
				t.Errorf("item status %d: %v", st, item)
			}
		}
		if rejectedHere > 0 && res.body["errors"] != true {
			t.Errorf("a response with rejected items has errors = %v", res.body["errors"])
		}
		// All items of one shard group share the outcome.
		for s, sts := range byShard {
			for _, st := range sts {
				if st != sts[0] {
					t.Errorf("shard %d group has mixed outcomes %v", s, sts)
					break
				}
			}
		}
	}
	t.Logf("burst: %d bulks, %d whole-request 429s, %d items created, %d items rejected (429)", len(results), wholeRejected, created, rejectedItems)
	if rejectedItems == 0 {
		t.Fatalf("no item was rejected with 429 by a write pool of 1 thread and queue 1")
	}
	stats := mustCall(t, c, 0, "GET", "/_nodes/_local/stats/thread_pool", "", 200)
	for _, n := range obj(t, stats["nodes"], "nodes") {
		if r := num(t, at(n, "thread_pool", "write", "rejected"), "write.rejected"); r == 0 {
			t.Errorf("thread_pool.write.rejected = 0 after %d rejected items", rejectedItems)
		}
	}
	mustCall(t, c, 0, "POST", "/burst/_refresh", "", 200)
	if n := num(t, mustCall(t, c, 0, "GET", "/burst/_count", "", 200)["count"], "count"); n != int64(created) {
		t.Fatalf("burst holds %d documents, %d items were created", n, created)
	}

	// Graceful stop, then restart on the same data.
	pid := c.PID(0)
	if err := c.Stop(0); err != nil {
		t.Fatal(err)
	}
	if alive(pid) || c.PID(0) != 0 {
		t.Fatalf("pid %d alive after Stop", pid)
	}
	if logb, _ := os.ReadFile(c.LogPath(0)); !strings.Contains(string(logb), "closed") {
		t.Errorf("no graceful close in the node log after Stop")
	}
	if err := c.Restart(0); err != nil {
		t.Fatal(err)
	}
	if err := c.WaitHealth(t.Context(), "green"); err != nil {
		t.Fatal(err)
	}
	if n := num(t, mustCall(t, c, 0, "GET", "/burst/_count", "", 200)["count"], "count"); n != int64(created) {
		t.Fatalf("after Restart burst holds %d documents, want %d", n, created)
	}

	// Parent-death check: closing the launcher's stdin (what happens when
	// the Go process dies) makes the node exit by itself.
	c.mu.Lock()
	p := c.nodes[0].proc
	c.mu.Unlock()
	p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the launcher did not exit within 30s after its stdin closed")
	}
}

// TestOrphanedNodesExit: a test process that dies without any cleanup (what
// a go test timeout panic does) leaves no node behind: the launcher notices
// its stdin closing and exits.
func TestOrphanedNodesExit(t *testing.T) {
	closeShared()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "OSR_ORPHAN_HELPER=1")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	pidc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if l := sc.Text(); strings.HasPrefix(l, "PID=") || strings.HasPrefix(l, "ERR") {
				pidc <- l
				break
			}
		}
		close(pidc)
		io.Copy(io.Discard, out)
	}()
	var line string
	select {
	case line = <-pidc:
	case <-time.After(10 * time.Minute):
		t.Fatal("the helper did not start its node within 10 minutes")
	}
	pid, err := strconv.Atoi(strings.TrimPrefix(line, "PID="))
	if err != nil || pid <= 0 {
		t.Fatalf("helper said %q", line)
	}
	if !alive(pid) {
		t.Fatalf("node pid %d not alive before the helper died", pid)
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	deadline := time.Now().Add(30 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			syscall.Kill(-pid, syscall.SIGKILL)
			t.Fatalf("node pid %d still alive 30s after its test process died", pid)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
