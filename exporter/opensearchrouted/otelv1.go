package opensearchrouted

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/opensearchrouted/opensearchrouted/internal/bulk"
	"github.com/opensearchrouted/opensearchrouted/internal/otelv1"
)

// The otel-v1 mode of the traces exporter (mapping.mode: otel-v1): spans
// are encoded by otelv1.Encoder with their trace group, written to the
// write alias (traces_index, default otel-v1-apm-span) with the same ids
// and routing as SS4O spans; trace groups and the service map are kept as
// described in groupStore and serviceMap. A background loop (every
// trace_groups.fixup_interval, and once more at shutdown) updates the spans
// written without their group once their root has come, and writes the
// service map's edges. Neither ever blocks or fails the write of spans:
// what they cannot do is retried on the next pass and, after
// fixup_attempts passes, counted (trace_groups unresolved, service_map.edges
// failed).
//
// A span the server refuses goes to the dead-letter index as written: the
// unmapped shape (see reshape) is SS4O's, whose attribute objects it moves
// into a string; in this layout attributes are flattened top-level fields
// it would leave in place, and the events and links it would move are
// what otelv1.DecodeSpan reads.
type otelState struct {
	groups *groupStore[otelv1.TraceGroup]
	smap   *serviceMap // nil: service_map.enabled is false
	calls  sync.Pool   // *otelCall

	stop   chan struct{}
	done   chan struct{}
	cancel context.CancelFunc // ends the loop's pass in progress
}

// Bounds of one fix-up or service-map pass.
const (
	maxFixupPerPass = 10000 // spans updated by one pass
	maxEdgesPerPass = 5000  // edges written by one pass
	maxPassRounds   = 10    // passes one tick runs while work is left
)

func newOtelState(cfg *Config) *otelState {
	tg := cfg.Mapping.TraceGroups
	s := &otelState{groups: newGroupStore[otelv1.TraceGroup](tg.CacheSize, tg.CacheTTL, tg.MaxPending)}
	if cfg.Mapping.ServiceMap.Enabled {
		s.smap = newServiceMap(max(1, cfg.Mapping.ServiceMap.CacheSize), max(1, cfg.Mapping.ServiceMap.CacheSize), tg.CacheTTL)
	}
	return s
}

// otelCall is one export call's otel-v1 state: the group of each of its
// traces, found before encoding (see prepare).
type otelCall struct {
	index  map[pcommon.TraceID]int32
	traces []pcommon.TraceID
	groups []callGroup[otelv1.TraceGroup]
	sm     smCall
	late   map[pcommon.TraceID][]docRef // spans written without their group
}

// group returns the group of trace id for this call, nil when unknown.
func (oc *otelCall) group(id pcommon.TraceID) *otelv1.TraceGroup {
	if i, ok := oc.index[id]; ok && oc.groups[i].src != groupNone {
		return &oc.groups[i].g
	}
	return nil
}

func (oc *otelCall) groupName(id pcommon.TraceID) (string, bool) {
	if g := oc.group(id); g != nil {
		return g.Name, true
	}
	return "", false
}

// before prepares a call of td: every trace's group from a root in td or
// one remembered, and the call's spans for the service map.
func (s *otelState) before(td ptrace.Traces) *otelCall {
	oc, _ := s.calls.Get().(*otelCall)
	if oc == nil {
		oc = &otelCall{index: map[pcommon.TraceID]int32{}, late: map[pcommon.TraceID][]docRef{}}
	}
	rss := td.ResourceSpans()
	for ri := 0; ri < rss.Len(); ri++ {
		rs := rss.At(ri)
		service := ""
		if v, ok := rs.Resource().Attributes().Get("service.name"); ok && v.Type() == pcommon.ValueTypeStr {
			service = v.Str()
		}
		sss := rs.ScopeSpans()
		for si := 0; si < sss.Len(); si++ {
			spans := sss.At(si).Spans()
			for k := 0; k < spans.Len(); k++ {
				span := spans.At(k)
				t := span.TraceID()
				if t.IsEmpty() {
					continue // no trace to group it in (a content id)
				}
				i, ok := oc.index[t]
				if !ok {
					i = int32(len(oc.traces))
					oc.index[t] = i
					oc.traces = append(oc.traces, t)
					oc.groups = append(oc.groups, callGroup[otelv1.TraceGroup]{})
				}
				if otelv1.IsRoot(span) {
					oc.groups[i] = callGroup[otelv1.TraceGroup]{otelv1.GroupOf(span), groupInline}
				}
				if s.smap != nil && !span.SpanID().IsEmpty() {
					oc.sm.add(t, span.SpanID(), span.ParentSpanID(), service, span)
				}
			}
		}
	}
	s.groups.resolve(oc.traces, oc.groups)
	return oc
}

// release returns oc to the pool.
func (s *otelState) release(oc *otelCall) {
	clear(oc.index)
	oc.traces, oc.groups = oc.traces[:0], oc.groups[:0]
	oc.sm.reset()
	clear(oc.late)
	s.calls.Put(oc)
}

// after accounts for a delivered call: every span stored counts by where
// its group came from; those stored without one are remembered for the
// fix-up; the call's spans feed the service map.
func (e *osExporter) otelAfter(ctx context.Context, c *call, td ptrace.Traces) {
	s, oc := e.otel, c.oc
	var inline, cached, unresolved int
	for it, cls := range c.class {
		if cls != bulk.Done && cls != bulk.Duplicate || c.shape[it] == shapeDeadLetter {
			continue
		}
		rf := c.refs[it]
		span := td.ResourceSpans().At(int(rf.r)).ScopeSpans().At(int(rf.s)).Spans().At(int(rf.i))
		t := span.TraceID()
		i, ok := oc.index[t]
		if !ok {
			continue
		}
		switch oc.groups[i].src {
		case groupInline:
			inline++
		case groupCache:
			cached++
		default:
			index, id, _ := c.batch.Item(int32(it))
			if it < len(c.landed) && c.landed[it] != "" {
				index = c.landed[it]
			}
			oc.late[t] = append(oc.late[t], docRef{strings.Clone(index), strings.Clone(id)})
		}
	}
	for t, refs := range oc.late {
		unresolved += len(refs) - s.groups.remember(t, refs)
	}
	e.tel.traceGroups(ctx, tgInline, inline)
	e.tel.traceGroups(ctx, tgCache, cached)
	e.tel.traceGroups(ctx, tgUnresolved, unresolved)
	if s.smap != nil {
		oc.sm.groups, oc.sm.traceIDs = oc.groupName, oc.traces
		e.tel.edges(ctx, edgeDropped, s.smap.observe(&oc.sm))
	}
	c.oc, c.landed = nil, c.landed[:0]
	s.release(oc)
}

// startOtel starts the fix-up and service-map loop.
func (e *osExporter) startOtel() {
	s := e.otel
	s.stop, s.done = make(chan struct{}), make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	go func() {
		defer close(s.done)
		t := time.NewTicker(e.cfg.Mapping.TraceGroups.FixupInterval)
		defer t.Stop()
		for {
			select {
			case <-s.stop:
				return
			case <-t.C:
				e.otelTick(ctx)
			}
		}
	}()
}

// stopOtel stops the loop and runs a last pass within ctx: the spans whose
// root has come are fixed up and every edge known is written; the spans
// still waiting for their root are counted unresolved.
func (e *osExporter) stopOtel(ctx context.Context) {
	s := e.otel
	if s.stop == nil {
		return
	}
	close(s.stop)
	s.cancel() // what the pass in progress has not sent stays for the last one
	<-s.done
	s.stop = nil
	if s.smap != nil {
		e.tel.edges(ctx, edgeDropped, s.smap.flushDeferred(func(t pcommon.TraceID) (string, bool) {
			g, ok := s.groups.rootGroup(t)
			return g.Name, ok
		}))
	}
	e.otelTick(ctx)
	e.tel.traceGroups(ctx, tgUnresolved, s.groups.drain())
	if s.smap != nil {
		e.tel.edges(ctx, edgeFailed, s.smap.pendingLen())
	}
}

// otelTick is one tick of the loop: expiry, then fix-up and service-map
// passes while work is left (at most maxPassRounds).
func (e *osExporter) otelTick(ctx context.Context) {
	s := e.otel
	e.tel.traceGroups(ctx, tgUnresolved, s.groups.expireWaiting())
	if s.smap != nil {
		e.tel.edges(ctx, edgeDropped, s.smap.expireDeferred())
	}
	for round := 0; round < maxPassRounds && ctx.Err() == nil; round++ {
		fixed := e.fixupPass(ctx)
		written := 0
		if s.smap != nil {
			written = e.edgesPass(ctx)
		}
		if fixed == 0 && written == 0 {
			return
		}
	}
}

// fixupPass updates the spans of the ready traces (up to maxFixupPerPass)
// with their group, by id in the index each was written to, and returns
// how many it sent. A bulk update reads the stored document in real time,
// so a span is updated whether or not its index has been refreshed since
// it was written.
func (e *osExporter) fixupPass(ctx context.Context) int {
	s := e.otel
	ready := s.groups.takeReady(maxFixupPerPass)
	if len(ready) == 0 {
		return 0
	}
	c := e.getCall()
	defer e.putCall(c)
	var owner []int32 // per item: its trace in ready
	var doc []byte
	fixed, gone := 0, 0
	for wi, w := range ready {
		doc = otelv1.AppendGroupUpdate(doc[:0], &w.group)
		for _, d := range w.spans {
			buf := c.batch.BeginUpdate(d.index, d.id)
			if _, err := c.batch.Commit(append(buf, doc...)); err != nil {
				gone++ // an empty index or id cannot be addressed (never written so)
				continue
			}
			owner = append(owner, int32(wi))
		}
	}
	e.deliverAux(ctx, c)
	again := make([][]docRef, len(ready))
	for it, cls := range c.class {
		w := owner[it]
		switch cls {
		case bulk.Done, bulk.Duplicate:
			fixed++
		case bulk.Retry:
			index, id, _ := c.batch.Item(int32(it))
			again[w] = append(again[w], docRef{index, id})
		default:
			gone++
			if gone == 1 {
				e.warnRefused(c, it, "a span's trace group could not be set; it stays without")
			}
		}
	}
	for wi, w := range ready {
		gone += s.groups.retryLater(w, cloneRefs(again[wi]), e.cfg.Mapping.TraceGroups.FixupAttempts)
	}
	e.tel.traceGroups(ctx, tgFixedUp, fixed)
	e.tel.traceGroups(ctx, tgUnresolved, gone)
	return len(c.class)
}

// cloneRefs copies refs out of the call's arena.
func cloneRefs(refs []docRef) []docRef {
	for i := range refs {
		refs[i] = docRef{strings.Clone(refs[i].index), strings.Clone(refs[i].id)}
	}
	return refs
}

// edgesPass writes up to maxEdgesPerPass pending edges (create, with the
// edge's id) to the service-map index and returns how many it sent.
func (e *osExporter) edgesPass(ctx context.Context) int {
	s := e.otel
	edges := s.smap.take(maxEdgesPerPass)
	if len(edges) == 0 {
		return 0
	}
	c := e.getCall()
	defer e.putCall(c)
	var owner []int32
	for i, p := range edges {
		buf := c.batch.Begin(otelv1.ServiceMapIndex, p.edge.ID())
		if _, err := c.batch.Commit(otelv1.AppendEdge(buf, &p.edge)); err != nil {
			e.tel.edges(ctx, edgeFailed, 1)
			continue
		}
		owner = append(owner, int32(i))
	}
	e.deliverAux(ctx, c)
	var stored []string
	var counts [numEdgeOutcomes]int
	for it, cls := range c.class {
		p := edges[owner[it]]
		switch cls {
		case bulk.Done:
			counts[edgeIndexed]++
			stored = append(stored, p.edge.ID())
		case bulk.Duplicate:
			counts[edgeDuplicate]++
			stored = append(stored, p.edge.ID())
		case bulk.Retry:
			if !s.smap.retry(p, e.cfg.Mapping.TraceGroups.FixupAttempts) {
				counts[edgeFailed]++
			}
		default:
			counts[edgeFailed]++
			if counts[edgeFailed] == 1 {
				e.warnRefused(c, it, "a service map edge was refused; it is dropped")
			}
		}
	}
	s.smap.done(stored)
	if counts[edgeFailed] > 0 {
		s.smap.forget()
	}
	for o, n := range counts {
		e.tel.edges(ctx, edgeOutcome(o), n)
	}
	return len(c.class)
}

// warnRefused logs the refusal of item it of an auxiliary call (the first
// of its pass): the index, status and error, never the document.
func (e *osExporter) warnRefused(c *call, it int, msg string) {
	o := c.outcome(it)
	index, _, _ := c.batch.Item(int32(it))
	e.log.Warn(msg, zap.String("index", index), zap.Int("status", o.Status),
		zap.String("error.type", o.ErrorType), zap.String("error.reason", bulk.SafeReason(o.ErrorReason)))
}

// deliverAux sends the items of c (fix-up updates, service-map edges) as
// deliver does spans, through the same rounds (routing, windows, in-call
// retries with backoff), but counts no documents: the caller reads c.class
// (an item still Retry at the end was not stored).
func (e *osExporter) deliverAux(ctx context.Context, c *call) {
	e.workers.enter() // a call in progress, as a push is (see workers.alone)
	defer e.workers.leave()
	c.beginDelivery()
	for attempt := 1; len(c.pending) > 0 && attempt <= e.cfg.Bulk.MaxAttempts; attempt++ {
		if attempt > 1 && !e.backoff(ctx, attempt) {
			break
		}
		authErr, _ := e.round(ctx, c)
		c.keepRetryable()
		if ctx.Err() != nil || authErr != nil {
			break
		}
	}
}

// installOtelV1 installs the span and service-map templates and makes the
// write alias if it does not exist: its first index, <alias>-000001, with
// the alias as its write index (the naming an ISM rollover policy with
// rollover_alias <alias> expects).
func (e *osExporter) installOtelV1(ctx context.Context, deadLetter string) error {
	seeds := e.cfg.seeds()
	alias := e.targets.fixed
	// Templates named as what they are for (Data Prepper's own are named
	// otel-v1-apm-span-index-template and
	// otel-v1-apm-service-map-index-template).
	if err := putTemplate(ctx, e.http, seeds, alias, otelv1.SpanIndexTemplate(alias+"-*")); err != nil {
		return err
	}
	if e.otel.smap != nil {
		if err := putTemplate(ctx, e.http, seeds, otelv1.ServiceMapIndex, otelv1.ServiceMapIndexTemplate()); err != nil {
			return err
		}
	}
	if err := bootstrapAlias(ctx, e, alias); err != nil {
		return err
	}
	if deadLetter == "" {
		return nil
	}
	return putTemplate(ctx, e.http, seeds, "opensearchrouted_deadletter_"+e.signal.String(), deadLetterTemplate(deadLetter))
}

// bootstrapAlias creates <alias>-000001 with alias as its write index
// unless alias exists (as an alias, or an index or data stream of that
// name: then it is written to as it is).
func bootstrapAlias(ctx context.Context, e *osExporter, alias string) error {
	seeds := e.cfg.seeds()
	st, _, err := seedDo(ctx, e.http, seeds, "HEAD", "/"+alias, "")
	if err != nil {
		return fmt.Errorf("opensearchrouted: install_templates: looking up %q: %w", alias, err)
	}
	if st == 200 {
		return nil
	}
	first := alias + "-000001"
	body := fmt.Sprintf(`{"aliases":{%q:{"is_write_index":true}}}`, alias)
	st, msg, err := seedDo(ctx, e.http, seeds, "PUT", "/"+first, body)
	switch {
	case err != nil:
		return fmt.Errorf("opensearchrouted: install_templates: creating %s: %w", first, err)
	case st/100 == 2:
		e.log.Info("created the first span index with its write alias", zap.String("index", first), zap.String("alias", alias))
		return nil
	case st == 400 && strings.Contains(msg, "resource_already_exists_exception"):
		return nil // another collector made it meanwhile
	case st == 401 || st == 403:
		return fmt.Errorf("opensearchrouted: install_templates: HTTP %d: the exporter's credentials may not create %s with its alias %s (needs indices:admin/create and indices:admin/aliases on it); create it yourself or set install_templates: false", st, first, alias)
	default:
		return fmt.Errorf("opensearchrouted: install_templates: PUT %s: HTTP %d: %s", first, st, msg)
	}
}

// Outcomes of trace_groups, per span stored.
type tgOutcome uint8

const (
	tgInline     tgOutcome = iota // its root was in the same call
	tgCache                       // its root came in an earlier call
	tgFixedUp                     // written without, updated once its root came
	tgUnresolved                  // written without, and never updated
	numTGOutcomes
)

// Outcomes of service_map.edges.
type edgeOutcome uint8

const (
	edgeIndexed   edgeOutcome = iota
	edgeDuplicate             // stored already (409)
	edgeFailed                // refused, or still failing after fixup_attempts passes
	edgeDropped               // more pending than the bound
	numEdgeOutcomes
)

var (
	tgOutcomeNames   = [numTGOutcomes]string{"inline", "cache", "fixed_up", "unresolved"}
	edgeOutcomeNames = [numEdgeOutcomes]string{"indexed", "duplicate", "failed", "dropped"}
)

func (t *telemetry) traceGroups(ctx context.Context, o tgOutcome, n int) {
	if n > 0 {
		t.tb.OtelcolOpensearchroutedTraceGroups.Add(ctx, int64(n), t.groupOpts[o])
	}
}

func (t *telemetry) edges(ctx context.Context, o edgeOutcome, n int) {
	if n > 0 {
		t.tb.OtelcolOpensearchroutedServiceMapEdges.Add(ctx, int64(n), t.edgeOpts[o])
	}
}

// otelPart is a part's otel-v1 encoder and the call's groups.
type otelPart struct {
	enc otelv1.Encoder
	oc  *otelCall // nil: SS4O
}

// resetTraces prepares the part's encoder for the spans of ss in rs.
func (p *part) resetTraces(rs ptrace.ResourceSpans, ss ptrace.ScopeSpans) {
	if p.otel.oc != nil {
		p.otel.enc.ResetTraces(rs, ss)
		return
	}
	p.enc.ResetTraces(rs, ss)
}

// appendSpan appends span's document: otel-v1 with its trace's group when
// known, or SS4O.
func (p *part) appendSpan(dst []byte, span ptrace.Span) []byte {
	if oc := p.otel.oc; oc != nil {
		return p.otel.enc.AppendSpan(dst, span, oc.group(span.TraceID()))
	}
	return p.enc.AppendSpan(dst, span)
}
