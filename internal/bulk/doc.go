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
//	                       and nowhere else
//
// Bulk never computes shards (internal/routing does) and never encodes
// documents (the exporter does). It never logs: errors and outcomes carry what
// the caller needs, and no error message ever holds document contents or
// credentials.
//
// Send fills exactly one Outcome per item in every case, including
// whole-request failures (see Send), so that no item is ever without a
// verdict.
package bulk
