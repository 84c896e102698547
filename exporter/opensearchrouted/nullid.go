package opensearchrouted

import (
	"sync/atomic"

	"github.com/opensearchrouted/opensearchrouted/internal/bulk"
)

// An item without id and without routing value, written to an index that
// requires routing, makes OpenSearch (2.19.6 and 3.9.0 alike) fail the
// whole _bulk request: HTTP 500 null_pointer_exception "id must not be
// null" (building the routing_missing_exception needs the id the item does
// not have yet), nothing of the request stored. Retried as is, the request
// would fail forever, and with it every other item it holds. So the items
// of such a request that have neither id nor routing value become
// suspects: the next round sends them in sub-bulks of their own, one index
// each; a suspect sub-bulk that fails the same way names an index that
// requires routing, and its items are refused for their routing (a
// routing_missing_exception, as the server answers such an item with an
// id; see customrouting.go). Items with an id or a routing value are
// retried as usual. This happens with document_id: none only.

// nullIDState is a call's suspects. A round's jobs mark their own items
// (disjoint) from several goroutines.
type nullIDState struct {
	suspect []bool // per item
	any     atomic.Bool
}

func (s *nullIDState) reset() { s.any.Store(false) }

// prepare sizes suspect for n items before a round's jobs run, cleared
// unless this call already has suspects.
func (s *nullIDState) prepare(n int) {
	if !s.any.Load() {
		s.suspect = resize(s.suspect, n)
		clear(s.suspect)
	}
}

// isNullIDFailure reports whether o is the server's whole-request failure
// for an item without id nor routing to an index that requires routing.
func isNullIDFailure(o bulk.Outcome) bool {
	return o.Status == 500 && o.ErrorType == "null_pointer_exception" && o.ErrorReason == "id must not be null"
}

// nullID handles item it of a request that failed with isNullIDFailure:
// isolated is the index when the request held only suspects of that index
// (else ""). It returns the item's class and outcome.
func (c *call) nullID(it int32, isolated string, o bulk.Outcome) (bulk.Class, bulk.Outcome) {
	index, id, _ := c.batch.Item(it)
	if id != "" || c.batch.Routing(it) != "" {
		return bulk.Retry, o
	}
	if isolated != "" {
		return bulk.Permanent, bulk.Outcome{Status: 400, Index: index, ErrorType: "routing_missing_exception",
			ErrorReason: "routing is required for [" + index + "] (OpenSearch failed the whole request with 500 null_pointer_exception, id must not be null: its answer to an item without id nor routing value for an index that requires routing)"}
	}
	c.nid.suspect[it] = true
	c.nid.any.Store(true)
	return bulk.Retry, o
}

// isolateSuspects splits unrouted items into those sent as usual and the
// suspects, grouped by index (each group in item order).
func (c *call) isolateSuspects(unrouted []int32) (rest []int32, groups [][]int32, indices []string) {
	if !c.nid.any.Load() {
		return unrouted, nil, nil
	}
	rest = unrouted[:0:0]
	for _, it := range unrouted {
		if !c.nid.suspect[it] {
			rest = append(rest, it)
			continue
		}
		index, _, _ := c.batch.Item(it)
		g := -1
		for k, ix := range indices {
			if ix == index {
				g = k
			}
		}
		if g < 0 {
			g = len(groups)
			groups, indices = append(groups, nil), append(indices, index)
		}
		groups[g] = append(groups[g], it)
	}
	return rest, groups, indices
}
