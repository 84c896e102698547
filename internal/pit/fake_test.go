package pit

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeCluster is a small in-memory OpenSearch that speaks the PIT API of
// spec §4: one httptest server per node, shards with a primary and a
// replica, PIT contexts that live on the node that held the copy when the
// PIT was opened and die with it, and the exact failure shapes of a node
// restart, a keep-alive expiry and other shard failures. Documents sort by
// (ts, _id) ascending whatever the request says.
type fakeCluster struct {
	t      testing.TB
	shards int
	nodes  []*fakeNode

	mu      sync.Mutex
	docs    map[string]fakeDoc // by index/_id
	pits    map[string]*fakePIT
	nextPIT int
	nextCtx int
	// hook, if set, sees every request first; handled=true means it wrote
	// the answer. kind is open, search, probe or delete.
	hook         func(kind string, node int, body map[string]any, w http.ResponseWriter) (handled bool)
	partialOpens int  // the next n PIT creations report one failed shard
	rotateIDs    bool // every search answers with a new pit_id for the same PIT
	searches     int  // non-probe searches answered
	probes       int
	opens        int
	deleted      []string // PIT ids deleted
	bodies       []map[string]any
	paths        []string
}

type fakeNode struct {
	srv  *httptest.Server
	id   string
	down bool // guarded by fakeCluster.mu: connections are aborted
	gen  int  // restarts: contexts of older generations are gone
}

type fakeDoc struct {
	Index   string
	ID      string
	TS      int64
	Version int64
	Shard   int
}

type fakeCtx struct {
	node, gen int
	id        int
}

type fakePIT struct {
	id       string
	indices  []string
	contexts map[int]fakeCtx // shard → context; absent: the shard failed at creation
	snapshot []fakeDoc       // sorted
	expired  bool
}

func newFakeCluster(t testing.TB, nodes, shards int) *fakeCluster {
	fc := &fakeCluster{t: t, shards: shards, docs: map[string]fakeDoc{}, pits: map[string]*fakePIT{}}
	for i := range nodes {
		n := &fakeNode{id: fmt.Sprintf("node%d", i)}
		idx := i
		n.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fc.serve(idx, w, r) }))
		fc.nodes = append(fc.nodes, n)
	}
	t.Cleanup(func() {
		for _, n := range fc.nodes {
			n.srv.Close()
		}
	})
	return fc
}

func (fc *fakeCluster) urls() []string {
	var u []string
	for _, n := range fc.nodes {
		u = append(u, n.srv.URL)
	}
	return u
}

func shardOf(id string, shards int) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % uint32(shards))
}

// put writes (or updates, bumping the version) a document.
func (fc *fakeCluster) put(index, id string, ts int64) {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	k := index + "/" + id
	d, ok := fc.docs[k]
	if ok {
		d.Version++
		d.TS = ts
	} else {
		d = fakeDoc{Index: index, ID: id, TS: ts, Version: 1, Shard: shardOf(id, fc.shards)}
	}
	fc.docs[k] = d
}

// fill writes n documents doc-00000.. with increasing timestamps (several
// share one timestamp so the _id tiebreaker matters).
func (fc *fakeCluster) fill(index string, n int) {
	for i := range n {
		fc.put(index, fmt.Sprintf("doc-%05d", i), 1_700_000_000_000+int64(i/3))
	}
}

// restart loses every context held by node i (it comes back at once).
func (fc *fakeCluster) restart(i int) {
	fc.mu.Lock()
	fc.nodes[i].gen++
	fc.mu.Unlock()
}

func (fc *fakeCluster) setDown(i int, down bool) {
	fc.mu.Lock()
	fc.nodes[i].down = down
	if down {
		fc.nodes[i].gen++
	}
	fc.mu.Unlock()
}

func (fc *fakeCluster) setPartialOpens(n int) {
	fc.mu.Lock()
	fc.partialOpens = n
	fc.mu.Unlock()
}

func (fc *fakeCluster) expireAll() {
	fc.mu.Lock()
	for _, p := range fc.pits {
		p.expired = true
	}
	fc.mu.Unlock()
}

func (fc *fakeCluster) openPITs() int {
	fc.mu.Lock()
	defer fc.mu.Unlock()
	return len(fc.pits)
}

func (fc *fakeCluster) setHook(h func(kind string, node int, body map[string]any, w http.ResponseWriter) bool) {
	fc.mu.Lock()
	fc.hook = h
	fc.mu.Unlock()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	switch b := v.(type) {
	case string:
		io.WriteString(w, b)
	default:
		json.NewEncoder(w).Encode(v)
	}
}

func (fc *fakeCluster) serve(node int, w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &body); err != nil {
			writeJSON(w, 400, `{"error":{"type":"parse_exception","reason":"bad json"},"status":400}`)
			return
		}
	}
	kind := ""
	switch {
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/_search/point_in_time"):
		kind = "open"
	case r.Method == http.MethodDelete && r.URL.Path == "/_search/point_in_time":
		kind = "delete"
	case r.Method == http.MethodPost && r.URL.Path == "/_search":
		kind = "search"
		if sz, _ := body["size"].(float64); sz == 0 {
			kind = "probe"
		}
	case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/_search"):
		writeJSON(w, 400, `{"error":{"type":"action_request_validation_exception","reason":"Validation Failed: 1: [indices] cannot be used with point in time"},"status":400}`)
		return
	default:
		writeJSON(w, 400, `{"error":{"type":"illegal_argument_exception","reason":"no handler"},"status":400}`)
		return
	}
	fc.mu.Lock()
	down := fc.nodes[node].down
	hook := fc.hook
	fc.bodies = append(fc.bodies, body)
	fc.paths = append(fc.paths, r.Method+" "+r.URL.RequestURI())
	fc.mu.Unlock()
	if down {
		panic(http.ErrAbortHandler) // the client sees a broken connection
	}
	if hook != nil && hook(kind, node, body, w) {
		return
	}
	fc.mu.Lock()
	defer fc.mu.Unlock()
	switch kind {
	case "open":
		fc.opens++
		fc.handleOpen(w, r)
	case "delete":
		fc.handleDelete(w, body)
	case "search", "probe":
		if kind == "probe" {
			fc.probes++
		} else {
			fc.searches++
		}
		fc.handleSearch(w, body)
	}
}

// must hold mu
func (fc *fakeCluster) handleOpen(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Get("keep_alive") == "" {
		writeJSON(w, 400, `{"error":{"type":"illegal_argument_exception","reason":"keep_alive is required"},"status":400}`)
		return
	}
	indices := strings.Split(strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/"), "/_search/point_in_time"), ",")
	p := &fakePIT{indices: indices, contexts: map[int]fakeCtx{}}
	fc.nextPIT++
	p.id = fmt.Sprintf("pit-%d-%s", fc.nextPIT, strings.Repeat("x", 20))
	failed := 0
	for s := range fc.shards {
		placed := false
		for _, c := range []int{s % len(fc.nodes), (s + 1) % len(fc.nodes)} { // primary, replica
			if !fc.nodes[c].down {
				fc.nextCtx++
				p.contexts[s] = fakeCtx{node: c, gen: fc.nodes[c].gen, id: fc.nextCtx}
				placed = true
				break
			}
		}
		if !placed {
			failed++
		}
	}
	if fc.partialOpens > 0 {
		fc.partialOpens--
		failed++
	}
	for _, d := range fc.docs {
		if slices.Contains(indices, d.Index) {
			p.snapshot = append(p.snapshot, d)
		}
	}
	slices.SortFunc(p.snapshot, func(a, b fakeDoc) int {
		if a.TS != b.TS {
			if a.TS < b.TS {
				return -1
			}
			return 1
		}
		if c := strings.Compare(a.Index, b.Index); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	fc.pits[p.id] = p
	writeJSON(w, 200, map[string]any{
		"pit_id":        p.id,
		"_shards":       map[string]int{"total": fc.shards, "successful": fc.shards - failed, "skipped": 0, "failed": failed},
		"creation_time": 1_700_000_000_000,
	})
}

// must hold mu
func (fc *fakeCluster) handleDelete(w http.ResponseWriter, body map[string]any) {
	ids, _ := body["pit_id"].([]any)
	var out []map[string]any
	for _, v := range ids {
		id, _ := v.(string)
		if _, ok := fc.pits[id]; !ok {
			writeJSON(w, 404, `{"error":{"root_cause":[{"type":"resource_not_found_exception","reason":"pit is not found"}],"type":"resource_not_found_exception","reason":"pit is not found"},"status":404}`)
			return
		}
		delete(fc.pits, id)
		fc.deleted = append(fc.deleted, id)
		out = append(out, map[string]any{"successful": true, "pit_id": id})
	}
	writeJSON(w, 200, map[string]any{"pits": out})
}

func contextMissing(id int) string {
	return fmt.Sprintf(`{"type":"search_context_missing_exception","reason":"No search context found for id [%d]"}`, id)
}

// totalLoss is the 404 of spec §4 when every context is gone.
func totalLoss(ctxID int) string {
	cm := contextMissing(ctxID)
	return `{"error":{"root_cause":[` + cm + `],"type":"search_phase_execution_exception","reason":"all shards failed","phase":"query","grouped":true,"failed_shards":[{"shard":-1,"index":null,"reason":` + cm + `}]},"status":404}`
}

// must hold mu
func (fc *fakeCluster) handleSearch(w http.ResponseWriter, body map[string]any) {
	pitObj, _ := body["pit"].(map[string]any)
	id, _ := pitObj["id"].(string)
	p := fc.pits[id]
	if p == nil || p.expired {
		writeJSON(w, 404, totalLoss(999))
		return
	}
	size := 10
	if v, ok := body["size"].(float64); ok {
		size = int(v)
	}
	var after *fakeDoc
	if sa, ok := body["search_after"].([]any); ok && len(sa) == 3 { // the default sort: @timestamp, _index, _id
		ts, _ := sa[0].(float64)
		aix, _ := sa[1].(string)
		aid, _ := sa[2].(string)
		after = &fakeDoc{TS: int64(ts), Index: aix, ID: aid}
	}
	sliceID, sliceMax := 0, 1
	if sl, ok := body["slice"].(map[string]any); ok {
		sliceID, sliceMax = int(sl["id"].(float64)), int(sl["max"].(float64))
	}
	alive := map[int]bool{}
	var failures []string
	for s := range fc.shards {
		c, ok := p.contexts[s]
		if !ok {
			continue
		}
		n := fc.nodes[c.node]
		if n.down { // the node left the cluster: how a coordinator reports it
			failures = append(failures, `{"shard":`+strconv.Itoa(s)+`,"index":"`+p.indices[0]+`","node":"`+n.id+`","reason":{"type":"illegal_state_exception","reason":"no node found for id: `+n.id+`"}}`)
			continue
		}
		if n.gen != c.gen {
			failures = append(failures, `{"shard":-1,"index":null,"reason":`+contextMissing(c.id)+`}`)
			continue
		}
		alive[s] = true
	}
	if len(alive) == 0 {
		writeJSON(w, 404, totalLoss(1))
		return
	}
	if fc.rotateIDs {
		delete(fc.pits, p.id)
		fc.nextPIT++
		p.id = fmt.Sprintf("pit-%d-rotated", fc.nextPIT)
		fc.pits[p.id] = p
	}
	var hits []string
	if size > 0 {
		for _, d := range p.snapshot {
			if !alive[d.Shard] || int(shardOf("slice"+d.ID, 1<<16))%sliceMax != sliceID {
				continue
			}
			if after != nil && (d.TS < after.TS || (d.TS == after.TS && (d.Index < after.Index || (d.Index == after.Index && d.ID <= after.ID)))) {
				continue
			}
			hits = append(hits, fmt.Sprintf(`{"_index":%q,"_id":%q,"_version":%d,"_seq_no":%d,"_primary_term":1,"_score":null,"_source":{"n":%q},"sort":[%d,%q,%q]}`,
				d.Index, d.ID, d.Version, d.Version-1, d.ID, d.TS, d.Index, d.ID))
			if len(hits) == size {
				break
			}
		}
	}
	failed := fc.shards - len(alive)
	fjson := ""
	if len(failures) > 0 {
		fjson = `,"failures":[` + strings.Join(failures, ",") + `]`
	}
	writeJSON(w, 200, `{"pit_id":"`+p.id+`","took":1,"timed_out":false,"_shards":{"total":`+strconv.Itoa(fc.shards)+
		`,"successful":`+strconv.Itoa(len(alive))+`,"skipped":0,"failed":`+strconv.Itoa(failed)+fjson+
		`},"hits":{"total":{"value":0,"relation":"gte"},"max_score":null,"hits":[`+strings.Join(hits, ",")+`]}}`)
}
