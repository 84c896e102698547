package opensearchrouted

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/opensearchrouted/opensearchrouted/exporter/opensearchrouted/internal/metadata"

	"github.com/opensearchrouted/opensearchrouted/internal/routing"
	"github.com/opensearchrouted/opensearchrouted/testbed/ossim"
)

// tenantOf is the routing value record seq i carries: even records in a
// record attribute, odd ones through their resource's (every resource of
// makeLogs' holds 250 records, all of one tenant); none when withTenant is
// false.
func tenantLogs(from, n int, withTenant bool) plog.Logs {
	ld := makeLogs(from, n)
	if !withTenant {
		return ld
	}
	rls := ld.ResourceLogs()
	for ri := 0; ri < rls.Len(); ri++ {
		rl := rls.At(ri)
		lrs := rl.ScopeLogs().At(0).LogRecords()
		seq0, _ := lrs.At(0).Attributes().Get("seq")
		rl.Resource().Attributes().PutStr("tenant", resourceTenant(int(seq0.Int())))
		for k := 0; k < lrs.Len(); k++ {
			lr := lrs.At(k)
			seq, _ := lr.Attributes().Get("seq")
			if seq.Int()%2 == 0 {
				lr.Attributes().PutStr("tenant", recordTenant(int(seq.Int())))
			}
		}
	}
	return ld
}

func recordTenant(seq int) string   { return "tenant-" + strconv.Itoa(seq%7) }
func resourceTenant(seq int) string { return "res-" + strconv.Itoa(seq/250) }

// expectedTenant is the routing value of the record numbered seq in a
// tenantLogs batch that started at from.
func expectedTenant(seq, from int) string {
	if seq%2 == 0 {
		return recordTenant(seq)
	}
	return resourceTenant(from + (seq-from)/250*250)
}

// customRoutingPartitioned: an index with routing_partition_size 2 (and
// _routing required, as the server demands). With routing_attribute, every
// record is stored exactly once and sent direct, and each lands in the
// shard the server's own _search_shards?routing= names for its value, the
// one Layout.Shard computes (checked per document). Without the attribute:
// every record refused for its routing, dead-lettered, counted, and one
// error naming the index and the setting.
func customRoutingPartitioned(t *testing.T, base string, endpoints []string) {
	const index, n = "cr-part", 3000
	body := `{"settings":{"number_of_shards":3,"number_of_replicas":0,"routing_partition_size":2},"mappings":{"_routing":{"required":true}}}`
	if code := httpJSON(t, "PUT", base+"/"+index, body, nil); code != 200 {
		t.Fatalf("create: HTTP %d", code)
	}
	httpJSON(t, "GET", base+"/_cluster/health/"+index+"?wait_for_status=green&timeout=60s", "", nil)

	t.Run("with routing_attribute", func(t *testing.T) {
		cfg := testConfig(endpoints)
		cfg.LogsIndex = index
		cfg.RoutingAttribute = "tenant"
		e, reader, logs := startObserved(t, cfg, signalLogs)
		exportAllData(t, e, tenantLogs(0, 100, true))
		waitKnown(t, e, index)
		u0 := unroutedCount(t, reader)
		exportAllData(t, e, tenantLogs(100, n, true))
		// A resent item is located again: counts are per send.
		if d, u := routedCount(t, reader, "direct", "routed"), unroutedCount(t, reader)-u0; d < n || u != 0 {
			t.Fatalf("direct %d, unrouted %d of %d", d, u, n)
		}
		if got := count(t, base, index); got != 100+n {
			t.Fatalf("stored %d, want %d", got, 100+n)
		}
		if r := logs.FilterMessageSnippet("routing").Len(); r != 0 {
			t.Fatalf("%d routing errors logged", r)
		}
		checkRoutedPlacement(t, base, index, 100, n, routing.Layout{Shards: 3, RoutingShards: routing.DefaultRoutingShards(3), PartitionSize: 2})
	})
	t.Run("without the attribute", func(t *testing.T) {
		cfg := testConfig(endpoints)
		cfg.LogsIndex = index
		cfg.RoutingAttribute = "tenant"
		e, reader, logs := startObserved(t, cfg, signalLogs)
		before := count(t, base, index)
		dlBefore := countOrZero(t, base, cfg.DeadLetter.LogsIndex)
		const m = 500
		exportAllData(t, e, tenantLogs(50_000, m, false))
		if got := count(t, base, index); got != before {
			t.Fatalf("the index took %d documents without routing", got-before)
		}
		if dl := count(t, base, cfg.DeadLetter.LogsIndex) - dlBefore; dl != m {
			t.Fatalf("dead-lettered %d of %d", dl, m)
		}
		if r := sumMetric(t, reader, "otelcol.opensearchrouted.documents.fallback", map[string]string{"fallback": "routing_refused"}); r != m {
			t.Fatalf("routing_refused counted %d of %d", r, m)
		}
		if u := sumMetric(t, reader, "otelcol.opensearchrouted.documents.fallback", map[string]string{"fallback": "unmapped_shape"}); u != 0 {
			t.Fatalf("%d records taken for a mapping problem", u)
		}
		errs := logs.FilterMessageSnippet("refused a document for its routing").All()
		if len(errs) != 1 {
			t.Fatalf("%d routing errors logged, want 1", len(errs))
		}
		msg := errs[0].Message
		for _, want := range []string{`index "` + index + `" requires a routing value`, "_routing.required", "routing_partition_size", "routing_attribute"} {
			if !strings.Contains(msg, want) {
				t.Fatalf("the error does not say %q: %s", want, msg)
			}
		}
		if other := logs.FilterMessageSnippet("OpenSearch refused a document; it goes").Len(); other != 0 {
			t.Fatalf("%d generic dead-letter warnings besides the routing error", other)
		}
	})
}

// countOrZero is count for a target that may not exist yet.
func countOrZero(t *testing.T, base, target string) int {
	var c struct {
		Count int `json:"count"`
	}
	httpJSON(t, "POST", base+"/"+target+"/_refresh", "", nil)
	if httpJSON(t, "GET", base+"/"+target+"/_count", "", &c) != 200 {
		return 0
	}
	return c.Count
}

// checkRoutedPlacement checks every document of index: its _routing is
// its record's tenant (tenantLogs from first, n records after the 100
// first), and its shard is the one Layout.Shard gives for its id and
// routing, among those the server's _search_shards?routing= names for
// that value.
func checkRoutedPlacement(t *testing.T, base, index string, first, n int, l routing.Layout) {
	t.Helper()
	httpJSON(t, "POST", base+"/"+index+"/_refresh", "", nil)
	var res struct {
		Hits struct {
			Hits []struct {
				ID      string `json:"_id"`
				Shard   string `json:"_shard"`
				Routing string `json:"_routing"`
				Source  struct {
					Attributes map[string]any `json:"attributes"`
				} `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
	if code := httpJSON(t, "POST", base+"/"+index+"/_search", `{"size":10000,"explain":true,"_source":["attributes.seq"],"query":{"match_all":{}}}`, &res); code != 200 {
		t.Fatalf("search: HTTP %d", code)
	}
	if len(res.Hits.Hits) != first+n {
		t.Fatalf("%d documents, want %d", len(res.Hits.Hits), first+n)
	}
	allowed := map[string][]int{}
	searchShards := func(rv string) []int {
		if s, ok := allowed[rv]; ok {
			return s
		}
		var ss struct {
			Shards [][]struct {
				Shard int `json:"shard"`
			} `json:"shards"`
		}
		if code := httpJSON(t, "GET", base+"/"+index+"/_search_shards?routing="+rv, "", &ss); code != 200 {
			t.Fatalf("_search_shards: HTTP %d", code)
		}
		var s []int
		for _, g := range ss.Shards {
			s = append(s, g[0].Shard)
		}
		sort.Ints(s)
		allowed[rv] = s
		return s
	}
	for _, h := range res.Hits.Hits {
		seq, _ := h.Source.Attributes["seq"].(float64)
		from := 0
		if int(seq) >= first {
			from = first
		}
		want := expectedTenant(int(seq), from)
		if h.Routing != want {
			t.Fatalf("document %s (seq %v): routing %q, want %q", h.ID, seq, h.Routing, want)
		}
		shard, err := l.Shard(h.ID, h.Routing)
		if err != nil {
			t.Fatal(err)
		}
		if h.Shard != fmt.Sprintf("[%s][%d]", index, shard) {
			t.Fatalf("document %s with routing %s in %s, Layout.Shard says %d", h.ID, h.Routing, h.Shard, shard)
		}
		ok := false
		for _, s := range searchShards(h.Routing) {
			ok = ok || s == shard
		}
		if !ok {
			t.Fatalf("document %s with routing %s in shard %d, _search_shards names %v", h.ID, h.Routing, shard, searchShards(h.Routing))
		}
	}
}

// customRoutingInvalid: a routing value over the server's 32,766 bytes is
// not sent: the record is stored without one, counted invalid_routing.
func customRoutingInvalid(t *testing.T, base string, endpoints []string) {
	const index = "cr-plain"
	createIndex(t, base, index, 2, 0)
	cfg := testConfig(endpoints)
	cfg.LogsIndex = index
	cfg.RoutingAttribute = "tenant"
	e, reader := startExporter(t, cfg, signalLogs)
	ld := makeLogs(0, 3)
	lrs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	lrs.At(0).Attributes().PutStr("tenant", strings.Repeat("r", 32767))
	lrs.At(1).Attributes().PutStr("tenant", strings.Repeat("r", 32766))
	exportAllData(t, e, ld)
	if got := count(t, base, index); got != 3 {
		t.Fatalf("stored %d of 3", got)
	}
	if f := sumMetric(t, reader, "otelcol.opensearchrouted.documents.fallback", map[string]string{"fallback": "invalid_routing"}); f != 1 {
		t.Fatalf("invalid_routing counted %d, want 1", f)
	}
}

func TestCustomRoutingEmulator(t *testing.T) {
	sim := ossim.StartT(t, ossim.Options{Nodes: 3, NoHopLatency: true})
	t.Run("partitioned index", func(t *testing.T) { customRoutingPartitioned(t, sim.Addr(0), sim.Addrs()) })
	t.Run("invalid routing value", func(t *testing.T) { customRoutingInvalid(t, sim.Addr(0), sim.Addrs()) })
	t.Run("no id, routing required", func(t *testing.T) { customRoutingNoID(t, sim.Addr(0), sim.Addrs()) })
}

// TestRoutingValueOfRecords: the record's routing_attribute wins over its
// resource's; an empty or absent one gives none; without routing_attribute
// nothing is routed; customRouting tells the items that carry a value.
func TestRoutingValueOfRecords(t *testing.T) {
	for _, attr := range []string{"tenant", ""} {
		cfg := testConfig([]string{"http://127.0.0.1:9"})
		cfg.LogsIndex = "logs"
		cfg.RoutingAttribute = attr
		e, err := newExporter(cfg, exportertest.NewNopSettings(metadata.Type), signalLogs)
		if err != nil {
			t.Fatal(err)
		}
		ld := tenantLogs(0, 600, true)
		// Record 1 (odd: its resource's tenant) gets an empty record value:
		// it keeps the resource's. The last resource has none at all.
		ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords().At(1).Attributes().PutStr("tenant", "")
		last := ld.ResourceLogs().At(ld.ResourceLogs().Len() - 1)
		last.Resource().Attributes().Remove("tenant")
		c := &call{}
		e.encodeLogs(c, ld)
		if c.batch.Len() != 600 {
			t.Fatalf("%d items", c.batch.Len())
		}
		for it := int32(0); it < 600; it++ {
			want := expectedTenant(int(it), 0)
			if it >= 500 && it%2 == 1 {
				want = "" // the last resource has no tenant
			}
			if attr == "" {
				want = ""
			}
			if got := c.batch.Routing(it); got != want {
				t.Fatalf("routing_attribute %q: record %d routed by %q, want %q", attr, it, got, want)
			}
			if e.customRouting(c, it) != (want != "") {
				t.Fatalf("customRouting(%d) = %v", it, !(want != ""))
			}
		}
	}
}

// customRoutingNoID: document_id none into an index that requires routing
// (_routing required, one shard's worth of partitions: p 1): records with
// the attribute are stored, each once; those without make the server fail
// the whole request (500, id must not be null), and are found out and
// refused for their routing (dead-lettered, counted, one error naming the
// index), never retried for ever with the others.
func customRoutingNoID(t *testing.T, base string, endpoints []string) {
	const index, n = "cr-noid", 200 // makeLogs: one resource
	body := `{"settings":{"number_of_shards":2,"number_of_replicas":0},"mappings":{"_routing":{"required":true}}}`
	if code := httpJSON(t, "PUT", base+"/"+index, body, nil); code != 200 {
		t.Fatalf("create: HTTP %d", code)
	}
	httpJSON(t, "GET", base+"/_cluster/health/"+index+"?wait_for_status=green&timeout=60s", "", nil)
	cfg := testConfig(endpoints)
	cfg.LogsIndex = index
	cfg.RoutingAttribute = "tenant"
	cfg.DocumentID = DocumentIDNone
	e, reader, logs := startObserved(t, cfg, signalLogs)
	dlBefore := countOrZero(t, base, cfg.DeadLetter.LogsIndex)
	ld := makeLogs(0, n)
	lrs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	for i := 0; i < lrs.Len(); i++ {
		if i%4 != 0 { // a quarter without
			lrs.At(i).Attributes().PutStr("tenant", recordTenant(i))
		}
	}
	ld2 := makeLogs(n, n) // a second resource, none with the attribute
	ld2.ResourceLogs().MoveAndAppendTo(ld.ResourceLogs())
	if err := e.pushLogs(context.Background(), ld); err != nil {
		for _, l := range logs.All() {
			t.Log(l.Message, l.ContextMap())
		}
		t.Fatalf("export: %v", err)
	}
	with := 0
	for i := 0; i < n; i++ {
		if i%4 != 0 {
			with++
		}
	}
	if got := count(t, base, index); got != with {
		t.Fatalf("stored %d, want the %d with a routing value", got, with)
	}
	if dl := count(t, base, cfg.DeadLetter.LogsIndex) - dlBefore; dl != 2*n-with {
		t.Fatalf("dead-lettered %d, want %d", dl, 2*n-with)
	}
	if r := sumMetric(t, reader, "otelcol.opensearchrouted.documents.fallback", map[string]string{"fallback": "routing_refused"}); r != int64(2*n-with) {
		t.Fatalf("routing_refused counted %d, want %d", r, 2*n-with)
	}
	if errs := logs.FilterMessageSnippet("refused a document for its routing").All(); len(errs) != 1 || !strings.Contains(errs[0].Message, `index "`+index+`" requires a routing value`) {
		t.Fatalf("routing errors: %v", errs)
	}
}
