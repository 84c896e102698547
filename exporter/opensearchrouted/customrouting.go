package opensearchrouted

import (
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.uber.org/zap"

	"github.com/opensearchrouted/opensearchrouted/internal/bulk"
)

// Custom routing: with routing_attribute set, a record's routing value is
// that attribute of the record, else of its resource; the bulk item's
// action line carries it ("routing"), the server puts the document in the
// shard of that value (with routing_partition_size p > 1, in one of p
// shards picked by its id), and Router.Locate computes the same shard.
// Records without the attribute (or with an empty value) get no routing
// value. A value the server cannot store (over bulk.MaxRoutingBytes once
// written) is not sent: the record goes without one, counted in
// documents.fallback{fallback="invalid_routing"}.
//
// A refusal of the routing (bulk.IsRoutingRefusal: an index that requires
// a value and got none, an alias whose index_routing differs, a data
// stream) is never a shape problem: the record goes to the dead-letter
// index (when enabled; else it is dropped and counted failed), counted in
// documents.fallback{fallback="routing_refused"}, and an error names the
// index and what to change, once per index and kind per routingLogEvery.

// routingValue returns the routing value of a record with attributes rec,
// counting an invalid one in p.fallbacks.
func (e *osExporter) routingValue(p *part, rec pcommon.Map) string {
	if e.cfg.RoutingAttribute == "" {
		return ""
	}
	if v, ok := rec.Get(e.cfg.RoutingAttribute); ok && v.Type() != pcommon.ValueTypeEmpty {
		if s := v.AsString(); s != "" {
			if routingFits(s) {
				return s
			}
			p.fallbacks[fbInvalidRouting]++
			return ""
		}
	}
	if p.resRoutingInvalid {
		p.fallbacks[fbInvalidRouting]++
	}
	return p.resRouting
}

// resourceRouting sets p's resource routing value from the resource's
// attributes res (at each new scope).
func (e *osExporter) resourceRouting(p *part, res pcommon.Map) {
	p.resRouting, p.resRoutingInvalid = "", false
	if e.cfg.RoutingAttribute == "" {
		return
	}
	if v, ok := res.Get(e.cfg.RoutingAttribute); ok && v.Type() != pcommon.ValueTypeEmpty {
		if s := v.AsString(); s != "" {
			if routingFits(s) {
				p.resRouting = s
			} else {
				p.resRoutingInvalid = true
			}
		}
	}
}

// routingFits reports whether s, as a routing value, is short enough: at
// most bulk.MaxRoutingBytes as written (see fitsBytes).
func routingFits(s string) bool { return fitsBytes(s, bulk.MaxRoutingBytes) }

// customRouting reports whether item it is placed by a routing value
// rather than by its id: its own (routing_attribute) or the index_routing
// of the alias it is written through. Such an item's shard is fixed by
// that value: only the shard math (Router.Locate with the value) may say
// where it goes, nothing may move it to another shard.
func (e *osExporter) customRouting(c *call, it int32) bool {
	if c.batch.Routing(it) != "" {
		return true
	}
	index, _, _ := c.batch.Item(it)
	return e.router != nil && e.router.Topology().AliasRouting(index) != ""
}

// routingLogEvery bounds how often one index's refusal of routing values
// (of one kind) is logged.
const routingLogEvery = time.Minute

// routingLog rate-limits the routing refusal errors per index and kind.
type routingLog struct {
	mu   sync.Mutex
	last map[string]time.Time
}

func (l *routingLog) allow(key string, now time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t, ok := l.last[key]; ok && now.Sub(t) < routingLogEvery {
		return false
	}
	if l.last == nil {
		l.last = map[string]time.Time{}
	}
	l.last[key] = now
	return true
}

// refusedRouting marks item it, refused with o (bulk.IsRoutingRefusal), as
// refused for its routing and logs, rate-limited, what is wrong and what to
// change.
func (e *osExporter) refusedRouting(c *call, it int32, o bulk.Outcome) {
	c.routingRefused = resize(c.routingRefused, c.batch.Len())
	if !c.anyRoutingRefused {
		clear(c.routingRefused)
		c.anyRoutingRefused = true
	}
	c.routingRefused[it] = true
	index, _, _ := c.batch.Item(it)
	kind, msg := routingProblem(o, index, e.cfg.RoutingAttribute)
	if !e.routingLog.allow(index+"\x00"+kind, time.Now()) {
		return
	}
	then := "it is dropped (dead_letter.enabled is false)"
	if e.cfg.DeadLetter.Enabled {
		then = "it goes to the dead-letter index " + e.deadLetterIndex()
	}
	e.log.Error("OpenSearch refused a document for its routing: "+msg+"; "+then,
		zap.String("index", index), zap.String("concrete_index", o.Index), zap.String("problem", kind),
		zap.String("routing_attribute", e.cfg.RoutingAttribute),
		zap.String("error.type", o.ErrorType), zap.String("error.reason", bulk.SafeReason(o.ErrorReason)))
}

// routingProblem names a routing refusal's kind and says what to change.
func routingProblem(o bulk.Outcome, index, attr string) (kind, msg string) {
	setting := "routing_attribute is not set"
	if attr != "" {
		setting = "the record has no routing_attribute " + quote(attr) + " (record or resource attribute)"
	}
	switch {
	case o.ErrorType == "routing_missing_exception":
		return "routing_missing", "index " + quote(index) + " requires a routing value on every document (its mapping sets _routing.required, which index.routing_partition_size > 1 demands) and " + setting +
			": set routing_attribute to an attribute these records carry"
	case strings.Contains(o.ErrorReason, "has index routing associated with it"):
		return "alias_routing_conflict", "the alias " + quote(index) + " has an index_routing and the record's routing_attribute value differs from it: remove the attribute from these records, or the index_routing from the alias"
	case strings.Contains(o.ErrorReason, "specifies a custom routing"):
		return "data_stream", quote(index) + " is a data stream, which takes no custom routing: unset routing_attribute, or write these records to an index or alias (logs_index, traces_index)"
	}
	return "invalid_routing", "index " + quote(index) + " cannot take the record's routing value"
}

func quote(s string) string { return `"` + s + `"` }

// refusedForRouting reports whether item it was refused for its routing.
func (c *call) refusedForRouting(it int32) bool {
	return c.anyRoutingRefused && c.routingRefused[it]
}

// countRoutingRefused returns how many items were refused for their
// routing and are final (dead-lettered, or dropped).
func (c *call) countRoutingRefused() int {
	if !c.anyRoutingRefused {
		return 0
	}
	n := 0
	for it, r := range c.routingRefused {
		if r && c.class[it] != bulk.Retry {
			n++
		}
	}
	return n
}
