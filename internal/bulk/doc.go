// Package bulk builds _bulk request bodies, sends them to one node and turns
// the response into one Outcome per item.
//
// The data path through this package:
//
//	Batch.Begin / Commit   the exporter encodes every item of one export call
//	                       (action line + _source) into one reused arena
//	Split                  a node's items, in order, cut into sub-bulks of at
//	                       most max bytes
//	Client.Send            POST {node}/_bulk with those items' bytes read
//	                       straight from the arena, parse the per-item results
//	Classify               Done, Duplicate, Retry or Permanent, decided here
//	                       and nowhere else; IsShapeRefusal tells the
//	                       Permanent items refused for their document's shape
//	                       (IsValidationFailure: a request refused whole)
//	Transport              an HTTP/1.1 RoundTripper for Send: request written
//	                       (copied from the arena, head and body in one
//	                       write) and answer read on the sending goroutine,
//	                       over kept connections; the exporter's default,
//	                       net/http's client otherwise
//
// Bulk never computes shards (internal/routing does) and never encodes
// documents (the exporter does). It never logs: errors and outcomes carry what
// the caller needs, and no error message ever holds document contents or
// credentials (log an item's reason and cause reason through SafeReason).
//
// Invariants:
//   - Item numbers are positions in commit order; Split and Send keep the
//     order of the items they are given, and Send's out[k] belongs to
//     items[k].
//   - Send fills exactly one Outcome per item in every case, including
//     whole-request failures, so no item is ever without a verdict.
//   - Outcome strings never alias a response buffer: they stay valid forever.
//     Batch.Item's strings are the caller's own; Batch.Bytes aliases the arena
//     and is valid until Reset.
//   - Many Sends may read one Batch at once (one per node); the Batch must not
//     change (Begin, Commit, Reset) until all of them have returned. Once Send
//     has returned, nothing reads the Batch for it any more, even if the HTTP
//     transport still holds the request body.
//
// Allocation: a warm Batch encodes without allocating; parsing a success
// response allocates nothing per item; Send's own share is a handful of
// allocations per request (see BENCHMARKS.part.md).
package bulk
