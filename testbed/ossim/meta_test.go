package ossim

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/opensearchrouted/opensearchrouted/internal/routing"
)

type vector struct {
	id, routing string
	n, r, p     int
	hash        int32
	shard       int
}

func loadVectors(t *testing.T) []vector {
	t.Helper()
	f, err := os.Open("../../internal/routing/testdata/routing_vectors.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []vector
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		cols := strings.Split(sc.Text(), "\t")
		if len(cols) != 7 {
			t.Fatalf("bad row %q", sc.Text())
		}
		n, _ := strconv.Atoi(cols[2])
		r, _ := strconv.Atoi(cols[3])
		p, _ := strconv.Atoi(cols[4])
		h, _ := strconv.ParseInt(cols[5], 10, 32)
		s, _ := strconv.Atoi(cols[6])
		out = append(out, vector{cols[0], cols[1], n, r, p, int32(h), s})
	}
	return out
}

// TestSearchShardsMatchesRoutingVectors: for every row, an index with the
// row's N, R, p, _search_shards?routing= and a written document agree with
// the routing package and the reference shard.
func TestSearchShardsMatchesRoutingVectors(t *testing.T) {
	c := StartT(t, Options{NoHopLatency: true, DefaultReplicas: -1})
	base := c.Addr(0)
	vs := loadVectors(t)
	if len(vs) != 42 {
		t.Fatalf("%d vectors, want 42", len(vs))
	}
	for i, v := range vs {
		name := fmt.Sprintf("v%d", i)
		extra := fmt.Sprintf(`,"number_of_routing_shards":%d`, v.r)
		if v.p != 1 {
			extra += fmt.Sprintf(`,"routing_partition_size":%d`, v.p)
		}
		body := fmt.Sprintf(`{"settings":{"index":{"number_of_shards":%d,"number_of_replicas":0%s}}`, v.n, extra)
		if v.p != 1 {
			// A partitioned index takes writes only with routing required.
			body += `,"mappings":{"_routing":{"required":true}}`
		}
		mustOK(t, "PUT", base+"/"+name, body+"}")
		want, err := routing.ShardFor(v.id, v.routing, v.n, v.r, v.p)
		if err != nil || want != v.shard {
			t.Fatalf("row %d: routing package says %d (%v), vector %d", i, want, err, v.shard)
		}
		eff := v.routing
		if eff == "" {
			eff = v.id
		}
		m := mustOK(t, "GET", base+"/"+name+"/_search_shards?routing="+urlQueryEscape(eff), "")
		var got []int
		for _, g := range get(m, "shards").([]any) {
			got = append(got, int(get(g, 0, "shard").(float64)))
		}
		if v.p == 1 {
			if len(got) != 1 || got[0] != v.shard {
				t.Errorf("row %d (%q/%q N=%d R=%d): _search_shards %v, want [%d]", i, v.id, v.routing, v.n, v.r, got, v.shard)
			}
		} else {
			found := false
			for _, s := range got {
				found = found || s == v.shard
			}
			if !found || len(got) > v.p {
				t.Errorf("row %d: partitioned _search_shards %v must hold %d (p=%d)", i, got, v.shard, v.p)
			}
		}
		// The document itself lands in that shard.
		line := fmt.Sprintf(`{"index":{"_index":%q,"_id":%q`, name, v.id)
		if v.routing != "" {
			line += fmt.Sprintf(`,"routing":%q`, v.routing)
		}
		mustOK(t, "POST", base+"/_bulk", bulkBody(line+"}}", `{"x":1}`))
		shards, _, _ := c.StoredShardOf(name)
		if shards[v.id] != v.shard {
			t.Errorf("row %d: stored in shard %d, want %d", i, shards[v.id], v.shard)
		}
	}
}

func urlQueryEscape(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

func TestShardOfSumAgreesWithRouting(t *testing.T) {
	for _, l := range []routing.Layout{{Shards: 3, RoutingShards: 768, PartitionSize: 4}, {Shards: 8, RoutingShards: 1024, PartitionSize: 3}} {
		for i := 0; i < 2000; i++ {
			id, r := fmt.Sprintf("id%d", i), fmt.Sprintf("r%d", i%37)
			want, err := l.Shard(id, r)
			if err != nil {
				t.Fatal(err)
			}
			k := int(routing.Hash(id)) % l.PartitionSize
			if k < 0 {
				k += l.PartitionSize
			}
			if got := shardOfSum(routing.Hash(r)+int32(k), l); got != want {
				t.Fatalf("%v id %s routing %s: shardOfSum %d, Layout.Shard %d", l, id, r, got, want)
			}
		}
	}
}

func TestIndexCreationErrorsAndClusterState(t *testing.T) {
	c := StartT(t, Options{Nodes: 3, NoHopLatency: true})
	base := c.Addr(1)
	createIndex(t, base, "a", 3, 1, "")
	var m map[string]any
	st, m := do(t, "PUT", base+"/a", "")
	if st != 400 || get(m, "error", "type") != "resource_already_exists_exception" {
		t.Errorf("duplicate: %d %v", st, m)
	}
	st, m = do(t, "PUT", base+"/Upper", "")
	if st != 400 || get(m, "error", "type") != "invalid_index_name_exception" {
		t.Errorf("uppercase: %d %v", st, m)
	}
	st, m = do(t, "PUT", base+"/b", `{"settings":{"number_of_shards":3,"number_of_routing_shards":10}}`)
	if st != 400 || get(m, "error", "type") != "illegal_argument_exception" {
		t.Errorf("bad R: %d %v", st, m)
	}
	st, m = do(t, "GET", base+"/nope/_search", "")
	if st != 404 || get(m, "error", "type") != "index_not_found_exception" {
		t.Errorf("missing index: %d %v", st, m)
	}
	mustOK(t, "PUT", base+"/p", `{"settings":{"number_of_shards":2,"number_of_routing_shards":8,"routing_partition_size":3},"mappings":{"_routing":{"required":true}}}`)
	createIndex(t, base, "p-nomap", 2, 0, `,"number_of_routing_shards":8,"routing_partition_size":3`)
	m = mustOK(t, "POST", base+"/_bulk", bulkBody(`{"index":{"_index":"p-nomap","_id":"1","routing":"r"}}`, `{}`))
	if get(items(m)[0], "error", "type") != "illegal_argument_exception" || items(m)[0]["status"] != 400.0 {
		t.Errorf("partitioned index without _routing.required: %v", m)
	}
	m = mustOK(t, "GET", base+"/_cluster/state/metadata/a,p?filter_path=metadata.indices.*.routing_num_shards,metadata.indices.*.settings.index.number_of_shards,metadata.indices.*.settings.index.routing_partition_size", "")
	if get(m, "metadata", "indices", "a", "routing_num_shards") != 768.0 ||
		get(m, "metadata", "indices", "a", "settings", "index", "number_of_shards") != "3" ||
		get(m, "metadata", "indices", "p", "routing_num_shards") != 8.0 ||
		get(m, "metadata", "indices", "p", "settings", "index", "routing_partition_size") != "3" ||
		get(m, "metadata", "indices", "a", "settings", "index", "routing_partition_size") != nil {
		t.Errorf("cluster state: %v", m)
	}
	// p > 1 requires routing.
	m = mustOK(t, "POST", base+"/_bulk", bulkBody(`{"index":{"_index":"p","_id":"1"}}`, `{}`))
	if get(items(m)[0], "error", "type") != "routing_missing_exception" || items(m)[0]["status"] != 400.0 {
		t.Errorf("p>1 without routing: %v", m)
	}
	// _cat/shards: strings, p/r, node names; no node holds two copies of a shard.
	rows := catShards(t, base, "a")
	if len(rows) != 6 {
		t.Fatalf("cat shards rows %d, want 6", len(rows))
	}
	seen := map[string]bool{}
	prim := map[string]int{}
	for _, r := range rows {
		k := r["shard"].(string) + "/" + r["node"].(string)
		if seen[k] {
			t.Errorf("two copies of shard %s on %s", r["shard"], r["node"])
		}
		seen[k] = true
		if r["state"] != "STARTED" || (r["prirep"] != "p" && r["prirep"] != "r") {
			t.Errorf("row %v", r)
		}
		if r["prirep"] == "p" {
			prim[r["node"].(string)]++
		}
	}
	if len(prim) != 3 {
		t.Errorf("primaries not spread over the 3 nodes: %v", prim)
	}
	h := mustOK(t, "GET", base+"/_cluster/health", "")
	if h["status"] != "green" || h["number_of_nodes"] != 3.0 {
		t.Errorf("health %v", h)
	}
	ci := mustOK(t, "GET", base+"/_cat/indices/a?format=json", "")
	_ = ci
}

func catShards(t *testing.T, base, index string) []map[string]any {
	t.Helper()
	st, raw := doRaw(t, "GET", base+"/_cat/shards/"+index+"?format=json&h=index,shard,prirep,state,node", "", nil)
	if st != 200 {
		t.Fatalf("cat shards: %d %s", st, raw)
	}
	var rows []map[string]any
	if err := jsonUnmarshal(raw, &rows); err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestZonesSpreadCopies(t *testing.T) {
	c := StartT(t, Options{Nodes: 4, Zones: []string{"a", "b"}, NoHopLatency: true})
	createIndex(t, c.Addr(0), "z", 4, 1, "")
	sh, _ := c.Shards("z")
	zones := map[int]map[string]bool{}
	for _, s := range sh {
		if zones[s.Shard] == nil {
			zones[s.Shard] = map[string]bool{}
		}
		zones[s.Shard][c.Node(s.Node).Zone()] = true
	}
	for s, z := range zones {
		if len(z) != 2 {
			t.Errorf("shard %d copies in zones %v, want both zones", s, z)
		}
	}
	m := mustOK(t, "GET", c.Addr(0)+"/_nodes/http", "")
	for _, n := range get(m, "nodes").(map[string]any) {
		if get(n, "attributes", "zone") == nil || get(n, "http", "publish_address") == nil {
			t.Errorf("node info lacks zone or publish_address: %v", n)
		}
	}
}

func TestDataStreamsAndRollover(t *testing.T) {
	c := StartT(t, Options{Nodes: 2, NoHopLatency: true})
	base := c.Addr(0)
	mustOK(t, "PUT", base+"/_index_template/logs", `{"index_patterns":["logs-*"],"data_stream":{},"priority":100,"template":{"settings":{"number_of_shards":2}}}`)
	m := mustOK(t, "POST", base+"/_bulk", bulkBody(
		`{"create":{"_index":"logs-app"}}`, `{"@timestamp":"2024-05-01T00:00:00Z","m":1}`,
		`{"index":{"_index":"logs-app"}}`, `{"@timestamp":"2024-05-01T00:00:00Z"}`,
		`{"create":{"_index":"logs-app","routing":"x"}}`, `{"@timestamp":"2024-05-01T00:00:00Z"}`,
		`{"create":{"_index":"logs-app","_id":"fixed"}}`, `{"@timestamp":"2024-05-01T00:00:01Z"}`,
	))
	it := items(m)
	if it[0]["status"] != 201.0 || it[0]["_index"] != ".ds-logs-app-000001" {
		t.Errorf("create into stream: %v", it[0])
	}
	if it[1]["status"] != 400.0 || get(it[1], "error", "type") != "illegal_argument_exception" {
		t.Errorf("index op into stream: %v", it[1])
	}
	if it[2]["status"] != 400.0 {
		t.Errorf("custom routing into stream: %v", it[2])
	}
	ds := mustOK(t, "GET", base+"/_data_stream/logs-app", "")
	if get(ds, "data_streams", 0, "generation") != 1.0 || get(ds, "data_streams", 0, "timestamp_field", "name") != "@timestamp" ||
		get(ds, "data_streams", 0, "template") != "logs" {
		t.Errorf("data stream: %v", ds)
	}
	ro := mustOK(t, "POST", base+"/logs-app/_rollover", "")
	if ro["new_index"] != ".ds-logs-app-000002" || ro["old_index"] != ".ds-logs-app-000001" || ro["rolled_over"] != true {
		t.Errorf("rollover: %v", ro)
	}
	ds = mustOK(t, "GET", base+"/_data_stream/logs-app", "")
	idx := get(ds, "data_streams", 0, "indices").([]any)
	if len(idx) != 2 || get(idx[1], "index_name") != ".ds-logs-app-000002" {
		t.Errorf("indices after rollover: %v", idx)
	}
	m = mustOK(t, "POST", base+"/_bulk", bulkBody(`{"create":{"_index":"logs-app","_id":"fixed"}}`, `{"@timestamp":"2024-05-01T00:00:02Z"}`))
	if items(m)[0]["_index"] != ".ds-logs-app-000002" || items(m)[0]["status"] != 201.0 {
		t.Errorf("after rollover the write index is the new one: %v", m)
	}
	cnt := mustOK(t, "GET", base+"/logs-app/_count", "")
	if cnt["count"] != 3.0 {
		t.Errorf("stream count %v, want 3", cnt["count"])
	}
	st, _ := do(t, "GET", base+"/_data_stream/nope", "")
	if st != 404 {
		t.Errorf("missing stream: %d", st)
	}
}

func TestSplitAndShrinkKeepRouting(t *testing.T) {
	c := StartT(t, Options{Nodes: 3, NoHopLatency: true})
	base := c.Addr(0)
	createIndex(t, base, "src", 2, 1, "")
	var lines []string
	for i := 0; i < 400; i++ {
		l := fmt.Sprintf(`{"index":{"_index":"src","_id":"d%d"`, i)
		if i%3 == 0 {
			l += fmt.Sprintf(`,"routing":"u%d"`, i%17)
		}
		lines = append(lines, l+"}}", `{"v":1}`)
	}
	mustOK(t, "POST", base+"/_bulk", bulkBody(lines...))
	st, m := do(t, "POST", base+"/src/_split/big", `{"settings":{"index.number_of_shards":8}}`)
	if st != 500 || get(m, "error", "type") != "illegal_state_exception" {
		t.Errorf("split without write block: %d %v", st, m)
	}
	mustOK(t, "PUT", base+"/src/_settings", `{"index.blocks.write":true}`)
	mustOK(t, "POST", base+"/src/_split/big", `{"settings":{"index.number_of_shards":8}}`)
	mustOK(t, "POST", base+"/src/_shrink/small", `{"settings":{"index.number_of_shards":1}}`)
	st, m = do(t, "POST", base+"/src/_split/bad", `{"settings":{"index.number_of_shards":3}}`)
	if st != 400 {
		t.Errorf("split 2→3: %d %v", st, m)
	}
	meta := mustOK(t, "GET", base+"/_cluster/state/metadata/src,big,small", "")
	for _, name := range []string{"src", "big", "small"} {
		if r := get(meta, "metadata", "indices", name, "routing_num_shards"); r != 1024.0 {
			t.Errorf("%s routing_num_shards %v, want 1024 (kept from the source)", name, r)
		}
	}
	for _, tc := range []struct {
		name string
		n    int
	}{{"big", 8}, {"small", 1}} {
		shards, routings, err := c.StoredShardOf(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		if len(shards) != 400 {
			t.Errorf("%s holds %d docs, want 400", tc.name, len(shards))
		}
		for id, s := range shards {
			want, _ := routing.ShardFor(id, routings[id], tc.n, 1024, 1)
			if want != s {
				t.Fatalf("%s: doc %s in shard %d, routing says %d", tc.name, id, s, want)
			}
		}
	}
	// Writes into a resized index are blocked until the block is lifted.
	m = mustOK(t, "POST", base+"/_bulk", bulkBody(`{"index":{"_index":"big","_id":"new"}}`, `{}`))
	if items(m)[0]["status"] != 403.0 {
		t.Errorf("write into blocked index: %v", m)
	}
	mustOK(t, "PUT", base+"/big/_settings", `{"index":{"blocks":{"write":false}}}`)
	m = mustOK(t, "POST", base+"/_bulk", bulkBody(`{"index":{"_index":"big","_id":"new"}}`, `{}`))
	if items(m)[0]["status"] != 201.0 {
		t.Errorf("write after unblock: %v", m)
	}
}
