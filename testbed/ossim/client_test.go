package ossim

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/opensearch-project/opensearch-go/v4"
	"github.com/opensearch-project/opensearch-go/v4/opensearchapi"
	"github.com/opensearch-project/opensearch-go/v4/opensearchutil"
	"github.com/opensearch-project/opensearch-go/v4/opensearchutil/shardhash"
)

// TestOfficialClientWorksUnmodified drives the emulator with
// opensearch-go v4.8.1 as an application would.
func TestOfficialClientWorksUnmodified(t *testing.T) {
	c := StartT(t, Options{Nodes: 3, NoHopLatency: true})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := opensearchapi.NewClient(opensearchapi.Config{Client: opensearch.Config{Addresses: c.Addrs()}})
	if err != nil {
		t.Fatal(err)
	}
	info, err := cl.Info(ctx, nil)
	if err != nil || info.Version.Number != Version || info.Version.Distribution != "opensearch" {
		t.Fatalf("info: %+v %v", info, err)
	}
	nodes, err := cl.Nodes.Info(ctx, &opensearchapi.NodesInfoReq{Metrics: []string{"http"}})
	if err != nil || len(nodes.Nodes) != 3 {
		t.Fatalf("nodes info: %v %v", nodes, err)
	}
	for id, n := range nodes.Nodes {
		if n.HTTP.PublishAddress == "" || n.Name == "" {
			t.Errorf("node %s: %+v", id, n)
		}
	}
	_, err = cl.Indices.Create(ctx, opensearchapi.IndicesCreateReq{Index: "oc",
		Body: strings.NewReader(`{"settings":{"number_of_shards":3,"number_of_replicas":1}}`)})
	if err != nil {
		t.Fatalf("create index: %v", err)
	}
	cat, err := cl.Cat.Shards(ctx, &opensearchapi.CatShardsReq{Indices: []string{"oc"}})
	if err != nil || len(cat.Shards) != 6 {
		t.Fatalf("cat shards: %+v %v", cat, err)
	}
	for _, s := range cat.Shards {
		if s.Node == nil || s.State != "STARTED" {
			t.Errorf("cat row %+v", s)
		}
	}

	var failed atomic.Int64
	bi, err := opensearchutil.NewBulkIndexer(opensearchutil.BulkIndexerConfig{Client: cl, Index: "oc", NumWorkers: 2, FlushBytes: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 500; i++ {
		err := bi.Add(ctx, opensearchutil.BulkIndexerItem{
			Action: "index", DocumentID: fmt.Sprintf("doc-%d", i),
			Body: strings.NewReader(fmt.Sprintf(`{"@timestamp":"2024-01-01T00:00:%02dZ","n":%d}`, i%60, i)),
			OnFailure: func(context.Context, opensearchutil.BulkIndexerItem, opensearchapi.BulkRespItem, error) {
				failed.Add(1)
			},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := bi.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if st := bi.Stats(); st.NumIndexed != 500 || st.NumFailed != 0 || failed.Load() != 0 {
		t.Fatalf("bulk indexer stats %+v, failures %d", st, failed.Load())
	}
	if _, err := cl.Indices.Refresh(ctx, &opensearchapi.IndicesRefreshReq{Index: []string{"oc"}}); err != nil {
		t.Fatal(err)
	}
	sr, err := cl.Search(ctx, &opensearchapi.SearchReq{Indices: []string{"oc"},
		Body: strings.NewReader(`{"size":5,"query":{"range":{"n":{"lt":100}}},"sort":[{"n":"desc"}]}`)})
	if err != nil || sr.Hits.Total.Value != 100 || len(sr.Hits.Hits) != 5 || sr.Hits.Hits[0].ID != "doc-99" {
		t.Fatalf("search: %+v %v", sr, err)
	}

	pit, err := cl.PointInTime.Create(ctx, opensearchapi.PointInTimeCreateReq{Indices: []string{"oc"},
		Params: opensearchapi.PointInTimeCreateParams{KeepAlive: time.Minute}})
	if err != nil || pit.PitID == "" || pit.Shards.Total != 3 {
		t.Fatalf("pit create: %+v %v", pit, err)
	}
	seen := 0
	var after string
	for page := 0; page < 20; page++ {
		body := fmt.Sprintf(`{"pit":{"id":%q,"keep_alive":"1m"},"size":200,"sort":[{"@timestamp":"asc"},{"_id":"asc"}]%s}`, pit.PitID, after)
		r, err := cl.Search(ctx, &opensearchapi.SearchReq{Body: strings.NewReader(body)})
		if err != nil {
			t.Fatalf("pit search: %v", err)
		}
		if len(r.Hits.Hits) == 0 {
			break
		}
		seen += len(r.Hits.Hits)
		last := r.Hits.Hits[len(r.Hits.Hits)-1].Sort
		after = fmt.Sprintf(`,"search_after":[%v,%q]`, last[0], last[1])
	}
	if seen != 500 {
		t.Errorf("pit paging saw %d docs, want 500", seen)
	}
	del, err := cl.PointInTime.Delete(ctx, opensearchapi.PointInTimeDeleteReq{PitID: []string{pit.PitID}})
	if err != nil || len(del.Pits) != 1 || !del.Pits[0].Successful {
		t.Fatalf("pit delete: %+v %v", del, err)
	}
}

// TestShardhashOracle: the client's independent shard hash (p = 1) agrees
// with where the emulator stores documents.
func TestShardhashOracle(t *testing.T) {
	c := StartT(t, Options{Nodes: 2, NoHopLatency: true})
	createIndex(t, c.Addr(0), "o", 5, 0, "")
	var lines []string
	for i := 0; i < 300; i++ {
		lines = append(lines, fmt.Sprintf(`{"index":{"_index":"o","_id":"é-%d-\ud83d\ude00"}}`, i), `{}`)
	}
	mustOK(t, "POST", c.Addr(1)+"/_bulk", bulkBody(lines...))
	shards, _, _ := c.StoredShardOf("o")
	if len(shards) != 300 {
		t.Fatalf("%d docs", len(shards))
	}
	for id, s := range shards {
		if want := shardhash.ForRouting(id, 640, 5); want != s {
			t.Errorf("doc %q: stored in %d, shardhash says %d", id, s, want)
		}
	}
}
