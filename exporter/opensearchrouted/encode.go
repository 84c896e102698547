package opensearchrouted

import (
	"math/rand/v2"
	"runtime"
	"sync/atomic"
	"time"
	"unsafe"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/opensearchrouted/opensearchrouted/internal/bulk"
	"github.com/opensearchrouted/opensearchrouted/internal/routing"
	"github.com/opensearchrouted/opensearchrouted/internal/ss4o"
)

// ref locates an item's record in the call's pdata.
type ref struct{ r, s, i int32 }

// part encodes a share of one call's records into bulk items. A small call
// encodes into its own part; a large one is encoded by several extra parts
// at the same time, whose items are then appended to the call's batch in
// record order (without copying their bytes). A part is used by one
// goroutine at a time.
type part struct {
	batch bulk.Batch
	enc   ss4o.Encoder // resource and scope encoded once per ScopeLogs/ScopeSpans
	otel  otelPart     // spans in mapping.mode otel-v1
	ids   []byte       // append-only id arena; ids are views into it

	refs   []ref      // per item
	locs   []loc      // per item: where Locate sent it while encoding
	hashes [][16]byte // per item, content ids only
	// occ per item, content ids only: -1 when the id is not a content id
	// (document_id: attribute found one), else the occurrence of its content
	// in the call (0 until numberRepeats has run).
	occ []int32

	encodeFailed int // records that could not be made into a bulk item
	// fallbacks counts, by reason, the records whose id could not be the
	// usual one and is their content id instead.
	fallbacks [numFallbacks]int

	// The scope enc was last reset for (when inScope) and its records'
	// origin: a share that encodes several pieces of one scope resets enc
	// once.
	inScope        bool
	scopeR, scopeS int
	origin         origin
	// The scope's resource routing value (routing_attribute; "" for none)
	// and whether the resource's value was invalid (customrouting.go).
	resRouting        string
	resRoutingInvalid bool

	steer partSteer // see steer.go
}

// chunkOut is what a share encoded for one chunk of a shared call: views
// of its part's items [from, to) and of their per-item slices (locs when
// located, hashes and occ when per item), taken when the chunk was done.
// The views stay as they are while the share goes on appending to its
// part, so the caller merges them meanwhile.
type chunkOut struct {
	items  bulk.Items
	refs   []ref
	locs   []loc
	hashes [][16]byte
	occ    []int32
	failed int // records of the chunk that could not be made into items

	fallbacks [numFallbacks]int
}

// finish returns the views of the items p has just encoded for a chunk,
// those from item first on; failed counts the chunk's records that could
// not be made into items.
func (p *part) finish(first, failed int, fallbacks [numFallbacks]int) chunkOut {
	n := p.batch.Len()
	o := chunkOut{items: p.batch.Items(first, n), refs: p.refs[first:n:n], failed: failed}
	for i := range o.fallbacks {
		o.fallbacks[i] = p.fallbacks[i] - fallbacks[i]
	}
	if len(p.locs) == n {
		o.locs = p.locs[first:n:n]
	}
	if len(p.occ) == n {
		o.hashes, o.occ = p.hashes[first:n:n], p.occ[first:n:n]
	}
	return o
}

// loc is an item's node (nil: not routable) and the reason, as Locate
// gave them.
type loc struct {
	node   *routing.Node
	reason routing.Reason
}

func (p *part) reset() {
	p.batch.Reset()
	p.ids = p.ids[:0]
	p.refs = p.refs[:0]
	clear(p.locs) // drop the node pointers
	p.locs = p.locs[:0]
	p.hashes = p.hashes[:0]
	p.occ = p.occ[:0]
	p.encodeFailed = 0
	p.fallbacks = [numFallbacks]int{}
	p.inScope = false
	p.otel.oc = nil
}

// scope makes p's encoder and origin those of scope (r, s), calling reset
// only when the scope changes.
func (p *part) scope(r, s int, reset func() origin) {
	if !p.inScope || p.scopeR != r || p.scopeS != s {
		p.origin = reset()
		p.inScope, p.scopeR, p.scopeS = true, r, s
	}
}

// eachScope calls fn for every scope that holds some of the records
// numbered [from, to), counting every record of every scope in order: ri
// and si locate the scope (resource ri, its scope si) and [lo, hi) is the
// part of its records in the range. scopes(ri) and records(ri, si) count.
func eachScope(resources int, scopes func(ri int) int, records func(ri, si int) int, from, to int, fn func(ri, si, lo, hi int)) {
	pos := 0
	for ri := 0; ri < resources && pos < to; ri++ {
		ns := scopes(ri)
		for si := 0; si < ns && pos < to; si++ {
			n := records(ri, si)
			if pos+n > from {
				fn(ri, si, max(0, from-pos), min(n, to-pos))
			}
			pos += n
		}
	}
}

// call is the state of one export call, pooled: every slice keeps its
// capacity across calls, so a warmed-up exporter allocates little per call.
// A call is used by one push at a time; its jobs write to disjoint items.
type call struct {
	part            // the call's own share; its batch ends up holding every item
	extra   []*part // further shares of a large call
	repeats ss4o.Repeats
	// repeatsOf is the resource (ref.r) whose records repeats numbers now:
	// repeats are numbered within one resource's records (see numberRepeats).
	repeatsOf int32
	// located: locs holds every item's location, found while encoding (in
	// the shares, at once); the first round uses it instead of locating
	// again.
	located bool

	class  []bulk.Class // per item: the latest verdict (Retry while pending)
	result []bulk.Outcome
	shape  []uint8  // per item: how it is written now (see reshape)
	orig   [][]byte // per item not in shapeOriginal: its original document
	// scratch buffers for reshaped documents (Replace copies them)
	scratch, scratch2 []byte
	deadLogged        int // dead-letter warnings logged by this call

	oc     *otelCall // otel-v1 spans: the call's trace groups
	landed []string  // otel-v1 spans: per item, the index it was stored in

	pending, next []int32
	outs          []bulk.Outcome
	groups        []group
	unrouted      []int32
	subs          [][]int32
	jobs          []job
	chunkOut      []chunkOut    // shared calls: per chunk (see sharing)
	chunkReady    []atomic.Bool // shared calls: per chunk
	left          atomic.Int32  // jobs of the round still running on workers
	reasons       [16]int
	// routingRefused per item (when anyRoutingRefused): the server refused
	// it for its routing (customrouting.go).
	routingRefused    []bool
	anyRoutingRefused bool
	nid               nullIDState // items without id nor routing suspected of a whole-request failure
}

type group struct {
	node  *routing.Node
	items []int32
}

func (c *call) reset() {
	c.located = false
	c.part.reset()
	for _, p := range c.extra {
		p.reset()
	}
	c.repeats.Reset()
	c.repeatsOf = -1
	clear(c.orig) // drop the views of the arena
	c.deadLogged = 0
	c.reasons = [16]int{}
	c.anyRoutingRefused = false
	c.nid.reset()
}

// id returns a string view of the id just appended to p.ids at start. The
// view stays valid for the call: p.ids only grows until the next reset.
func (p *part) id(start int) string {
	if len(p.ids) == start {
		return ""
	}
	return unsafe.String(&p.ids[start], len(p.ids)-start)
}

// minPerWorker is the fewest records worth a goroutine of their own: below
// it, starting and joining the goroutine costs more than it saves.
const minPerWorker = 256

// shares returns how many parts encode a call of n records at once: one per
// core the Go runtime may use (GOMAXPROCS, which follows the container's
// CPU limit), with at least minPerWorker records each.
func shares(n int) int {
	return max(1, min(runtime.GOMAXPROCS(0), n/minPerWorker))
}

// shares is shares(n) while this call is the only one in progress. With
// more, their own work keeps the cores busy and a call encodes on its own
// goroutine: another share would start late and add only its hand-offs
// and merging (concurrent pushes took 0.89–0.96 of the time in alternating
// runs).
func (e *osExporter) shares(n int) int {
	if e.workers.busy() {
		return 1
	}
	return shares(n)
}

// chunkRecords is how many records a share claims at a time.
const chunkRecords = 64

// waitSpin bounds how long the caller, out of chunks to claim, yields
// instead of blocking while other shares finish theirs, how long it yields
// for the round's other sub-bulks once its own is sent, and how long a
// worker yields after the last job or call ended before it parks (see
// workers): a blocked goroutine's core may go idle, and waking an idle
// virtual CPU takes around 100 µs, several chunks' worth.
const waitSpin = 100 * time.Microsecond

// sharing is one shared call's work list. Each call has its own: a share
// that starts after the call is over claims nothing from it.
type sharing struct {
	next, done atomic.Int32 // chunks claimed, chunks encoded
	total      int32
	finished   chan struct{} // closed when done reaches total

	out    []chunkOut    // per chunk, written by the share that encoded it
	ready  []atomic.Bool // per chunk: out is written
	merged int           // chunks merged into the call (the caller only)
}

// encodeShared encodes records [0, n), locating each item through r (none
// when r is nil), and numbers the repeats of content ids. A large call is
// cut into chunks of chunkRecords that k parts (see shares) claim in turn:
// the caller's share at once, the others, started through spawn, as soon as
// they run (one may start late: the cores may be busy, or idle and slow to
// wake), so none waits for another to begin. Between its own chunks, and
// then while the last ones are encoded, the caller merges the chunks done
// so far, in chunk order, into c (items, per-item slices, repeat numbers),
// so item numbers follow the records' order and little is left to do on
// one core once the last chunk is done.
func (c *call) encodeShared(n, k int, r *routing.Router, spawn func(func()), encodeRange func(p *part, from, to int)) {
	if k > 1 {
		c.encodeChunks(n, k, r, spawn, encodeRange)
		return
	}
	encodeRange(&c.part, 0, n)
	c.part.locate(r, 0)
	c.located = r != nil // locate found every item's node
	c.numberRepeats(r, 0)
}

// encodeChunks is encodeShared for k > 1 shares.
func (c *call) encodeChunks(n, k int, r *routing.Router, spawn func(func()), encodeRange func(p *part, from, to int)) {
	for len(c.extra) < k {
		c.extra = append(c.extra, new(part))
	}
	total := (n + chunkRecords - 1) / chunkRecords
	c.chunkOut = resize(c.chunkOut, total)
	if cap(c.chunkReady) < total {
		c.chunkReady = make([]atomic.Bool, total)
	}
	c.chunkReady = c.chunkReady[:total]
	for i := range c.chunkReady {
		c.chunkReady[i].Store(false)
	}
	sh := &sharing{total: int32(total), finished: make(chan struct{}), out: c.chunkOut, ready: c.chunkReady}
	c.located = r != nil // every chunk locates its items (numberRepeats relocates repeats)
	work := func(p *part, merge bool) {
		for {
			ch := sh.next.Add(1) - 1
			if ch >= sh.total {
				return
			}
			from := int(ch) * chunkRecords
			first, failed, fallbacks := p.batch.Len(), p.encodeFailed, p.fallbacks
			encodeRange(p, from, min(n, from+chunkRecords))
			p.locate(r, first)
			sh.out[ch] = p.finish(first, p.encodeFailed-failed, fallbacks)
			sh.ready[ch].Store(true)
			if sh.done.Add(1) == sh.total {
				close(sh.finished)
			}
			if merge {
				c.mergeReady(sh, r)
			}
		}
	}
	for _, p := range c.extra[1:k] {
		spawn(func() { work(p, false) })
	}
	work(c.extra[0], true)
	if !yieldFor(waitSpin, func() bool { return c.mergeReady(sh, r) }) {
		<-sh.finished
		c.mergeReady(sh, r)
	}
	clear(c.chunkOut) // drop the views of the parts' slices
}

// mergeReady merges into c, in chunk order, the chunks that are done and
// not merged yet, and reports whether every chunk is merged.
func (c *call) mergeReady(sh *sharing, r *routing.Router) bool {
	for sh.merged < len(sh.out) && sh.ready[sh.merged].Load() {
		o := &sh.out[sh.merged]
		first := c.batch.Len()
		c.batch.AppendItems(o.items)
		c.refs = append(c.refs, o.refs...)
		c.locs = append(c.locs, o.locs...)
		switch {
		case o.occ != nil:
			c.perItemIDsTo(first)
			c.hashes = append(c.hashes, o.hashes...)
			c.occ = append(c.occ, o.occ...)
		case len(c.occ) > 0: // spans: an earlier chunk had content ids
			c.perItemIDsTo(c.batch.Len())
		}
		c.encodeFailed += o.failed
		for i, k := range o.fallbacks {
			c.fallbacks[i] += k
		}
		c.numberRepeats(r, first)
		sh.merged++
	}
	return sh.merged == len(sh.out)
}

// numberRepeats numbers, in item order, the occurrences of each content
// among the records of one resource (one ResourceLogs or ResourceSpans of
// the call), for items from on; an item that repeats an earlier one of the
// same resource gets the id "<hash>-<n>" and, when the items are located,
// is located again through r.
//
// Numbering starts again at every resource: a client that resends a
// request whose answer it lost sends the same resources again, and the
// collector's batcher appends them to the call as resources of their own,
// so the copy gets the original's ids and is refused as a duplicate (409)
// instead of stored twice. Records repeated within one resource keep
// distinct ids and are all stored.
func (c *call) numberRepeats(r *routing.Router, from int) {
	for it := from; it < len(c.occ); it++ {
		if c.occ[it] < 0 {
			continue
		}
		if rr := c.refs[it].r; rr != c.repeatsOf {
			c.repeats.Reset()
			c.repeatsOf = rr
		}
		h := c.hashes[it]
		n := c.repeats.Next(h)
		c.occ[it] = int32(n)
		if n > 0 {
			start := len(c.ids)
			c.ids = ss4o.AppendID(c.ids, h, n)
			c.steerRepeat(int32(it), start)
			c.batch.SetID(int32(it), c.id(start))
			if c.located {
				index, id, _ := c.batch.Item(int32(it))
				node, reason := r.Locate(index, id, c.batch.Routing(int32(it)))
				c.locs[it] = loc{node, reason}
			}
		}
	}
}

// encodeLogs turns every log record into a bulk item with its id and
// location.
func (e *osExporter) encodeLogs(c *call, ld plog.Logs) {
	n := ld.LogRecordCount()
	e.beginSteer(c, func(rf ref) int64 { return logTime(ld, rf) })
	c.encodeShared(n, e.shares(n), e.router, e.workers.run, func(p *part, from, to int) { p.steerFrom(&c.part); e.encodeLogRange(p, ld, from, to) })
	e.endSteer(c)
}

// locate finds the node of items [first, Len) of p (in the share's
// goroutine).
func (p *part) locate(r *routing.Router, first int) {
	if r == nil {
		return
	}
	for it := int32(first); it < int32(p.batch.Len()); it++ {
		index, id, _ := p.batch.Item(it)
		node, reason := r.Locate(index, id, p.batch.Routing(it))
		p.locs = append(p.locs, loc{node, reason})
	}
}

// encodeLogRange encodes the records whose position in ld (counting every
// record of every scope in order) is in [from, to).
func (e *osExporter) encodeLogRange(p *part, ld plog.Logs, from, to int) {
	rls := ld.ResourceLogs()
	eachScope(rls.Len(),
		func(ri int) int { return rls.At(ri).ScopeLogs().Len() },
		func(ri, si int) int { return rls.At(ri).ScopeLogs().At(si).LogRecords().Len() },
		from, to, func(ri, si, lo, hi int) {
			rl := rls.At(ri)
			sl := rl.ScopeLogs().At(si)
			p.scope(ri, si, func() origin {
				p.enc.ResetLogs(rl, sl)
				e.resourceRouting(p, rl.Resource().Attributes())
				return e.targets.resource(rl.Resource().Attributes())
			})
			lrs := sl.LogRecords()
			for li := lo; li < hi; li++ {
				lr := lrs.At(li)
				p.encodeLog(e, e.targets.record(p.origin, lr.Attributes()), lr, ref{int32(ri), int32(si), int32(li)})
			}
		})
}

// encodeLog adds lr as an item for target. An id known before the document
// (document_id: random, none, or a found attribute) goes in its action line
// first; a content id is the hash of the document, written into the place
// reserved for it once the document is encoded: the document is written
// once, straight into the batch.
func (p *part) encodeLog(e *osExporter, target string, lr plog.LogRecord, r ref) {
	rt := e.routingValue(p, lr.Attributes())
	start := len(p.ids)
	switch e.cfg.DocumentID {
	case DocumentIDRandom:
		var h [16]byte
		binaryPutRandom(&h)
		p.ids = ss4o.AppendID(p.ids, h, 0)
	case DocumentIDAttribute:
		if v, ok := lr.Attributes().Get(e.cfg.DocumentIDAttribute); ok && v.Type() != pcommon.ValueTypeEmpty {
			if s := v.AsString(); s != "" {
				if idFits(s) {
					p.ids = append(p.ids, s...)
				} else {
					p.fallbacks[fbInvalidAttributeID]++
				}
			}
		}
	}
	if e.cfg.DocumentID == DocumentIDRandom || e.cfg.DocumentID == DocumentIDNone || len(p.ids) > start {
		buf := p.batch.BeginRouted(target, p.id(start), rt)
		buf = p.enc.AppendLog(buf, lr)
		if _, err := p.batch.Commit(buf); err != nil {
			p.encodeFailed++
			return
		}
		p.refs = append(p.refs, r)
		if e.cfg.DocumentID == DocumentIDAttribute {
			p.hashes = append(p.hashes, [16]byte{})
			p.occ = append(p.occ, -1)
		}
		return
	}
	buf := p.batch.BeginSizedRouted(target, rt, ss4o.ContentIDLen)
	p.commitContent(p.enc.AppendLog(buf, lr), r, recordTime(lr))
}

// commitContent closes an item opened by BeginSized whose source is in buf
// with the content id of that source (its repeats numbered later, see
// numberRepeats), for the record at r with timestamp ts (see steerNew).
func (p *part) commitContent(buf []byte, r ref, ts int64) {
	start := len(p.ids)
	h := ss4o.ContentID(p.batch.OpenSource(buf))
	p.ids = ss4o.AppendID(p.ids, h, 0)
	it, err := p.batch.CommitCompact(buf, p.id(start))
	if err != nil {
		p.encodeFailed++
		return
	}
	p.steerNew(it, ts)
	p.refs = append(p.refs, r)
	p.hashes = append(p.hashes, h)
	p.occ = append(p.occ, 0)
}

// perItemIDs makes p's hashes and occ per item, as content ids need,
// marking the items so far as having other ids. Spans have them only once
// a span gets a content id.
func (p *part) perItemIDs() { p.perItemIDsTo(p.batch.Len()) }

// perItemIDsTo is perItemIDs for the first n items.
func (p *part) perItemIDsTo(n int) {
	for len(p.occ) < n {
		p.hashes = append(p.hashes, [16]byte{})
		p.occ = append(p.occ, -1)
	}
}

func binaryPutRandom(h *[16]byte) {
	a, b := rand.Uint64(), rand.Uint64()
	for i := 0; i < 8; i++ {
		h[i], h[8+i] = byte(a>>(8*i)), byte(b>>(8*i))
	}
}

// encodeTraces turns every span into a bulk item with id trace id + span id
// and its location.
func (e *osExporter) encodeTraces(c *call, td ptrace.Traces) {
	n := td.SpanCount()
	e.beginSteer(c, func(rf ref) int64 { return spanTime(td, rf) })
	c.encodeShared(n, e.shares(n), e.router, e.workers.run, func(p *part, from, to int) {
		p.otel.oc = c.oc
		p.steerFrom(&c.part)
		e.encodeSpanRange(p, td, from, to)
	})
	e.endSteer(c)
}

// encodeSpanRange encodes the spans whose position in td is in [from, to).
func (e *osExporter) encodeSpanRange(p *part, td ptrace.Traces, from, to int) {
	rss := td.ResourceSpans()
	eachScope(rss.Len(),
		func(ri int) int { return rss.At(ri).ScopeSpans().Len() },
		func(ri, si int) int { return rss.At(ri).ScopeSpans().At(si).Spans().Len() },
		from, to, func(ri, si, lo, hi int) {
			rs := rss.At(ri)
			ss := rs.ScopeSpans().At(si)
			p.scope(ri, si, func() origin {
				p.resetTraces(rs, ss)
				e.resourceRouting(p, rs.Resource().Attributes())
				return e.targets.resource(rs.Resource().Attributes())
			})
			spans := ss.Spans()
			for k := lo; k < hi; k++ {
				span := spans.At(k)
				target := e.targets.record(p.origin, span.Attributes())
				rt := e.routingValue(p, span.Attributes())
				r := ref{int32(ri), int32(si), int32(k)}
				if span.TraceID().IsEmpty() || span.SpanID().IsEmpty() {
					// Not an id: the span's content is (see fbInvalidSpanID).
					p.fallbacks[fbInvalidSpanID]++
					p.perItemIDs()
					buf := p.batch.BeginSizedRouted(target, rt, ss4o.ContentIDLen)
					p.commitContent(p.appendSpan(buf, span), r, int64(span.StartTimestamp()))
					continue
				}
				start := len(p.ids)
				p.ids = ss4o.AppendSpanID(p.ids, span.TraceID(), span.SpanID())
				// The id is known first: encode straight into the batch.
				buf := p.batch.BeginRouted(target, p.id(start), rt)
				buf = p.appendSpan(buf, span)
				if _, err := p.batch.Commit(buf); err != nil {
					p.encodeFailed++
					continue
				}
				p.refs = append(p.refs, r)
				if len(p.occ) > 0 { // an earlier span got a content id
					p.perItemIDs()
				}
			}
		})
}

// retrySet returns, in item order, the items to hand back for retry: those
// still retryable and, for content ids, every earlier occurrence of the
// same content in the same resource, so that the resent call numbers its
// repeats exactly as this one did and every record keeps its id (earlier
// occurrences already stored come back 409 and count as duplicates; one
// refused permanently is refused, logged and counted again: leaving it out
// would renumber the later repeats onto ids already stored). The subset
// keeps each resource's records together under one resource (see
// subsetLogs), so numbering per resource gives them the same numbers.
func (c *call) retrySet(dst []int32) []int32 {
	dst = dst[:0]
	type key struct {
		r int32
		h [16]byte
	}
	var maxOcc map[key]int32
	if len(c.occ) == len(c.refs) {
		for it, cls := range c.class {
			if cls == bulk.Retry && c.occ[it] > 0 {
				if maxOcc == nil {
					maxOcc = map[key]int32{}
				}
				k := key{c.refs[it].r, c.hashes[it]}
				if c.occ[it] > maxOcc[k] {
					maxOcc[k] = c.occ[it]
				}
			}
		}
	}
	for it, cls := range c.class {
		if cls == bulk.Retry {
			dst = append(dst, int32(it))
			continue
		}
		if maxOcc != nil && c.occ[it] >= 0 {
			if m, ok := maxOcc[key{c.refs[it].r, c.hashes[it]}]; ok && c.occ[it] < m {
				dst = append(dst, int32(it))
			}
		}
	}
	return dst
}

// subsetLogs copies the records of items (in item order) into new Logs,
// keeping their resources and scopes.
func subsetLogs(ld plog.Logs, refs []ref, items []int32) plog.Logs {
	out := plog.NewLogs()
	lastR, lastS := int32(-1), int32(-1)
	var rl plog.ResourceLogs
	var sl plog.ScopeLogs
	for _, it := range items {
		rf := refs[it]
		srcR := ld.ResourceLogs().At(int(rf.r))
		if rf.r != lastR {
			rl = out.ResourceLogs().AppendEmpty()
			srcR.Resource().CopyTo(rl.Resource())
			rl.SetSchemaUrl(srcR.SchemaUrl())
			lastR, lastS = rf.r, -1
		}
		srcS := srcR.ScopeLogs().At(int(rf.s))
		if rf.s != lastS {
			sl = rl.ScopeLogs().AppendEmpty()
			srcS.Scope().CopyTo(sl.Scope())
			sl.SetSchemaUrl(srcS.SchemaUrl())
			lastS = rf.s
		}
		srcS.LogRecords().At(int(rf.i)).CopyTo(sl.LogRecords().AppendEmpty())
	}
	return out
}

// subsetTraces is subsetLogs for spans.
func subsetTraces(td ptrace.Traces, refs []ref, items []int32) ptrace.Traces {
	out := ptrace.NewTraces()
	lastR, lastS := int32(-1), int32(-1)
	var rs ptrace.ResourceSpans
	var ss ptrace.ScopeSpans
	for _, it := range items {
		rf := refs[it]
		srcR := td.ResourceSpans().At(int(rf.r))
		if rf.r != lastR {
			rs = out.ResourceSpans().AppendEmpty()
			srcR.Resource().CopyTo(rs.Resource())
			rs.SetSchemaUrl(srcR.SchemaUrl())
			lastR, lastS = rf.r, -1
		}
		srcS := srcR.ScopeSpans().At(int(rf.s))
		if rf.s != lastS {
			ss = rs.ScopeSpans().AppendEmpty()
			srcS.Scope().CopyTo(ss.Scope())
			ss.SetSchemaUrl(srcS.SchemaUrl())
			lastS = rf.s
		}
		srcS.Spans().At(int(rf.i)).CopyTo(ss.Spans().AppendEmpty())
	}
	return out
}
