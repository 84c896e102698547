// Package pit reads an OpenSearch index to the end with a point in time (PIT)
// and search_after, and survives the loss of the PIT's search contexts.
//
// A PIT pins each shard to a search context on the node that held a copy of
// it when the PIT was opened. A node restart or a keep-alive expiry loses
// those contexts. The Paginator classifies the three shapes this takes
// (spec §4):
//
//   - partial loss: HTTP 200, _shards.failures[].reason.type is
//     search_context_missing_exception; the page is incomplete, so it is
//     discarded (never emitted) and fetched again from a new PIT;
//   - total loss: HTTP 404, error.type search_phase_execution_exception
//     with search_context_missing_exception among error.root_cause[] or
//     error.failed_shards[].reason (or as error.type itself);
//   - transport errors, 429 and 5xx: a size:0 probe on the PIT (on another
//     node where possible) tells whether the contexts survive; if they do
//     the page is retried, if not the PIT is recreated (429 and a server
//     timed_out are retried without a probe).
//
// A context on a node that is down or has left the cluster fails with
// node_not_connected_exception (and its kin) or illegal_state_exception
// "no node found for id" (HTTP 500 when all are lost), as the real server
// does; that is context loss too.
//
// On context loss the Paginator opens a new PIT on the same indices and
// resumes from the last cursor (the sort values of the last hit it
// fetched), at most MaxRecreateAttempts times in a row (a page read resets
// the count), after a capped exponential backoff with full jitter. The new
// PIT is a newer snapshot: documents written or updated since the first PIT
// may appear. After a recreate, hits are checked against a bounded window
// of recently emitted (index, _id) pairs: an already emitted hit with the
// same version is skipped, one with a different version is emitted with
// ErrHitOutOfOrder.
// Pages drop duplicates the same way (seed 004 left Pages emit-all).
//
// # Errors returned with a valid value
//
// Hits and Pages are iter.Seq2 iterators. Unlike the usual convention, an
// error that matches ErrSnapshotBreak, ErrHitOutOfOrder or ErrShardFailure
// (alone or joined) comes with a valid value and the iteration goes on.
// Any other error is fatal: it comes with a zero value and is the last
// thing the iterator yields. Use [IsFatal] to tell them apart.
//
// Shard failures that are not context loss (circuit breaker, task
// cancelled, ...) are not retried when the page has hits: the cursor moves
// past them, the documents of the failed shard in that range are not read,
// and the page carries ErrShardFailure with the failures. A page with no
// hit would not move the cursor, and giving it up would end the read and
// drop all the failed shards' remaining documents: it is retried like a
// transient failure (MaxRetries), then emitted with ErrShardFailure.
// With Options.StrictShards, every such page is discarded and asked for
// again (MaxRetries) instead, and a failure that persists is fatal
// (*PersistentShardFailureError): no range is ever skipped.
//
// # Across Paginators
//
// Options.Dedup passes a DedupWindow that outlives the Paginator, so that a
// follower re-reading an overlap (a new PIT resuming before its last
// cursor) drops what an earlier Paginator emitted. The window keeps every
// entry whose first sort value is at or above the floor given to Keep,
// growing up to its limit; an entry evicted above the floor is counted
// (Counters.DedupOverflows).
//
// # Concurrency
//
// One goroutine iterates. Stats, Cursor, PITID and Close may be called
// from any goroutine at any time (Close ends a running iteration with
// ErrClosed). Parallel reads use one Paginator per slice
// (Options.Slice), optionally sharing one *Counters.
package pit
