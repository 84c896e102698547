package tcpproxy

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/opensearchrouted/opensearchrouted/testbed/cluster"
)

// TestDelayedRealNode slows one real node with proxies in front of its
// HTTP and transport ports (its publish ports lead to them): what it
// serves over HTTP through its published address, and every transport
// request another node sends it (forwarded bulks, replication), take the
// delay twice (request and answer).
func TestDelayedRealNode(t *testing.T) {
	ports, err := cluster.FreePorts(2)
	if err != nil {
		t.Fatal(err)
	}
	httpP, err := New("127.0.0.1:" + strconv.Itoa(ports[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer httpP.Close()
	trP, err := New("127.0.0.1:" + strconv.Itoa(ports[1]))
	if err != nil {
		t.Fatal(err)
	}
	defer trP.Close()
	c := cluster.Start(t, cluster.Options{Nodes: 2, PerNode: []cluster.NodeOptions{{}, {
		HTTPPort: ports[0], TransportPort: ports[1],
		HTTPPublishPort: portOf(httpP.Addr()), TransportPublishPort: portOf(trP.Addr()),
	}}})
	if trP.Conns.Load() == 0 {
		t.Fatal("node 0 never connected to node 1's transport through the proxy")
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	call := func(method, url, body string) (int, []byte, time.Duration) {
		t.Helper()
		req, _ := http.NewRequest(method, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-ndjson")
		start := time.Now()
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b, time.Since(start)
	}
	// Node 1's published HTTP address is the proxy.
	_, b, _ := call("GET", c.Addr(0)+"/_nodes/http?filter_path=nodes.*.name,nodes.*.http.publish_address", "")
	if !strings.Contains(string(b), httpP.Addr()) {
		t.Fatalf("node 1 does not publish the proxy %s: %s", httpP.Addr(), b)
	}
	// One shard, a copy on each node: every write through node 0 crosses
	// to node 1 (forwarded to its primary, or replicated to its replica).
	if st, b, _ := call("PUT", c.Addr(0)+"/d", `{"settings":{"number_of_shards":1,"number_of_replicas":1}}`); st != 200 {
		t.Fatalf("create: %d %s", st, b)
	}
	if st, b, _ := call("GET", c.Addr(0)+"/_cluster/health/d?wait_for_status=green&timeout=60s", ""); st != 200 {
		t.Fatalf("health: %d %s", st, b)
	}
	write := func(k int) time.Duration {
		st, b, d := call("POST", c.Addr(0)+"/_bulk", fmt.Sprintf(`{"index":{"_index":"d","_id":"x%d"}}`+"\n{}\n", k))
		var r struct {
			Errors bool `json:"errors"`
			Items  []struct {
				Index struct {
					Shards struct{ Successful int } `json:"_shards"`
				} `json:"index"`
			} `json:"items"`
		}
		if st != 200 || json.Unmarshal(b, &r) != nil || r.Errors || len(r.Items) != 1 || r.Items[0].Index.Shards.Successful != 2 {
			t.Fatalf("bulk: %d %s", st, b)
		}
		return d
	}
	for k := 0; k < 3; k++ {
		write(k) // warm up
	}
	const mean, jitter = 60 * time.Millisecond, 10 * time.Millisecond
	for _, p := range []*Proxy{httpP, trP} {
		if err := p.SetDelay(mean, jitter); err != nil {
			t.Fatal(err)
		}
	}
	low, high := 2*(mean-jitter), 2*(mean+jitter)+2*time.Second
	tr0, http0 := trP.Delayed.Load(), httpP.Delayed.Load()
	for k := 10; k < 15; k++ {
		if d := write(k); d < low || d > high {
			t.Errorf("write %d through node 0 took %v, want %v…%v (node 1's transport delayed both ways)", k, d, low, high)
		}
	}
	if st, _, d := call("GET", httpP.URL()+"/", ""); st != 200 || d < low || d > high {
		t.Errorf("GET / through node 1's published address: %d in %v, want 200 in %v…%v", st, d, low, high)
	}
	if trP.Delayed.Load() == tr0 || httpP.Delayed.Load() == http0 {
		t.Errorf("chunks delayed: transport %d, http %d", trP.Delayed.Load()-tr0, httpP.Delayed.Load()-http0)
	}
	// Node 0 itself is not slowed (the fastest of three).
	fastest := time.Hour
	for k := 0; k < 3; k++ {
		_, _, d := call("GET", c.Addr(0)+"/", "")
		fastest = min(fastest, d)
	}
	if fastest >= low {
		t.Errorf("GET / on node 0 took at least %v, want under %v", fastest, low)
	}
}

func portOf(hostPort string) int {
	i := strings.LastIndexByte(hostPort, ':')
	p, _ := strconv.Atoi(hostPort[i+1:])
	return p
}
