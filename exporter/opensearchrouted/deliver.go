package opensearchrouted

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.uber.org/zap"

	"github.com/opensearchrouted/opensearchrouted/internal/bulk"
	"github.com/opensearchrouted/opensearchrouted/internal/routing"
)

// job is one sub-bulk: items for one node (nil: unrouted, the node is
// picked when the job runs) and where their outcomes go.
type job struct {
	node  *routing.Node
	items []int32
	out   []bulk.Outcome
	err   error // the whole-request error, if any
	// isolated: the job holds only items suspected of a whole-request
	// failure, all for this index (nullid.go)
	isolated string
}

// maxPermanentLogs bounds the warnings one call logs for permanent item
// failures; the rest are counted and summarised.
const maxPermanentLogs = 5

func (e *osExporter) getCall() *call {
	if c, ok := e.calls.Get().(*call); ok {
		return c
	}
	return &call{}
}

func (e *osExporter) putCall(c *call) {
	c.reset()
	e.calls.Put(c)
}

func (e *osExporter) pushLogs(ctx context.Context, ld plog.Logs) error {
	e.workers.enter()
	defer e.workers.leave()
	c := e.getCall()
	defer e.putCall(c)
	e.encodeLogs(c, ld)
	retry, err := e.deliver(ctx, c)
	if len(retry) > 0 {
		return consumererror.NewLogs(err, subsetLogs(ld, c.refs, retry))
	}
	return err
}

func (e *osExporter) pushTraces(ctx context.Context, td ptrace.Traces) error {
	e.workers.enter()
	defer e.workers.leave()
	c := e.getCall()
	defer e.putCall(c)
	if e.otel != nil {
		c.oc = e.otel.before(td)
		c.landed = resize(c.landed, td.SpanCount())
		clear(c.landed)
	}
	e.encodeTraces(c, td)
	retry, err := e.deliver(ctx, c)
	if c.oc != nil {
		e.otelAfter(ctx, c, td)
	}
	if len(retry) > 0 {
		return consumererror.NewTraces(err, subsetTraces(td, c.refs, retry))
	}
	return err
}

// deliver sends every item of the call until each is final (written,
// duplicate, permanently refused) or out of in-call attempts. It returns
// the items to hand back for retry (with the error saying why), or a
// permanent error when some items were refused for good, or nil.
func (e *osExporter) deliver(ctx context.Context, c *call) ([]int32, error) {
	ctx, cancel := e.callContext(ctx)
	defer cancel()
	n := c.beginDelivery()
	var authErr, tlsErr error
	// An attempt is a round sent after a backoff. A round after which items
	// moved to a new shape (see reshape) is followed by one at once that
	// does not count as an attempt: each item moves at most twice, so a
	// call runs at most twice as many rounds as attempts.
	reshaped := 0
	for attempt, quick := 1, false; len(c.pending) > 0 && attempt <= e.cfg.Bulk.MaxAttempts; {
		if attempt > 1 && !quick && !e.backoff(ctx, attempt) {
			break
		}
		err, terr := e.round(ctx, c)
		if err != nil && authErr == nil {
			authErr = err
		}
		if terr != nil {
			tlsErr = terr
		}
		quick = e.reshape(c) > 0 && reshaped < 2*e.cfg.Bulk.MaxAttempts
		if quick {
			reshaped++
		} else {
			attempt++
		}
		c.keepRetryable()
		if ctx.Err() != nil || err != nil {
			break // refused credentials: resending now cannot help
		}
	}
	markDeadline(ctx, c)
	e.tel.routed(ctx, &c.reasons)

	var counts [bulk.NumClasses]int
	deadLettered, unmapped := 0, 0
	for it, cls := range c.class {
		switch {
		case c.shape[it] == shapeDeadLetter && (cls == bulk.Done || cls == bulk.Duplicate):
			deadLettered++
			continue
		case c.shape[it] == shapeUnmapped && cls == bulk.Done:
			unmapped++
		}
		counts[cls]++
	}
	e.tel.documents(ctx, outIndexed, counts[bulk.Done])
	e.tel.documents(ctx, outDuplicate, counts[bulk.Duplicate])
	e.tel.documents(ctx, outDeadLettered, deadLettered)
	e.tel.documents(ctx, outRetried, counts[bulk.Retry])
	e.tel.documents(ctx, outFailed, counts[bulk.Permanent]+c.encodeFailed)
	e.tel.fallback(ctx, fbUnmapped, unmapped)
	e.tel.fallback(ctx, fbInvalidSpanID, c.fallbacks[fbInvalidSpanID])
	e.tel.fallback(ctx, fbInvalidAttributeID, c.fallbacks[fbInvalidAttributeID])
	e.tel.fallback(ctx, fbInvalidRouting, c.fallbacks[fbInvalidRouting])
	e.tel.fallback(ctx, fbRoutingRefused, c.countRoutingRefused())

	var permErr error
	if counts[bulk.Permanent] > 0 || c.encodeFailed > 0 {
		permErr = e.reportPermanent(c, counts[bulk.Permanent], authErr)
	}
	if counts[bulk.Retry] > 0 {
		c.next = c.retrySet(c.next)
		msg := fmt.Sprintf("opensearchrouted: %d of %d %s not stored yet (%s); handing them back for retry",
			counts[bulk.Retry], n, e.signal.noun(), e.retrySummary(c))
		if authErr != nil {
			msg += ": " + authErr.Error()
			e.logRefusedCredentials(authErr, counts[bulk.Retry])
		} else if tlsErr != nil {
			msg += ": " + tlsErr.Error() // names the node and the TLS reason
		}
		if permErr != nil {
			msg += "; also " + permErr.Error()
		}
		return c.next, errors.New(msg)
	}
	if permErr != nil {
		return nil, consumererror.NewPermanent(permErr)
	}
	return nil, nil
}

// beginDelivery makes every item of c pending and retryable, in its
// original shape, and returns their number.
func (c *call) beginDelivery() int {
	n := c.batch.Len()
	c.class = resize(c.class, n)
	c.result = resize(c.result, n)
	clear(c.result) // an item never answered keeps the zero Outcome (see outcome)
	c.shape = resize(c.shape, n)
	clear(c.shape)
	c.orig = resize(c.orig, n)
	c.pending = c.pending[:0]
	for i := 0; i < n; i++ {
		c.class[i] = bulk.Retry
		c.pending = append(c.pending, int32(i))
	}
	return n
}

// keepRetryable keeps pending the items of c.pending still retryable.
func (c *call) keepRetryable() {
	c.next = c.next[:0]
	for _, it := range c.pending {
		if c.class[it] == bulk.Retry {
			c.next = append(c.next, it)
		}
	}
	c.pending, c.next = c.next, c.pending
}

func (s signal) noun() string {
	if s == signalTraces {
		return "spans"
	}
	return "log records"
}

// maxRetryWait caps one in-call backoff (unless bulk.retry_backoff itself
// is longer): doubling from 100ms reaches minutes by the 12th attempt, and
// a call that sleeps holds one of the queue's consumers all along.
const maxRetryWait = 30 * time.Second

// retryWait is the backoff before attempt (≥ 2): first × 2^(attempt-2), at
// most max(first, maxRetryWait).
func retryWait(first time.Duration, attempt int) time.Duration {
	if first <= 0 {
		return 0
	}
	d := first
	for i := 2; i < attempt && d < maxRetryWait; i++ {
		d *= 2
	}
	if d > maxRetryWait {
		d = max(first, maxRetryWait)
	}
	return d
}

// backoff waits before attempt (≥ 2): retryWait, with jitter in [d/2, d).
// It returns false when ctx ends first.
func (e *osExporter) backoff(ctx context.Context, attempt int) bool {
	d := retryWait(e.cfg.Bulk.RetryBackoff, attempt)
	if d <= 0 {
		return ctx.Err() == nil
	}
	d = d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// round locates the pending items, cuts per-node sub-bulks and sends them
// all concurrently, each under its node's congestion window. It returns the
// first refusal of the credentials (401, 403) and the first TLS failure of
// the round, if any.
func (e *osExporter) round(ctx context.Context, c *call) (authErr, tlsErr error) {
	for i := range c.groups {
		c.groups[i].items = c.groups[i].items[:0]
	}
	c.unrouted = c.unrouted[:0]
	ng := 0
	located := c.located
	c.located = false // later rounds locate again: the topology may have changed
	for _, it := range c.pending {
		var node *routing.Node
		var reason routing.Reason
		if located {
			node, reason = c.locs[it].node, c.locs[it].reason
		} else {
			index, id, _ := c.batch.Item(it)
			node, reason = e.router.Locate(index, id, c.batch.Routing(it))
		}
		c.reasons[reason]++
		if node == nil {
			c.unrouted = append(c.unrouted, it)
			continue
		}
		g := -1
		for i := 0; i < ng; i++ {
			if c.groups[i].node == node {
				g = i
				break
			}
		}
		if g < 0 {
			if ng == len(c.groups) {
				c.groups = append(c.groups, group{})
			}
			g = ng
			ng++
			c.groups[g].node = node
			c.groups[g].items = c.groups[g].items[:0]
		}
		c.groups[g].items = append(c.groups[g].items, it)
	}

	c.outs = resize(c.outs, len(c.pending))
	c.nid.prepare(c.batch.Len())
	c.jobs = c.jobs[:0]
	off := 0
	addJobs := func(node *routing.Node, items []int32, maxBytes int) {
		c.subs = bulk.Split(&c.batch, items, maxBytes, c.subs)
		for _, sub := range c.subs {
			c.jobs = append(c.jobs, job{node: node, items: sub, out: c.outs[off : off+len(sub)]})
			off += len(sub)
		}
	}
	for i := 0; i < ng; i++ {
		addJobs(c.groups[i].node, c.groups[i].items, e.maxBytes(c.groups[i].node))
	}
	if len(c.unrouted) > 0 {
		rest, groups, indices := c.isolateSuspects(c.unrouted) // nullid.go
		if len(rest) > 0 {
			addJobs(nil, rest, e.cfg.Bulk.MaxBytes)
		}
		for k, g := range groups {
			from := len(c.jobs)
			addJobs(nil, g, e.cfg.Bulk.MaxBytes)
			for i := from; i < len(c.jobs); i++ {
				c.jobs[i].isolated = indices[k]
			}
		}
	}

	// Every job but the first on a worker; the first on this goroutine,
	// whose stack has already grown. Done with its own, this goroutine
	// yields for a while before it blocks (see workers): blocked, it would
	// leave its core idle, and the worker finishing the last job would
	// wake it onto that worker's core, where the next call's encoding then
	// runs beside the spinning worker while the other core sleeps.
	var wg sync.WaitGroup
	c.left.Store(int32(max(0, len(c.jobs)-1)))
	for i := 1; i < len(c.jobs); i++ {
		wg.Add(1)
		j := &c.jobs[i]
		e.workers.run(func() {
			defer wg.Done()
			e.run(ctx, c, j)
			c.left.Add(-1)
		})
	}
	if len(c.jobs) > 0 {
		e.run(ctx, c, &c.jobs[0])
	}
	if len(c.jobs) > 1 && e.workers.alone() {
		yieldFor(waitSpin, func() bool { return c.left.Load() == 0 })
	}
	wg.Wait()
	for i := range c.jobs {
		var re *bulk.RequestError
		if errors.As(c.jobs[i].err, &re) {
			if re.Kind == bulk.KindAuth {
				return re, nil
			}
			if re.Kind == bulk.KindTLS && tlsErr == nil {
				tlsErr = re
			}
		}
	}
	return nil, tlsErr
}

// maxBytes is the sub-bulk size limit for a node: bulk.max_bytes, never
// above the node's http.max_content_length.
func (e *osExporter) maxBytes(n *routing.Node) int {
	m := e.cfg.Bulk.MaxBytes
	if mc := n.Info().MaxContentLength; mc > 0 && mc < int64(m) {
		m = int(mc)
	}
	return m
}

// errNodeDied is the ErrorType of items not sent because their node was
// marked dead while their sub-bulk waited for its window.
const errNodeDied = "node_died_while_queued"

// unsent marks items that were not sent as retryable, errorType saying why.
func (c *call) unsent(items []int32, errorType string) {
	for _, it := range items {
		c.class[it] = bulk.Retry
		c.result[it] = bulk.Outcome{ErrorType: errorType}
	}
}

// run sends one sub-bulk under its node's window and records each item's
// verdict. Jobs of one round touch disjoint items.
func (e *osExporter) run(ctx context.Context, c *call, j *job) {
	node := j.node
	if node == nil {
		node = e.router.Pick()
	}
	alive := node.Alive()
	w := node.Window()
	tk, err := w.Acquire(ctx) // blocking here is the backpressure
	if err != nil {
		c.unsent(j.items, bulk.ErrCanceled)
		j.err = err
		return
	}
	if alive && !node.Alive() {
		// A request to the node failed while this sub-bulk waited for its
		// window (the node is marked dead): sending would only wait for the
		// same failure, a whole request timeout when the node is silent.
		// The items stay retryable; the next round locates them again,
		// away from the node. (A node already dead when its sub-bulk was
		// formed is sent to: every node was dead, and the request doubles
		// as a health check.)
		w.Release(tk, routing.Failure)
		c.unsent(j.items, errNodeDied)
		return
	}
	start := time.Now()
	res, err := e.client.Send(ctx, node.URL(), &c.batch, j.items, j.out)
	elapsed := time.Since(start)
	j.err = err

	wo, reqOutcome := routing.Success, "ok"
	var re *bulk.RequestError
	switch {
	case errors.As(err, &re):
		reqOutcome = re.Kind.String()
		switch re.Kind {
		case bulk.KindNodeDown, bulk.KindTLS:
			wo = routing.Failure
			if len(j.out) > 0 && j.out[0].ErrorType == bulk.ErrTimeout {
				wo = routing.Timeout
			}
			e.router.MarkDead(node, err)
		case bulk.KindThrottled:
			wo = routing.Rejected
		case bulk.KindServer, bulk.KindBadResponse, bulk.KindCanceled:
			wo = routing.Failure
		case bulk.KindAuth, bulk.KindRejected, bulk.KindBlocked:
			// The node answered; the window is not the problem.
		}
	case err != nil:
		wo, reqOutcome = routing.Failure, "error"
	}
	if err == nil || (re != nil && re.Kind != bulk.KindNodeDown && re.Kind != bulk.KindTLS && re.Kind != bulk.KindCanceled) {
		e.router.MarkAlive(node)
	}

	// A Done item tells where the write really landed: an _index other
	// than the cached write index of its data stream means a rollover; a
	// target the topology does not know means the write created it (or it
	// is an alias): both ask for a refresh.
	rollover := false
	var lastTarget, lastWrite string
	lastKnown := true
	topo := e.router.Topology()
	for k, it := range j.items {
		o := j.out[k]
		cls := bulk.Classify(o)
		if cls == bulk.Permanent && refusedCredentials(o) {
			cls = bulk.Retry
		}
		if cls == bulk.Retry && isNullIDFailure(o) {
			cls, o = c.nullID(it, j.isolated, o)
		}
		c.class[it] = cls
		if int(it) < len(c.landed) && (cls == bulk.Done || cls == bulk.Duplicate) {
			c.landed[it] = o.Index // otel-v1: where a span without its group is, for the fix-up
		}
		if cls != bulk.Done {
			c.result[it] = o // only the others' are read (reportPermanent, retrySummary)
		}
		if cls == bulk.Retry && (o.Status == 429 || o.ErrorType == "rejected_execution_exception" || o.ErrorType == "es_rejected_execution_exception") {
			wo = routing.Rejected
		}
		if cls != bulk.Done || o.Index == "" || topo == nil {
			continue
		}
		target, _, _ := c.batch.Item(it)
		if target != lastTarget {
			lastTarget, lastWrite = target, ""
			wi, ok := topo.WriteIndex(target)
			lastKnown = ok
			if ok && (topo.IsDataStream(target) || topo.IsAlias(target)) {
				lastWrite = wi.Name
			}
			if !ok {
				e.router.Seen(target)
			}
		}
		if lastKnown && lastWrite != "" && o.Index != lastWrite {
			rollover = true
		}
	}
	if wo == routing.Rejected && reqOutcome == "ok" {
		reqOutcome = "throttled"
	}
	w.Release(tk, wo)
	if j.node != nil && err == nil && wo == routing.Success {
		e.router.ObserveWrite(node, elapsed, len(j.items), res.Bytes)
	}
	if rollover {
		e.router.Trigger(routing.TriggerRollover)
	}
	e.nodeLabels().bulkRequest(ctx, e.tel, node, reqOutcome, elapsed.Seconds(), res.Bytes)
}

// reportPermanent logs the first few permanent failures (index, status,
// error type and a reason cut before any document contents; never the
// document) and returns an error counting them all.
func (e *osExporter) reportPermanent(c *call, n int, authErr error) error {
	byType := map[string]int{}
	logged := 0
	first := ""
	for it, cls := range c.class {
		if cls != bulk.Permanent {
			continue
		}
		o := c.outcome(it)
		byType[o.ErrorType]++
		if first == "" {
			first = bulk.SafeReason(o.ErrorReason)
			if cs := cause(o); cs != "" {
				first += " (caused by " + cs + ")"
			}
		}
		if logged < maxPermanentLogs && authErr == nil {
			index, _, _ := c.batch.Item(int32(it))
			e.log.Warn("OpenSearch refused a document permanently; it is dropped",
				zap.String("index", index), zap.Int("status", o.Status),
				zap.String("error.type", o.ErrorType), zap.String("error.reason", bulk.SafeReason(o.ErrorReason)),
				zap.String("error.cause", cause(o)))
			logged++
		}
	}
	if c.encodeFailed > 0 {
		byType["encoding_failed"] += c.encodeFailed
		n += c.encodeFailed
	}
	msg := fmt.Sprintf("opensearchrouted: %d %s dropped, refused permanently (%s)", n, e.signal.noun(), countsByType(byType))
	if first != "" && authErr == nil {
		msg += "; the first: " + first
	}
	if authErr != nil {
		msg += ": " + authErr.Error()
		e.log.Error("OpenSearch refused the exporter's credentials", zap.Error(authErr))
	}
	return errors.New(msg)
}

// retrySummary names the causes of the items still retryable.
func (e *osExporter) retrySummary(c *call) string {
	byType := map[string]int{}
	for it, cls := range c.class {
		if cls == bulk.Retry {
			o := c.outcome(it)
			t := o.ErrorType
			if t == "" {
				t = fmt.Sprintf("HTTP %d", o.Status)
			}
			byType[t]++
		}
	}
	return countsByType(byType)
}

// countsByType lists record counts by error type, largest first:
// "500 × connection_error, 3 × HTTP 503".
func countsByType(byType map[string]int) string {
	types := make([]string, 0, len(byType))
	for t := range byType {
		types = append(types, t)
	}
	sort.Slice(types, func(i, j int) bool {
		if byType[types[i]] != byType[types[j]] {
			return byType[types[i]] > byType[types[j]]
		}
		return types[i] < types[j]
	})
	parts := make([]string, len(types))
	for i, t := range types {
		parts[i] = fmt.Sprintf("%d × %s", byType[t], t)
	}
	return strings.Join(parts, ", ")
}

// outcome is item it's latest answer. An item with none recorded (no round
// ran for it) reads as canceled: the call ended before it was sent.
func (c *call) outcome(it int) bulk.Outcome {
	if o := c.result[it]; o != (bulk.Outcome{}) {
		return o
	}
	return bulk.Outcome{ErrorType: bulk.ErrCanceled}
}

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
