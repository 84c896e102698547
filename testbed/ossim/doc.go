// Package ossim is a multi-node OpenSearch emulator for tests and demos.
//
// Each node is a real HTTP server on 127.0.0.1. Cluster state (indices,
// templates, data streams, shard allocation, membership) is shared by the
// nodes of one Cluster; the documents of a shard copy live with the node
// that holds the copy. A bulk received by one node is split by shard
// (internal/routing computes the shard), items whose primary is local are
// executed locally, and every other shard group is forwarded over real HTTP
// to the node holding its primary, which replicates it over HTTP to the
// replicas. Each forwarded hop pays a configurable one-way latency, each
// shard-level write (primary and replica) holds a worker of a bounded write
// thread pool for a configurable service time (CalibratedService: measured
// on the real server), and a full queue rejects the shard group with 429
// rejected_execution_exception.
//
// The response shapes follow shared/spec/opensearch.md §2–§4. What the
// emulator deliberately does differently from a real server is listed in
// README.md beside this file.
//
// Faults (StopNode, RestartNode, SetLatency, SetSlowness, SetQueue,
// Blackhole, Relocate, RejectNext) are available through the Go API and through the admin HTTP
// endpoints under /_ossim/ on every node. Server-side counters (Stats) tell a
// test how many items were forwarded between nodes.
package ossim
