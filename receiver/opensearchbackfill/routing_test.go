package opensearchbackfill

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// routing reads only the shards the routing value routes to: every
// document routed with it, and none of the documents on other shards.
func TestRoutingReadsItsShards(t *testing.T) {
	c := newCluster(t)
	createIndex(t, c.Addr(0), "events", 3, 0)
	var b strings.Builder
	var routed []string
	for i := range 30 {
		id := fmt.Sprintf("r1-%02d", i)
		routed = append(routed, id)
		fmt.Fprintf(&b, `{"create":{"_index":"events","_id":%q,"routing":"r1"}}`+"\n"+`{"@timestamp":"2026-12-01T00:00:00Z","n":%d}`+"\n", id, i)
	}
	if st, body := httpDo(t, "POST", c.Addr(0)+"/_bulk?refresh=true", b.String()); st != 200 || strings.Contains(string(body), `"errors":true`) {
		t.Fatalf("bulk: %d %s", st, body)
	}
	others := seedForeign(t, c.Addr(0), "events", 60)
	cfg := testConfig(c.Addrs(), "events")
	cfg.Routing = "r1"
	sink := newIDSink()
	h := mustStart(t, cfg, sink, nil)
	h.wait(t, 30*time.Second)
	got := sink.snapshot()
	for _, id := range routed {
		if got[id] != 1 {
			t.Fatalf("%s read %d times", id, got[id])
		}
	}
	read := 0
	for _, id := range others {
		read += got[id]
	}
	if read == 0 || read == len(others) {
		t.Fatalf("%d of %d unrouted documents read: want those on r1's shard only", read, len(others))
	}
}

// A preference the server refuses is a configuration error: Start fails
// with the server's reason.
func TestPreferenceRefusedFailsStart(t *testing.T) {
	c := newCluster(t)
	createIndex(t, c.Addr(0), "events", 1, 0)
	cfg := testConfig(c.Addrs(), "events")
	cfg.Preference = "_only_nodes:nope"
	_, err := startReceiver(t, cfg, newIDSink(), nil)
	if err == nil || !strings.Contains(err.Error(), "HTTP 400 illegal_argument_exception") || !strings.Contains(err.Error(), "no data nodes with criteria [nope]") {
		t.Fatalf("err = %v", err)
	}
}
