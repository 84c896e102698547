package ossim

import "strings"

// routingScenario: custom routing values against indices that require
// them (_routing.required; routing_partition_size 2, which demands it,
// and without the mapping that demand), empty values, values at and over
// Lucene's 32,766-byte term limit, an item without id nor routing for an
// index that requires routing (a 500 for the whole request), and where a
// partitioned index's routed documents are found.
func routingScenario(r *recorder) {
	r.call("create partitioned", 0, "PUT", "/rt-p", `{"settings":{"number_of_shards":3,"number_of_replicas":0,"routing_partition_size":2},"mappings":{"_routing":{"required":true}}}`)
	r.call("create routing required", 0, "PUT", "/rt-r", `{"settings":{"number_of_shards":2,"number_of_replicas":0},"mappings":{"_routing":{"required":true}}}`)
	r.call("create partitioned without required routing", 0, "PUT", "/rt-pn", `{"settings":{"number_of_shards":2,"number_of_replicas":0,"routing_partition_size":2}}`)
	r.call("create plain", 0, "PUT", "/rt-n", `{"settings":{"number_of_shards":2,"number_of_replicas":0}}`)
	r.waitGreen("rt-p,rt-r,rt-pn,rt-n")
	r.call("bulk routing values", 1, "POST", "/_bulk", bulkBody(
		`{"create":{"_index":"rt-p","_id":"a","routing":"u1"}}`, `{"n":1}`,
		`{"create":{"_index":"rt-p","_id":"b","routing":"u1"}}`, `{"n":2}`,
		`{"create":{"_index":"rt-p","_id":"c","routing":"u2"}}`, `{"n":3}`,
		`{"create":{"_index":"rt-p","_id":"d"}}`, `{"n":4}`,
		`{"create":{"_index":"rt-p","_id":"e","routing":""}}`, `{"n":5}`,
		`{"create":{"_index":"rt-r","_id":"f"}}`, `{"n":6}`,
		`{"create":{"_index":"rt-r","_id":"g","routing":"u1"}}`, `{"n":7}`,
		`{"create":{"_index":"rt-pn","_id":"h","routing":"u1"}}`, `{"n":8}`,
		`{"create":{"_index":"rt-n","_id":"i","routing":""}}`, `{"n":9}`,
		`{"create":{"_index":"rt-n","_id":"j","routing":"`+strings.Repeat("r", 32766)+`"}}`, `{"n":10}`,
		`{"create":{"_index":"rt-n","_id":"k","routing":"`+strings.Repeat("r", 32767)+`"}}`, `{"n":11}`,
	))
	r.call("bulk auto id without routing, routing required", 1, "POST", "/_bulk", bulkBody(
		`{"create":{"_index":"rt-n","_id":"l"}}`, `{"n":12}`,
		`{"index":{"_index":"rt-r"}}`, `{"n":13}`,
	))
	r.call("bulk auto id with routing, routing required", 1, "POST", "/_bulk", bulkBody(`{"index":{"_index":"rt-r","routing":"u3"}}`, `{"n":14}`))
	r.call("get routed from partitioned", 2, "GET", "/rt-p/_doc/a?routing=u1", "")
	r.call("get without routing from partitioned", 2, "GET", "/rt-p/_doc/a", "")
	r.call("get with empty routing from plain", 2, "GET", "/rt-n/_doc/i?routing=", "")
	r.call("search shards partitioned", 0, "GET", "/rt-p/_search_shards?routing=u1&filter_path=shards.shard,shards.index", "")
	r.call("search shards partitioned two values", 0, "GET", "/rt-p/_search_shards?routing=u1,u2&filter_path=shards.shard,shards.index", "")
	r.call("refresh routing indices", 0, "POST", "/rt-p,rt-r,rt-n/_refresh", "")
	r.call("count partitioned", 0, "GET", "/rt-p/_count", "")
	r.call("count plain", 0, "GET", "/rt-n/_count", "")
	r.call("search partitioned with routing", 0, "POST", "/rt-p/_search?routing=u1", `{"sort":["n"],"_source":false}`)
}
