// Package demo runs the `make demo` comparison: a 3-node cluster (the
// emulator, or real OpenSearch for `make demo-opensearch`), the
// otelcol-opensearchrouted collector built by ocb into ./dist, and a
// built-in OTLP gRPC load generator. It sends the same load twice, with
// shard-exact routing on and off, and prints both runs side by side.
//
// The report is computed from three sources, each read once after the
// load is stored: the server's own counters (items each node received and
// forwarded, or transport bytes on real OpenSearch), the stored document
// counts, and the collector's Prometheus metrics (documents by outcome,
// per-node windows, the bulk_request.duration histogram).
package demo
