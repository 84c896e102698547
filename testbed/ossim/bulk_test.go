package ossim

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/opensearchrouted/opensearchrouted/internal/routing"
)

func TestBulkItemsInOrderWithConflictsAndErrors(t *testing.T) {
	c := StartT(t, Options{Nodes: 2, NoHopLatency: true})
	base := c.Addr(0)
	createIndex(t, base, "logs", 3, 1, "")
	m := mustOK(t, "POST", base+"/_bulk", bulkBody(
		`{"index":{"_index":"logs","_id":"a"}}`, `{"n":1}`,
		`{"create":{"_index":"logs","_id":"a"}}`, `{"n":2}`,
		`{"index":{"_index":"logs"}}`, `{"n":3}`,
		`{"create":{"_index":"logs","_id":"b","routing":"r1"}}`, `not json`,
		`{"index":{"_index":"logs","_id":"a"}}`, `{"n":4}`,
		`{"delete":{"_index":"logs","_id":"zz"}}`,
	))
	if m["errors"] != true {
		t.Fatalf("errors flag = %v, want true", m["errors"])
	}
	it := items(m)
	if len(it) != 6 {
		t.Fatalf("%d items, want 6", len(it))
	}
	want := []struct {
		id     string
		status float64
		typ    string
	}{{"a", 201, ""}, {"a", 409, "version_conflict_engine_exception"}, {"", 201, ""},
		{"b", 400, "mapper_parsing_exception"}, {"a", 200, ""}, {"zz", 404, ""}}
	for i, w := range want {
		if w.id != "" && it[i]["_id"] != w.id {
			t.Errorf("item %d: _id %v, want %s (order must be kept)", i, it[i]["_id"], w.id)
		}
		if it[i]["status"] != w.status {
			t.Errorf("item %d: status %v, want %v (%v)", i, it[i]["status"], w.status, it[i])
		}
		if got := str(get(it[i], "error", "type")); w.typ != "" && got != w.typ {
			t.Errorf("item %d: error type %s, want %s", i, got, w.typ)
		}
	}
	if get(it[1], "error", "index_uuid") == nil || get(it[1], "error", "shard") == nil {
		t.Errorf("409 item lacks index_uuid/shard: %v", it[1])
	}
	if it[4]["result"] != "updated" || it[4]["_version"] != 2.0 {
		t.Errorf("overwrite: %v", it[4])
	}
	if got := str(get(it[0], "_shards", "total")); got != "2" {
		t.Errorf("_shards.total %s, want 2", got)
	}
	if it[5]["result"] != "not_found" {
		t.Errorf("delete of a missing doc: %v", it[5])
	}
	if id, _ := it[2]["_id"].(string); len(id) != 20 {
		t.Errorf("auto id %q, want 20 characters", id)
	}
	g := mustOK(t, "GET", c.Addr(1)+"/logs/_doc/a", "")
	if get(g, "_source", "n") != 4.0 || g["_version"] != 2.0 || g["found"] != true {
		t.Errorf("get a: %v", g)
	}
	st, g := do(t, "GET", base+"/logs/_doc/nope", "")
	if st != 404 || g["found"] != false {
		t.Errorf("get missing: %d %v", st, g)
	}
	cnt := mustOK(t, "GET", base+"/logs/_count", "")
	if cnt["count"] != 2.0 {
		t.Errorf("count %v, want 2", cnt["count"])
	}
	// errors:false when all succeed.
	m = mustOK(t, "POST", base+"/logs/_bulk", bulkBody(`{"index":{"_id":"c"}}`, `{"n":5}`))
	if m["errors"] != false {
		t.Errorf("errors = %v, want false", m["errors"])
	}
}

func TestBulkMalformedRequests(t *testing.T) {
	c := StartT(t, Options{NoHopLatency: true, MaxContentLength: 4096})
	base := c.Addr(0)
	cases := []struct {
		name, body string
		status     int
		typ        string
	}{
		{"empty", "", 400, "parse_exception"},
		{"no final newline", `{"index":{"_index":"x"}}` + "\n{}", 400, "illegal_argument_exception"},
		{"unknown op", bulkBody(`{"upsert":{"_index":"x"}}`, `{}`), 400, "illegal_argument_exception"},
		{"bad json action", bulkBody(`{"index":`, `{}`), 400, "json_parse_exception"},
		{"unknown param", bulkBody(`{"index":{"_index":"x","_routing":"r"}}`, `{}`), 400, "illegal_argument_exception"},
		{"no index", bulkBody(`{"index":{}}`, `{}`), 400, "action_request_validation_exception"},
		{"missing source", `{"index":{"_index":"x"}}` + "\n", 400, "illegal_argument_exception"},
	}
	for _, tc := range cases {
		st, m := do(t, "POST", base+"/_bulk", tc.body)
		if st != tc.status || str(get(m, "error", "type")) != tc.typ || m["status"] != float64(tc.status) {
			t.Errorf("%s: got %d %v, want %d %s", tc.name, st, m, tc.status, tc.typ)
		}
		if get(m, "error", "root_cause", 0, "type") != get(m, "error", "type") {
			t.Errorf("%s: root_cause missing: %v", tc.name, m)
		}
	}
	// Above max content length: 413.
	big := bulkBody(`{"index":{"_index":"x"}}`, `{"pad":"`+strings.Repeat("p", 5000)+`"}`)
	if st, _ := doRaw(t, "POST", base+"/_bulk", big, nil); st != 413 {
		t.Errorf("oversized body: status %d, want 413", st)
	}
	// A gzip body is accepted; the limit applies after decompression.
	var zb bytes.Buffer
	zw := gzip.NewWriter(&zb)
	zw.Write([]byte(bulkBody(`{"index":{"_index":"gz","_id":"1"}}`, `{"a":1}`)))
	zw.Close()
	st, raw := doRaw(t, "POST", base+"/_bulk", zb.String(), map[string]string{"Content-Encoding": "gzip"})
	if st != 200 || !strings.Contains(string(raw), `"errors":false`) {
		t.Errorf("gzip bulk: %d %s", st, raw)
	}
	zb.Reset()
	zw = gzip.NewWriter(&zb)
	zw.Write([]byte(big))
	zw.Close()
	if zb.Len() > 4096 {
		t.Fatal("test body does not compress")
	}
	if st, _ := doRaw(t, "POST", base+"/_bulk", zb.String(), map[string]string{"Content-Encoding": "gzip"}); st != 413 {
		t.Errorf("gzip body above the limit once decompressed: status %d, want 413", st)
	}
}

// routedBulk sends each document to the node holding its primary.
func primaryNodeOf(t *testing.T, c *Cluster, index string, shard int) int {
	t.Helper()
	sh, err := c.Shards(index)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sh {
		if s.Shard == shard && s.Primary {
			return s.Node
		}
	}
	t.Fatalf("no primary for %s/%d", index, shard)
	return -1
}

func TestForwardingCounters(t *testing.T) {
	c := StartT(t, Options{Nodes: 3, NoHopLatency: true})
	createIndex(t, c.Addr(0), "fw", 3, 1, "")
	layout, _ := routing.NewLayout(3, 0, 1)
	const docs = 300
	var lines []string
	local := 0
	for i := 0; i < docs; i++ {
		id := fmt.Sprintf("doc-%d", i)
		lines = append(lines, fmt.Sprintf(`{"index":{"_index":"fw","_id":"%s"}}`, id), `{"msg":"hello"}`)
		s, _ := layout.Shard(id, "")
		if primaryNodeOf(t, c, "fw", s) == 0 {
			local++
		}
	}
	c.ResetStats()
	m := mustOK(t, "POST", c.Addr(0)+"/_bulk", bulkBody(lines...))
	if m["errors"] != false {
		t.Fatalf("bulk errors: %v", m)
	}
	st := c.Stats()
	if st[0].BulkRequests != 1 || st[0].ItemsReceived != docs {
		t.Errorf("node 0 received %d requests / %d items", st[0].BulkRequests, st[0].ItemsReceived)
	}
	if st[0].ItemsForwarded != int64(docs-local) || st[0].GroupsForwarded != 2 {
		t.Errorf("forwarded %d items in %d groups, want %d in 2", st[0].ItemsForwarded, st[0].GroupsForwarded, docs-local)
	}
	var prim, repl, fw int64
	for _, s := range st {
		prim += s.ItemsPrimary
		repl += s.ItemsReplica
		if s.Index != 0 {
			fw += s.ItemsForwarded
		}
	}
	if prim != docs || repl != docs || fw != 0 {
		t.Errorf("primary %d, replica %d, others forwarded %d; want %d, %d, 0", prim, repl, fw, docs, docs)
	}
	if st[0].HopBytes == 0 || st[1].RxCount == 0 {
		t.Errorf("hop bytes %d, rx %d", st[0].HopBytes, st[1].RxCount)
	}

	// A routed client (each item to its primary's node) forwards nothing.
	c.ResetStats()
	per := map[int][]string{}
	for i := 0; i < docs; i++ {
		id := fmt.Sprintf("r-%d", i)
		s, _ := layout.Shard(id, "")
		n := primaryNodeOf(t, c, "fw", s)
		per[n] = append(per[n], fmt.Sprintf(`{"create":{"_index":"fw","_id":"%s"}}`, id), `{"msg":"x"}`)
	}
	for n, ls := range per {
		mustOK(t, "POST", c.Addr(n)+"/_bulk", bulkBody(ls...))
	}
	var total int64
	for _, s := range c.Stats() {
		if s.ItemsForwarded != 0 || s.GroupsForwarded != 0 {
			t.Errorf("node %d forwarded %d items for a routed client", s.Index, s.ItemsForwarded)
		}
		total += s.ItemsPrimary
	}
	if total != docs {
		t.Errorf("items executed as primary %d, want %d", total, docs)
	}
	// The document is where the routing package says, whatever node received it.
	shards, _, _ := c.StoredShardOf("fw")
	for id, s := range shards {
		if w, _ := layout.Shard(id, ""); w != s {
			t.Fatalf("doc %s stored in shard %d, routing says %d", id, s, w)
		}
	}
	if len(shards) != 2*docs {
		t.Errorf("%d docs stored, want %d", len(shards), 2*docs)
	}
}

func TestFilterPathAndHead(t *testing.T) {
	c := StartT(t, Options{NoHopLatency: true})
	base := c.Addr(0)
	m := mustOK(t, "POST", base+"/_bulk?filter_path=errors,items.*.error", bulkBody(
		`{"index":{"_index":"f","_id":"1"}}`, `{"a":1}`, `{"create":{"_index":"f","_id":"1"}}`, `{"a":1}`))
	if len(m) != 2 || m["errors"] != true {
		t.Fatalf("filtered: %v", m)
	}
	it := get(m, "items").([]any)
	if len(it) != 1 || get(it[0], "create", "error", "type") != "version_conflict_engine_exception" {
		t.Errorf("filtered items: %v", it)
	}
	req, _ := http.NewRequest("HEAD", base+"/", nil)
	resp, err := testClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("HEAD /: %v %v", resp, err)
	}
	resp.Body.Close()
}
