package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log"
	"os"
	"strings"
	"sync"
	"testing"
	"time"
)

// The tests of this package share one 3-node cluster (started on first use,
// closed by TestMain or by a test that needs the machine lock for a cluster
// of its own).
var shared struct {
	mu          sync.Mutex
	c           *Cluster
	err         error
	publishPort int // node-2's http.publish_port
}

func TestMain(m *testing.M) {
	if os.Getenv("OSR_ORPHAN_HELPER") == "1" {
		orphanHelper()
		return
	}
	if mode := os.Getenv("OSR_LOCK_HELPER"); mode != "" {
		lockHelper(mode)
		return
	}
	code := m.Run()
	closeShared()
	os.Exit(code)
}

// sharedCluster: node-i in zone a/b/c; node-2 publishes a different HTTP port
// than it binds (http.publish_port), as a test proxy would need.
func sharedCluster(t *testing.T) *Cluster {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.c == nil && shared.err == nil {
		ports, err := freePorts(1)
		if err != nil {
			t.Fatal(err)
		}
		shared.publishPort = ports[0]
		logf := func(string, ...any) {}
		if testing.Verbose() {
			logf = log.Printf
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		shared.c, shared.err = StartProcess(ctx, Options{
			Nodes:   3,
			Zones:   []string{"a", "b", "c"},
			PerNode: []NodeOptions{{}, {}, {HTTPPublishPort: shared.publishPort}},
			Logf:    logf,
		})
	}
	if shared.err != nil {
		t.Fatalf("shared real OpenSearch cluster: %v", shared.err)
	}
	return shared.c
}

func closeShared() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if shared.c != nil {
		if err := shared.c.Close(); err != nil {
			log.Printf("closing shared cluster: %v", err)
		}
		shared.c = nil
	}
}

// call sends one request to node i and returns status and raw body.
func call(t testing.TB, c *Cluster, i int, method, path, body string) (int, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var b []byte
	if body != "" {
		b = []byte(body)
	}
	code, out, err := c.do(ctx, i, method, path, b)
	if err != nil {
		t.Fatalf("%s %s on %s: %v", method, path, c.NodeName(i), err)
	}
	return code, out
}

// mustCall is call that fails the test unless the status is want.
func mustCall(t testing.TB, c *Cluster, i int, method, path, body string, want int) map[string]any {
	t.Helper()
	code, out := call(t, c, i, method, path, body)
	if code != want {
		t.Fatalf("%s %s: HTTP %d, want %d: %s", method, path, code, want, tail(string(out), 2000))
	}
	return decode(t, out)
}

func decode(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		t.Fatalf("decoding %s: %v", tail(string(b), 500), err)
	}
	return m
}

func decodeList(t testing.TB, b []byte) []map[string]any {
	t.Helper()
	var m []map[string]any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		t.Fatalf("decoding %s: %v", tail(string(b), 500), err)
	}
	return m
}

// at walks a decoded JSON value by keys (map keys, or decimal list indexes).
func at(v any, path ...string) any {
	for _, k := range path {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			var i int
			if _, err := fmt.Sscanf(k, "%d", &i); err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

func str(t testing.TB, v any, what string) string {
	t.Helper()
	s, ok := v.(string)
	if !ok {
		t.Fatalf("%s = %#v (%T), want a JSON string", what, v, v)
	}
	return s
}

func num(t testing.TB, v any, what string) int64 {
	t.Helper()
	n, ok := v.(json.Number)
	if !ok {
		t.Fatalf("%s = %#v (%T), want a JSON number", what, v, v)
	}
	i, err := n.Int64()
	if err != nil {
		t.Fatalf("%s = %s: %v", what, n, err)
	}
	return i
}

func list(t testing.TB, v any, what string) []any {
	t.Helper()
	l, ok := v.([]any)
	if !ok {
		t.Fatalf("%s = %#v (%T), want a JSON list", what, v, v)
	}
	return l
}

func obj(t testing.TB, v any, what string) map[string]any {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%s = %#v (%T), want a JSON object", what, v, v)
	}
	return m
}

// bulkLine is one NDJSON action line.
func bulkLine(op, index, id, routing string) string {
	m := map[string]string{"_index": index}
	if id != "" {
		m["_id"] = id
	}
	if routing != "" {
		m["routing"] = routing
	}
	b, _ := json.Marshal(map[string]any{op: m})
	return string(b) + "\n"
}

// shardOf parses a hit's "_shard" ("[index][3]") into 3.
func shardOf(t testing.TB, v any) int {
	t.Helper()
	s := str(t, v, "hit._shard")
	j := strings.LastIndex(s, "[")
	var n int
	if j < 0 || !strings.HasSuffix(s, "]") {
		t.Fatalf("hit._shard = %q, want [index][n]", s)
	}
	if _, err := fmt.Sscanf(s[j:], "[%d]", &n); err != nil {
		t.Fatalf("hit._shard = %q: %v", s, err)
	}
	return n
}

// createIndex creates an index and waits until its shards are active.
func createIndex(t testing.TB, c *Cluster, name, body string) {
	t.Helper()
	m := mustCall(t, c, 0, "PUT", "/"+name+"?wait_for_active_shards=all", body, 200)
	if m["acknowledged"] != true || m["shards_acknowledged"] != true {
		t.Fatalf("create %s: %v", name, m)
	}
}

// orphanHelper runs in a child test binary (TestOrphanedNodesExit): it starts
// a 1-node cluster, reports the JVM's pid and waits to be killed.
func orphanHelper() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c, err := StartProcess(ctx, Options{Nodes: 1})
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	fmt.Printf("PID=%d\n", c.PID(0))
	time.Sleep(5 * time.Minute) // the parent kills this process long before
	c.Close()
	os.Exit(1)
}
