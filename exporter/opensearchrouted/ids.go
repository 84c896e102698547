package opensearchrouted

import "unicode/utf8"

// fallback names why a record was written in another way than usual, each
// counted in documents.fallback.
type fallback uint8

const (
	// fbInvalidSpanID: a span whose trace id or span id is all zeros (not a
	// valid id, yet receivers pass such spans on) gets a content id: with
	// the usual trace id + span id, every such span of a trace would share
	// one document id, and all but the first would be refused as
	// duplicates.
	fbInvalidSpanID fallback = iota
	// fbInvalidAttributeID: document_id: attribute found a value that
	// cannot be an _id (longer than maxIDBytes); the record gets a content
	// id instead (OpenSearch refuses the whole request with such an id).
	fbInvalidAttributeID
	// fbUnmapped: the server refused the document for its shape (a mapping
	// conflict or limit); it was sent again in the unmapped shape.
	fbUnmapped
	// fbInvalidRouting: routing_attribute found a value the server cannot
	// store (over bulk.MaxRoutingBytes); the record goes without a routing
	// value.
	fbInvalidRouting
	// fbRoutingRefused: the server refused the record for its routing
	// (bulk.IsRoutingRefusal); it was dead-lettered or dropped.
	fbRoutingRefused
	numFallbacks
)

var fallbackNames = [numFallbacks]string{"invalid_span_id", "invalid_attribute_id", "unmapped_shape", "invalid_routing", "routing_refused"}

// maxIDBytes is the longest _id OpenSearch takes, in bytes of UTF-8.
const maxIDBytes = 512

// idFits reports whether s, as the id of a bulk item, is short enough:
// its UTF-8 length once every invalid byte is written as U+FFFD (3 bytes),
// as bulk.Batch writes it, is at most maxIDBytes.
func idFits(s string) bool { return fitsBytes(s, maxIDBytes) }

// fitsBytes reports whether s is at most limit bytes of UTF-8 once every
// invalid byte is written as U+FFFD (3 bytes), as bulk.Batch writes it.
func fitsBytes(s string, limit int) bool {
	if len(s) <= limit/utf8.UTFMax {
		return true
	}
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			n += 3
		} else {
			n += size
		}
		if n > limit {
			return false
		}
		i += size
	}
	return true
}
