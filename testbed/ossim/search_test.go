package ossim

import (
	"fmt"
	"sort"
	"testing"
	"time"
)

// seed writes n docs: @timestamp one second apart, level cycles, n as number.
func seed(t *testing.T, base, index string, n int) {
	t.Helper()
	var lines []string
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	levels := []string{"info", "warn", "error"}
	for i := 0; i < n; i++ {
		lines = append(lines, fmt.Sprintf(`{"index":{"_index":%q,"_id":"d%03d"}}`, index, i),
			fmt.Sprintf(`{"@timestamp":%q,"level":%q,"n":%d,"attrs":{"k":"v%d"}}`, t0.Add(time.Duration(i)*time.Second).Format(time.RFC3339), levels[i%3], i, i%2))
	}
	m := mustOK(t, "POST", base+"/_bulk", bulkBody(lines...))
	if m["errors"] != false {
		t.Fatalf("seed: %v", m)
	}
	mustOK(t, "POST", base+"/"+index+"/_refresh", "")
}

func hitIDs(m map[string]any) []string {
	var out []string
	for _, h := range get(m, "hits", "hits").([]any) {
		out = append(out, h.(map[string]any)["_id"].(string))
	}
	return out
}

func TestSearchQueriesAndSort(t *testing.T) {
	c := StartT(t, Options{Nodes: 3, NoHopLatency: true})
	base := c.Addr(2)
	createIndex(t, base, "s", 3, 1, "")
	seed(t, base, "s", 30)
	cases := []struct {
		name, query string
		count       int
	}{
		{"match_all", `{"match_all":{}}`, 30},
		{"term", `{"term":{"level":"warn"}}`, 10},
		{"term keyword", `{"term":{"level.keyword":{"value":"warn"}}}`, 10},
		{"term nested", `{"term":{"attrs.k":"v1"}}`, 15},
		{"terms", `{"terms":{"level":["warn","error"]}}`, 20},
		{"range number", `{"range":{"n":{"gte":10,"lt":20}}}`, 10},
		{"range timestamp", `{"range":{"@timestamp":{"gt":"2024-01-01T00:00:04Z","lte":"2024-01-01T00:00:09Z"}}}`, 5},
		{"range timestamp millis", `{"range":{"@timestamp":{"gte":1704067200000,"lt":1704067203000}}}`, 3},
		{"bool", `{"bool":{"filter":[{"term":{"level":"info"}}],"must_not":[{"range":{"n":{"lt":9}}}]}}`, 7},
		{"bool should", `{"bool":{"should":[{"term":{"n":1}},{"term":{"n":2}}]}}`, 2},
	}
	for _, tc := range cases {
		m := mustOK(t, "POST", base+"/s/_search", `{"size":100,"query":`+tc.query+`}`)
		if got := len(hitIDs(m)); got != tc.count || get(m, "hits", "total", "value") != float64(tc.count) {
			t.Errorf("%s: %d hits (total %v), want %d", tc.name, got, get(m, "hits", "total"), tc.count)
		}
		cnt := mustOK(t, "POST", base+"/s/_count", `{"query":`+tc.query+`}`)
		if cnt["count"] != float64(tc.count) {
			t.Errorf("%s: _count %v, want %d", tc.name, cnt["count"], tc.count)
		}
	}
	m := mustOK(t, "POST", base+"/s/_search", `{"size":3,"sort":[{"@timestamp":"desc"},"_id"]}`)
	ids := hitIDs(m)
	if fmt.Sprint(ids) != "[d029 d028 d027]" {
		t.Errorf("sort desc: %v", ids)
	}
	if sv := get(m, "hits", "hits", 0, "sort"); fmt.Sprint(sv) != fmt.Sprint([]any{float64(1704067229000), "d029"}) {
		t.Errorf("sort values %v (dates as epoch millis)", sv)
	}
	if get(m, "hits", "max_score") != nil || get(m, "hits", "hits", 0, "_score") != nil {
		t.Errorf("sorted search must have null scores: %v", get(m, "hits", "hits", 0))
	}
	m = mustOK(t, "POST", base+"/s/_search", `{"size":2,"track_total_hits":false}`)
	if get(m, "hits", "total") != nil {
		t.Errorf("track_total_hits false still has total")
	}
	m = mustOK(t, "POST", base+"/s/_search", `{"size":2,"track_total_hits":5}`)
	if get(m, "hits", "total", "relation") != "gte" || get(m, "hits", "total", "value") != 5.0 {
		t.Errorf("track_total_hits 5: %v", get(m, "hits", "total"))
	}
	st, e := do(t, "POST", base+"/s/_search", `{"query":{"nope":{}}}`)
	if st != 400 {
		t.Errorf("unknown query: %d %v", st, e)
	}
}

// pageAll reads every hit through search_after pages of size n.
func pageAll(t *testing.T, base, pit string, size int, extra string) ([]string, string) {
	t.Helper()
	var ids []string
	var after string
	for pages := 0; pages < 100; pages++ {
		body := fmt.Sprintf(`{"pit":{"id":%q,"keep_alive":"1m"},"size":%d,"sort":[{"@timestamp":"asc"},{"_id":"asc"}]%s%s}`, pit, size, after, extra)
		m := mustOK(t, "POST", base+"/_search", body)
		if p, _ := m["pit_id"].(string); p != "" {
			pit = p
		}
		hits := get(m, "hits", "hits").([]any)
		if len(hits) == 0 {
			return ids, pit
		}
		for _, h := range hits {
			ids = append(ids, h.(map[string]any)["_id"].(string))
		}
		last := hits[len(hits)-1].(map[string]any)["sort"].([]any)
		after = fmt.Sprintf(`,"search_after":[%.0f,%q]`, last[0].(float64), last[1].(string))
	}
	t.Fatal("too many pages")
	return nil, ""
}

func TestPITPagingSlicesAndDelete(t *testing.T) {
	c := StartT(t, Options{Nodes: 3, NoHopLatency: true})
	base := c.Addr(0)
	createIndex(t, base, "p", 3, 1, "")
	seed(t, base, "p", 50)
	m := mustOK(t, "POST", base+"/p/_search/point_in_time?keep_alive=5m", "")
	pit, _ := m["pit_id"].(string)
	if pit == "" || get(m, "_shards", "total") != 3.0 || m["creation_time"] == nil {
		t.Fatalf("create pit: %v", m)
	}
	open := int64(0)
	for _, s := range c.Stats() {
		open += s.PITContextsOpen
	}
	if open != 3 {
		t.Errorf("PIT contexts open %d, want 3", open)
	}
	// Writes after the PIT are invisible to it.
	mustOK(t, "POST", base+"/_bulk", bulkBody(`{"index":{"_index":"p","_id":"late"}}`, `{"@timestamp":"2024-01-01T00:00:00Z"}`))
	ids, _ := pageAll(t, base, pit, 7, "")
	if len(ids) != 50 || !sort.StringsAreSorted(ids) {
		t.Errorf("paged %d ids (sorted %v), want 50", len(ids), sort.StringsAreSorted(ids))
	}
	// Slices are disjoint and complete.
	seen := map[string]int{}
	for s := 0; s < 3; s++ {
		part, _ := pageAll(t, base, pit, 10, fmt.Sprintf(`,"slice":{"id":%d,"max":3}`, s))
		if len(part) == 0 || len(part) == 50 {
			t.Errorf("slice %d has %d docs", s, len(part))
		}
		for _, id := range part {
			seen[id]++
		}
	}
	if len(seen) != 50 {
		t.Errorf("slices cover %d docs, want 50", len(seen))
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("doc %s in %d slices", id, n)
		}
	}
	st, e := do(t, "POST", base+"/p/_search", fmt.Sprintf(`{"pit":{"id":%q}}`, pit))
	if st != 400 {
		t.Errorf("pit with index in path: %d %v", st, e)
	}
	d := mustOK(t, "DELETE", base+"/_search/point_in_time", fmt.Sprintf(`{"pit_id":[%q]}`, pit))
	if get(d, "pits", 0, "successful") != true || get(d, "pits", 0, "pit_id") != pit {
		t.Errorf("delete pit: %v", d)
	}
	for _, s := range c.Stats() {
		if s.PITContextsOpen != 0 {
			t.Errorf("node %d still has %d PIT contexts after delete", s.Index, s.PITContextsOpen)
		}
	}
	st, e = do(t, "POST", base+"/_search", fmt.Sprintf(`{"pit":{"id":%q},"size":1}`, pit))
	if st != 404 || get(e, "error", "type") != "search_phase_execution_exception" ||
		get(e, "error", "root_cause", 0, "type") != "search_context_missing_exception" ||
		get(e, "error", "failed_shards", 0, "reason", "type") != "search_context_missing_exception" {
		t.Errorf("deleted pit: %d %v", st, e)
	}
}

func TestPITLostOnRestartAndExpiry(t *testing.T) {
	c := StartT(t, Options{Nodes: 3, NoHopLatency: true, DetectionDelay: 20 * time.Millisecond})
	base := c.Addr(0)
	createIndex(t, base, "k", 3, 1, "")
	seed(t, base, "k", 30)
	m := mustOK(t, "POST", base+"/k/_search/point_in_time?keep_alive=5m", "")
	pit := m["pit_id"].(string)
	pid, _ := decodePITID(pit)
	victim := pid.Contexts[0].Node
	for _, pc := range pid.Contexts {
		if pc.Node != 0 {
			victim = pc.Node
		}
	}
	lost := 0
	for _, pc := range pid.Contexts {
		if pc.Node == victim {
			lost++
		}
	}
	if err := c.RestartNode(victim); err != nil {
		t.Fatal(err)
	}
	st, r := do(t, "POST", base+"/_search", fmt.Sprintf(`{"pit":{"id":%q,"keep_alive":"1m"},"size":100}`, pit))
	if st != 200 || get(r, "_shards", "failed") != float64(lost) ||
		get(r, "_shards", "failures", 0, "reason", "type") != "search_context_missing_exception" {
		t.Fatalf("partial loss: %d %v", st, r["_shards"])
	}
	if n := len(hitIDs(r)); n == 0 || n == 30 {
		t.Errorf("partial loss returned %d hits, want the surviving shards' docs", n)
	}
	// Keep-alive expiry looks the same: all lost → 404.
	m = mustOK(t, "POST", base+"/k/_search/point_in_time?keep_alive=50ms", "")
	time.Sleep(80 * time.Millisecond)
	st, r = do(t, "POST", base+"/_search", fmt.Sprintf(`{"pit":{"id":%q},"size":1}`, m["pit_id"]))
	if st != 404 || get(r, "error", "type") != "search_phase_execution_exception" || get(r, "status") != 404.0 {
		t.Errorf("expired pit: %d %v", st, r)
	}
	// _shard_doc does not exist before 3.3.
	st, _ = do(t, "POST", base+"/k/_search", `{"sort":["_shard_doc"]}`)
	if st != 400 {
		t.Errorf("_shard_doc sort: %d, want 400", st)
	}
}
