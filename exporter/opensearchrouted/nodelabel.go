package opensearchrouted

import (
	"context"
	"sync"

	"github.com/opensearchrouted/opensearchrouted/internal/routing"
)

// nodeLabels gives the per-node metrics (bulk_requests, bulk_request.*,
// node.*) one stable `node` value per node from the start: the node's
// name (node.name). A configured endpoint is a node too when a discovered
// node publishes its address: its requests are labelled with that node's
// name, as the discovered node's own are. Until the first refresh has
// ended, which node an endpoint is is not known: the requests sent to an
// endpoint meanwhile are held (their counts, durations and bytes; at most
// maxHeldRequests) and recorded once it ends, and the endpoints' gauges
// are not reported. An endpoint no discovered node publishes (a load
// balancer, a proxy, a managed service's address, or any endpoint while
// discovery fails or routing is disabled) is labelled host:port. Export
// calls never wait for any of this.
type nodeLabels struct {
	router *routing.Router

	mu      sync.Mutex
	settled bool // the first refresh has ended
	held    []heldRequest
}

// maxHeldRequests bounds the requests held before the first refresh ends;
// later ones are recorded at once, under host:port.
const maxHeldRequests = 4096

type heldRequest struct {
	tel     *telemetry
	node    *routing.Node
	outcome string
	seconds float64
	bytes   int64
}

// isSeed reports whether n is one of the configured endpoints.
func (l *nodeLabels) isSeed(n *routing.Node) bool {
	for _, s := range l.router.Seeds() {
		if s == n {
			return true
		}
	}
	return false
}

// label is n's node label: its name, or for an endpoint the name of the
// discovered node that publishes its address (host:port when none does).
func (l *nodeLabels) label(n *routing.Node) string {
	if l == nil || !l.isSeed(n) {
		return n.Name()
	}
	if t := l.router.Topology(); t != nil {
		for _, d := range t.Nodes {
			if d.URL() == n.URL() {
				return d.Name()
			}
		}
	}
	return n.Name()
}

// bulkRequest records one sub-bulk request to n in tel, or holds it while
// n is an endpoint and the first refresh has not ended.
func (l *nodeLabels) bulkRequest(ctx context.Context, tel *telemetry, n *routing.Node, outcome string, seconds float64, bytes int64) {
	if l != nil && l.isSeed(n) {
		l.mu.Lock()
		if !l.settled && len(l.held) < maxHeldRequests {
			l.held = append(l.held, heldRequest{tel, n, outcome, seconds, bytes})
			l.mu.Unlock()
			return
		}
		l.mu.Unlock()
	}
	tel.bulkRequest(ctx, l.label(n), outcome, seconds, bytes)
}

// reportGauges reports whether n's gauges are reported now: not an
// endpoint's before the first refresh has ended.
func (l *nodeLabels) reportGauges(n *routing.Node) bool {
	if l == nil || !l.isSeed(n) {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.settled
}

// settle ends the wait (at the end of every refresh; the first one
// counts) and records the held requests under their labels.
func (l *nodeLabels) settle() {
	l.mu.Lock()
	if l.settled {
		l.mu.Unlock()
		return
	}
	l.settled = true
	held := l.held
	l.held = nil
	l.mu.Unlock()
	for _, h := range held {
		h.tel.bulkRequest(context.Background(), l.label(h.node), h.outcome, h.seconds, h.bytes)
	}
}

// nodeLabels is the exporter's shared node labels (nil when not started).
func (e *osExporter) nodeLabels() *nodeLabels {
	if e.shared == nil {
		return nil
	}
	return e.shared.labels
}
