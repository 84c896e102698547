package bulk

import "strings"

// MaxRoutingBytes is the longest routing value the server stores: _routing
// is indexed as one term, and Lucene refuses terms over 32,766 bytes of
// UTF-8 (2.19.6: a longer value answers the item 400
// illegal_argument_exception "Document contains at least one immense term
// in field=\"_routing\" …"; there is no shorter limit, unlike _id's 512).
const MaxRoutingBytes = 32766

// IsRoutingRefusal reports whether the server refused the item for its
// routing value, something no other shape of the document changes:
// status 400 with
//   - routing_missing_exception: the index requires a routing value
//     (mappings _routing.required, which routing_partition_size > 1
//     demands) and the item has none; 2.19.6 answers "routing is required
//     for [<index>]/[<id>]" (3.9.0 alike);
//   - illegal_argument_exception for a routing value the target cannot
//     take: an alias whose index_routing differs from it ("Alias [a] has
//     index routing associated with it [x], and was provided with routing
//     value [y], rejecting operation"), a data stream ("index request
//     targeting data stream [d] specifies a custom routing. …"), or a
//     value over MaxRoutingBytes (an immense term in field "_routing").
//
// IsShapeRefusal is false for all of them.
func IsRoutingRefusal(o Outcome) bool {
	if o.Status != 400 {
		return false
	}
	switch o.ErrorType {
	case errRoutingMissing:
		return true
	case "illegal_argument_exception":
		return isRoutingReason(o.ErrorReason)
	}
	return false
}

const errRoutingMissing = "routing_missing_exception"

// routingReasons are the parts of illegal_argument_exception reasons that
// refuse an item's routing value.
var routingReasons = []string{
	"has index routing associated with it [",
	"specifies a custom routing",
	`immense term in field="_routing"`,
}

func isRoutingReason(reason string) bool {
	for _, m := range routingReasons {
		if strings.Contains(reason, m) {
			return true
		}
	}
	return false
}
