package ossim

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// An unreachable node answers nothing and keeps its data; restored, it
// serves the same documents.
func TestSetUnreachable(t *testing.T) {
	c := StartT(t, Options{Nodes: 1, NoHopLatency: true})
	base := c.Addr(0)
	post := func(path, body string) (int, string, error) {
		resp, err := http.Post(base+path, "application/json", strings.NewReader(body))
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b), nil
	}
	if st, b, err := post("/ix/_doc/1?refresh=true", `{"n":1}`); err != nil || st != 201 {
		t.Fatalf("index: %d %s %v", st, b, err)
	}
	if err := c.SetUnreachable(0, true); err != nil {
		t.Fatal(err)
	}
	if _, _, err := post("/ix/_search", `{}`); err == nil {
		t.Fatal("an unreachable node answered")
	}
	if err := c.SetUnreachable(0, false); err != nil {
		t.Fatal(err)
	}
	st, b, err := post("/ix/_search", `{}`)
	if err != nil || st != 200 || !strings.Contains(b, `"_id":"1"`) {
		t.Fatalf("after the cut: %d %s %v", st, b, err)
	}
}

// A search coordinated by a slow node waits its search latency; one
// coordinated elsewhere does not, even when it reads the slow node's shard.
func TestSetSearchLatency(t *testing.T) {
	c := StartT(t, Options{Nodes: 2, NoHopLatency: true, DefaultReplicas: -1, DefaultShards: 2})
	resp, err := http.Post(c.Addr(0)+"/ix/_bulk?refresh=true", "application/x-ndjson",
		strings.NewReader("{\"index\":{\"_id\":\"a\"}}\n{}\n{\"index\":{\"_id\":\"b\"}}\n{}\n{\"index\":{\"_id\":\"c\"}}\n{}\n"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if err := c.SetSearchLatency(1, 40*time.Millisecond, 0); err != nil {
		t.Fatal(err)
	}
	if c.SetSearchLatency(1, time.Millisecond, 2*time.Millisecond) == nil {
		t.Fatal("jitter above the mean accepted")
	}
	took := func(addr string) time.Duration {
		start := time.Now()
		resp, err := http.Post(addr+"/ix/_search", "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return time.Since(start)
	}
	if d := took(c.Addr(1)); d < 40*time.Millisecond {
		t.Errorf("search through node 1 took %v, want ≥ 40ms", d)
	}
	if d := took(c.Addr(0)); d >= 40*time.Millisecond {
		t.Errorf("search through node 0 took %v: it reads node 1's shard but is not slowed", d)
	}
	if c.CoordinatedSearches(0) != 1 || c.CoordinatedSearches(1) != 1 {
		t.Errorf("coordinated searches %d %d, want 1 1", c.CoordinatedSearches(0), c.CoordinatedSearches(1))
	}
	if err := c.SetSearchLatency(1, 0, 0); err != nil {
		t.Fatal(err)
	}
	if d := took(c.Addr(1)); d >= 40*time.Millisecond {
		t.Errorf("search took %v after the latency was removed", d)
	}
}

// A PIT created with a preference holds its contexts on the preferred
// nodes; _only_nodes with no match is refused as OpenSearch 2.19.6 does,
// and a PIT search refuses preference and routing.
func TestPITPreference(t *testing.T) {
	c := StartT(t, Options{Nodes: 2, NoHopLatency: true, DefaultReplicas: 1, DefaultShards: 2})
	post := func(path, body string) (int, string) {
		resp, err := http.Post(c.Addr(0)+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if st, b := post("/ix/_doc/1?refresh=true", `{}`); st != 201 {
		t.Fatalf("%d %s", st, b)
	}
	if err := c.WaitGreen(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	id1 := c.Node(1).ID()
	st, b := post("/ix/_search/point_in_time?keep_alive=1m&preference=_prefer_nodes:"+id1, "")
	if st != 200 {
		t.Fatalf("%d %s", st, b)
	}
	var cr struct {
		PITID string `json:"pit_id"`
	}
	if err := json.Unmarshal([]byte(b), &cr); err != nil {
		t.Fatal(err)
	}
	pid, err := decodePITID(cr.PITID)
	if err != nil {
		t.Fatal(err)
	}
	for _, pc := range pid.Contexts {
		if pc.NID != id1 {
			t.Errorf("context of shard %d on %s, want %s", pc.Shard, pc.NID, id1)
		}
	}
	if st, b := post("/ix/_search/point_in_time?keep_alive=1m&preference=_only_nodes:nope", ""); st != 400 || !strings.Contains(b, "no data nodes with criteria [nope] found for shard: [ix][") {
		t.Errorf("_only_nodes without a match: %d %s", st, b)
	}
	for _, p := range []string{"preference=_local", "routing=x"} {
		if st, b := post("/_search?"+p, `{"pit":{"id":"`+cr.PITID+`"}}`); st != 400 || !strings.Contains(b, "cannot be used with point in time") {
			t.Errorf("PIT search with %s: %d %s", p, st, b)
		}
	}
}
