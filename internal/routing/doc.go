// Package routing knows where a document lands before it is sent.
//
// It has three parts:
//   - shard math (Hash, Layout.Shard): OpenSearch's murmur3 routing formula,
//     matched to the integer;
//   - topology (Topology, Discoverer): an immutable, atomically swapped
//     snapshot of nodes, shard tables and data stream write indices, and
//     Locate, which names the node holding a document's primary shard;
//   - nodes (Node): per-node health (alive/dead with resurrection backoff),
//     load (node stats) and an AIMD congestion window that bounds the write
//     requests in flight to each node.
//
// Routing never encodes documents and never sends bulks.
package routing
