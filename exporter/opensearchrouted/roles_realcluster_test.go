package opensearchrouted

import (
	"context"
	"testing"

	"github.com/opensearchrouted/opensearchrouted/testbed/cluster"
)

// TestRolesRealCluster: real OpenSearch, 3 data nodes and a dedicated
// cluster-manager node. Routed documents and unrouted ones (server-assigned
// ids) alike: the cluster-manager node's own _nodes/stats show no HTTP
// connection opened to it and no document indexed or searched there.
func TestRolesRealCluster(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Nodes: 4, PerNode: []cluster.NodeOptions{{}, {}, {},
		{Settings: map[string]string{"node.roles": "cluster_manager"}}}})
	mgr := c.NodeName(3)
	type stats struct {
		Nodes map[string]struct {
			Name  string   `json:"name"`
			Roles []string `json:"roles"`
			HTTP  struct {
				TotalOpened int64 `json:"total_opened"`
			} `json:"http"`
			Indices struct {
				Indexing struct {
					IndexTotal int64 `json:"index_total"`
				} `json:"indexing"`
				Search struct {
					QueryTotal int64 `json:"query_total"`
				} `json:"search"`
			} `json:"indices"`
		} `json:"nodes"`
	}
	// Asked of node 0, about node 3: nothing here connects to node 3.
	read := func() (opened, indexed, searched int64) {
		var st stats
		if code := httpJSON(t, "GET", c.Addr(0)+"/_nodes/"+mgr+"/stats/http,indices", "", &st); code != 200 || len(st.Nodes) != 1 {
			t.Fatalf("stats of %s: HTTP %d, %d nodes", mgr, code, len(st.Nodes))
		}
		for _, n := range st.Nodes {
			return n.HTTP.TotalOpened, n.Indices.Indexing.IndexTotal, n.Indices.Search.QueryTotal
		}
		return
	}
	var info stats
	httpJSON(t, "GET", c.Addr(0)+"/_nodes/"+mgr+"/stats/http", "", &info)
	for _, n := range info.Nodes {
		if len(n.Roles) != 1 || n.Roles[0] != "cluster_manager" {
			t.Fatalf("node 3 roles %v, want cluster_manager only", n.Roles)
		}
	}
	createIndex(t, c.Addr(0), "logs-roles", 6, 1)
	opened0, _, _ := read()
	endpoints := []string{c.Addr(0), c.Addr(1), c.Addr(2)}

	_, reader := startRoutedTo(t, endpoints, "logs-roles", 100, 5000)
	if d := sumMetric(t, reader, "otelcol.opensearchrouted.documents.routed", map[string]string{"path": "direct"}); d < 5000 {
		t.Fatalf("direct %d, want ≥ 5000", d)
	}
	ncfg := testConfig(endpoints)
	ncfg.LogsIndex = "logs-roles"
	ncfg.DocumentID = DocumentIDNone
	ne, _ := startExporter(t, ncfg, signalLogs)
	waitTopology(t, ne)
	if err := ne.pushLogs(context.Background(), makeLogs(100_000, 5000)); err != nil {
		t.Fatal(err)
	}
	if got := count(t, c.Addr(0), "logs-roles"); got != 10_100 {
		t.Fatalf("stored %d, want 10100", got)
	}
	if opened, indexed, searched := read(); opened != opened0 || indexed != 0 || searched != 0 {
		t.Fatalf("the cluster-manager node: %d HTTP connections opened during the export, %d documents indexed, %d searches",
			opened-opened0, indexed, searched)
	}
}
