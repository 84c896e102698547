package ossim

// updateScenario: bulk updates with a partial document, as the exporter's
// trace group fix-up sends them: a merge into a nested object and new
// top-level fields (visible to a real-time GET before any refresh), a
// repeat (noop), a missing document, a missing _id, a body with an unknown
// member or without doc (the whole request is refused),
// through a write alias after its rollover (the document is not in the
// write index), and to the concrete index it is in.
func updateScenario(r *recorder) {
	r.call("create up-000001 with write alias", 0, "PUT", "/up-000001", `{"settings":{"number_of_shards":2,"number_of_replicas":1,"refresh_interval":"-1"},"aliases":{"up":{"is_write_index":true}}}`)
	r.waitGreen("up-000001")
	r.call("create spans", 1, "POST", "/_bulk", bulkBody(
		`{"create":{"_index":"up","_id":"s1"}}`, `{"name":"a","traceGroupFields":{"other":1},"span":{"attributes":{"x":"1"}}}`,
		`{"create":{"_index":"up","_id":"s2"}}`, `{"name":"b"}`))
	fix := `{"doc":{"traceGroup":"GET /","traceGroupFields":{"endTime":"2026-12-02T00:00:01.5Z","durationInNanos":1500000000,"statusCode":2}}}`
	r.call("update before refresh", 2, "POST", "/_bulk", bulkBody(
		`{"update":{"_index":"up-000001","_id":"s1"}}`, fix,
		`{"update":{"_index":"up-000001","_id":"s2"}}`, fix,
		`{"update":{"_index":"up-000001","_id":"nope"}}`, fix))
	r.call("update with an unknown member", 1, "POST", "/_bulk", bulkBody(
		`{"create":{"_index":"up","_id":"s3"}}`, `{"name":"c"}`,
		`{"update":{"_index":"up-000001","_id":"s1"}}`, `{"nodoc":{}}`))
	r.call("update without doc", 1, "POST", "/_bulk", bulkBody(
		`{"create":{"_index":"up","_id":"s4"}}`, `{"name":"d"}`,
		`{"update":{"_index":"up-000001","_id":"s1"}}`, `{}`))
	r.call("get s1 merged, real time", 0, "GET", "/up-000001/_doc/s1", "")
	r.call("repeat is a noop", 1, "POST", "/_bulk", bulkBody(`{"update":{"_index":"up-000001","_id":"s1"}}`, fix))
	r.call("update without _id", 1, "POST", "/_bulk", bulkBody(`{"update":{"_index":"up-000001"}}`, fix))
	r.call("rollover up", 0, "POST", "/up/_rollover", `{"settings":{"number_of_shards":2,"number_of_replicas":1}}`)
	r.waitGreen("up-000002")
	r.call("update through the alias after rollover", 1, "POST", "/_bulk", bulkBody(`{"update":{"_index":"up","_id":"s2"}}`, `{"doc":{"n":1}}`))
	r.call("update the concrete index after rollover", 1, "POST", "/_bulk", bulkBody(`{"update":{"_index":"up-000001","_id":"s2"}}`, `{"doc":{"n":1}}`))
	r.call("refresh up", 0, "POST", "/up-000001/_refresh", "")
	r.call("search the groups", 2, "POST", "/up-000001/_search", `{"query":{"term":{"traceGroup.keyword":"GET /"}},"sort":[{"_id":"asc"}]}`)
}
