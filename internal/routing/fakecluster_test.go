package routing

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// fakeIndex is one index of the fake cluster.
type fakeIndex struct {
	N, R, P int
	// Shards rows: per shard, primary node name ("" = unassigned) and
	// replica node names.
	Primary  []string
	State    []string // primary state per shard ("" = STARTED)
	Replicas [][]string
	Closed   bool // metadata says "close"; _cat/shards naming it answers 400
}

// fakeCluster serves the discovery endpoints with the response shapes of
// spec §3 (as the real server writes them: _cat values are strings, node
// null when unassigned, "src -> ip id name" while relocating).
type fakeCluster struct {
	t   testing.TB
	srv *httptest.Server

	mu          sync.Mutex
	nodes       []string          // ids are "id-"+these; also the names unless shown
	shown       map[string]string // node → the name it reports (names need not be unique)
	publish     map[string]string
	roles       map[string][]string // node → roles (default data, ingest, cluster_manager)
	aliases     []catAlias          // _cat/aliases rows
	indices     map[string]*fakeIndex
	streams     map[string][]string
	status      map[string]int    // call → forced HTTP status
	raw         map[string]string // call → raw body override
	heap        map[string]int
	breaker     map[string][2]int64 // estimated, limit
	rejected    map[string]int64
	calls       map[string]int
	metadataURL []string
	pings       atomic.Int64
}

func newFakeCluster(t testing.TB, nodes ...string) *fakeCluster {
	f := &fakeCluster{
		t: t, nodes: nodes, shown: map[string]string{}, publish: map[string]string{},
		indices: map[string]*fakeIndex{}, streams: map[string][]string{},
		status: map[string]int{}, raw: map[string]string{}, heap: map[string]int{}, roles: map[string][]string{},
		breaker: map[string][2]int64{}, rejected: map[string]int64{}, calls: map[string]int{},
	}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeCluster) callOf(path string) string {
	switch {
	case path == "/":
		return "ping"
	case strings.HasPrefix(path, "/_nodes/stats"):
		return "node_stats"
	case strings.HasPrefix(path, "/_nodes/"):
		return "nodes"
	case strings.HasPrefix(path, "/_data_stream"):
		return "data_streams"
	case strings.HasPrefix(path, "/_cluster/state/metadata/"):
		return "metadata"
	case strings.HasPrefix(path, "/_cat/shards"):
		return "shards"
	case strings.HasPrefix(path, "/_cat/aliases"):
		return "aliases"
	case path == "/_cluster/health":
		return "ready"
	}
	return ""
}

func (f *fakeCluster) serve(w http.ResponseWriter, r *http.Request) {
	call := f.callOf(r.URL.Path)
	if call == "ping" {
		f.pings.Add(1)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls[call]++
	if st := f.status[call]; st != 0 {
		w.WriteHeader(st)
		fmt.Fprintf(w, `{"error":{"type":"security_exception","reason":"no permissions"},"status":%d}`, st)
		return
	}
	if body, ok := f.raw[call]; ok {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, body)
		return
	}
	var v any
	switch call {
	case "ping":
		v = map[string]any{"name": "n", "cluster_name": "c", "version": map[string]any{"number": "2.19.6", "distribution": "opensearch"}}
	case "ready":
		v = map[string]any{"discovered_master": true, "discovered_cluster_manager": true}
	case "nodes":
		v = f.nodesInfo()
	case "node_stats":
		v = f.nodeStats()
	case "data_streams":
		var list []any
		for name, idx := range f.streams {
			var ix []any
			for _, i := range idx {
				ix = append(ix, map[string]any{"index_name": i})
			}
			list = append(list, map[string]any{"name": name, "indices": ix})
		}
		v = map[string]any{"data_streams": list}
	case "metadata":
		f.metadataURL = append(f.metadataURL, r.URL.String())
		names := strings.Split(strings.TrimPrefix(r.URL.Path, "/_cluster/state/metadata/"), ",")
		v = f.metadata(names)
	case "aliases":
		names := strings.Split(strings.TrimPrefix(r.URL.Path, "/_cat/aliases/"), ",")
		rows := []catAlias{}
		for _, a := range f.aliases {
			for _, n := range names {
				if n, _ = url.PathUnescape(n); n == a.Alias {
					rows = append(rows, a)
				}
			}
		}
		v = rows
	case "shards":
		names := strings.Split(strings.TrimPrefix(r.URL.Path, "/_cat/shards/"), ",")
		for _, n := range names {
			if idx, ok := f.indices[n]; ok && idx.Closed { // as the real server answers
				w.WriteHeader(http.StatusBadRequest)
				fmt.Fprintf(w, `{"error":{"type":"index_closed_exception","reason":"closed","index":%q},"status":400}`, n)
				return
			}
		}
		v = f.catShards(names)
	default:
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeCluster) hostPort() string {
	u, _ := url.Parse(f.srv.URL)
	return u.Host
}

// nodesInfo: every node publishes the fake server's own address, so every
// discovered URL reaches this server.
func (f *fakeCluster) nodesInfo() any {
	nodes := map[string]any{}
	for i, n := range f.nodes {
		pub := f.hostPort()
		if p, ok := f.publish[n]; ok {
			pub = p
		}
		roles, ok := f.roles[n]
		if !ok {
			roles = []string{"data", "ingest", "cluster_manager"}
		}
		nodes["id-"+n] = map[string]any{
			"name":        f.name(n),
			"roles":       roles,
			"attributes":  map[string]string{"zone": string(rune('a' + i%3)), "shard_indexing_pressure_enabled": "true"},
			"http":        map[string]any{"publish_address": pub, "max_content_length_in_bytes": 104857600},
			"os":          map[string]any{"allocated_processors": 2},
			"thread_pool": map[string]any{"write": map[string]any{"type": "fixed", "size": 2, "queue_size": 10000}},
		}
	}
	return map[string]any{"nodes": nodes}
}

func (f *fakeCluster) nodeStats() any {
	nodes := map[string]any{}
	for _, n := range f.nodes {
		est := f.breaker[n]
		if est[1] == 0 {
			est = [2]int64{0, 1000}
		}
		nodes["id-"+n] = map[string]any{
			"jvm":         map[string]any{"mem": map[string]any{"heap_used_percent": f.heap[n]}},
			"breakers":    map[string]any{"request": map[string]any{"limit_size_in_bytes": est[1], "estimated_size_in_bytes": est[0], "overhead": 1.0, "tripped": 0}, "fielddata": map[string]any{"limit_size_in_bytes": 1000, "estimated_size_in_bytes": 0}},
			"thread_pool": map[string]any{"write": map[string]any{"rejected": f.rejected[n]}},
		}
	}
	return map[string]any{"nodes": nodes}
}

func (f *fakeCluster) metadata(names []string) any {
	ind := map[string]any{}
	for _, n := range names {
		n, _ = url.PathUnescape(n)
		resolved := []string{n}
		if ds, ok := f.streams[n]; ok {
			resolved = ds // data streams expand to their backing indices
		}
		for _, name := range resolved {
			idx, ok := f.indices[name]
			if !ok {
				continue
			}
			state := "open"
			if idx.Closed {
				state = "close"
			}
			ind[name] = map[string]any{
				"state":              state,
				"routing_num_shards": idx.R,
				"settings": map[string]any{"index": map[string]any{
					"number_of_shards":       fmt.Sprint(idx.N),
					"routing_partition_size": fmt.Sprint(idx.P),
				}},
			}
		}
	}
	if len(ind) == 0 {
		return map[string]any{}
	}
	return map[string]any{"metadata": map[string]any{"indices": ind}}
}

func (f *fakeCluster) catShards(names []string) any {
	rows := []any{}
	for _, n := range names {
		n, _ = url.PathUnescape(n)
		idx, ok := f.indices[n]
		if !ok {
			continue
		}
		for s := 0; s < idx.N; s++ {
			state := "STARTED"
			if idx.State != nil && idx.State[s] != "" {
				state = idx.State[s]
			}
			var node, id any
			if p := idx.Primary[s]; p != "" {
				src, reloc, _ := strings.Cut(p, " -> ")
				node, id = f.name(src), "id-"+src
				if reloc != "" {
					node = f.name(src) + " -> " + reloc
				}
			} else {
				state = "UNASSIGNED"
			}
			rows = append(rows, map[string]any{"index": n, "shard": fmt.Sprint(s), "prirep": "p", "state": state, "node": node, "id": id})
			if idx.Replicas != nil {
				for _, rn := range idx.Replicas[s] {
					rows = append(rows, map[string]any{"index": n, "shard": fmt.Sprint(s), "prirep": "r", "state": "STARTED", "node": f.name(rn), "id": "id-" + rn})
				}
			}
		}
	}
	return rows
}

// name is the name node n reports.
func (f *fakeCluster) name(n string) string {
	if s, ok := f.shown[n]; ok {
		return s
	}
	return n
}

func (f *fakeCluster) set(fn func(f *fakeCluster)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *fakeCluster) callCount(call string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[call]
}
