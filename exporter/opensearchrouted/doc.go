// Package opensearchrouted is an OpenTelemetry Collector exporter that
// writes logs and traces to OpenSearch with _bulk, sending every document
// straight to the node that holds its shard's primary.
//
// The data path, one call each way:
//
//	pdata → internal/ss4o (document, id)          "what to write"
//	      → internal/routing (Locate: node)        "where it goes"
//	      → internal/bulk (per-node sub-bulks)     "how it is sent"
//	      → deliver: outcomes → consumererror      "what the pipeline hears"
//
// Ids are assigned once, before the first attempt, so a retry can never
// duplicate: a create of an id that an earlier attempt already wrote comes
// back 409 and is counted as a duplicate, not written twice.
package opensearchrouted
