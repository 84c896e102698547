package otelv1

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sort"
	"strings"
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/opensearchrouted/opensearchrouted/testbed/ossim"
)

func call(t testing.TB, method, url, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func mustCall(t testing.TB, method, url, body string) []byte {
	t.Helper()
	st, b := call(t, method, url, body)
	if st != 200 {
		t.Fatalf("%s %s: %d %.2000s", method, url, st, b)
	}
	return b
}

// acceptSpans is the number of hostile random spans acceptance writes.
const acceptSpans = 400

// setUpIndices installs both templates and creates the first span index
// behind its write alias, as an exporter in otel-v1 mode does.
func setUpIndices(t testing.TB, base string) {
	t.Helper()
	mustCall(t, "PUT", base+"/_index_template/otel-v1-apm-span", SpanIndexTemplate(DefaultSpanAlias+"-*"))
	mustCall(t, "PUT", base+"/_index_template/otel-v1-apm-service-map", ServiceMapIndexTemplate())
	mustCall(t, "PUT", base+"/"+FirstSpanIndex, `{"aliases":{"`+DefaultSpanAlias+`":{"is_write_index":true}}}`)
	mustCall(t, "PUT", base+"/"+ServiceMapIndex, `{}`)
}

// acceptance writes the typical span, the hostile random spans (every
// attribute type, '@' and blank keys, invalid UTF-8, strings past
// ignore_above and near the term limit, times past date_nanos, unknown
// kinds) and service-map edges through _bulk to the write alias: the
// server must take every document, and reading them back must give the
// spans sent after the documented normalisations. An edge written again
// is a version conflict.
func acceptance(t *testing.T, base string) {
	setUpIndices(t, base)
	var sent []ptrace.Traces
	var items []string // bulk action and document lines
	var e Encoder
	add := func(td ptrace.Traces, g *TraceGroup) {
		rs := td.ResourceSpans().At(0)
		ss := rs.ScopeSpans().At(0)
		e.ResetTraces(rs, ss)
		items = append(items, fmt.Sprintf(`{"create":{"_id":"s%d"}}`+"\n", len(sent))+string(e.AppendSpan(nil, ss.Spans().At(0), g))+"\n")
		sent = append(sent, td)
	}
	td, _, _, root := typicalSpan()
	g := GroupOf(root)
	add(td, &g)
	src := &source{rng: rand.New(rand.NewPCG(22, 1))}
	for i := range acceptSpans {
		td := ptrace.NewTraces()
		rs := td.ResourceSpans().AppendEmpty()
		ss := rs.ScopeSpans().AppendEmpty()
		src.span(rs, ss, ss.Spans().AppendEmpty())
		if i%2 == 0 {
			add(td, &g)
		} else {
			add(td, nil)
		}
	}
	writeAll(t, base+"/"+DefaultSpanAlias+"/_bulk", items)
	mustCall(t, "POST", base+"/"+DefaultSpanAlias+"/_refresh", "")

	// Read back in id order and decode.
	b := mustCall(t, "POST", base+"/"+DefaultSpanAlias+"/_search", fmt.Sprintf(`{"size":%d,"query":{"match_all":{}}}`, len(sent)+10))
	var res struct {
		Hits struct {
			Hits []struct {
				ID     string          `json:"_id"`
				Index  string          `json:"_index"`
				Source json.RawMessage `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Hits.Hits) != len(sent) {
		t.Fatalf("%d documents read back, %d sent", len(res.Hits.Hits), len(sent))
	}
	for _, h := range res.Hits.Hits {
		if h.Index != FirstSpanIndex {
			t.Fatalf("document in %s, not %s", h.Index, FirstSpanIndex)
		}
		var i int
		fmt.Sscanf(h.ID, "s%d", &i)
		back := ptrace.NewTraces()
		brs := back.ResourceSpans().AppendEmpty()
		bss := brs.ScopeSpans().AppendEmpty()
		if err := DecodeSpan(h.Source, brs, bss, bss.Spans().AppendEmpty()); err != nil {
			t.Fatalf("%s: %v", h.ID, err)
		}
		want := ptrace.NewTraces()
		sent[i].CopyTo(want)
		normalise(want)
		if !bytes.Equal(protoBytes(t, want), protoBytes(t, back)) {
			t.Fatalf("%s read back differs:\n%.2000s", h.ID, h.Source)
		}
	}

	// Service-map edges: created once; the same edge again is a conflict.
	parent, child := ptrace.NewSpan(), ptrace.NewSpan()
	parent.SetKind(ptrace.SpanKindClient)
	child.SetKind(ptrace.SpanKindServer)
	child.SetName("updateItem")
	var bulk bytes.Buffer
	for range 2 {
		for _, edge := range EdgesOf(parent, "inventory", child, "database", g.Name) {
			fmt.Fprintf(&bulk, `{"create":{"_id":%q}}`+"\n", edge.ID())
			bulk.Write(AppendEdge(nil, &edge))
			bulk.WriteByte('\n')
		}
	}
	checkBulk(t, mustCall(t, "POST", base+"/"+ServiceMapIndex+"/_bulk?refresh=true", bulk.String()), 2)
}

// writeAll sends items in bulks of 50. The server may fail an item with
// a 500 (a dynamic mapping update that timed out on a loaded machine: the
// random spans add many fields) or a 429: such items are sent again, a
// bounded number of times, as an exporter retries them. Any other
// answer than created fails the test.
func writeAll(t testing.TB, url string, items []string) {
	t.Helper()
	for attempt := 0; len(items) > 0; attempt++ {
		if attempt == 5 {
			t.Fatalf("%d items still failing after %d attempts", len(items), attempt)
		}
		var again []string
		for from := 0; from < len(items); from += 50 {
			chunk := items[from:min(from+50, len(items))]
			var r struct {
				Items []map[string]struct {
					Status int             `json:"status"`
					Error  json.RawMessage `json:"error"`
				} `json:"items"`
			}
			b := mustCall(t, "POST", url, strings.Join(chunk, ""))
			if err := json.Unmarshal(b, &r); err != nil || len(r.Items) != len(chunk) {
				t.Fatalf("bulk answer %v: %.500s", err, b)
			}
			for i, it := range r.Items {
				for _, v := range it {
					switch {
					case v.Status == 201, v.Status == 409 && attempt > 0: // 409: a failed answer, yet created
					case v.Status == 500, v.Status == 429:
						again = append(again, chunk[i])
					default:
						t.Fatalf("item %.100s: %d %s", chunk[i], v.Status, v.Error)
					}
				}
			}
		}
		items = again
	}
}

// checkBulk: every item created, except conflicts (409) of the last
// wantConflicts items.
func checkBulk(t testing.TB, body []byte, wantConflicts int) {
	t.Helper()
	var r struct {
		Items []map[string]struct {
			Status int             `json:"status"`
			Error  json.RawMessage `json:"error"`
		} `json:"items"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("%v: %.500s", err, body)
	}
	for i, it := range r.Items {
		for _, v := range it {
			want := 201
			if i >= len(r.Items)-wantConflicts {
				want = 409
			}
			if v.Status != want {
				t.Fatalf("item %d: %d, want %d: %s", i, v.Status, want, v.Error)
			}
		}
	}
}

// traceAnalyticsQueries runs queries of the kinds Trace Analytics sends
// (a term on serviceName, the error filter on traceGroupFields.statusCode,
// a range on startTime, a terms aggregation on a flattened attribute, a
// nested query on events) on the accepted documents and checks their
// answers against the typical span.
func traceAnalyticsQueries(t *testing.T, base string) {
	count := func(q string) int {
		t.Helper()
		b := mustCall(t, "POST", base+"/"+DefaultSpanAlias+"/_search", `{"size":0,"track_total_hits":true,"query":`+q+`}`)
		var r struct {
			Hits struct {
				Total struct{ Value int } `json:"total"`
			} `json:"hits"`
		}
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		return r.Hits.Total.Value
	}
	if n := count(`{"bool":{"filter":[{"term":{"serviceName":"checkout"}},{"term":{"kind":"SPAN_KIND_SERVER"}},{"term":{"status.code":2}}]}}`); n != 1 {
		t.Errorf("serviceName/kind/status.code: %d hits, want 1", n)
	}
	if n := count(`{"range":{"startTime":{"gte":"2026-12-02T03:04:05.123Z","lt":"2026-12-02T03:04:05.124Z"}}}`); n != 1 {
		t.Errorf("startTime range: %d hits, want 1", n)
	}
	if n := count(`{"bool":{"filter":[{"term":{"traceGroup":"POST /cart/checkout"}},{"term":{"traceGroupFields.statusCode":"2"}},{"range":{"traceGroupFields.durationInNanos":{"gte":42123456}}}]}}`); n != acceptSpans/2+1 {
		t.Errorf("trace group filter: %d hits, want %d", n, acceptSpans/2+1)
	}
	if n := count(`{"term":{"span.attributes.http@response@status_code":"402"}}`); n != 1 {
		t.Errorf("flattened int attribute as keyword: %d hits, want 1", n)
	}
	if n := count(`{"nested":{"path":"events","query":{"term":{"events.attributes.exception@type":"Declined"}}}}`); n != 1 {
		t.Errorf("nested event attribute: %d hits, want 1", n)
	}
	b := mustCall(t, "POST", base+"/"+DefaultSpanAlias+"/_search", `{"size":0,"aggs":{"m":{"terms":{"field":"span.attributes.http@request@method"}}}}`)
	if !bytes.Contains(b, []byte(`{"key":"POST","doc_count":1}`)) {
		t.Errorf("terms aggregation on a flattened attribute: %s", b)
	}
	// The fields map as Data Prepper's template maps them.
	m := mustCall(t, "GET", base+"/"+FirstSpanIndex+"/_mapping/field/span.attributes.http@response@status_code,startTime,traceGroupFields.statusCode,status.code", "")
	var fm map[string]struct {
		Mappings map[string]struct {
			Mapping map[string]struct {
				Type string `json:"type"`
			} `json:"mapping"`
		} `json:"mappings"`
	}
	if err := json.Unmarshal(m, &fm); err != nil {
		t.Fatal(err)
	}
	types := map[string]string{}
	for f, v := range fm[FirstSpanIndex].Mappings {
		for _, x := range v.Mapping {
			types[f] = x.Type
		}
	}
	want := map[string]string{"span.attributes.http@response@status_code": "keyword", "startTime": "date_nanos",
		"traceGroupFields.statusCode": "integer", "status.code": "integer"}
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if types[k] != want[k] {
			t.Errorf("%s mapped as %q, want %q (%s)", k, types[k], want[k], m)
		}
	}
}

// TestEmulatorAcceptsWhatTheServerAccepts runs the acceptance on ossim
// (TestRealClusterTemplates runs it on the real server).
func TestEmulatorAcceptsWhatTheServerAccepts(t *testing.T) {
	c := ossim.StartT(t, ossim.Options{Nodes: 1})
	acceptance(t, c.Addr(0))
	refusedWithoutAdditions(t, c.Addr(0))
}

// dataPrepperMappings are the field types of Data Prepper's span template
// as it is (keywords without ignore_above, event attributes left to
// dynamic mapping), for the cases SpanIndexTemplate's additions are for.
const dataPrepperMappings = `{"date_detection":false,"dynamic_templates":[` +
	`{"span_attributes_map":{"path_match":"span.attributes.*","mapping":{"type":"keyword"}}}],` +
	`"properties":{"name":{"type":"keyword","ignore_above":1024},"events":{"type":"nested","properties":{"time":{"type":"date_nanos"}}}}}`

// refusedWithoutAdditions shows what SpanIndexTemplate's additions to
// Data Prepper's mappings prevent: under the mappings as they are, an
// attribute value past Lucene's term limit is refused, and so is an event
// attribute whose type differs from the one first seen; under
// SpanIndexTemplate both are taken.
func refusedWithoutAdditions(t *testing.T, base string) {
	mustCall(t, "PUT", base+"/dp-as-is", `{"mappings":`+dataPrepperMappings+`}`)
	long := strings.Repeat("x", 40000)
	docs := []string{
		`{"name":"a","span.attributes.db@statement":"` + long + `"}`,
		`{"name":"b","events":[{"time":"2026-01-01T00:00:00Z","attributes":{"n":1}}]}`,
		`{"name":"c","events":[{"time":"2026-01-01T00:00:00Z","attributes":{"n":"one"}}]}`,
	}
	for i, doc := range docs {
		st, b := call(t, "PUT", fmt.Sprintf("%s/dp-as-is/_doc/%d?refresh=true", base, i), doc)
		wantRefused := i != 1
		if refused := st == 400; refused != wantRefused {
			t.Errorf("Data Prepper's mappings, document %d: %d %.300s (refusal expected: %v)", i, st, b, wantRefused)
		}
		if st, b := call(t, "PUT", fmt.Sprintf("%s/%s/_doc/dp%d?refresh=true", base, FirstSpanIndex, i), doc); st != 201 {
			t.Errorf("SpanIndexTemplate, document %d: %d %.300s", i, st, b)
		}
	}
}
