// Package opensearchbackfill is an OpenTelemetry Collector receiver that
// reads indices of OpenSearch back into a pipeline, with points in time
// (PIT) and search_after, resilient to the loss of PIT contexts (a node
// restart, a keep-alive expiry): internal/pit recreates the PIT and resumes
// from the last cursor.
//
// The read path, one call each way:
//
//	slice goroutine → internal/pit (next page, through readSelector:
//	                  a node holding a copy of the indices' shards)
//	                → converter (internal/ss4o: SS4O documents exactly,
//	                  other documents as generic log records; with
//	                  mapping.mode otel-v1, internal/otelv1 span documents)
//	                → next consumer (retried until accepted)
//	                → checkpoint (the slice's cursor, to the storage extension)
//
// Invariants: a slice fetches its next page only after the pipeline
// accepted the previous one (backpressure); a slice's checkpoint is written
// only after the pipeline accepted every document before it, so a restart
// re-emits at most the page that was being delivered; a refused page is
// retried, never skipped, unless the pipeline refuses it permanently
// (counted as documents.skipped{reason=permanent} and logged).
package opensearchbackfill
