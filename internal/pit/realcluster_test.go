package pit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/opensearchrouted/opensearchrouted/internal/pit"
	"github.com/opensearchrouted/opensearchrouted/testbed/cluster"
)

// TestRealClusterNodeKilledMidRead reads a real OpenSearch cluster with the
// default sort (@timestamp, _id) while a node holding one of the shards is
// killed and comes back (a rolling restart step). Each node holds exactly
// one shard and there are no replicas, so the PIT must be recreated after
// the node is back; every document is still read exactly once. It needs
// Java: without it the test fails (testbed/cluster never skips).
func TestRealClusterNodeKilledMidRead(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Nodes: 3})
	base := c.Addr(0)
	call(t, "PUT", base+"/pit-r?wait_for_active_shards=all", `{"settings":{"number_of_shards":3,"number_of_replicas":0,"index.routing.allocation.total_shards_per_node":1},`+
		`"mappings":{"properties":{"@timestamp":{"type":"date"},"n":{"type":"long"}}}}`)
	const n = 3000
	t0 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "{\"index\":{\"_index\":\"pit-r\",\"_id\":\"d%05d\"}}\n", i)
		fmt.Fprintf(&b, "{\"@timestamp\":%q,\"n\":%d}\n", t0.Add(time.Duration(i/5)*time.Millisecond).Format(time.RFC3339Nano), i)
	}
	call(t, "POST", base+"/_bulk?refresh=true", b.String())

	const victim = 1
	killed, restarted := false, false
	var events []pit.SnapshotBreakEvent
	p, err := pit.Open(context.Background(), pit.Options{
		Endpoints: c.Addrs(),
		Indices:   []string{"pit-r"},
		PageSize:  250,
		Backoff:   func(int) time.Duration { return 100 * time.Millisecond },
		// The first wait after the kill is where the node comes back, as in
		// a rolling restart; the paginator does not know it.
		Sleep: func(ctx context.Context, d time.Duration) error {
			if killed && !restarted {
				restarted = true
				if err := c.Restart(victim); err != nil {
					return err
				}
			}
			select {
			case <-time.After(d):
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		},
		OnSnapshotBreak: func(e pit.SnapshotBreakEvent) { events = append(events, e) },
	})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	pages, breaks := 0, 0
	var prev string
	for pg, err := range p.Pages(context.Background()) {
		if pit.IsFatal(err) {
			t.Fatalf("after %d pages: %v", pages, err)
		}
		if errors.Is(err, pit.ErrSnapshotBreak) {
			breaks++
		}
		for _, h := range pg.Hits {
			seen[h.ID]++
			if h.Version != 1 || h.SeqNo < 0 || h.PrimaryTerm < 1 || len(h.Sort) != 3 {
				t.Fatalf("hit %+v", h)
			}
			// The default sort is (@timestamp, _id): ids come in order.
			if h.ID <= prev {
				t.Fatalf("%s after %s", h.ID, prev)
			}
			prev = h.ID
		}
		pages++
		if pages == 3 {
			if err := c.Kill(victim); err != nil {
				t.Fatal(err)
			}
			killed = true
		}
	}
	checkAll(t, seen, n)
	st := p.Stats()
	t.Logf("stats: %+v", st)
	if !restarted || st.PITsRecreated < 1 || breaks != int(st.PITsRecreated) || len(events) != int(st.PITsRecreated) {
		t.Errorf("restarted %v, recreated %d, breaks %d, events %d", restarted, st.PITsRecreated, breaks, len(events))
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	// No PIT is left on the server.
	resp, err := http.Get(base + "/_search/point_in_time/_all")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var list struct {
		Pits []json.RawMessage `json:"pits"`
	}
	if err := json.Unmarshal(raw, &list); err != nil || len(list.Pits) != 0 {
		t.Errorf("PITs left on the server: %s", raw)
	}
}

// TestRealClusterSameIDInTwoIndices: on the real server, two documents of
// different indices with the same _id and @timestamp are both read with
// the default sort, one per page. (With @timestamp and _id alone the
// server returns them as a tie and search_after skips the second.)
func TestRealClusterSameIDInTwoIndices(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Nodes: 1})
	base := c.Addr(0)
	for _, ix := range []string{"tie-a", "tie-b"} {
		call(t, "PUT", base+"/"+ix, `{"settings":{"number_of_shards":2,"number_of_replicas":0},"mappings":{"properties":{"@timestamp":{"type":"date"}}}}`)
	}
	call(t, "POST", base+"/_bulk?refresh=true", `{"index":{"_index":"tie-a","_id":"same"}}
{"@timestamp":"2024-01-01T00:00:00Z"}
{"index":{"_index":"tie-b","_id":"same"}}
{"@timestamp":"2024-01-01T00:00:00Z"}
{"index":{"_index":"tie-a","_id":"zzz"}}
{"@timestamp":"2024-01-01T00:00:00Z"}
`)
	p, err := pit.Open(context.Background(), pit.Options{Endpoints: c.Addrs(), Indices: []string{"tie-*"}, PageSize: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(context.Background())
	var got []string
	for h, err := range p.Hits(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, h.Index+"/"+h.ID)
	}
	if want := "[tie-a/same tie-a/zzz tie-b/same]"; fmt.Sprint(got) != want {
		t.Fatalf("read %v, want %s", got, want)
	}
}
