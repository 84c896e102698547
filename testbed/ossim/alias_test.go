package ossim

import (
	"testing"

	"github.com/opensearchrouted/opensearchrouted/internal/routing"
)

func TestWriteAliases(t *testing.T) {
	c := StartT(t, Options{Nodes: 2, NoHopLatency: true})
	base := c.Addr(0)
	mustOK(t, "PUT", base+"/logs-000001", `{"settings":{"number_of_shards":3,"number_of_replicas":0},"aliases":{"logs-write":{"is_write_index":true}}}`)
	mustOK(t, "PUT", base+"/tenant", `{"settings":{"number_of_shards":4,"number_of_replicas":0}}`)
	mustOK(t, "POST", base+"/_aliases", `{"actions":[{"add":{"index":"tenant","alias":"t7","index_routing":"seven"}}]}`)
	st, m := do(t, "POST", base+"/_bulk", bulkBody(`{"index":{"_index":"logs-write","_id":"a"}}`, `{"n":1}`, `{"index":{"_index":"t7","_id":"b"}}`, `{"n":2}`,
		`{"index":{"_index":"t7","_id":"c","routing":"other"}}`, `{"n":3}`))
	items, _ := m["items"].([]any)
	if st != 200 || len(items) != 3 {
		t.Fatalf("bulk: %d %v", st, m)
	}
	if get(items[0], "index", "_index") != "logs-000001" || get(items[1], "index", "_index") != "tenant" || get(items[2], "index", "status") != float64(400) {
		t.Fatalf("items: %v", items)
	}
	// index_routing decides the shard: the document is found with it.
	want, _ := routing.ShardFor("b", "seven", 4, 4, 1)
	if st, _ := do(t, "GET", base+"/tenant/_doc/b?routing=seven", ""); st != 200 {
		t.Fatalf("get b with the alias's routing (shard %d): %d", want, st)
	}
	// Rollover moves the write index; _cat/aliases shows it.
	ro := mustOK(t, "POST", base+"/logs-write/_rollover", "")
	if ro["new_index"] != "logs-000002" || ro["old_index"] != "logs-000001" {
		t.Fatalf("rollover: %v", ro)
	}
	_, raw := doRaw(t, "GET", base+"/_cat/aliases/logs-write,t7,none?format=json&h=alias,index,routing.index,is_write_index", "", nil)
	if got := string(raw); got != `[{"alias":"logs-write","index":"logs-000001","is_write_index":"false","routing.index":"-"},{"alias":"logs-write","index":"logs-000002","is_write_index":"true","routing.index":"-"},{"alias":"t7","index":"tenant","is_write_index":"-","routing.index":"seven"}]` {
		t.Fatalf("_cat/aliases: %s", got)
	}
	_, m = do(t, "POST", base+"/_bulk", bulkBody(`{"index":{"_index":"logs-write","_id":"z"}}`, `{"n":1}`))
	if items, _ := m["items"].([]any); get(items[0], "index", "_index") != "logs-000002" {
		t.Fatalf("after rollover: %v", m)
	}
}
