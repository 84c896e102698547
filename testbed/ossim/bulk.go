package ossim

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/opensearchrouted/opensearchrouted/internal/routing"
)

// bulkItem is one item of a bulk request; res is filled by whoever
// executes it. Items keep request order.
type bulkItem struct {
	op      string
	name    string // index name as the client gave it
	id      string
	hasID   bool
	routing string
	source  []byte
	// nullID: an item without id nor routing for an index that requires
	// routing, which 2.19.6 answers with a 500 for the whole request
	// (null_pointer_exception "id must not be null", as building the
	// routing_missing_exception needs the id it does not have yet).
	nullID bool
	doc    []byte // update: the partial document (see update.go)

	im    *indexMeta
	shard int

	res itemResult
}

type itemResult struct {
	status     int
	index      string // concrete index ("" → name)
	result     string // created, updated, deleted, not_found
	version    int64
	seqNo      int64
	term       int64
	total, ok  int
	errType    string
	errReason  string
	errIndex   bool   // add index/shard/index_uuid to the error
	causedBy   string // error.caused_by.type, "" for none
	cause      *errCause
	idNull     bool
	shardLabel int
	indexUUID  string
}

// osErr is an OpenSearch-shaped error.
type osErr struct {
	status      int
	typ, reason string
	index       string
	uuid        string // index_uuid; "_na_" when empty and index is set
	resType     string // resource.type of index_not_found_exception
	cause       *errCause
}

func (e *osErr) Error() string { return e.typ + ": " + e.reason }

var idSeq atomic.Uint64
var idPrefix = randomID(4)

// autoID returns a 20-character URL-safe id, unique within the process.
func autoID() string {
	var b [12]byte
	binary.BigEndian.PutUint64(b[:8], uint64(time.Now().UnixNano()))
	binary.BigEndian.PutUint32(b[8:], uint32(idSeq.Add(1)))
	return idPrefix + base64.RawURLEncoding.EncodeToString(b[:])
}

// handleBulk serves POST /_bulk and /<index>/_bulk.
func (q *request) handleBulk(defIndex string) {
	n := q.n
	start := time.Now()
	n.st.bulkRequests.Add(1)
	if takeOne(&n.rejectNextBulks) {
		n.st.rejectedBulks.Add(1)
		n.write.rejected.Add(1)
		q.fail(429, "rejected_execution_exception", fmt.Sprintf("rejected execution of coordinating operation [coordinating_and_primary_bytes=0, replica_bytes=0, all_bytes=0, coordinating_operation_bytes=%d, max_coordinating_and_primary_bytes=0] on node %s", len(q.body), n.name))
		return
	}
	items, perr := parseBulk(q.body, defIndex, q.q.Get("routing"))
	if perr != nil {
		q.fail(perr.status, perr.typ, perr.reason)
		return
	}
	n.st.itemsReceived.Add(int64(len(items)))
	n.c.resolveItems(items)
	for _, it := range items {
		if it.nullID {
			q.fail(500, "null_pointer_exception", "id must not be null")
			return
		}
	}
	n.executeItems(q.r.Context(), items)
	// refresh=true (or bare ?refresh) forces a refresh, which the response
	// reports per item; the emulator's documents are always visible.
	forced := q.q.Has("refresh") && (q.q.Get("refresh") == "" || q.q.Get("refresh") == "true")
	q.reply(200, appendBulkResponse(make([]byte, 0, 64+len(items)*200), items, time.Since(start), forced))
}

// parseBulk splits an NDJSON bulk body into items.
func parseBulk(body []byte, defIndex, defRouting string) ([]*bulkItem, *osErr) {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil, &osErr{status: 400, typ: "parse_exception", reason: "request body is required"}
	}
	if body[len(body)-1] != '\n' {
		return nil, &osErr{status: 400, typ: "illegal_argument_exception", reason: "The bulk request must be terminated by a newline [\\n]"}
	}
	items := make([]*bulkItem, 0, bytes.Count(body, []byte{'\n'})/2+1)
	lineNo := 0
	for pos := 0; pos < len(body); {
		end := bytes.IndexByte(body[pos:], '\n') + pos
		line := body[pos:end]
		pos = end + 1
		lineNo++
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		a, err := parseAction(line, lineNo)
		if err != nil {
			var pe *bulkParseError
			errors.As(err, &pe)
			return nil, &osErr{status: 400, typ: pe.typ, reason: pe.reason}
		}
		it := &bulkItem{op: a.op, name: a.index, id: a.id, hasID: a.hasID, routing: a.routing}
		if it.name == "" {
			it.name = defIndex
		}
		if it.routing == "" {
			it.routing = defRouting
		}
		switch a.op {
		case "index", "create", "update":
			if a.op == "index" && a.opType == "create" {
				it.op = "create"
			}
			if pos >= len(body) {
				return nil, &osErr{status: 400, typ: "illegal_argument_exception", reason: "The bulk request must be terminated by a newline [\\n]"}
			}
			end = bytes.IndexByte(body[pos:], '\n') + pos
			it.source = body[pos:end:end]
			pos = end + 1
			lineNo++
		case "delete":
		default:
			return nil, &osErr{status: 400, typ: "illegal_argument_exception", reason: fmt.Sprintf("Malformed action/metadata line [%d], expected one of [create, delete, index, update] but found [%s]", lineNo, a.op)}
		}
		if it.name == "" {
			return nil, &osErr{status: 400, typ: "action_request_validation_exception", reason: fmt.Sprintf("Validation Failed: 1: index is missing for item %d;", len(items)+1)}
		}
		if it.op != "delete" && it.hasID && it.id == "" {
			return nil, &osErr{status: 400, typ: "action_request_validation_exception", reason: "Validation Failed: 1: if _id is specified it must not be empty;"}
		}
		if it.op == "update" {
			doc, e := updateDoc(it.source)
			if e != nil && e.typ != "mapper_parsing_exception" {
				return nil, e // the server parses update bodies with the request
			}
			it.doc = doc
		}
		if (it.op == "delete" || it.op == "update") && it.id == "" {
			return nil, &osErr{status: 400, typ: "action_request_validation_exception", reason: "Validation Failed: 1: id is missing;"}
		}
		items = append(items, it)
	}
	if len(items) == 0 {
		return nil, &osErr{status: 400, typ: "action_request_validation_exception", reason: "Validation Failed: 1: no requests added;"}
	}
	if e := validateIDs(items); e != nil {
		return nil, e
	}
	return items, nil
}

// validateIDs refuses the whole request when an index or create item's
// _id is over 512 bytes, naming each such id, as the server does.
func validateIDs(items []*bulkItem) *osErr {
	var b []byte
	n := 0
	for _, it := range items {
		if it.op != "delete" && len(it.id) > 512 {
			n++
			b = fmt.Appendf(b, "%d: id [%s] is too long, must be no longer than 512 bytes but was: %d;", n, it.id, len(it.id))
		}
	}
	if n == 0 {
		return nil
	}
	return &osErr{status: 400, typ: "action_request_validation_exception", reason: "Validation Failed: " + string(b)}
}

func (it *bulkItem) failWith(e *osErr) {
	it.res = itemResult{status: e.status, errType: e.typ, errReason: e.reason, index: e.index, cause: e.cause}
}

// sourceErrorCause is the caused_by type OpenSearch 2.19 gives a source
// that is not one JSON object (checked on the real server).
func sourceErrorCause(src []byte) string {
	if i := skipWS(src, 0); i >= len(src) || src[i] != '{' {
		return "not_x_content_exception"
	}
	var raw json.RawMessage
	if err := json.Unmarshal(src, &raw); err != nil && strings.Contains(err.Error(), "unexpected end of JSON input") {
		return "json_e_o_f_exception"
	}
	return "json_parse_exception"
}

// validSource reports whether src is one JSON object.
func validSource(src []byte) bool { return validObject(src) }

// resolveItems finds each item's concrete index and shard, creating
// indices and data streams on first write. Items that cannot be written
// get their error result here.
func (c *Cluster) resolveItems(items []*bulkItem) {
	c.mu.RLock()
	missing := false
	for _, it := range items {
		if !c.resolveItemLocked(it, false) {
			missing = true
		}
	}
	c.mu.RUnlock()
	if !missing {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, it := range items {
		if it.im == nil && it.res.status == 0 {
			c.resolveItemLocked(it, true)
		}
	}
}

// resolveItemLocked resolves one item; with create false it returns false
// when the index does not exist yet. Must hold c.mu (write lock if create).
func (c *Cluster) resolveItemLocked(it *bulkItem, create bool) bool {
	if it.op == "update" && it.doc == nil {
		doc, e := updateDoc(it.source)
		if e != nil {
			it.failWith(e)
			it.res.index = c.writeIndexName(it.name)
			return true
		}
		it.doc = doc
	}
	if it.op != "delete" && !validSource(it.source) {
		it.failWith(&osErr{status: 400, typ: "mapper_parsing_exception", reason: "failed to parse"})
		it.res.causedBy = sourceErrorCause(it.source)
		it.res.index = c.writeIndexName(it.name)
		return true
	}
	var im *indexMeta
	if wi, r, e, ok := c.aliasWriteLocked(it.name); ok {
		if e != nil {
			it.failWith(e)
			return true
		}
		if r != "" {
			if it.routing != "" && it.routing != r {
				it.failWith(&osErr{status: 400, typ: "illegal_argument_exception", reason: fmt.Sprintf("Alias [%s] has index routing associated with it [%s], and was provided with routing value [%s], rejecting operation", it.name, r, it.routing), index: wi.name})
				return true
			}
			it.routing = r
		}
		im = wi
	} else if ds := c.dataStreams[it.name]; ds != nil {
		wi := ds.indices[len(ds.indices)-1].name
		if it.op != "create" {
			it.failWith(&osErr{status: 400, typ: "illegal_argument_exception", reason: "only write ops with an op_type of create are allowed in data streams", index: wi})
			return true
		}
		if it.routing != "" {
			it.failWith(&osErr{status: 400, typ: "illegal_argument_exception", reason: fmt.Sprintf("index request targeting data stream [%s] specifies a custom routing. target the backing indices directly or remove the custom routing.", it.name), index: wi})
			return true
		}
		if !bytes.Contains(it.source, []byte(`"@timestamp"`)) {
			it.failWith(&osErr{status: 400, typ: "mapper_parsing_exception", reason: "documents must contain a single-valued timestamp field '@timestamp' of date type", index: ds.indices[len(ds.indices)-1].name})
			it.res.errIndex = true
			return true
		}
		im = ds.indices[len(ds.indices)-1]
	} else if im = c.indices[it.name]; im == nil {
		if it.op == "delete" {
			it.failWith(&osErr{status: 404, typ: "index_not_found_exception", reason: "no such index [" + it.name + "]", index: it.name})
			return true
		}
		if !create {
			return false
		}
		var e *osErr
		im, e = c.autoCreateLocked(it.name)
		if e != nil {
			it.failWith(e)
			return true
		}
		if im.dataStream != "" {
			return c.resolveItemLocked(it, create)
		}
	} else if im.dataStream != "" && it.op == "index" {
		it.failWith(&osErr{status: 400, typ: "illegal_argument_exception", reason: fmt.Sprintf("index request with op_type=index and no if_primary_term and if_seq_no set targeting backing indices is disallowed, target corresponding data stream [%s] instead", im.dataStream), index: im.name})
		return true
	}
	if im.blocksWrite {
		it.failWith(&osErr{status: 403, typ: "cluster_block_exception", reason: "index [" + im.name + "] blocked by: [FORBIDDEN/8/index write (api)];", index: im.name})
		return true
	}
	if im.layout.PartitionSize > 1 && !im.routingRequired {
		it.failWith(&osErr{status: 400, typ: "illegal_argument_exception", reason: "mapping type [_doc] must have routing required for partitioned index [" + im.name + "]", index: im.name})
		return true
	}
	if !it.hasID && it.routing == "" && im.routingRequired {
		it.nullID = true
		return true
	}
	if !it.hasID {
		it.id, it.hasID = autoID(), true
	}
	shard, err := im.layout.Shard(it.id, it.routing)
	if err == nil && im.routingRequired && it.routing == "" {
		err = routing.ErrRoutingRequired{PartitionSize: 1}
	}
	if err != nil {
		// 2.19.6: the index and index_uuid "_na_", no shard.
		it.failWith(&osErr{status: 400, typ: "routing_missing_exception", reason: fmt.Sprintf("routing is required for [%s]/[%s]", im.name, it.id), index: im.name})
		return true
	}
	if it.op != "delete" && it.op != "update" && im.mapping != nil {
		if e := im.mapping.check(it.source, it.id); e != nil {
			it.failWith(e)
			it.res.index = im.name
			return true
		}
	}
	if it.op != "delete" && len(it.routing) > maxTermBytes {
		// _routing is indexed as one term: Lucene's limit applies.
		w := docWalk{}
		w.checkTerm(&mfield{}, "_routing", it.routing)
		it.failWith(w.termErr)
		it.res.index = im.name
		return true
	}
	it.im, it.shard = im, shard
	return true
}

// maxTermBytes is Lucene's limit on one indexed term, in bytes of UTF-8.
const maxTermBytes = 32766

// shardGroupReq is the items of one bulk that go to one shard.
type shardGroupReq struct {
	im    *indexMeta
	shard int
	items []*bulkItem
}

// executeItems runs every resolved item, one shard group at a time per
// group, groups in parallel.
func (n *Node) executeItems(ctx context.Context, items []*bulkItem) {
	type key struct {
		im    *indexMeta
		shard int
	}
	var groups []*shardGroupReq
	idx := map[key]int{}
	for _, it := range items {
		if it.im == nil {
			continue
		}
		k := key{it.im, it.shard}
		i, ok := idx[k]
		if !ok {
			i = len(groups)
			idx[k] = i
			groups = append(groups, &shardGroupReq{im: it.im, shard: it.shard})
		}
		groups[i].items = append(groups[i].items, it)
	}
	if len(groups) == 1 {
		n.runGroup(ctx, groups[0])
		return
	}
	var wg sync.WaitGroup
	for _, g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.runGroup(ctx, g)
		}()
	}
	wg.Wait()
}

// primaryOf returns the node holding the primary of uuid/shard (nil when
// unassigned) and whether the index still exists.
func (c *Cluster) primaryOf(im *indexMeta, shard int) (*Node, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if c.indices[im.name] != im {
		return nil, false
	}
	p := im.shards[shard].primaryCopy()
	if p == nil || p.node == nil {
		return nil, true
	}
	return p.node, true
}

// runGroup sends one shard group to its primary (locally or over HTTP),
// retrying while the primary is unassigned, unreachable or moved, for at
// most PrimaryWait.
func (n *Node) runGroup(ctx context.Context, g *shardGroupReq) {
	deadline := time.Now().Add(n.c.opts.PrimaryWait)
	var lastErr string
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			n.st.forwardRetries.Add(1)
		}
		prim, exists := n.c.primaryOf(g.im, g.shard)
		if !exists {
			for _, it := range g.items {
				it.failWith(&osErr{status: 404, typ: "index_not_found_exception", reason: "no such index [" + g.im.name + "]", index: g.im.name})
			}
			return
		}
		switch {
		case prim == nil:
			lastErr = "primary shard is not active"
		case prim == n:
			if n.executePrimary(ctx, g.im, g.shard, g.items) {
				return
			}
			lastErr = "primary moved"
		default:
			err := n.forward(ctx, prim, g)
			if err == nil {
				return
			}
			lastErr = err.Error()
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	n.st.unavailableItems.Add(int64(len(g.items)))
	reason := fmt.Sprintf("[%s][%d] primary shard is not active Timeout: [%s], request: [BulkShardRequest [[%s][%d]] containing [%d] requests] (%s)",
		g.im.name, g.shard, n.c.opts.PrimaryWait, g.im.name, g.shard, len(g.items), lastErr)
	for _, it := range g.items {
		it.res = itemResult{status: 503, index: g.im.name, errType: "unavailable_shards_exception", errReason: reason,
			errIndex: true, shardLabel: g.shard, indexUUID: g.im.uuid}
	}
}

// replTarget is a copy a primary write is replicated to.
type replTarget struct {
	node *Node
	sc   *shardCopy
}

// executePrimary runs a shard group on this node as primary. It returns
// false (and touches no item) when this node does not hold the primary.
func (n *Node) executePrimary(ctx context.Context, im *indexMeta, shard int, items []*bulkItem) bool {
	c := n.c
	c.mu.RLock()
	g := im.shards[shard]
	prim := g.primaryCopy()
	if c.indices[im.name] != im || prim == nil || prim.node != n || !n.Running() {
		c.mu.RUnlock()
		return false
	}
	term := g.primaryTerm
	var targets []replTarget
	for _, sc := range g.copies {
		if sc != prim && sc.node != nil && (sc.state == StateStarted || sc.state == StateInitializing || sc.state == StateRelocating) {
			targets = append(targets, replTarget{sc.node, sc})
		}
		if sc.relocTo != nil {
			targets = append(targets, replTarget{sc.relocTo, sc})
		}
	}
	total := 1 + im.replicas
	c.mu.RUnlock()

	if rej := n.takeReject(); rej || !n.write.acquire(ctx, false) {
		if rej {
			n.write.rejected.Add(1)
		}
		n.st.rejectedGroups.Add(1)
		n.st.rejectedItems.Add(int64(len(items)))
		reason := fmt.Sprintf("rejected execution of primary shard operation [%s][%d] on OpenSearchThreadPoolExecutor[name = %s/write, pool size = %d, queue capacity = %d]",
			im.name, shard, n.name, n.write.size, n.write.queueSize.Load())
		for _, it := range items {
			it.res = itemResult{status: 429, index: im.name, errType: "rejected_execution_exception", errReason: reason}
		}
		return true
	}
	n.serve(ctx, len(items))
	st := n.ensureStore(im, shard)
	st.mu.Lock()
	before := st.asPrimary
	for _, it := range items {
		r := itemResult{index: im.name, term: term, total: total, ok: 1}
		pos, exists := st.lookupLocked(it.id)
		if it.op == "update" {
			res, write := executeUpdate(st, im, shard, it, r)
			if !write {
				it.res = res
				continue
			}
			r = res
		}
		switch it.op {
		case "create":
			if exists {
				cur := st.docs[pos].version
				it.res = itemResult{status: 409, index: im.name, errType: "version_conflict_engine_exception",
					errReason: fmt.Sprintf("[%s]: version conflict, document already exists (current version [%d])", it.id, cur),
					errIndex:  true, shardLabel: shard, indexUUID: im.uuid}
				continue
			}
			r.status, r.result, r.version = 201, "created", 1
		}
		if it.op != "delete" && im.mapping != nil {
			// Refused by Lucene after the mapping update: the operation
			// still takes a sequence number, as on the server.
			if e := im.mapping.termError(it.source, it.id); e != nil {
				st.maxSeq++
				it.res = itemResult{status: e.status, index: im.name, errType: e.typ, errReason: e.reason, cause: e.cause}
				continue
			}
		}
		switch it.op {
		case "index":
			if exists {
				r.status, r.result, r.version = 200, "updated", st.docs[pos].version+1
			} else {
				r.status, r.result, r.version = 201, "created", 1
			}
		case "delete":
			if exists {
				r.status, r.result, r.version = 200, "deleted", st.docs[pos].version+1
			} else {
				r.status, r.result, r.version = 404, "not_found", 1
			}
		}
		st.maxSeq++
		r.seqNo = st.maxSeq
		if it.op == "delete" {
			st.deleteLocked(it.id)
		} else {
			st.putAtLocked(pos, exists, storedDoc{id: it.id, routing: it.routing, source: it.source, seqNo: r.seqNo, version: r.version, term: term})
			st.asPrimary++
		}
		it.res = r
	}
	indexed := st.asPrimary - before
	st.mu.Unlock()
	n.write.release()
	n.st.indexedPrimary.Add(indexed)
	n.st.primaryWrites.Add(1)
	n.st.itemsPrimary.Add(int64(len(items)))

	if len(targets) > 0 {
		okCount := n.replicate(ctx, im, shard, term, items, targets)
		for _, it := range items {
			if it.res.errType == "" && it.res.result != "noop" {
				it.res.ok += okCount
			}
		}
	}
	return true
}

func (n *Node) takeReject() bool { return takeOne(&n.rejectNext) }

// takeOne decrements a positive counter and reports whether it did.
func takeOne(a *atomic.Int64) bool {
	for {
		k := a.Load()
		if k <= 0 {
			return false
		}
		if a.CompareAndSwap(k, k-1) {
			return true
		}
	}
}

// replicate sends the executed operations to every target in parallel and
// returns how many STARTED copies acknowledged. A copy that fails is
// failed in the cluster state (and reallocated), as OpenSearch does.
func (n *Node) replicate(ctx context.Context, im *indexMeta, shard int, term int64, items []*bulkItem, targets []replTarget) int {
	var body []byte
	ops := 0
	for _, it := range items {
		if it.res.errType != "" || it.res.result == "noop" {
			continue
		}
		ops++
		if it.op == "delete" {
			body = append(body, `{"delete":{"_id":`...)
		} else {
			body = append(body, `{"index":{"_id":`...)
		}
		body = appendStr(body, it.id)
		if it.routing != "" {
			body = append(body, `,"routing":`...)
			body = appendStr(body, it.routing)
		}
		body = append(body, `,"version":`...)
		body = strconv.AppendInt(body, it.res.version, 10)
		body = append(body, `,"if_seq_no":`...)
		body = strconv.AppendInt(body, it.res.seqNo, 10)
		body = append(body, "}}\n"...)
		if it.op != "delete" {
			body = append(body, it.source...)
			body = append(body, '\n')
		}
	}
	if ops == 0 {
		return 0
	}
	path := "/_ossim/internal/replica?uuid=" + im.uuid + "&shard=" + strconv.Itoa(shard) + "&term=" + strconv.FormatInt(term, 10) + "&ops=" + strconv.Itoa(ops)
	var okCount atomic.Int64
	var wg sync.WaitGroup
	for _, t := range targets {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, status, err := n.hop(ctx, t.node, path, body)
			if err == nil && status == 200 {
				n.c.mu.RLock() // copy states change under c.mu (finishRecovery)
				state := t.sc.state
				n.c.mu.RUnlock()
				if state == StateStarted || state == StateRelocating {
					okCount.Add(1)
				}
				return
			}
			n.st.replicaFailures.Add(1)
			n.c.failCopy(im, shard, t.node)
		}()
	}
	wg.Wait()
	return int(okCount.Load())
}

// failCopy unassigns the copy of im/shard on node (a failed replica) and
// reallocates it.
func (c *Cluster) failCopy(im *indexMeta, shard int, node *Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.indices[im.name] != im {
		return
	}
	for _, sc := range im.shards[shard].copies {
		if sc.relocTo == node {
			sc.relocTo = nil
			sc.state = StateStarted
			sc.gen++
		}
		if sc.node == node && !sc.primary {
			sc.node, sc.state = nil, StateUnassigned
			sc.gen++
		}
	}
	node.dropStore(im.uuid, shard)
	c.reallocate()
}

// hop sends one internal request to node to, paying the one-way latency
// both ways, and returns the response body.
func (n *Node) hop(ctx context.Context, to *Node, path string, body []byte) ([]byte, int, error) {
	lat := n.c.hopLatency(n, to)
	if lat > 0 {
		time.Sleep(lat)
	}
	n.st.hopRequests.Add(1)
	n.st.hopBytes.Add(int64(len(body)))
	n.st.txCount.Add(1)
	n.st.txBytes.Add(int64(len(body)))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, to.URL()+path+"&from="+strconv.Itoa(n.idx), bytes.NewReader(body))
	if err != nil {
		return nil, 0, err
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	resp, err := n.c.hc.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	rb, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, 0, err
	}
	n.st.rxCount.Add(1)
	n.st.rxBytes.Add(int64(len(rb)))
	if lat > 0 {
		time.Sleep(lat)
	}
	return rb, resp.StatusCode, nil
}

// wireResult is one item's outcome on the internal primary protocol.
type wireResult struct {
	St  int         `json:"st"`
	Idx string      `json:"i,omitempty"`
	Res string      `json:"r,omitempty"`
	V   int64       `json:"v,omitempty"`
	Q   int64       `json:"q,omitempty"`
	T   int64       `json:"t,omitempty"`
	Tot int         `json:"tot,omitempty"`
	OK  int         `json:"ok,omitempty"`
	ET  string      `json:"et,omitempty"`
	ER  string      `json:"er,omitempty"`
	EI  bool        `json:"ei,omitempty"`
	Sh  int         `json:"sh,omitempty"`
	U   string      `json:"u,omitempty"`
	C   []wireCause `json:"c,omitempty"`
}

// wireCause is one link of an error's caused_by chain.
type wireCause struct {
	T string `json:"t"`
	R string `json:"r"`
}

func toWire(c *errCause) []wireCause {
	var out []wireCause
	for ; c != nil; c = c.cause {
		out = append(out, wireCause{c.typ, c.reason})
	}
	return out
}

func fromWire(w []wireCause) *errCause {
	var c *errCause
	for i := len(w) - 1; i >= 0; i-- {
		c = &errCause{typ: w[i].T, reason: w[i].R, cause: c}
	}
	return c
}

type wireResponse struct {
	NotPrimary bool         `json:"not_primary,omitempty"`
	Results    []wireResult `json:"results"`
}

// forward sends a shard group to the node holding its primary.
func (n *Node) forward(ctx context.Context, to *Node, g *shardGroupReq) error {
	var body []byte
	for _, it := range g.items {
		body = append(body, `{"`...)
		body = append(body, it.op...)
		body = append(body, `":{"_id":`...)
		body = appendStr(body, it.id)
		if it.routing != "" {
			body = append(body, `,"routing":`...)
			body = appendStr(body, it.routing)
		}
		body = append(body, "}}\n"...)
		if it.op != "delete" {
			body = append(body, it.source...)
			body = append(body, '\n')
		}
	}
	n.st.groupsForwarded.Add(1)
	n.st.itemsForwarded.Add(int64(len(g.items)))
	path := "/_ossim/internal/primary?uuid=" + g.im.uuid + "&shard=" + strconv.Itoa(g.shard)
	rb, status, err := n.hop(ctx, to, path, body)
	if err != nil {
		return err
	}
	if status != 200 {
		return fmt.Errorf("primary node %s answered %d", to.name, status)
	}
	var wr wireResponse
	if err := json.Unmarshal(rb, &wr); err != nil {
		return fmt.Errorf("primary node %s: bad response: %w", to.name, err)
	}
	if wr.NotPrimary {
		return fmt.Errorf("node %s no longer holds the primary", to.name)
	}
	if len(wr.Results) != len(g.items) {
		return fmt.Errorf("primary node %s returned %d results for %d items", to.name, len(wr.Results), len(g.items))
	}
	for i, it := range g.items {
		w := wr.Results[i]
		it.res = itemResult{status: w.St, index: w.Idx, result: w.Res, version: w.V, seqNo: w.Q, term: w.T,
			total: w.Tot, ok: w.OK, errType: w.ET, errReason: w.ER, errIndex: w.EI, shardLabel: w.Sh, indexUUID: w.U, cause: fromWire(w.C)}
	}
	return nil
}

// handleInternalPrimary serves a forwarded shard group.
func (q *request) handleInternalPrimary() {
	n := q.n
	n.st.rxCount.Add(1)
	n.st.rxBytes.Add(int64(len(q.body)))
	im, shard, ok := n.c.indexShardByUUID(q.q.Get("uuid"), q.q.Get("shard"))
	if !ok {
		q.replyJSON(200, wireResponse{NotPrimary: true})
		return
	}
	items, perr := parseBulk(q.body, im.name, "")
	if perr != nil {
		q.fail(perr.status, perr.typ, perr.reason)
		return
	}
	for _, it := range items {
		it.im, it.shard = im, shard
	}
	if !n.executePrimary(q.r.Context(), im, shard, items) {
		q.replyJSON(200, wireResponse{NotPrimary: true})
		return
	}
	out := wireResponse{Results: make([]wireResult, len(items))}
	for i, it := range items {
		r := it.res
		out.Results[i] = wireResult{St: r.status, Idx: r.index, Res: r.result, V: r.version, Q: r.seqNo, T: r.term,
			Tot: r.total, OK: r.ok, ET: r.errType, ER: r.errReason, EI: r.errIndex, Sh: r.shardLabel, U: r.indexUUID, C: toWire(r.cause)}
	}
	q.replyJSON(200, out)
}

// handleInternalReplica applies operations replicated by a primary.
func (q *request) handleInternalReplica() {
	n := q.n
	n.st.rxCount.Add(1)
	n.st.rxBytes.Add(int64(len(q.body)))
	uuid := q.q.Get("uuid")
	shard, _ := strconv.Atoi(q.q.Get("shard"))
	term, _ := strconv.ParseInt(q.q.Get("term"), 10, 64)
	st := n.store(uuid, shard)
	if st == nil {
		q.fail(404, "shard_not_found_exception", fmt.Sprintf("no copy of [%s][%d] on %s", uuid, shard, n.name))
		return
	}
	n.write.acquire(context.Background(), true)
	defer n.write.release()
	ops, _ := strconv.Atoi(q.q.Get("ops"))
	n.serve(q.r.Context(), ops)
	count := 0
	st.mu.Lock()
	before := st.asReplica
	for pos, lineNo := 0, 0; pos < len(q.body); {
		end := bytes.IndexByte(q.body[pos:], '\n') + pos
		if end < pos {
			break
		}
		line := q.body[pos:end]
		pos = end + 1
		lineNo++
		a, err := parseAction(line, lineNo)
		if err != nil {
			st.mu.Unlock()
			q.fail(400, "illegal_argument_exception", "bad replica request: "+err.Error())
			return
		}
		d := storedDoc{id: a.id, routing: a.routing, version: a.version, seqNo: a.seqNo, term: term}
		if a.op != "delete" {
			end = bytes.IndexByte(q.body[pos:], '\n') + pos
			d.source = q.body[pos:end:end]
			pos = end + 1
		}
		st.applyReplicaLocked(d, a.op == "delete")
		if a.op != "delete" {
			st.asReplica++
		}
		count++
	}
	indexed := st.asReplica - before
	st.mu.Unlock()
	n.st.indexedReplica.Add(indexed)
	n.st.replicaWrites.Add(1)
	n.st.itemsReplica.Add(int64(count))
	q.reply(200, []byte(`{"ok":true}`))
}

// appendBulkResponse writes the bulk response, items in request order.
func appendBulkResponse(b []byte, items []*bulkItem, took time.Duration, forcedRefresh bool) []byte {
	errs := false
	for _, it := range items {
		if it.res.errType != "" {
			errs = true
			break
		}
	}
	b = append(b, `{"took":`...)
	b = strconv.AppendInt(b, took.Milliseconds(), 10)
	b = append(b, `,"errors":`...)
	b = strconv.AppendBool(b, errs)
	b = append(b, `,"items":[`...)
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		r := &it.res
		b = append(b, `{"`...)
		b = append(b, it.op...)
		b = append(b, `":{"_index":`...)
		idx := r.index
		if idx == "" {
			idx = it.name
		}
		b = appendStr(b, idx)
		b = append(b, `,"_id":`...)
		if it.hasID {
			b = appendStr(b, it.id)
		} else {
			b = append(b, "null"...)
		}
		if r.errType == "" {
			b = append(b, `,"_version":`...)
			b = strconv.AppendInt(b, r.version, 10)
			b = append(b, `,"result":"`...)
			b = append(b, r.result...)
			b = append(b, '"')
			if forcedRefresh {
				b = append(b, `,"forced_refresh":true`...)
			}
			b = append(b, `,"_shards":{"total":`...)
			b = strconv.AppendInt(b, int64(r.total), 10)
			b = append(b, `,"successful":`...)
			b = strconv.AppendInt(b, int64(r.ok), 10)
			b = append(b, `,"failed":0},"_seq_no":`...)
			b = strconv.AppendInt(b, r.seqNo, 10)
			b = append(b, `,"_primary_term":`...)
			b = strconv.AppendInt(b, r.term, 10)
			b = append(b, `,"status":`...)
			b = strconv.AppendInt(b, int64(r.status), 10)
			b = append(b, "}}"...)
			continue
		}
		b = append(b, `,"status":`...)
		b = strconv.AppendInt(b, int64(r.status), 10)
		b = append(b, `,"error":{"type":`...)
		b = appendStr(b, r.errType)
		b = append(b, `,"reason":`...)
		b = appendStr(b, r.errReason)
		if r.causedBy != "" {
			b = append(b, `,"caused_by":{"type":`...)
			b = appendStr(b, r.causedBy)
			b = append(b, `,"reason":"failed to parse the document source"}`...)
		}
		b = appendCauses(b, r.cause)
		if r.errIndex {
			b = append(b, `,"index":`...)
			b = appendStr(b, idx)
			if r.indexUUID != "" {
				b = append(b, `,"shard":"`...)
				b = strconv.AppendInt(b, int64(r.shardLabel), 10)
				b = append(b, `","index_uuid":`...)
				b = appendStr(b, r.indexUUID)
			}
		} else if r.index != "" && (r.status == 404 || r.errType == "invalid_index_name_exception" || r.errType == "routing_missing_exception") {
			b = append(b, `,"index":`...)
			b = appendStr(b, idx)
			b = append(b, `,"index_uuid":"_na_"`...)
		}
		b = append(b, "}}}"...)
	}
	return append(b, "]}"...)
}
