package routing_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/opensearchrouted/opensearchrouted/internal/routing"
	"github.com/opensearchrouted/opensearchrouted/testbed/ossim"
)

func do(t *testing.T, method, u, body string, v any) int {
	t.Helper()
	req, _ := http.NewRequest(method, u, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 400 {
		t.Logf("%s %s: %s", method, u, data)
	}
	if v != nil {
		if err := json.Unmarshal(data, v); err != nil {
			t.Fatalf("%s %s: %v: %s", method, u, err, data)
		}
	}
	return resp.StatusCode
}

// TestTopologyAgainstEmulator discovers the emulator's topology for every
// layout of routing_vectors.tsv and checks, for every vector, that Locate
// names the node holding the primary of the shard the document is stored in
// after indexing it through another node.
func TestTopologyAgainstEmulator(t *testing.T) {
	sim := ossim.StartT(t, ossim.Options{Nodes: 3, NoHopLatency: true})
	f, err := os.Open("testdata/routing_vectors.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type row struct {
		id, routing, index string
		shard              int
	}
	var rows []row
	made := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Scan()
	for sc.Scan() {
		c := strings.Split(sc.Text(), "\t")
		n, r, p := c[2], c[3], c[4]
		index := fmt.Sprintf("v-%s-%s-%s", n, r, p)
		if !made[index] {
			body := fmt.Sprintf(`{"settings":{"index":{"number_of_shards":%s,"number_of_routing_shards":%s,"routing_partition_size":%s,"number_of_replicas":0}}`, n, r, p)
			if p != "1" {
				body += `,"mappings":{"_routing":{"required":true}}`
			}
			body += "}"
			if st := do(t, "PUT", sim.Addr(0)+"/"+index, body, nil); st != 200 {
				t.Fatalf("create %s: %d", index, st)
			}
			made[index] = true
		}
		shard, _ := strconv.Atoi(c[6])
		rows = append(rows, row{c[0], c[1], index, shard})
	}
	r, err := routing.New(routing.Options{Client: http.DefaultClient, Seeds: sim.Addrs()[:1], StatsInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, rw := range rows {
		r.Locate(rw.index, "x", "") // make the names wanted
	}
	if err := r.Refresh(context.Background(), routing.TriggerStart); err != nil {
		t.Fatal(err)
	}
	for i, rw := range rows {
		// Index through node 2, so the emulator forwards as needed.
		q := url.Values{}
		if rw.routing != "" {
			q.Set("routing", rw.routing)
		}
		doc := fmt.Sprintf(`{"n":%d}`, i)
		if st := do(t, "PUT", sim.Addr(2)+"/"+rw.index+"/_doc/"+url.PathEscape(rw.id)+"?"+q.Encode(), doc, nil); st/100 != 2 {
			t.Fatalf("index %q: HTTP %d", rw.id, st)
		}
		stored, _, err := sim.StoredShardOf(rw.index)
		if err != nil {
			t.Fatal(err)
		}
		if stored[rw.id] != rw.shard {
			t.Fatalf("emulator stored %q in shard %d, vectors say %d", rw.id, stored[rw.id], rw.shard)
		}
		n, why := r.Locate(rw.index, rw.id, rw.routing)
		if why != routing.Routed {
			t.Fatalf("Locate(%s, %q, %q): %v", rw.index, rw.id, rw.routing, why)
		}
		idx := r.Topology().Indices[rw.index]
		if got := idx.Shards[rw.shard].Primary.Node; got != n {
			t.Fatalf("Locate(%q) = %s, primary of shard %d is on %s", rw.id, n.Name(), rw.shard, got.Name())
		}
		var sh struct {
			Nodes  map[string]struct{ Name string } `json:"nodes"`
			Shards [][]struct {
				Primary bool
				Node    string
				Shard   int
			} `json:"shards"`
		}
		do(t, "GET", sim.Addr(1)+"/"+rw.index+"/_search_shards?routing="+url.QueryEscape(effective(rw.id, rw.routing)), "", &sh)
		if rw.routing == "" || strings.HasSuffix(rw.index, "-1") {
			for _, g := range sh.Shards {
				for _, cp := range g {
					if cp.Primary && cp.Shard == rw.shard && sh.Nodes[cp.Node].Name != n.Name() {
						t.Fatalf("%q: _search_shards puts the primary on %s, Locate on %s", rw.id, sh.Nodes[cp.Node].Name, n.Name())
					}
				}
			}
		}
	}
}

func effective(id, routing string) string {
	if routing != "" {
		return routing
	}
	return id
}
