package ossim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/opensearchrouted/opensearchrouted/testbed/cluster"
)

// BenchmarkRealIndexingCost measures what one document costs the real
// server on this machine, to choose the emulator's service time
// (CalibratedService): bulks of n SS4O-like log documents (about 640
// bytes each, content ids, `create`) into a fresh index, on one node
// (1 primary, no replica) and on three nodes (1 primary + 1 replica, and
// 3 primaries + 1 replica). Per cell it reports the server's `took` per
// bulk and per document, and the indexing time the nodes account per
// operation (`_nodes/stats` indices.indexing: Δindex_time_in_millis /
// Δindex_total, primaries and replicas alike).
//
//	go test -run '^$' -bench RealIndexingCost -benchtime 20x ./testbed/ossim/
//
// OSR_CALIBRATE_C2=1 runs the nodes with the C2 JIT (the harness turns it
// off to start faster on 2 cores; production JVMs have it).
func BenchmarkRealIndexingCost(b *testing.B) {
	var jvm []string
	if os.Getenv("OSR_CALIBRATE_C2") == "1" {
		jvm = []string{"-XX:TieredStopAtLevel=4"}
	}
	for _, form := range []struct {
		nodes   int
		indices [][2]int // shards, replicas
	}{
		{1, [][2]int{{1, 0}}},
		{3, [][2]int{{1, 1}, {3, 1}}},
	} {
		b.Run(fmt.Sprintf("nodes=%d", form.nodes), func(b *testing.B) {
			c := cluster.Start(b, cluster.Options{Nodes: form.nodes, JVMArgs: jvm})
			seq := 0
			for _, ix := range form.indices {
				name := fmt.Sprintf("calib-p%dr%d", ix[0], ix[1])
				if st, body := calPost(b, "PUT", c.Addr(0)+"/"+name, fmt.Sprintf(`{"settings":{"number_of_shards":%d,"number_of_replicas":%d,"refresh_interval":"1s"}}`, ix[0], ix[1])); st != 200 {
					b.Fatalf("create %s: %d %s", name, st, body)
				}
				if st, body := calPost(b, "GET", c.Addr(0)+"/_cluster/health/"+name+"?wait_for_status=green&timeout=60s", ""); st != 200 {
					b.Fatalf("health %s: %d %s", name, st, body)
				}
				// Warm up: the JIT and the index's mapping.
				for w := 0; w < 20; w++ {
					calBulk(b, c.Addr(0), name, 500, &seq)
				}
				for _, n := range []int{1, 10, 100, 1000, 5000} {
					b.Run(fmt.Sprintf("index=p%dr%d/docs=%d", ix[0], ix[1], n), func(b *testing.B) {
						t0, i0 := calIndexing(b, c)
						var took time.Duration
						start := time.Now()
						for i := 0; i < b.N; i++ {
							took += calBulk(b, c.Addr(i%c.Len()), name, n, &seq)
						}
						wall := time.Since(start)
						t1, i1 := calIndexing(b, c)
						docs := float64(b.N * n)
						b.ReportMetric(float64(took.Microseconds())/float64(b.N), "took-us/bulk")
						b.ReportMetric(float64(took.Microseconds())/docs, "took-us/doc")
						b.ReportMetric(float64(wall.Microseconds())/docs, "wall-us/doc")
						if i1 > i0 {
							b.ReportMetric(float64(t1-t0)*1000/float64(i1-i0), "index-us/op")
						}
					})
				}
			}
		})
	}
}

// calBulk creates n log documents in index through addr and returns the
// server's took.
func calBulk(b *testing.B, addr, index string, n int, seq *int) time.Duration {
	var body bytes.Buffer
	now := time.Now().UTC()
	for k := 0; k < n; k++ {
		*seq++
		ts := now.Add(time.Duration(k) * time.Microsecond).Format(time.RFC3339Nano)
		fmt.Fprintf(&body, `{"create":{"_index":%q,"_id":"c%016x%08d"}}`+"\n", index, now.UnixNano(), *seq)
		fmt.Fprintf(&body, `{"@timestamp":%q,"observedTimestamp":%q,"body":"GET /api/v1/orders/%d completed with status 200 in %d ms","severity":{"text":"Info","number":9},"attributes":{"app":"checkout","worker":%d,"http.method":"GET","http.status_code":200,"data_stream":{"type":"record","dataset":"default","namespace":"namespace"}},"resource":{"service.name":"checkout","host.name":"host-%d","k8s.pod.name":"checkout-7f9c-%d"},"instrumentationScope":{"name":"otelcol"},"traceId":"%032x","spanId":"%016x"}`+"\n",
			ts, ts, *seq, *seq%997, *seq%8, *seq%5, *seq%13, *seq, *seq)
	}
	st, raw := calPost(b, "POST", addr+"/_bulk", body.String())
	var resp struct {
		Took   int64 `json:"took"`
		Errors bool  `json:"errors"`
	}
	if st != 200 || json.Unmarshal(raw, &resp) != nil || resp.Errors {
		b.Fatalf("bulk of %d: HTTP %d %.300s", n, st, raw)
	}
	return time.Duration(resp.Took) * time.Millisecond
}

// calIndexing sums indices.indexing over the nodes: index_time_in_millis
// and index_total.
func calIndexing(b *testing.B, c *cluster.Cluster) (millis, ops int64) {
	st, raw := calPost(b, "GET", c.Addr(0)+"/_nodes/stats/indices/indexing", "")
	var resp struct {
		Nodes map[string]struct {
			Indices struct {
				Indexing struct {
					Total  int64 `json:"index_total"`
					Millis int64 `json:"index_time_in_millis"`
				} `json:"indexing"`
			} `json:"indices"`
		} `json:"nodes"`
	}
	if st != 200 || json.Unmarshal(raw, &resp) != nil {
		b.Fatalf("_nodes/stats: HTTP %d %.300s", st, raw)
	}
	for _, n := range resp.Nodes {
		millis += n.Indices.Indexing.Millis
		ops += n.Indices.Indexing.Total
	}
	return millis, ops
}

func calPost(b *testing.B, method, url, body string) (int, []byte) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	resp, err := calClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	var out bytes.Buffer
	_, _ = out.ReadFrom(resp.Body)
	return resp.StatusCode, out.Bytes()
}

var calClient = &http.Client{Timeout: 2 * time.Minute}
