package opensearchrouted

import (
	"fmt"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/opensearchrouted/opensearchrouted/internal/routing"
	"github.com/opensearchrouted/opensearchrouted/testbed/ossim"
)

// aliasRollover: writes through a write alias (is_write_index) are routed
// as its write index; after POST <alias>/_rollover mid-export the exporter
// is routed to the new write index within 2 s, and from then on at least
// 99 % of the documents go direct; every record stored exactly once.
func aliasRollover(t *testing.T, base string, endpoints []string) {
	body := `{"settings":{"number_of_shards":3,"number_of_replicas":0},"aliases":{"al-logs-write":{"is_write_index":true}}}`
	if code := httpJSON(t, "PUT", base+"/al-logs-000001", body, nil); code != 200 {
		t.Fatalf("create: HTTP %d", code)
	}
	e, reader := startRoutedTo(t, endpoints, "al-logs-write", 100, 2000)
	if d := routedCount(t, reader, "direct", routing.Routed.String()); d != 2000 {
		t.Fatalf("direct %d of 2000 through the alias", d)
	}
	if code := httpJSON(t, "POST", base+"/al-logs-write/_rollover", "", nil); code != 200 {
		t.Fatalf("rollover: HTTP %d", code)
	}
	start := time.Now()
	var followed time.Duration
	next := 10_000
	for followed == 0 && time.Since(start) < 10*time.Second {
		exportAll(t, e, next, 50)
		next += 50
		if wi, ok := e.router.Topology().WriteIndex("al-logs-write"); ok && wi.Name == "al-logs-000002" {
			followed = time.Since(start)
		}
	}
	wi, _ := e.router.Topology().WriteIndex("al-logs-write")
	t.Logf("routed to the new write index %v after the rollover (%v, refresh errors %d)", followed, wi.Name, e.router.RefreshErrors.Load())
	if followed == 0 || followed > 2*time.Second {
		t.Fatalf("did not follow the alias rollover within 2s (%v)", followed)
	}
	d0, u0 := routedCount(t, reader, "direct", "routed"), unroutedCount(t, reader)
	for k := 0; k < 5; k++ {
		exportAll(t, e, next, 1000)
		next += 1000
	}
	d, u := routedCount(t, reader, "direct", "routed")-d0, unroutedCount(t, reader)-u0
	if d < 5000*99/100 || d+u != 5000 {
		t.Fatalf("after following the rollover: %d direct, %d unrouted of 5000", d, u)
	}
	want := 100 + 2000 + (next - 10_000)
	if got := count(t, base, "al-logs-write"); got != want {
		t.Fatalf("stored %d, want %d", got, want)
	}
	if n := count(t, base, "al-logs-000002"); n < 5000 {
		t.Fatalf("the new write index holds %d", n)
	}
}

// aliasIndexRouting: an alias with index_routing: every document written
// through it is sent direct and lands, with that routing, in the shard
// _search_shards?routing= names (checked per document).
func aliasIndexRouting(t *testing.T, base string, endpoints []string) {
	if code := httpJSON(t, "PUT", base+"/al-tenant", `{"settings":{"number_of_shards":4,"number_of_replicas":0}}`, nil); code != 200 {
		t.Fatalf("create: HTTP %d", code)
	}
	if code := httpJSON(t, "POST", base+"/_aliases", `{"actions":[{"add":{"index":"al-tenant","alias":"al-t7","index_routing":"seven"}}]}`, nil); code != 200 {
		t.Fatalf("alias: HTTP %d", code)
	}
	_, reader := startRoutedTo(t, endpoints, "al-t7", 10, 1000)
	if d := routedCount(t, reader, "direct", "routed"); d != 1000 {
		t.Fatalf("direct %d of 1000", d)
	}
	var ss struct {
		Shards [][]struct {
			Shard int  `json:"shard"`
			Prim  bool `json:"primary"`
		} `json:"shards"`
	}
	if code := httpJSON(t, "GET", base+"/al-tenant/_search_shards?routing=seven", "", &ss); code != 200 || len(ss.Shards) != 1 {
		t.Fatalf("_search_shards: HTTP %d %+v", code, ss)
	}
	shard := fmt.Sprintf("[al-tenant][%d]", ss.Shards[0][0].Shard)
	httpJSON(t, "POST", base+"/al-tenant/_refresh", "", nil)
	var res struct {
		Hits struct {
			Hits []struct {
				ID      string `json:"_id"`
				Shard   string `json:"_shard"`
				Routing string `json:"_routing"`
			} `json:"hits"`
		} `json:"hits"`
	}
	if code := httpJSON(t, "POST", base+"/al-tenant/_search", `{"size":2000,"explain":true,"_source":false,"query":{"match_all":{}}}`, &res); code != 200 {
		t.Fatalf("search: HTTP %d", code)
	}
	if len(res.Hits.Hits) != 1010 {
		t.Fatalf("%d documents, want 1010", len(res.Hits.Hits))
	}
	for _, h := range res.Hits.Hits {
		if h.Shard != shard || h.Routing != "seven" {
			t.Fatalf("document %s in %s with routing %q, want %s and seven", h.ID, h.Shard, h.Routing, shard)
		}
	}
}

// startRoutedTo starts a logs exporter writing to index, exports first
// records, waits until the index is routed, then exports n more.
func startRoutedTo(t *testing.T, endpoints []string, index string, first, n int) (*osExporter, *sdkmetric.ManualReader) {
	t.Helper()
	cfg := testConfig(endpoints)
	cfg.LogsIndex = index
	e, reader := startExporter(t, cfg, signalLogs)
	exportAll(t, e, 0, first)
	waitRouted(t, e, index)
	exportAll(t, e, first, n)
	return e, reader
}

func routedCount(t *testing.T, r *sdkmetric.ManualReader, path, reason string) int64 {
	return sumMetric(t, r, "otelcol.opensearchrouted.documents.routed", map[string]string{"path": path, "reason": reason})
}

func unroutedCount(t *testing.T, r *sdkmetric.ManualReader) int64 {
	return sumMetric(t, r, "otelcol.opensearchrouted.documents.routed", map[string]string{"path": "unrouted"})
}

func TestAliasesEmulator(t *testing.T) {
	sim := ossim.StartT(t, ossim.Options{Nodes: 3, NoHopLatency: true})
	t.Run("rollover", func(t *testing.T) { aliasRollover(t, sim.Addr(0), sim.Addrs()) })
	t.Run("index_routing", func(t *testing.T) { aliasIndexRouting(t, sim.Addr(0), sim.Addrs()) })
}
