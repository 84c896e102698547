package opensearchrouted

import (
	"math/rand/v2"
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

// call is the state of one export call, pooled: every slice keeps its
// capacity across calls, so a warmed-up exporter allocates little per call.
// A call is used by one push at a time; its jobs write to disjoint items.
type call struct {
	batch   bulk.Batch
	enc     ss4o.Encoder // resource and scope encoded once per ScopeLogs/ScopeSpans
	scratch []byte
	ids     []byte // append-only id arena of this call; ids are views into it
	repeats ss4o.Repeats

	refs   []ref        // per item
	hashes [][16]byte   // per item, content ids only
	occ    []int32      // per item, content ids only
	class  []bulk.Class // per item: the latest verdict (Retry while pending)
	result []bulk.Outcome

	pending, next []int32
	outs          []bulk.Outcome
	groups        []group
	unrouted      []int32
	subs          [][]int32
	jobs          []job
	reasons       [16]int

	encodeFailed int // records that could not be made into a bulk item
}

type group struct {
	node  *routing.Node
	items []int32
}

func (c *call) reset() {
	c.batch.Reset()
	c.ids = c.ids[:0]
	c.repeats.Reset()
	c.refs = c.refs[:0]
	c.hashes = c.hashes[:0]
	c.occ = c.occ[:0]
	c.reasons = [16]int{}
	c.encodeFailed = 0
}

// id returns a string view of the id just appended to c.ids at start. The
// view stays valid for the call: c.ids only grows until the next reset.
func (c *call) id(start int) string {
	if len(c.ids) == start {
		return ""
	}
	return unsafe.String(&c.ids[start], len(c.ids)-start)
}

// commit adds an item whose source is in c.scratch.
func (c *call) commit(target, id string, r ref) bool {
	buf := c.batch.Begin(target, id)
	buf = append(buf, c.scratch...)
	if _, err := c.batch.Commit(buf); err != nil {
		c.encodeFailed++
		return false
	}
	c.refs = append(c.refs, r)
	return true
}

// encodeLogs turns every log record into a bulk item with its id.
func (e *osExporter) encodeLogs(c *call, ld plog.Logs) {
	content := e.cfg.DocumentID == DocumentIDContent || e.cfg.DocumentID == DocumentIDAttribute
	rls := ld.ResourceLogs()
	for ri := 0; ri < rls.Len(); ri++ {
		rl := rls.At(ri)
		res := rl.Resource()
		sls := rl.ScopeLogs()
		for si := 0; si < sls.Len(); si++ {
			sl := sls.At(si)
			c.enc.ResetLogs(rl, sl)
			lrs := sl.LogRecords()
			for li := 0; li < lrs.Len(); li++ {
				lr := lrs.At(li)
				target := e.targets.name(res.Attributes(), lr.Attributes())
				c.scratch = c.enc.AppendLog(c.scratch[:0], lr)
				start := len(c.ids)
				var h [16]byte
				occ := -1
				switch e.cfg.DocumentID {
				case DocumentIDAttribute:
					if v, ok := lr.Attributes().Get(e.cfg.DocumentIDAttribute); ok && v.Type() != pcommon.ValueTypeEmpty {
						if s := v.AsString(); s != "" {
							c.ids = append(c.ids, s...)
							break
						}
					}
					h = ss4o.ContentID(c.scratch)
					occ = c.repeats.Next(h)
					c.ids = ss4o.AppendID(c.ids, h, occ)
				case DocumentIDContent:
					h = ss4o.ContentID(c.scratch)
					occ = c.repeats.Next(h)
					c.ids = ss4o.AppendID(c.ids, h, occ)
				case DocumentIDRandom:
					binaryPutRandom(&h)
					c.ids = ss4o.AppendID(c.ids, h, 0)
				}
				if c.commit(target, c.id(start), ref{int32(ri), int32(si), int32(li)}) && content {
					c.hashes = append(c.hashes, h)
					c.occ = append(c.occ, int32(occ))
				}
			}
		}
	}
}

func binaryPutRandom(h *[16]byte) {
	a, b := rand.Uint64(), rand.Uint64()
	for i := 0; i < 8; i++ {
		h[i], h[8+i] = byte(a>>(8*i)), byte(b>>(8*i))
	}
}

// encodeTraces turns every span into a bulk item with id trace id + span id.
func (e *osExporter) encodeTraces(c *call, td ptrace.Traces) {
	rss := td.ResourceSpans()
	for ri := 0; ri < rss.Len(); ri++ {
		rs := rss.At(ri)
		res := rs.Resource()
		sss := rs.ScopeSpans()
		for si := 0; si < sss.Len(); si++ {
			ss := sss.At(si)
			c.enc.ResetTraces(rs, ss)
			spans := ss.Spans()
			for k := 0; k < spans.Len(); k++ {
				span := spans.At(k)
				target := e.targets.name(res.Attributes(), span.Attributes())
				start := len(c.ids)
				c.ids = ss4o.AppendSpanID(c.ids, span.TraceID(), span.SpanID())
				// The id is known first: encode straight into the batch.
				buf := c.batch.Begin(target, c.id(start))
				buf = c.enc.AppendSpan(buf, span)
				if _, err := c.batch.Commit(buf); err != nil {
					c.encodeFailed++
					continue
				}
				c.refs = append(c.refs, ref{int32(ri), int32(si), int32(k)})
			}
		}
	}
}

// retrySet returns, in item order, the items to hand back for retry: those
// still retryable and, for content ids, every earlier occurrence of the
// same content, so that the resent call numbers its repeats exactly as this
// one did and every record keeps its id (earlier occurrences already
// stored come back 409 and count as duplicates).
func (c *call) retrySet(dst []int32) []int32 {
	dst = dst[:0]
	var maxOcc map[[16]byte]int32
	if len(c.occ) == len(c.refs) {
		for it, cls := range c.class {
			if cls == bulk.Retry && c.occ[it] > 0 {
				if maxOcc == nil {
					maxOcc = map[[16]byte]int32{}
				}
				if c.occ[it] > maxOcc[c.hashes[it]] {
					maxOcc[c.hashes[it]] = c.occ[it]
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
			if m, ok := maxOcc[c.hashes[it]]; ok && c.occ[it] < m {
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
