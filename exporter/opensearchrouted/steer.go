package opensearchrouted

import (
	"context"
	"strings"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/opensearchrouted/opensearchrouted/internal/routing"
)

// SteeringConfig controls shard steering of content-id documents.
type SteeringConfig struct {
	// Enabled gives a document with a content id whose shard has a copy
	// (primary or replica) on a degraded node a salted id ("<id>~<k>")
	// that lands in a shard without one, when at least half of the
	// target's shards are free (default true). Documents with attribute,
	// random or span ids or a custom routing value (routing_attribute),
	// and targets whose shard does not follow from the id (an alias with
	// index_routing, a partitioned index), are never steered. A record is decided by the shards avoided at its own
	// timestamp, so every attempt of it gets the same id.
	Enabled bool `mapstructure:"enabled"`
}

// partSteer is a part's steering state for one call.
type partSteer struct {
	v *routing.SteerView // nil: steering is off

	// The last target looked up, its history, and the last set found
	// with the timestamps [from, to] it decides.
	target   string
	hist     *routing.SteerHistory
	last     *routing.SteerSet
	from, to int64

	// tsOf is a record's timestamp (unix ns; ≤ 0: none), set on the call's
	// own part: the repeats numbered after encoding are decided again.
	tsOf func(ref) int64

	steered int                   // items given a steered id
	risk    [routing.NumRisks]int // content-id records by risk
}

// steerTel holds the steering metrics' attribute sets.
type steerTel struct {
	steered metric.AddOption
	risk    [routing.NumRisks]metric.AddOption
}

func newSteerTel(tel *telemetry) steerTel {
	t := steerTel{steered: tel.opt(tel.signal)}
	for r := range t.risk {
		t.risk[r] = tel.opt(tel.signal, attribute.String("risk", routing.Risk(r).String()))
	}
	return t
}

// beginSteer takes the call's steering view (none when steering is off),
// tsOf giving a record's timestamp.
func (e *osExporter) beginSteer(c *call, tsOf func(ref) int64) {
	c.part.steer = partSteer{}
	if e.steering == nil {
		return
	}
	c.part.steer = partSteer{v: e.steering.View(), tsOf: tsOf}
}

// steerFrom gives an extra part of the call the call's view, its counts
// zeroed, the first time it encodes for the call.
func (p *part) steerFrom(own *part) {
	if p != own && p.steer.v != own.steer.v {
		p.steer = partSteer{v: own.steer.v}
	}
}

// endSteer counts what the call's parts steered and the records at risk.
func (e *osExporter) endSteer(c *call) {
	v := c.part.steer.v
	if v == nil {
		return
	}
	steered, risk := c.part.steer.steered, c.part.steer.risk
	for _, p := range c.extra {
		if p.steer.v == v {
			steered += p.steer.steered
			for r, n := range p.steer.risk {
				risk[r] += n
			}
		}
	}
	ctx := context.Background()
	if steered > 0 {
		e.tel.tb.OtelcolOpensearchroutedDocumentsSteered.Add(ctx, int64(steered), e.steerTel.steered)
	}
	for r, n := range risk {
		if n > 0 && routing.Risk(r) != routing.RiskNone {
			e.tel.tb.OtelcolOpensearchroutedSteeringAtRisk.Add(ctx, int64(n), e.steerTel.risk[r])
		}
	}
}

// set is the steering set for a record of target with timestamp ts.
func (ps *partSteer) set(target string, ts int64) *routing.SteerSet {
	if target != ps.target || ps.target == "" {
		ps.target, ps.hist = target, ps.v.History(target)
		ps.from, ps.to = 1, 0 // empty
	}
	if ps.hist == nil {
		return nil
	}
	if ts < ps.from || ts > ps.to {
		ps.last, ps.from, ps.to = ps.v.Span(ps.hist, ts)
	}
	return ps.last
}

// steerNew decides the id of item it, just committed with its content id
// (occurrence 0), for a record with timestamp ts: a steered id replaces it
// when its shard is avoided at ts.
func (p *part) steerNew(it int32, ts int64) {
	ps := &p.steer
	if ps.v == nil || ts <= 0 || p.batch.Routing(it) != "" {
		return // a routing value, not the id, places the item (customrouting.go)
	}
	ps.risk[ps.v.Risk(ts)]++
	if ps.v.Idle() {
		return
	}
	index, id, _ := p.batch.Item(it)
	k := ps.set(index, ts).Salt(id)
	if k == 0 {
		return
	}
	start := len(p.ids)
	p.ids = append(p.ids, id...)
	p.ids = routing.AppendSalt(p.ids, k)
	p.batch.SetID(it, p.id(start))
	ps.steered++
}

// steerRepeat decides again the id of item it, a repeat whose id with its
// occurrence number is c.ids[start:], before it is set: it gets a salt
// when its shard is avoided at its record's timestamp.
func (c *call) steerRepeat(it int32, start int) {
	ps := &c.part.steer
	if ps.v == nil {
		return
	}
	index, old, _ := c.batch.Item(it)
	if strings.IndexByte(old, routing.SaltSep) >= 0 {
		ps.steered-- // its occurrence-0 id was steered; decided again here
	}
	if ps.v.Idle() || ps.tsOf == nil || c.batch.Routing(it) != "" {
		return
	}
	ts := ps.tsOf(c.refs[it])
	if ts <= 0 {
		return
	}
	if k := ps.set(index, ts).Salt(c.id(start)); k > 0 {
		c.ids = routing.AppendSalt(c.ids, k)
		ps.steered++
	}
}

// recordTime is a log record's timestamp for steering (unix ns; ≤ 0:
// none): its time, else its observed time.
func recordTime(lr plog.LogRecord) int64 {
	if ts := lr.Timestamp(); ts != 0 {
		return int64(ts)
	}
	return int64(lr.ObservedTimestamp())
}

// logTime is recordTime of the record at rf in ld.
func logTime(ld plog.Logs, rf ref) int64 {
	return recordTime(ld.ResourceLogs().At(int(rf.r)).ScopeLogs().At(int(rf.s)).LogRecords().At(int(rf.i)))
}

// spanTime is the start time of the span at rf in td.
func spanTime(td ptrace.Traces, rf ref) int64 {
	return int64(td.ResourceSpans().At(int(rf.r)).ScopeSpans().At(int(rf.s)).Spans().At(int(rf.i)).StartTimestamp())
}
