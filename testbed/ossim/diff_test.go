package ossim

// Differential tests: one scenario runs against the emulator and against a
// real OpenSearch cluster (testbed/cluster), and every observation must
// agree after normalisation. Java is required for the real side: without
// it testbed/cluster fails the test, it never skips.
//
// NORMALISATIONS (the only differences allowed, all applied by normalize):
//   - values of the keys in normKeys (timings, uuids, node names and ids,
//     PIT ids, creation times, human-readable error "reason" texts, the
//     line/col of a request parse error) become
//     "<norm>" when not null (null stays null, so "unassigned" is compared);
//   - an "_id" of 20 characters (an auto-generated id) becomes "<auto-id>";
//   - GET / keeps only version.distribution, version.number and tagline;
//   - _cat/shards rows are compared as sorted (index, shard, prirep, state,
//     node-is-null) tuples: which node holds a copy may differ;
//   - the pit_id of a search response is compared by presence only;
//   - while a copy relocates, _cat/shards node strings keep their shape
//     ("src -> ip id dst") with names and id replaced, and relocating_shards
//     is only checked to be ≥ 1 (the real balancer may move more);
//   - the caused_by of a mapper_parsing_exception is compared by presence
//     only: for the same truncated source the real server answers
//     json_e_o_f_exception or i_o_exception from one run to the next.
// Everything else (statuses, error types, root causes, item order, _version,
// _seq_no, _primary_term, _shards counts, shard numbers, hit ids and sort
// values, data stream names and generations) must be identical.

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/opensearchrouted/opensearchrouted/internal/routing"
	"github.com/opensearchrouted/opensearchrouted/testbed/cluster"
)

// target is what a scenario needs from a cluster.
type target interface {
	Addr(i int) string
	NodeName(i int) string
	Kill(i int) error
	Restart(i int) error
}

type emuTarget struct{ *Cluster }

func (e emuTarget) NodeName(i int) string { return e.Node(i).Name() }
func (e emuTarget) Kill(i int) error      { return e.StopNode(i) }
func (e emuTarget) Restart(i int) error   { return e.RestartNode(i) }

var normKeys = map[string]bool{
	"took": true, "cluster_uuid": true, "uuid": true, "index_uuid": true, "creation_time": true,
	"creation_date": true, "pit_id": true, "reason": true, "node": true, "ephemeral_id": true,
	"transport_address": true, "allocation_id": true, "_node": true, "cluster_name": true,
	"line": true, "col": true,
}

func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, val := range x {
			switch {
			case k == "caused_by" && x["type"] == "mapper_parsing_exception" && val != nil:
				out[k] = map[string]any{"type": "<norm>", "reason": "<norm>"}
			case normKeys[k] && val != nil:
				out[k] = "<norm>"
			case k == "_id":
				if s, ok := val.(string); ok && len(s) == 20 {
					out[k] = "<auto-id>"
				} else {
					out[k] = val
				}
			default:
				out[k] = normalize(val)
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(e)
		}
		return out
	}
	return v
}

type observation struct {
	Label  string
	Status int
	Body   any
}

type recorder struct {
	t   *testing.T
	tg  target
	obs []observation
}

// call sends a request to node i, records the normalised response under
// label (unless label is ""), and returns the raw decoded body.
func (r *recorder) call(label string, i int, method, path, body string) (int, map[string]any) {
	r.t.Helper()
	return r.callH(label, i, method, path, body, nil)
}

func (r *recorder) callH(label string, i int, method, path, body string, hdr map[string]string) (int, map[string]any) {
	r.t.Helper()
	status, raw := doRaw(r.t, method, r.tg.Addr(i)+path, body, hdr)
	var v any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &v); err != nil {
			v = "<non-json " + strings.TrimSpace(string(raw[:min(len(raw), 80)])) + ">"
		}
	}
	if label != "" {
		r.obs = append(r.obs, observation{label, status, normalize(v)})
	}
	m, _ := v.(map[string]any)
	return status, m
}

// note records a derived observation.
func (r *recorder) note(label string, v any) {
	b, _ := json.Marshal(v)
	var g any
	_ = json.Unmarshal(b, &g)
	r.obs = append(r.obs, observation{label, 0, g})
}

func (r *recorder) must(i int, method, path, body string) map[string]any {
	r.t.Helper()
	st, m := r.call("", i, method, path, body)
	if st != 200 {
		r.t.Fatalf("%s %s on node %d: %d %v", method, path, i, st, m)
	}
	return m
}

func (r *recorder) waitGreen(index string) {
	r.t.Helper()
	r.must(0, "GET", "/_cluster/health/"+index+"?wait_for_status=green&timeout=60s", "")
}

// scenario is everything compared, in order. It ends with a node kill.
func scenario(r *recorder) {
	t := r.t
	_, root := r.call("", 0, "GET", "/", "")
	r.note("root", map[string]any{"distribution": get(root, "version", "distribution"), "number": get(root, "version", "number"), "tagline": root["tagline"]})

	r.call("create index", 0, "PUT", "/dt", `{"settings":{"number_of_shards":3,"number_of_replicas":1}}`)
	r.call("create existing index", 1, "PUT", "/dt", `{"settings":{"number_of_shards":3}}`)
	r.call("create bad name", 1, "PUT", "/Bad", ``)
	r.waitGreen("dt")
	_, _ = r.call("", 0, "GET", "/", "")
	st, raw := doRaw(t, "GET", r.tg.Addr(2)+"/_cat/shards/dt?format=json&h=index,shard,prirep,state,node", "", nil)
	var rows []map[string]any
	_ = json.Unmarshal(raw, &rows)
	var tuples []string
	for _, row := range rows {
		tuples = append(tuples, fmt.Sprintf("%v/%v/%v/%v/null=%v", row["index"], row["shard"], row["prirep"], row["state"], row["node"] == nil))
	}
	sort.Strings(tuples)
	r.note("cat shards", map[string]any{"status": st, "rows": tuples})
	r.call("health", 1, "GET", "/_cluster/health", "")
	r.call("local health", 1, "GET", "/_cluster/health?local=true&filter_path=discovered_master,discovered_cluster_manager", "")
	_, nm := r.call("", 0, "GET", "/_nodes/http", "")
	var nodeRows []string
	for _, n := range asMap(get(nm, "nodes")) {
		pa, _ := get(n, "http", "publish_address").(string)
		nodeRows = append(nodeRows, fmt.Sprintf("%v|%v|zone=%v|publish=%v", get(n, "name"), get(n, "roles"), get(n, "attributes", "zone"),
			strings.HasPrefix(pa, "127.0.0.1:")))
	}
	sort.Strings(nodeRows)
	r.note("nodes http", map[string]any{"header": get(nm, "_nodes"), "nodes": nodeRows})
	publishedElsewhere(r, nm)
	_, li := r.call("", 1, "GET", "/_nodes/_local/http,os,thread_pool", "")
	for _, n := range asMap(get(li, "nodes")) {
		r.note("nodes local info", map[string]any{"header": get(li, "_nodes"), "write": get(n, "thread_pool", "write"),
			"allocated_processors": get(n, "os", "allocated_processors"), "max_content_length": get(n, "http", "max_content_length_in_bytes")})
	}
	_, ts := r.call("", 2, "GET", "/_nodes/stats/thread_pool", "")
	for _, n := range asMap(get(ts, "nodes")) {
		var keys []string
		for k := range asMap(get(n, "thread_pool", "write")) {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		r.note("thread_pool write stats keys", map[string]any{"nodes": len(asMap(get(ts, "nodes"))), "keys": keys})
		break
	}
	r.call("cluster state metadata", 1, "GET", "/_cluster/state/metadata/dt?filter_path=metadata.indices.*.routing_num_shards,metadata.indices.*.settings.index.number_of_shards,metadata.indices.*.settings.index.routing_partition_size", "")

	r.call("bulk mixed", 1, "POST", "/_bulk", bulkBody(
		`{"index":{"_index":"dt","_id":"a"}}`, `{"n":1,"@timestamp":"2024-01-01T00:00:00Z"}`,
		`{"create":{"_index":"dt","_id":"a"}}`, `{"n":2}`,
		`{"index":{"_index":"dt","_id":"a"}}`, `{"n":4,"@timestamp":"2024-01-01T00:00:01Z"}`,
		`{"create":{"_index":"dt","_id":"b","routing":"user7"}}`, `{"n":5}`,
		`{"delete":{"_index":"dt","_id":"zz"}}`,
		`{"index":{"_index":"dt","_id":"c"}}`, `{"n":6}`,
	))
	// An auto id lands in a random shard: alone in a 1-shard index, its
	// _seq_no does not depend on it.
	r.call("create dt-auto", 0, "PUT", "/dt-auto", `{"settings":{"number_of_shards":1,"number_of_replicas":0}}`)
	r.call("bulk auto id", 2, "POST", "/_bulk", bulkBody(`{"index":{"_index":"dt-auto"}}`, `{"n":3}`, `{"create":{"_index":"dt-auto"}}`, `{"n":4}`))
	r.call("bulk malformed source", 2, "POST", "/_bulk", bulkBody(`{"index":{"_index":"dt-auto","_id":"m1"}}`, `{"n":`, `{"create":{"_index":"dt-auto","_id":"m2"}}`, `["not","an","object"]`, `{"index":{"_index":"dt-auto","_id":"m3"}}`, `{"n":7}`))
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write([]byte(bulkBody(`{"index":{"_index":"dt-auto","_id":"gz"}}`, `{"n":5}`)))
	zw.Close()
	r.callH("bulk gzip", 1, "POST", "/_bulk", zb.String(), map[string]string{"Content-Encoding": "gzip"})
	r.callGzip("bulk answer gzip", 1, "POST", "/_bulk", bulkBody(`{"index":{"_index":"dt-auto","_id":"gz2"}}`, `{"n":6}`))
	r.callGzip("error answer gzip", 0, "GET", "/nope/_doc/a", "")
	aliasScenario(r)
	routingScenario(r)
	updateScenario(r)
	big := bulkBody(`{"index":{"_index":"dt-auto","_id":"big"}}`, `{"pad":"`+strings.Repeat("p", 3<<19)+`"}`)
	r.call("bulk above max content length", 1, "POST", "/_bulk", big)
	r.call("bulk no final newline", 0, "POST", "/_bulk", `{"index":{"_index":"dt"}}`+"\n{}")
	r.call("bulk unknown op", 0, "POST", "/_bulk", bulkBody(`{"upsert":{"_index":"dt"}}`, `{}`))
	r.call("bulk unknown param", 0, "POST", "/_bulk", bulkBody(`{"index":{"_index":"dt","_routing":"r"}}`, `{}`))
	r.call("bulk no index", 0, "POST", "/_bulk", bulkBody(`{"index":{}}`, `{}`))
	r.call("bulk empty", 0, "POST", "/_bulk", "")
	r.call("get a", 2, "GET", "/dt/_doc/a", "")
	r.call("get b without routing", 2, "GET", "/dt/_doc/b", "")
	r.call("get b with routing", 2, "GET", "/dt/_doc/b?routing=user7", "")
	r.call("get missing index", 2, "GET", "/nope/_doc/a", "")
	r.call("refresh", 0, "POST", "/dt/_refresh", "")
	r.call("cat indices", 0, "GET", "/_cat/indices/dt?format=json&h=health,status,index,pri,rep,docs.count", "")
	r.call("count", 0, "GET", "/dt/_count", "")
	for _, rv := range []string{"a", "user7", "hello", "é"} {
		_, m := r.call("", 0, "GET", "/dt/_search_shards?routing="+urlQueryEscape(rv), "")
		var shards []any
		if list, ok := get(m, "shards").([]any); ok {
			for _, g := range list {
				shards = append(shards, get(g, 0, "shard"))
			}
		}
		r.note("search_shards "+rv, shards)
	}

	// Data streams.
	r.call("put template", 0, "PUT", "/_index_template/dtl", `{"index_patterns":["dtl-*"],"data_stream":{},"priority":100,"template":{"settings":{"number_of_shards":2,"number_of_replicas":0}}}`)
	r.call("bulk into stream", 1, "POST", "/_bulk", bulkBody(
		`{"create":{"_index":"dtl-app","_id":"s1"}}`, `{"@timestamp":"2024-05-01T00:00:00Z","m":1}`,
		`{"create":{"_index":"dtl-app","_id":"s2"}}`, `{"@timestamp":"2024-05-01T00:00:01Z","m":2}`,
		`{"index":{"_index":"dtl-app","_id":"s3"}}`, `{"@timestamp":"2024-05-01T00:00:02Z"}`,
		`{"create":{"_index":"dtl-app","_id":"s4","routing":"r"}}`, `{"@timestamp":"2024-05-01T00:00:03Z"}`,
		`{"create":{"_index":"dtl-app","_id":"s1"}}`, `{"@timestamp":"2024-05-01T00:00:04Z"}`,
	))
	r.call("get data stream", 2, "GET", "/_data_stream/dtl-app", "")
	r.call("get missing data stream", 2, "GET", "/_data_stream/dtl-nope", "")
	r.call("rollover", 0, "POST", "/dtl-app/_rollover", "")
	r.call("bulk after rollover", 1, "POST", "/_bulk", bulkBody(`{"create":{"_index":"dtl-app","_id":"s1"}}`, `{"@timestamp":"2024-05-02T00:00:00Z"}`))
	r.call("get data stream after rollover", 2, "GET", "/_data_stream/dtl-app", "")
	r.call("refresh stream", 0, "POST", "/dtl-app/_refresh", "")
	r.call("count stream", 0, "GET", "/dtl-app/_count", "")

	// Search.
	r.call("create search index", 0, "PUT", "/sq", `{"settings":{"number_of_shards":3,"number_of_replicas":0},"mappings":{"properties":{"@timestamp":{"type":"date"},"level":{"type":"keyword"},"n":{"type":"long"}}}}`)
	var lines []string
	levels := []string{"info", "warn", "error"}
	for i := 0; i < 40; i++ {
		lines = append(lines, fmt.Sprintf(`{"index":{"_index":"sq","_id":"q%02d"}}`, i),
			fmt.Sprintf(`{"@timestamp":"2024-01-01T00:00:%02dZ","level":%q,"n":%d}`, i%20, levels[i%3], i))
	}
	r.call("bulk search docs", 2, "POST", "/_bulk?refresh=true", bulkBody(lines...))
	for _, q := range []struct{ label, body string }{
		{"search term", `{"query":{"term":{"level":"warn"}},"sort":["n"],"size":3}`},
		{"search terms", `{"query":{"terms":{"level":["warn","error"]}},"sort":[{"n":"desc"}],"size":4}`},
		{"search range ts", `{"query":{"range":{"@timestamp":{"gte":"2024-01-01T00:00:05Z","lt":"2024-01-01T00:00:08Z"}}},"sort":[{"@timestamp":"asc"},{"n":"asc"}],"size":10}`},
		{"search bool", `{"query":{"bool":{"filter":[{"term":{"level":"info"}}],"must_not":[{"range":{"n":{"lt":20}}}]}},"sort":["n"],"size":20}`},
		{"search after", `{"sort":[{"@timestamp":"desc"},{"n":"asc"}],"size":5,"search_after":[1704067215000,9]}`},
		{"search track false", `{"size":0,"track_total_hits":false}`},
		{"search track 5", `{"size":0,"track_total_hits":5}`},
		{"search unknown query", `{"query":{"nope":{}}}`},
	} {
		r.call(q.label, 1, "POST", "/sq/_search", q.body)
	}
	r.call("search missing index", 1, "POST", "/nope/_search", `{}`)
	r.call("search missing index ignore_unavailable", 1, "POST", "/nope/_search?ignore_unavailable=true", `{}`)
	r.call("search present and missing ignore_unavailable", 0, "POST", "/sq,nope/_search?ignore_unavailable=true", `{"size":0}`)

	// PIT.
	_, pm := r.call("pit create", 0, "POST", "/sq/_search/point_in_time?keep_alive=5m", "")
	pit, _ := pm["pit_id"].(string)
	var ids []string
	after := ""
	for page := 0; page < 20 && pit != ""; page++ {
		st, m := r.call("", page%3, "POST", "/_search", fmt.Sprintf(`{"pit":{"id":%q,"keep_alive":"5m"},"size":7,"sort":[{"@timestamp":"asc"},{"n":"asc"}]%s}`, pit, after))
		if st != 200 {
			t.Fatalf("pit page: %d %v", st, m)
		}
		if p, _ := m["pit_id"].(string); p != "" {
			pit = p
		}
		hits, _ := get(m, "hits", "hits").([]any)
		if len(hits) == 0 {
			break
		}
		for _, h := range hits {
			ids = append(ids, h.(map[string]any)["_id"].(string))
		}
		last, _ := json.Marshal(get(hits[len(hits)-1], "sort"))
		after = `,"search_after":` + string(last)
	}
	r.note("pit pages", ids)
	r.call("pit with index in path", 0, "POST", "/sq/_search", fmt.Sprintf(`{"pit":{"id":%q}}`, pit))
	// A PIT holds its routing and preference: its searches refuse both.
	r.call("pit search with preference", 0, "POST", "/_search?preference=_local", fmt.Sprintf(`{"pit":{"id":%q},"size":0}`, pit))
	r.call("pit search with routing", 0, "POST", "/_search?routing=r1", fmt.Sprintf(`{"pit":{"id":%q},"size":0}`, pit))
	r.call("pit delete", 0, "DELETE", "/_search/point_in_time", fmt.Sprintf(`{"pit_id":[%q]}`, pit))
	_, rp := r.call("pit create with routing", 1, "POST", "/sq/_search/point_in_time?keep_alive=1m&routing=r1", "")
	if id, _ := rp["pit_id"].(string); id != "" {
		r.must(1, "DELETE", "/_search/point_in_time", fmt.Sprintf(`{"pit_id":[%q]}`, id))
	}
	r.call("pit create only unknown nodes", 1, "POST", "/sq/_search/point_in_time?keep_alive=1m&preference=_only_nodes:nope", "")
	r.call("sort on _shard_doc", 0, "POST", "/sq/_search", `{"sort":["_shard_doc"]}`)

	// Split keeps R.
	r.call("split without block", 0, "POST", "/sq/_split/sq8", `{"settings":{"index.number_of_shards":6}}`)
	r.call("block writes", 0, "PUT", "/sq/_settings", `{"index.blocks.write":true}`)
	r.call("split", 0, "POST", "/sq/_split/sq6", `{"settings":{"index.number_of_shards":6,"index.number_of_replicas":0}}`)
	r.waitGreen("sq6")
	r.call("split target metadata", 0, "GET", "/_cluster/state/metadata/sq6?filter_path=metadata.indices.*.routing_num_shards,metadata.indices.*.settings.index.number_of_shards", "")
	r.call("split target count", 0, "GET", "/sq6/_count", "")
	r.call("write into blocked split target", 0, "POST", "/_bulk", bulkBody(`{"index":{"_index":"sq6","_id":"x"}}`, `{}`))

	// Relocation: _cat/shards while a copy moves. The real recovery is
	// throttled so that the RELOCATING state lasts; the emulator's lasts
	// RecoveryTime.
	r.must(0, "PUT", "/_cluster/settings", `{"transient":{"indices.recovery.max_bytes_per_sec":"2kb"}}`)
	st, raw = doRaw(t, "GET", r.tg.Addr(0)+"/_cat/shards/dt?format=json&h=shard,prirep,node", "", nil)
	_ = json.Unmarshal(raw, &rows)
	holders := map[string]bool{}
	from := ""
	for _, row := range rows {
		if row["shard"] == "0" {
			holders[fmt.Sprint(row["node"])] = true
			if row["prirep"] == "p" {
				from = fmt.Sprint(row["node"])
			}
		}
	}
	to := ""
	for i := 0; i < 3; i++ {
		if !holders[r.tg.NodeName(i)] {
			to = r.tg.NodeName(i)
		}
	}
	_, rr := r.call("", 0, "POST", "/_cluster/reroute", fmt.Sprintf(`{"commands":[{"move":{"index":"dt","shard":0,"from_node":%q,"to_node":%q}}]}`, from, to))
	r.note("reroute move", map[string]any{"acknowledged": rr["acknowledged"]})
	var during []string
	var hDuring map[string]any
	for start := time.Now(); time.Since(start) < 30*time.Second; time.Sleep(20 * time.Millisecond) {
		_, raw = doRaw(t, "GET", r.tg.Addr(1)+"/_cat/shards/dt?format=json&h=shard,prirep,state,node", "", nil)
		_ = json.Unmarshal(raw, &rows)
		during = nil
		relocating := false
		for _, row := range rows {
			if row["shard"] != "0" {
				continue
			}
			node := fmt.Sprint(row["node"])
			if row["state"] == "RELOCATING" {
				relocating = true
				// "src -> ip id name": keep the shape, drop the id.
				f := strings.Fields(node)
				if len(f) == 5 && f[1] == "->" {
					node = fmt.Sprintf("%s -> %s <id> %s (from=%v to=%v)", "<node>", f[2], "<node>", f[0] == from, f[4] == to)
				}
			} else {
				node = "<node>"
			}
			during = append(during, fmt.Sprintf("%v %v %v", row["prirep"], row["state"], node))
		}
		if relocating {
			_, hDuring = r.call("", 2, "GET", "/_cluster/health", "")
			break
		}
	}
	sort.Strings(during)
	if hDuring == nil {
		t.Errorf("no RELOCATING copy of dt/0 seen within 30s of the move (rows %v)", during)
	}
	t.Logf("cat shards while relocating: %v", during)
	r.note("cat shards while relocating", during)
	// relocating_shards is at least 1: the real balancer may move another
	// shard at the same time (the emulator never rebalances).
	rel, _ := hDuring["relocating_shards"].(float64)
	r.note("health while relocating", map[string]any{"relocating_shards>=1": rel >= 1, "initializing_shards": hDuring["initializing_shards"], "status": hDuring["status"]})
	r.must(0, "PUT", "/_cluster/settings", `{"transient":{"indices.recovery.max_bytes_per_sec":null}}`)
	for start := time.Now(); ; time.Sleep(100 * time.Millisecond) {
		_, h := r.call("", 0, "GET", "/_cluster/health", "")
		if h["relocating_shards"] == 0.0 {
			break
		}
		if time.Since(start) > 90*time.Second {
			t.Fatalf("still relocating after 90s: %v", h)
		}
	}
	_, raw = doRaw(t, "GET", r.tg.Addr(0)+"/_cat/shards/dt?format=json&h=shard,prirep,state,node", "", nil)
	_ = json.Unmarshal(raw, &rows)
	moved := false
	for _, row := range rows {
		if row["shard"] == "0" && row["prirep"] == "p" {
			moved = row["node"] == to && row["state"] == "STARTED"
		}
	}
	r.note("primary moved", moved)
	r.call("count after relocation", 1, "GET", "/dt/_count", "")

	// PIT contexts on a killed node (last: it changes the cluster).
	_, cm := r.call("", 0, "GET", "/_cat/cluster_manager?format=json", "")
	_ = cm
	st, raw = doRaw(t, "GET", r.tg.Addr(0)+"/_cat/cluster_manager?format=json", "", nil)
	var mgr []map[string]any
	_ = json.Unmarshal(raw, &mgr)
	victim := 1
	if st == 200 && len(mgr) == 1 {
		for i := 0; i < 3; i++ {
			if r.tg.NodeName(i) != mgr[0]["node"] {
				victim = i
				break
			}
		}
	}
	ask := (victim + 1) % 3
	r.call("create pk-spread", ask, "PUT", "/pk-spread", `{"settings":{"number_of_shards":3,"number_of_replicas":0,"index.routing.allocation.total_shards_per_node":1}}`)
	r.call("create pk-one", ask, "PUT", "/pk-one", fmt.Sprintf(`{"settings":{"number_of_shards":2,"number_of_replicas":0,"index.routing.allocation.require._name":%q}}`, r.tg.NodeName(victim)))
	// rc: a copy on every node, so that the victim holds one to recover
	// when it comes back.
	r.call("create rc", ask, "PUT", "/rc", `{"settings":{"number_of_shards":1,"number_of_replicas":2}}`)
	r.waitGreen("pk-spread,pk-one,rc")
	lines = nil
	for k := 0; k < 30; k++ {
		for _, idx := range []string{"pk-spread", "pk-one"} {
			lines = append(lines, fmt.Sprintf(`{"index":{"_index":%q,"_id":"%s-%d"}}`, idx, idx, k), fmt.Sprintf(`{"n":%d}`, k))
		}
	}
	r.call("bulk pk", ask, "POST", "/_bulk?refresh=true", bulkBody(lines...))
	st, raw = doRaw(t, "GET", r.tg.Addr(ask)+"/_cat/shards/pk-spread?format=json&h=shard,node", "", nil)
	_ = json.Unmarshal(raw, &rows)
	lost := ""
	for _, row := range rows {
		if row["node"] == r.tg.NodeName(victim) {
			lost = fmt.Sprint(row["shard"])
		}
	}
	r.note("pk-spread shard on victim", map[string]any{"status": st, "found": lost != ""})
	_, a := r.call("pit pk-spread", ask, "POST", "/pk-spread/_search/point_in_time?keep_alive=5m", "")
	_, b := r.call("pit pk-one", ask, "POST", "/pk-one/_search/point_in_time?keep_alive=5m", "")
	if err := r.tg.Kill(victim); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(90 * time.Second)
	for {
		_, h := r.call("", ask, "GET", "/_cluster/health", "")
		if h["number_of_nodes"] == 2.0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster still has %v nodes 90s after the kill", h["number_of_nodes"])
		}
		time.Sleep(100 * time.Millisecond)
	}
	pitBody := func(p any) string {
		return fmt.Sprintf(`{"pit":{"id":%q,"keep_alive":"5m"},"size":100,"sort":[{"n":"asc"},{"_id":"asc"}]}`, p)
	}
	st, m := r.call("", ask, "POST", "/_search", pitBody(a["pit_id"]))
	var ftypes []any
	for _, f := range asList(get(m, "_shards", "failures")) {
		ftypes = append(ftypes, get(f, "reason", "type"))
	}
	survivors := 0
	for k := 0; k < 30; k++ {
		if s, _ := routing.ShardFor(fmt.Sprintf("pk-spread-%d", k), "", 3, 0, 1); fmt.Sprint(s) != lost {
			survivors++
		}
	}
	r.note("pit partial loss after kill", map[string]any{"status": st, "failed": get(m, "_shards", "failed"),
		"successful": get(m, "_shards", "successful"), "failure types": ftypes, "failure shard is the lost one": fmt.Sprint(get(m, "_shards", "failures", 0, "shard")) == lost,
		"hits are the surviving shards' docs": get(m, "hits", "total", "value") == float64(survivors)})
	st, m = r.call("", ask, "POST", "/_search", pitBody(b["pit_id"]))
	var roots []any
	for _, c := range asList(get(m, "error", "root_cause")) {
		roots = append(roots, get(c, "type"))
	}
	r.note("pit all lost after kill", map[string]any{"status": st, "type": get(m, "error", "type"), "root causes": roots,
		"failed shard types": len(asList(get(m, "error", "failed_shards")))})

	// Writes while the victim is down: its rc replicas stay UNASSIGNED
	// (index.unassigned.node_left.delayed_timeout), each item is
	// acknowledged by its primary alone, and the victim has operations to
	// recover when it returns.
	lines = nil
	for k := 0; k < 3000; k++ {
		lines = append(lines, fmt.Sprintf(`{"index":{"_index":"rc","_id":"rc-%d"}}`, k), fmt.Sprintf(`{"n":%d}`, k))
	}
	_, rh := r.call("", ask, "GET", "/_cluster/health/rc", "")
	r.note("rc health while a node is down", map[string]any{"status": rh["status"], "unassigned_shards": rh["unassigned_shards"],
		"delayed_unassigned_shards": rh["delayed_unassigned_shards"], "active_shards": rh["active_shards"]})
	indexTotal := func() (sum float64) {
		_, ns := r.call("", ask, "GET", "/_nodes/stats/indices/indexing", "")
		for _, n := range asMap(ns["nodes"]) {
			v, _ := get(n, "indices", "indexing", "index_total").(float64)
			sum += v
		}
		return sum
	}
	before := indexTotal()
	st, m = r.call("", ask, "POST", "/_bulk", bulkBody(lines...))
	r.note("index_total over the nodes grew by (primaries and replicas)", indexTotal()-before)
	_, is := r.call("", ask, "GET", "/rc/_stats/indexing,docs?level=shards", "")
	var copiesSeen []string
	for _, row := range asList(get(is, "indices", "rc", "shards", "0")) {
		copiesSeen = append(copiesSeen, fmt.Sprintf("primary=%v %v index_total=%v", get(row, "routing", "primary"), get(row, "routing", "state"), get(row, "indexing", "index_total")))
	}
	sort.Strings(copiesSeen)
	r.note("rc _stats while a node is down", map[string]any{"_shards": is["_shards"], "copies": copiesSeen,
		"primaries index_total": get(is, "_all", "primaries", "indexing", "index_total"), "total index_total": get(is, "_all", "total", "indexing", "index_total")})
	// A copy on every node: the victim's replica is lost, each item is
	// acknowledged by 2 of 3 copies.
	outcomes := map[string]int{}
	for _, it := range asList(m["items"]) {
		res := asMap(asMap(it)["index"])
		outcomes[fmt.Sprintf("%v %v/%v/%v", res["status"], get(res, "_shards", "total"), get(res, "_shards", "successful"), get(res, "_shards", "failed"))]++
	}
	r.note("bulk while a node is down", map[string]any{"status": st, "errors": m["errors"], "items by status and _shards total/successful/failed": outcomes})

	// The node comes back (the emulator's empty, the real one with its
	// data): the contexts it held are gone for good. Watched from the
	// moment it is restarted (Restart of the real cluster returns once the
	// node has joined, maybe after its copies recovered).
	restarted := make(chan error, 1)
	go func() { restarted <- r.tg.Restart(victim) }()
	r.note("restarted node readiness", readiness(r, victim))
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(90 * time.Second)
	for {
		_, h := r.call("", ask, "GET", "/_cluster/health", "")
		if h["number_of_nodes"] == 3.0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("cluster has %v nodes 90s after the restart", h["number_of_nodes"])
		}
		time.Sleep(100 * time.Millisecond)
	}
	st, m = r.call("", ask, "POST", "/_search", pitBody(a["pit_id"]))
	ftypes = nil
	for _, f := range asList(get(m, "_shards", "failures")) {
		ftypes = append(ftypes, get(f, "reason", "type"))
	}
	r.note("pit partial loss after restart", map[string]any{"status": st, "failed": get(m, "_shards", "failed"),
		"failure types": ftypes, "hits are the surviving shards' docs": get(m, "hits", "total", "value") == float64(survivors)})
	st, m = r.call("", ask, "POST", "/_search", pitBody(b["pit_id"]))
	roots = nil
	for _, c := range asList(get(m, "error", "root_cause")) {
		roots = append(roots, get(c, "type"))
	}
	var fst []any
	for _, f := range asList(get(m, "error", "failed_shards")) {
		fst = append(fst, get(f, "reason", "type"))
	}
	r.note("pit all lost after restart", map[string]any{"status": st, "type": get(m, "error", "type"), "root causes": roots, "failed shards": fst})
}

// quickGet is a GET that fails fast (a node that is not listening yet).
func quickGet(url string) (int, error) {
	resp, err := quickClient.Get(url)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

var quickClient = &http.Client{Timeout: 2 * time.Second}

// readiness polls a restarted node until its copies of rc are STARTED and
// reports what a client sees meanwhile: the node answers GET / (and local
// cluster health, counting its copies as initializing) before they are
// recovered; wait_for_no_initializing_shards answers once they are.
func readiness(r *recorder, victim int) map[string]any {
	t := r.t
	name := r.tg.NodeName(victim)
	var rootWhileRecovering, localHealthInitializing, catInitializing bool
	var firstNodes any
	copies := 0
	deadline := time.Now().Add(3 * time.Minute)
	for {
		rootSt, _ := quickGet(r.tg.Addr(victim) + "/")
		if rootSt != 200 {
			if time.Now().After(deadline) {
				t.Errorf("the restarted node did not answer GET / within 3m")
				return nil
			}
			time.Sleep(20 * time.Millisecond)
			continue
		}
		_, lh := r.call("", victim, "GET", "/_cluster/health/rc?local=true", "")
		if firstNodes == nil {
			firstNodes = lh["number_of_nodes"]
		}
		_, raw := doRaw(t, "GET", r.tg.Addr(victim)+"/_cat/shards/rc?format=json&h=shard,prirep,state,node", "", nil)
		var rows []map[string]any
		_ = json.Unmarshal(raw, &rows)
		mine, started := 0, 0
		for _, row := range rows {
			if row["node"] != name {
				continue
			}
			mine++
			switch row["state"] {
			case "STARTED":
				started++
			case "INITIALIZING":
				catInitializing = true
			}
		}
		if mine == 0 || started < mine {
			rootWhileRecovering = true
			if n, _ := lh["initializing_shards"].(float64); n >= 1 {
				localHealthInitializing = true
			}
		}
		if mine > 0 && started == mine {
			copies = mine
			break
		}
		if time.Now().After(deadline) {
			t.Errorf("the restarted node's rc copies not all STARTED within 3m: %s", raw)
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	st, h := r.call("", victim, "GET", "/_cluster/health/rc?local=true&wait_for_nodes=3&wait_for_no_initializing_shards=true&timeout=30s", "")
	return map[string]any{
		"GET / answered before its copies were recovered":            rootWhileRecovering,
		"local health counted its copies initializing meanwhile":     localHealthInitializing,
		"_cat/shards showed its copies INITIALIZING":                 catInitializing,
		"holds rc copies once recovered":                             copies >= 1,
		"nodes in its local health when it first answered":           firstNodes,
		"local health, wait_for_no_initializing_shards: HTTP status": st,
		"... status":              h["status"],
		"... initializing_shards": h["initializing_shards"],
		"... timed_out":           h["timed_out"],
	}
}

func asMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func runScenario(t *testing.T, tg target) []observation {
	r := &recorder{t: t, tg: tg}
	scenario(r)
	return r.obs
}

// compareObservations reports every label whose observations differ.
func compareObservations(t *testing.T, emu, real []observation) {
	t.Helper()
	if len(emu) != len(real) {
		t.Errorf("emulator made %d observations, real cluster %d", len(emu), len(real))
	}
	for i := 0; i < min(len(emu), len(real)); i++ {
		e, r := emu[i], real[i]
		if e.Label != r.Label {
			t.Fatalf("observation %d: label %q vs %q", i, e.Label, r.Label)
		}
		if e.Status != r.Status || !reflect.DeepEqual(e.Body, r.Body) {
			eb, _ := json.Marshal(e.Body)
			rb, _ := json.Marshal(r.Body)
			t.Errorf("%s:\n  emulator HTTP %d %s\n  real     HTTP %d %s", e.Label, e.Status, eb, r.Status, rb)
		}
	}
}

// TestDifferentialAgainstRealOpenSearch runs the scenario on both.
func TestDifferentialAgainstRealOpenSearch(t *testing.T) {
	emu := StartT(t, Options{Nodes: 3, NoHopLatency: true, DetectionDelay: 50 * time.Millisecond,
		Zones: []string{"a", "b", "c"}, MaxContentLength: 1 << 20, RecoveryTime: 2 * time.Second,
		NodeLeftDelay: time.Minute}) // the server's index.unassigned.node_left.delayed_timeout
	// Node 2 publishes an HTTP port nothing listens on (http.publish_port).
	pub := freePort(t)
	if err := emu.SetPublishAddress(2, "127.0.0.1:"+strconv.Itoa(pub)); err != nil {
		t.Fatal(err)
	}
	emuObs := runScenario(t, emuTarget{emu})
	if t.Failed() {
		return
	}
	real := cluster.Start(t, cluster.Options{Nodes: 3, Zones: []string{"a", "b", "c"},
		Settings: map[string]string{"http.max_content_length": "1mb"},
		PerNode:  []cluster.NodeOptions{{}, {}, {HTTPPublishPort: pub}}})
	realObs := runScenario(t, real)
	compareObservations(t, emuObs, realObs)
}
