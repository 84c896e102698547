package ossim

import (
	"fmt"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// boundAddr is where node n listens; publishAddr what it tells clients
// (http.publish_host/publish_port): the bound address unless
// SetPublishAddress changed it.
func (n *Node) boundAddr() string { return strings.TrimPrefix(n.URL(), "http://") }
func (n *Node) publishAddr() string {
	if p := n.publish.Load(); p != nil {
		return *p
	}
	return n.boundAddr()
}
func (n *Node) transportAddr() string { return "127.0.0.1:" + strconv.Itoa(9300+n.idx) }

func (q *request) handleRoot() {
	n := q.n
	q.replyJSON(200, map[string]any{
		"name":         n.name,
		"cluster_name": n.c.opts.ClusterName,
		"cluster_uuid": n.c.uuid,
		"version": map[string]any{
			"distribution": "opensearch", "number": n.c.opts.Version, "build_type": "tar", "build_hash": "ossim",
			"build_date": "2025-01-01T00:00:00.000000Z", "build_snapshot": false, "lucene_version": "9.12.1",
			"minimum_wire_compatibility_version": "7.10.0", "minimum_index_compatibility_version": "7.0.0",
		},
		"tagline": "The OpenSearch Project: https://opensearch.org/",
	})
}

var nodeInfoMetrics = map[string]bool{"settings": true, "os": true, "process": true, "jvm": true, "thread_pool": true,
	"transport": true, "http": true, "plugins": true, "ingest": true, "aggregations": true, "indices": true, "search_pipelines": true, "_all": true}

var nodeStatsMetrics = map[string]bool{"indices": true, "os": true, "process": true, "jvm": true, "thread_pool": true,
	"fs": true, "transport": true, "http": true, "breaker": true, "script": true, "discovery": true, "ingest": true,
	"adaptive_selection": true, "_all": true}

func allIn(s string, set map[string]bool) bool {
	for _, p := range strings.Split(s, ",") {
		if !set[p] {
			return false
		}
	}
	return true
}

// selectNodes resolves a node selector (_local, _all, *, ids, names).
func (q *request) selectNodes(sel string) []*Node {
	c := q.n.c
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []*Node
	seen := map[*Node]bool{}
	for _, s := range strings.Split(sel, ",") {
		for _, n := range c.nodes {
			if !n.joined || !n.Running() || seen[n] {
				continue
			}
			match := false
			switch {
			case s == "" || s == "_all" || s == "*":
				match = true
			case s == "_local":
				match = n == q.n
			case s == "_cluster_manager" || s == "_master":
				match = n == c.managerLocked()
			case strings.Contains(s, ":"):
				k, v, _ := strings.Cut(s, ":")
				match = k == "zone" && n.zone == v
			default:
				match = s == n.id || s == n.name
			}
			if match {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	return out
}

// roleLetters is _cat/nodes' node.role: the roles' abbreviations, sorted,
// "-" for none (coordinating-only).
func roleLetters(roles []string) string {
	var b []byte
	for _, r := range roles {
		switch r {
		case "cluster_manager", "master":
			b = append(b, 'm')
		case "remote_cluster_client":
			b = append(b, 'r')
		default:
			if r != "" {
				b = append(b, r[0]) // data d, ingest i, search s, warm w
			}
		}
	}
	if len(b) == 0 {
		return "-"
	}
	slices.Sort(b)
	return string(b)
}

// defaultRoles are a node's roles unless Options.Roles sets them.
var defaultRoles = []string{"cluster_manager", "data", "ingest", "remote_cluster_client"}

func (n *Node) hasRole(role string) bool {
	for _, r := range n.roles {
		if r == role {
			return true
		}
	}
	return false
}

// managerLocked is the elected cluster manager: the lowest joined
// cluster-manager-eligible node.
func (c *Cluster) managerLocked() *Node {
	for _, n := range c.nodes {
		if n.joined && n.Running() && n.hasRole("cluster_manager") {
			return n
		}
	}
	return nil
}

func (n *Node) baseInfo() map[string]any {
	attrs := map[string]any{"shard_indexing_pressure_enabled": "true"}
	if n.zone != "" {
		attrs["zone"] = n.zone
	}
	return map[string]any{
		"name": n.name, "transport_address": n.transportAddr(), "host": "127.0.0.1", "ip": "127.0.0.1",
		"roles": n.roles, "attributes": attrs,
	}
}

func (q *request) handleNodes(segs []string) {
	sel, metrics, stats := "_all", "", false
	i := 0
	if i < len(segs) && segs[i] != "stats" && !allIn(segs[i], nodeInfoMetrics) {
		sel = segs[i]
		i++
	}
	if i < len(segs) && segs[i] == "stats" {
		stats = true
		i++
	}
	if i < len(segs) {
		metrics = segs[i]
		i++
	}
	indexMetrics := "" // /_nodes/stats/indices/<index metrics>
	if stats && metrics == "indices" && i < len(segs) {
		indexMetrics = segs[i]
		i++
	}
	if i < len(segs) {
		q.noHandler()
		return
	}
	want := func(m string) bool { return metricWanted(metrics, m) }
	wantIndex := func(m string) bool { return metricWanted(indexMetrics, m) }
	nodes := q.selectNodes(sel)
	out := map[string]any{}
	for _, n := range nodes {
		m := n.baseInfo()
		if stats {
			m["timestamp"] = time.Now().UnixMilli()
			if want("thread_pool") {
				m["thread_pool"] = n.threadPoolStats()
			}
			if want("indices") {
				ns := n.Stats()
				ix := map[string]any{}
				if wantIndex("docs") {
					ix["docs"] = map[string]any{"count": ns.Docs, "deleted": 0}
				}
				if wantIndex("indexing") {
					ix["indexing"] = map[string]any{
						"index_total": ns.IndexedPrimary + ns.IndexedReplica, "index_time_in_millis": n.st.serviceNanos.Load() / 1e6,
						"index_current": 0, "index_failed": 0, "delete_total": 0, "delete_time_in_millis": 0, "delete_current": 0,
						"noop_update_total": 0, "is_throttled": false, "throttle_time_in_millis": 0,
					}
				}
				m["indices"] = ix
			}
			if want("transport") {
				m["transport"] = map[string]any{
					"server_open": 0, "total_outbound_connections": 0,
					"rx_count": n.st.rxCount.Load(), "rx_size_in_bytes": n.st.rxBytes.Load(),
					"tx_count": n.st.txCount.Load(), "tx_size_in_bytes": n.st.txBytes.Load(),
				}
			}
		} else {
			m["version"] = n.c.opts.Version
			m["build_type"] = "tar"
			m["build_hash"] = "ossim"
			m["total_indexing_buffer"] = 53687091
			if want("http") {
				m["http"] = map[string]any{"bound_address": []string{n.boundAddr()}, "publish_address": n.publishAddr(),
					"max_content_length_in_bytes": n.c.opts.MaxContentLength}
			}
			if want("os") {
				m["os"] = map[string]any{"refresh_interval_in_millis": 1000, "name": "Linux", "pretty_name": "Linux",
					"arch": runtime.GOARCH, "version": "ossim", "available_processors": runtime.NumCPU(),
					"allocated_processors": runtime.NumCPU()}
			}
			if want("thread_pool") {
				w := n.write
				m["thread_pool"] = map[string]any{
					"write":  map[string]any{"type": "fixed", "size": w.size, "queue_size": w.queueSize.Load()},
					"search": map[string]any{"type": "resizable", "size": runtime.NumCPU()*3/2 + 1, "queue_size": 1000},
					"get":    map[string]any{"type": "fixed", "size": runtime.NumCPU(), "queue_size": 1000},
				}
			}
			if want("transport") {
				m["transport"] = map[string]any{"bound_address": []string{n.transportAddr()}, "publish_address": n.transportAddr(), "profiles": map[string]any{}}
			}
		}
		out[n.id] = m
	}
	q.replyJSON(200, map[string]any{
		"_nodes":       map[string]any{"total": len(nodes), "successful": len(nodes), "failed": 0},
		"cluster_name": q.n.c.opts.ClusterName,
		"nodes":        out,
	})
}

// metricWanted reports whether a metric list of a request path (a,b,c;
// "" or _all: every metric) names m.
func metricWanted(list, m string) bool {
	if list == "" || list == "_all" {
		return true
	}
	for _, x := range strings.Split(list, ",") {
		if x == m {
			return true
		}
	}
	return false
}

func (n *Node) threadPoolStats() map[string]any {
	w := n.write
	active := w.active.Load()
	queued := w.pending.Load() - active
	if queued < 0 {
		queued = 0
	}
	idle := map[string]any{"threads": 0, "queue": 0, "active": 0, "rejected": 0, "largest": 0, "completed": 0, "total_wait_time_in_nanos": 0}
	return map[string]any{
		// OpenSearch 2.19 tracks total_wait_time_in_nanos for search pools
		// only: the write pool omits it (it is -1 there).
		"write": map[string]any{"threads": w.largest.Load(), "queue": queued, "active": active, "rejected": w.rejected.Load(),
			"largest": w.largest.Load(), "completed": w.completed.Load()},
		"search": idle, "get": idle,
	}
}

// ---- _cat ----

func (q *request) handleCat(what string, rest []string) {
	expr := ""
	if len(rest) > 0 {
		expr = rest[0]
	}
	if what == "aliases" {
		q.handleCatAliases(expr)
		return
	}
	c := q.n.c
	ims, ok := q.rlockIndices(expr)
	if !ok {
		return
	}
	var cols []string
	var rows []map[string]any
	switch what {
	case "shards":
		cols = []string{"index", "shard", "prirep", "state", "docs", "store", "ip", "node"}
		for _, im := range ims {
			for _, g := range im.shards {
				for _, sc := range g.copies {
					row := map[string]any{"index": im.name, "shard": strconv.Itoa(g.num), "prirep": "r", "state": sc.state,
						"docs": nil, "store": nil, "ip": nil, "id": nil, "node": nil, "unassigned.reason": nil}
					if sc.primary {
						row["prirep"] = "p"
					}
					if sc.node != nil {
						docs := 0
						if st := sc.node.store(im.uuid, g.num); st != nil {
							docs = st.count()
						}
						row["docs"] = strconv.Itoa(docs)
						row["store"] = strconv.Itoa(docs*500) + "b"
						row["ip"] = "127.0.0.1"
						row["id"] = sc.node.id // the full id, as the real server writes it here (not _cat/nodes' 4 characters)
						row["node"] = sc.node.name
						if sc.relocTo != nil {
							row["node"] = sc.node.name + " -> 127.0.0.1 " + sc.relocTo.id + " " + sc.relocTo.name
						}
					} else {
						row["unassigned.reason"] = "NODE_LEFT"
					}
					rows = append(rows, row)
				}
			}
		}
	case "indices":
		cols = []string{"health", "status", "index", "uuid", "pri", "rep", "docs.count", "docs.deleted", "store.size", "pri.store.size"}
		for _, im := range ims {
			docs := 0
			for _, g := range im.shards {
				if p := g.primaryCopy(); p != nil && p.node != nil {
					if st := p.node.store(im.uuid, g.num); st != nil {
						docs += st.count()
					}
				}
			}
			rows = append(rows, map[string]any{"health": c.indexHealthLocked(im), "status": "open", "index": im.name, "uuid": im.uuid,
				"pri": strconv.Itoa(im.layout.Shards), "rep": strconv.Itoa(im.replicas), "docs.count": strconv.Itoa(docs),
				"docs.deleted": "0", "store.size": strconv.Itoa(docs*500*(1+im.replicas)) + "b", "pri.store.size": strconv.Itoa(docs*500) + "b"})
		}
	case "cluster_manager", "master":
		cols = []string{"id", "host", "ip", "node"}
		if mgr := c.managerLocked(); mgr != nil {
			rows = append(rows, map[string]any{"id": mgr.id, "host": "127.0.0.1", "ip": "127.0.0.1", "node": mgr.name})
		}
	case "nodes":
		cols = []string{"ip", "name", "node.role", "cluster_manager"}
		mgr := c.managerLocked()
		for _, n := range c.nodes {
			if !n.joined || !n.Running() {
				continue
			}
			m := "-"
			if n == mgr {
				m = "*"
			}
			rows = append(rows, map[string]any{"ip": "127.0.0.1", "name": n.name, "id": n.id[:4], "node.role": roleLetters(n.roles), "cluster_manager": m, "master": m})
		}
	default:
		c.mu.RUnlock()
		q.noHandler()
		return
	}
	c.mu.RUnlock()
	if h := q.q.Get("h"); h != "" {
		cols = strings.Split(h, ",")
	}
	if q.q.Get("format") == "json" {
		out := make([]map[string]any, 0, len(rows))
		for _, r := range rows {
			m := map[string]any{}
			for _, col := range cols {
				m[col] = r[col]
			}
			out = append(out, m)
		}
		q.replyJSON(200, out)
		return
	}
	var sb strings.Builder
	if q.q.Has("v") {
		sb.WriteString(strings.Join(cols, " ") + "\n")
	}
	for _, r := range rows {
		parts := make([]string, len(cols))
		for i, col := range cols {
			if v, ok := r[col].(string); ok {
				parts[i] = v
			}
		}
		sb.WriteString(strings.Join(parts, " ") + "\n")
	}
	q.w.Header().Set("Content-Type", "text/plain; charset=UTF-8")
	q.w.WriteHeader(200)
	_, _ = q.w.Write([]byte(sb.String()))
}

// ---- health ----

type healthInfo struct {
	status                                                           string
	nodes, dataNodes, activePrimaries, active, relocating, init, una int
	delayed                                                          int // of una: waiting for NodeLeftDelay
}

func (c *Cluster) indexHealthLocked(im *indexMeta) string {
	status := "green"
	for _, g := range im.shards {
		for _, sc := range g.copies {
			if sc.node == nil || sc.state == StateInitializing || sc.state == StateUnassigned {
				if sc.primary {
					return "red"
				}
				status = "yellow"
			}
		}
	}
	return status
}

func (c *Cluster) health() healthInfo { return c.healthOf("") }

// healthOf is the health of the indices expr names (every index when
// ""), as GET /_cluster/health/<expr>: red when expr names none.
func (c *Cluster) healthOf(expr string) healthInfo {
	c.mu.RLock()
	defer c.mu.RUnlock()
	h := healthInfo{status: "green"}
	for _, n := range c.nodes {
		if n.joined {
			h.nodes++
			if n.hasRole("data") {
				h.dataNodes++
			}
		}
	}
	ims := make([]*indexMeta, 0, len(c.indices))
	if expr == "" {
		for _, im := range c.indices {
			ims = append(ims, im)
		}
	} else if r, e := c.resolveIndicesLocked(expr); e != nil || len(r) == 0 {
		h.status = "red"
	} else {
		ims = r
	}
	now := time.Now()
	for _, im := range ims {
		switch c.indexHealthLocked(im) {
		case "red":
			h.status = "red"
		case "yellow":
			if h.status == "green" {
				h.status = "yellow"
			}
		}
		for _, g := range im.shards {
			for _, sc := range g.copies {
				switch {
				case sc.node == nil:
					h.una++
					if !sc.primary && now.Before(sc.delayedUntil) {
						h.delayed++
					}
				case sc.state == StateInitializing:
					h.init++
				default:
					h.active++
					if sc.primary {
						h.activePrimaries++
					}
					if sc.state == StateRelocating {
						h.relocating++
						h.init++ // the relocation target initializes
					}
				}
			}
		}
	}
	return h
}

var healthRank = map[string]int{"green": 0, "yellow": 1, "red": 2}

func (q *request) handleHealth(rest []string) {
	c := q.n.c
	if q.q.Get("local") == "true" && q.detachedHealth() {
		return
	}
	expr := ""
	if len(rest) > 0 {
		expr = rest[0]
	}
	timeout := 30 * time.Second
	if t := q.q.Get("timeout"); t != "" {
		d, err := parseTimeValue(t)
		if err != nil {
			q.fail(400, "illegal_argument_exception", err.Error())
			return
		}
		timeout = d
	}
	wantStatus := q.q.Get("wait_for_status")
	noReloc := q.q.Get("wait_for_no_relocating_shards") == "true"
	noInit := q.q.Get("wait_for_no_initializing_shards") == "true"
	wantNodes := q.q.Get("wait_for_nodes")
	waiting := wantStatus != "" || noReloc || noInit || wantNodes != ""
	deadline := time.Now().Add(timeout)
	var h healthInfo
	timedOut := false
	for {
		h = c.healthOf(expr)
		ok := (wantStatus == "" || healthRank[h.status] <= healthRank[wantStatus]) &&
			(!noReloc || h.relocating == 0) && (!noInit || h.init == 0) &&
			(wantNodes == "" || nodesOK(wantNodes, h.nodes))
		if ok || !waiting {
			break
		}
		if time.Now().After(deadline) {
			timedOut = true
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	total := h.active + h.una + h.init
	pct := 100.0
	if total > 0 {
		pct = float64(h.active) * 100 / float64(total)
	}
	status := 200
	if timedOut {
		status = 408
	}
	q.replyJSON(status, map[string]any{
		"cluster_name": c.opts.ClusterName, "status": h.status, "timed_out": timedOut,
		"number_of_nodes": h.nodes, "number_of_data_nodes": h.dataNodes, "discovered_master": true,
		"discovered_cluster_manager": true, "active_primary_shards": h.activePrimaries, "active_shards": h.active,
		"relocating_shards": h.relocating, "initializing_shards": h.init - h.relocating, "unassigned_shards": h.una,
		"delayed_unassigned_shards": h.delayed, "number_of_pending_tasks": 0, "number_of_in_flight_fetch": 0,
		"task_max_waiting_in_queue_millis": 0, "active_shards_percent_as_number": pct,
	})
}

func nodesOK(want string, have int) bool {
	switch {
	case strings.HasPrefix(want, ">="):
		n, _ := strconv.Atoi(want[2:])
		return have >= n
	case strings.HasPrefix(want, "<="):
		n, _ := strconv.Atoi(want[2:])
		return have <= n
	case strings.HasPrefix(want, "ge("):
		n, _ := strconv.Atoi(strings.TrimSuffix(want[3:], ")"))
		return have >= n
	}
	n, _ := strconv.Atoi(want)
	return have == n
}

// parseTimeValue parses OpenSearch time values (500ms, 5m, 1h, 2d, -1).
func parseTimeValue(s string) (time.Duration, error) {
	units := []struct {
		suffix string
		d      time.Duration
	}{{"nanos", time.Nanosecond}, {"micros", time.Microsecond}, {"ms", time.Millisecond}, {"s", time.Second},
		{"m", time.Minute}, {"h", time.Hour}, {"d", 24 * time.Hour}}
	for _, u := range units {
		if strings.HasSuffix(s, u.suffix) {
			v, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(s, u.suffix)), 64)
			if err == nil && v >= 0 {
				return time.Duration(v * float64(u.d)), nil
			}
			break
		}
	}
	return 0, fmt.Errorf("failed to parse setting [timeout] with value [%s] as a time value: unit is missing or unrecognized", s)
}

// ---- cluster state ----

func (q *request) handleClusterState(rest []string) {
	c := q.n.c
	metrics := "_all"
	expr := ""
	if len(rest) > 0 {
		metrics = rest[0]
	}
	if len(rest) > 1 {
		expr = rest[1]
	}
	c.mu.RLock()
	defer c.mu.RUnlock()
	ims, e := c.resolveIndicesLocked(expr)
	if e != nil {
		q.failE(e)
		return
	}
	out := map[string]any{"cluster_name": c.opts.ClusterName, "cluster_uuid": c.uuid}
	has := func(m string) bool { return metrics == "_all" || strings.Contains(","+metrics+",", ","+m+",") }
	if has("metadata") {
		indices := map[string]any{}
		for _, im := range ims {
			terms := map[string]any{}
			insync := map[string]any{}
			for _, g := range im.shards {
				terms[strconv.Itoa(g.num)] = g.primaryTerm
				var ids []string
				for _, sc := range g.copies {
					if sc.node != nil && sc.state != StateInitializing {
						ids = append(ids, sc.allocID)
					}
				}
				insync[strconv.Itoa(g.num)] = ids
			}
			indices[im.name] = map[string]any{
				"version": 1, "mapping_version": 1, "settings_version": 1, "aliases_version": 1,
				"routing_num_shards": im.layout.RoutingShards, "state": "open",
				"settings": im.settingsJSON(), "mappings": map[string]any{}, "aliases": []string{},
				"primary_terms": terms, "in_sync_allocations": insync, "system": false,
			}
		}
		out["metadata"] = map[string]any{"cluster_uuid": c.uuid, "indices": indices}
	}
	if has("nodes") {
		nodes := map[string]any{}
		for _, n := range c.nodes {
			if n.joined {
				nodes[n.id] = map[string]any{"name": n.name, "transport_address": n.transportAddr(), "attributes": n.baseInfo()["attributes"]}
			}
		}
		out["nodes"] = nodes
	}
	if has("routing_table") {
		rt := map[string]any{}
		for _, im := range ims {
			shards := map[string]any{}
			for _, g := range im.shards {
				shards[strconv.Itoa(g.num)] = shardRoutingJSON(im, g)
			}
			rt[im.name] = map[string]any{"shards": shards}
		}
		out["routing_table"] = map[string]any{"indices": rt}
	}
	q.replyJSON(200, out)
}

func shardRoutingJSON(im *indexMeta, g *shardGroup) []any {
	var list []any
	for _, sc := range g.copies {
		m := map[string]any{"state": sc.state, "primary": sc.primary, "node": nil, "relocating_node": nil,
			"shard": g.num, "index": im.name}
		if sc.node != nil {
			m["node"] = sc.node.id
			m["allocation_id"] = map[string]any{"id": sc.allocID}
		}
		if sc.relocTo != nil {
			m["relocating_node"] = sc.relocTo.id
		}
		list = append(list, m)
	}
	return list
}

// ---- _search_shards ----

// searchShardsFor returns the shard numbers a search with these routing
// values targets (all shards when routing is empty).
func searchShardsFor(im *indexMeta, routingParam string) []int {
	if routingParam == "" {
		out := make([]int, len(im.shards))
		for i := range out {
			out[i] = i
		}
		return out
	}
	set := map[int]bool{}
	l := im.layout
	for _, r := range strings.Split(routingParam, ",") {
		h := hashRouting(r)
		for k := 0; k < l.PartitionSize; k++ {
			set[shardOfSum(h+int32(k), l)] = true
		}
	}
	var out []int
	for s := range set {
		out = append(out, s)
	}
	sort.Ints(out)
	return out
}

func (q *request) handleSearchShards(expr string) {
	c := q.n.c
	c.mu.RLock()
	defer c.mu.RUnlock()
	ims, e := c.resolveIndicesLocked(expr)
	if e != nil {
		q.failE(e)
		return
	}
	nodes := map[string]any{}
	indices := map[string]any{}
	shards := []any{}
	for _, im := range ims {
		indices[im.name] = map[string]any{}
		for _, s := range searchShardsFor(im, q.q.Get("routing")) {
			g := im.shards[s]
			group := shardRoutingJSON(im, g)
			for _, x := range group {
				m := x.(map[string]any)
				if m["node"] == nil {
					continue
				}
			}
			for _, sc := range g.copies {
				if sc.node != nil {
					nodes[sc.node.id] = map[string]any{"name": sc.node.name, "ephemeral_id": sc.node.id, "transport_address": sc.node.transportAddr(),
						"attributes": sc.node.baseInfo()["attributes"]}
				}
			}
			shards = append(shards, group)
		}
	}
	q.replyJSON(200, map[string]any{"nodes": nodes, "indices": indices, "shards": shards})
}

// rlockIndices read-locks the cluster state and resolves expr; on an
// error it unlocks, answers it and returns false. The caller unlocks
// c.mu otherwise.
func (q *request) rlockIndices(expr string) ([]*indexMeta, bool) {
	c := q.n.c
	c.mu.RLock()
	ims, e := c.resolveIndicesLocked(expr)
	if e != nil {
		c.mu.RUnlock()
		q.failE(e)
		return nil, false
	}
	return ims, true
}

// handleIndexStats answers GET /<index>/_stats[/<metrics>]: per index the
// documents and indexing operations of its primaries and of all copies,
// and with level=shards each started copy's (its routing: state, primary,
// node id). index_total counts what a copy indexed as primary and as
// replica since its node (re)started, as the server does.
func (q *request) handleIndexStats(expr string) {
	c := q.n.c
	ims, ok := q.rlockIndices(expr)
	if !ok {
		return
	}
	shardLevel := q.q.Get("level") == "shards"
	type sums struct{ docs, indexed int64 }
	stat := func(s sums) map[string]any {
		return map[string]any{"docs": map[string]any{"count": s.docs, "deleted": 0}, "indexing": map[string]any{"index_total": s.indexed}}
	}
	indices := map[string]any{}
	var allPrim, allTotal sums
	copies, started := 0, 0
	for _, im := range ims {
		var prim, tot sums
		shards := map[string]any{}
		for _, g := range im.shards {
			var rows []any
			for _, sc := range g.copies {
				copies++
				if sc.node == nil || (sc.state != StateStarted && sc.state != StateRelocating) {
					continue
				}
				started++
				var s sums
				if st := sc.node.store(im.uuid, g.num); st != nil {
					p, r := st.indexed()
					s = sums{int64(st.count()), p + r}
				}
				tot.docs, tot.indexed = tot.docs+s.docs, tot.indexed+s.indexed
				if sc.primary {
					prim.docs, prim.indexed = prim.docs+s.docs, prim.indexed+s.indexed
				}
				row := stat(s)
				row["routing"] = map[string]any{"state": sc.state, "primary": sc.primary, "node": sc.node.id, "relocating_node": nil}
				rows = append(rows, row)
			}
			shards[strconv.Itoa(g.num)] = rows
		}
		allPrim.docs, allPrim.indexed = allPrim.docs+prim.docs, allPrim.indexed+prim.indexed
		allTotal.docs, allTotal.indexed = allTotal.docs+tot.docs, allTotal.indexed+tot.indexed
		ix := map[string]any{"uuid": im.uuid, "primaries": stat(prim), "total": stat(tot)}
		if shardLevel {
			ix["shards"] = shards
		}
		indices[im.name] = ix
	}
	c.mu.RUnlock()
	q.replyJSON(200, map[string]any{
		"_shards": map[string]any{"total": copies, "successful": started, "failed": 0},
		"_all":    map[string]any{"primaries": stat(allPrim), "total": stat(allTotal)},
		"indices": indices,
	})
}
