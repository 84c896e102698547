package demo

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/opensearchrouted/opensearchrouted/testbed/cluster"
	"github.com/opensearchrouted/opensearchrouted/testbed/ossim"
)

// Emulator is an in-process ossim cluster.
type Emulator struct {
	C *ossim.Cluster
}

// StartEmulator starts nodes emulated nodes in zones a/b/c with the
// default hop latency, on basePort+i (0: free ports). Indices the
// exporter creates get shards primaries and one replica.
func StartEmulator(nodes, basePort, shards int) (*Emulator, error) {
	c, err := ossim.Start(ossim.Options{
		Nodes:           nodes,
		Zones:           []string{"a", "b", "c"},
		BasePort:        basePort,
		DefaultShards:   shards,
		DefaultReplicas: 1,
	})
	if err != nil {
		return nil, err
	}
	return &Emulator{C: c}, nil
}

func (e *Emulator) Describe() string {
	o := e.C.Options()
	return fmt.Sprintf("%d-node emulator (ossim), zones a/b/c, hop latency %v same zone / %v cross zone, %d primary shards + %d replica per index",
		e.C.Len(), o.HopLatency, o.CrossZoneHopLatency, o.DefaultShards, o.DefaultReplicas)
}

func (e *Emulator) Seed() string { return e.C.Addr(0) }

func (e *Emulator) Seeds() []string { return e.C.Addrs() }

func (e *Emulator) Counts(context.Context) ([]NodeCounts, error) {
	var out []NodeCounts
	for _, s := range e.C.Stats() {
		out = append(out, NodeCounts{
			Name:             s.Name,
			Received:         s.ItemsReceived,
			Forwarded:        s.ItemsForwarded,
			Primary:          s.ItemsPrimary,
			TransportTxBytes: s.TxBytes,
		})
	}
	return out, nil
}

func (e *Emulator) Close() error { e.C.Close(); return nil }

// OpenSearch is a real cluster started with testbed/cluster (needs Java).
type OpenSearch struct {
	C *cluster.Cluster
}

// StartOpenSearch starts a real nodes-node OpenSearch cluster on 127.0.0.1
// (zones a/b/c), waiting for green health.
func StartOpenSearch(ctx context.Context, nodes int, logf func(string, ...any)) (*OpenSearch, error) {
	c, err := cluster.StartProcess(ctx, cluster.Options{Nodes: nodes, Zones: []string{"a", "b", "c"}, Logf: logf})
	if err != nil {
		return nil, err
	}
	return &OpenSearch{C: c}, nil
}

func (o *OpenSearch) Describe() string {
	return fmt.Sprintf("%d-node OpenSearch %s on 127.0.0.1, zones a/b/c, server-default shards (1 primary + 1 replica per data stream index)", o.C.Len(), o.C.Version())
}

func (o *OpenSearch) Seed() string { return o.C.Addr(0) }

func (o *OpenSearch) Seeds() []string { return o.C.Addrs() }

// Counts reads GET _nodes/stats/transport,indices: transport bytes sent and
// documents indexed per node. A real server does not count forwarded
// items, so Received and Forwarded are unknown (-1).
func (o *OpenSearch) Counts(ctx context.Context) ([]NodeCounts, error) {
	st, body, err := httpDo(ctx, http.MethodGet, strings.TrimSuffix(o.Seed(), "/")+"/_nodes/stats/transport,indices")
	if err != nil {
		return nil, err
	}
	if st != http.StatusOK {
		return nil, fmt.Errorf("demo: GET _nodes/stats: HTTP %d: %.200s", st, body)
	}
	return parseNodeStats(body)
}

func parseNodeStats(body []byte) ([]NodeCounts, error) {
	var resp struct {
		Nodes map[string]struct {
			Name      string `json:"name"`
			Transport struct {
				TxBytes int64 `json:"tx_size_in_bytes"`
			} `json:"transport"`
			Indices struct {
				Indexing struct {
					IndexTotal int64 `json:"index_total"`
				} `json:"indexing"`
			} `json:"indices"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, fmt.Errorf("demo: _nodes/stats: %w", err)
	}
	if len(resp.Nodes) == 0 {
		return nil, errNoNodes
	}
	var out []NodeCounts
	for _, n := range resp.Nodes {
		out = append(out, NodeCounts{Name: n.Name, Received: -1, Forwarded: -1, Primary: n.Indices.Indexing.IndexTotal, TransportTxBytes: n.Transport.TxBytes})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (o *OpenSearch) Close() error { return o.C.Close() }
