package ossim

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// handleAdmin serves /_ossim/...: counters and faults.
//
//	GET  /_ossim/stats                         every node's NodeStats
//	POST /_ossim/stats/_reset                  zero the counters
//	GET  /_ossim/shards/<index>                shard copies (node indices)
//	POST /_ossim/nodes/<i>/stop
//	POST /_ossim/nodes/<i>/restart
//	POST /_ossim/nodes/<i>/latency?mean=8ms&jitter=2ms
//	POST /_ossim/nodes/<i>/slowness?k=4
//	POST /_ossim/nodes/<i>/queue?size=N
//	POST /_ossim/nodes/<i>/blackhole?on=true|false
//	POST /_ossim/nodes/<i>/reject_next?k=N
//	POST /_ossim/nodes/<i>/reject_next_bulks?k=N
//	POST /_ossim/relocate?index=<name>&shard=<n>&to=<node index>
//
// A fault request against the node it stops or blackholes is answered
// before the fault takes effect.
func (q *request) handleAdmin(segs []string) {
	c := q.n.c
	m := q.r.Method
	post := m == http.MethodPost || m == http.MethodPut
	if len(segs) == 0 {
		q.noHandler()
		return
	}
	switch segs[0] {
	case "internal":
		if post && len(segs) == 2 {
			switch segs[1] {
			case "primary":
				q.handleInternalPrimary()
				return
			case "replica":
				q.handleInternalReplica()
				return
			}
		}
	case "stats":
		if len(segs) == 1 && m == http.MethodGet {
			q.replyJSON(200, map[string]any{"nodes": c.Stats()})
			return
		}
		if len(segs) == 2 && segs[1] == "_reset" && post {
			c.ResetStats()
			q.reply(200, []byte(`{"acknowledged":true}`))
			return
		}
	case "shards":
		if len(segs) == 2 && m == http.MethodGet {
			sh, err := c.Shards(segs[1])
			if err != nil {
				q.fail(404, "index_not_found_exception", err.Error())
				return
			}
			out := make([]any, 0, len(sh))
			for _, s := range sh {
				out = append(out, map[string]any{"index": s.Index, "shard": s.Shard, "primary": s.Primary, "state": s.State, "node": s.Node, "relocating_to": s.RelocTo})
			}
			q.replyJSON(200, out)
			return
		}
	case "relocate":
		if post && len(segs) == 1 {
			shard, err1 := strconv.Atoi(q.q.Get("shard"))
			to, err2 := strconv.Atoi(q.q.Get("to"))
			if err1 != nil || err2 != nil {
				q.fail(400, "illegal_argument_exception", "relocate needs integer parameters shard and to")
				return
			}
			if err := c.Relocate(q.q.Get("index"), shard, to); err != nil {
				q.fail(400, "illegal_argument_exception", err.Error())
				return
			}
			q.reply(200, []byte(`{"acknowledged":true}`))
			return
		}
	case "nodes":
		if post && len(segs) == 3 {
			i, err := strconv.Atoi(segs[1])
			if err != nil {
				q.fail(400, "illegal_argument_exception", "node must be an index, got ["+segs[1]+"]")
				return
			}
			q.adminNode(i, segs[2])
			return
		}
	}
	q.noHandler()
}

func (q *request) adminNode(i int, what string) {
	c := q.n.c
	if _, err := c.nodeAt(i); err != nil {
		q.fail(400, "illegal_argument_exception", err.Error())
		return
	}
	var err error
	self := c.nodes[i] == q.n
	switch what {
	case "stop", "restart":
		f := func() {
			if what == "stop" {
				_ = c.StopNode(i)
			} else {
				_ = c.RestartNode(i)
			}
		}
		if self {
			// Answer first: stopping closes this very connection.
			q.reply(200, []byte(`{"acknowledged":true}`))
			if fl, ok := q.w.(http.Flusher); ok {
				fl.Flush()
			}
			go f()
			return
		}
		f()
	case "latency":
		var mean, jit time.Duration
		mean, err = parseDuration(q.q.Get("mean"))
		if err == nil {
			jit, err = parseDuration(q.q.Get("jitter"))
		}
		if err == nil {
			err = c.SetLatency(i, mean, jit)
		}
	case "queue":
		var n int
		n, err = strconv.Atoi(q.q.Get("size"))
		if err == nil {
			err = c.SetQueue(i, n)
		}
	case "blackhole":
		on := q.q.Get("on") != "false"
		if self && on {
			q.reply(200, []byte(`{"acknowledged":true}`))
			if fl, ok := q.w.(http.Flusher); ok {
				fl.Flush()
			}
		}
		err = c.Blackhole(i, on)
		if self && on {
			return
		}
	case "reject_next":
		var k int
		k, err = strconv.Atoi(q.q.Get("k"))
		if err == nil {
			err = c.RejectNext(i, k)
		}
	case "slowness":
		var k float64
		k, err = strconv.ParseFloat(q.q.Get("k"), 64)
		if err == nil {
			err = c.SetSlowness(i, k)
		}
	case "reject_next_bulks":
		var k int
		k, err = strconv.Atoi(q.q.Get("k"))
		if err == nil {
			err = c.RejectNextBulks(i, k)
		}
	default:
		q.noHandler()
		return
	}
	if err != nil {
		q.fail(400, "illegal_argument_exception", err.Error())
		return
	}
	q.reply(200, []byte(`{"acknowledged":true}`))
}

// parseDuration accepts Go durations (8ms, 1.5s) and OpenSearch time
// values; "" is zero.
func parseDuration(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		return d, nil
	}
	return parseTimeValue(s)
}

// handleReroute serves POST /_cluster/reroute with "move" commands
// ({"index","shard","from_node","to_node"}, nodes by name or id); other
// commands are refused.
func (q *request) handleReroute() {
	body, ok := q.decodeBody()
	if !ok {
		return
	}
	c := q.n.c
	cmds, _ := body["commands"].([]any)
	for _, x := range cmds {
		m, _ := x.(map[string]any)
		mv, ok := m["move"].(map[string]any)
		if !ok || len(m) != 1 {
			q.fail(400, "illegal_argument_exception", "ossim: only the move reroute command is supported")
			return
		}
		index, _ := mv["index"].(string)
		shard, _ := toScalar(mv["shard"])
		from, to := c.nodeByName(mv["from_node"]), c.nodeByName(mv["to_node"])
		if from < 0 || to < 0 {
			q.fail(400, "illegal_argument_exception", fmt.Sprintf("failed to resolve [from_node] %v or [to_node] %v", mv["from_node"], mv["to_node"]))
			return
		}
		if err := c.relocate(index, int(shard.num), from, to); err != nil {
			q.fail(400, "illegal_argument_exception", err.Error())
			return
		}
	}
	q.reply(200, []byte(`{"acknowledged":true}`))
}

// nodeByName returns the index of the node with that name or id, or -1.
func (c *Cluster) nodeByName(v any) int {
	s, _ := v.(string)
	for _, n := range c.nodes {
		if s != "" && (n.name == s || n.id == s) {
			return n.idx
		}
	}
	return -1
}

// handleClusterSettings accepts PUT /_cluster/settings and echoes it; the
// emulator has no dynamic cluster settings.
func (q *request) handleClusterSettings() {
	body, ok := q.decodeBody()
	if !ok {
		return
	}
	out := map[string]any{"acknowledged": true, "persistent": map[string]any{}, "transient": map[string]any{}}
	for _, k := range []string{"persistent", "transient"} {
		if v, ok := body[k].(map[string]any); ok {
			out[k] = v
		}
	}
	q.replyJSON(200, out)
}
