package opensearchrouted

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/opensearchrouted/opensearchrouted/internal/otelv1"
	"github.com/opensearchrouted/opensearchrouted/testbed/ossim"
)

// spanHit is a span document as the checks read it.
type spanHit struct {
	ID     string `json:"_id"`
	Index  string `json:"_index"`
	Source struct {
		TraceID          string `json:"traceId"`
		SpanID           string `json:"spanId"`
		ParentSpanID     string `json:"parentSpanId"`
		Name             string `json:"name"`
		ServiceName      string `json:"serviceName"`
		TraceGroup       string `json:"traceGroup"`
		TraceGroupFields *struct {
			EndTime         string `json:"endTime"`
			DurationInNanos int64  `json:"durationInNanos"`
			StatusCode      int    `json:"statusCode"`
		} `json:"traceGroupFields"`
		Seq int `json:"span.attributes.seq"`
	} `json:"_source"`
}

// checkSpanDocs checks every span of w is stored once, in the otel-v1
// layout, with its trace's group.
func checkSpanDocs(t *testing.T, base string, w *taWorkload) {
	t.Helper()
	httpJSON(t, "POST", base+"/"+otelv1.DefaultSpanAlias+"/_refresh", "", nil)
	var res struct {
		Hits struct {
			Hits []spanHit `json:"hits"`
		} `json:"hits"`
	}
	q := fmt.Sprintf(`{"size":%d,"query":{"match_all":{}}}`, len(w.spans)+100)
	if st := httpJSON(t, "POST", base+"/"+otelv1.DefaultSpanAlias+"/_search", q, &res); st != 200 {
		t.Fatalf("search spans: HTTP %d", st)
	}
	seen := map[int]int{}
	grouped := 0
	for _, h := range res.Hits.Hits {
		seen[h.Source.Seq]++
		s := &w.spans[h.Source.Seq]
		if h.Source.SpanID != s.id || h.Source.TraceID != s.trace || h.Source.ServiceName != s.service || h.ID != s.trace+s.id {
			t.Fatalf("span %d stored as %+v", s.seq, h)
		}
		root := w.root(s.k)
		g := h.Source.TraceGroupFields
		if h.Source.TraceGroup == root.name && g != nil && g.DurationInNanos == root.durNanos() && g.StatusCode == int(root.status) {
			grouped++
		} else if len(seen) < 5 {
			t.Errorf("span %d (trace %d, call %d): group %q %+v, want %q of %d ns, status %d", s.seq, s.k, s.call, h.Source.TraceGroup, g, root.name, root.durNanos(), root.status)
		}
	}
	if len(res.Hits.Hits) != len(w.spans) || len(seen) != len(w.spans) {
		t.Fatalf("%d documents for %d distinct spans, sent %d", len(res.Hits.Hits), len(seen), len(w.spans))
	}
	if grouped != len(w.spans) {
		t.Fatalf("%d of %d spans have their trace group", grouped, len(w.spans))
	}
}

// checkEdgeDocs checks the service-map index holds exactly the workload's
// edges, each once, under its hashId.
func checkEdgeDocs(t *testing.T, base string, w *taWorkload) {
	t.Helper()
	want := w.expectedEdges()
	httpJSON(t, "POST", base+"/"+otelv1.ServiceMapIndex+"/_refresh", "", nil)
	var res struct {
		Hits struct {
			Hits []struct {
				ID     string         `json:"_id"`
				Source map[string]any `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
	if st := httpJSON(t, "POST", base+"/"+otelv1.ServiceMapIndex+"/_search", `{"size":1000,"query":{"match_all":{}}}`, &res); st != 200 {
		t.Fatalf("search service map: HTTP %d", st)
	}
	got := map[string]bool{}
	for _, h := range res.Hits.Hits {
		e, ok := want[h.ID]
		if !ok {
			t.Errorf("unexpected edge %s: %v", h.ID, h.Source)
			continue
		}
		got[h.ID] = true
		if h.Source["serviceName"] != e.ServiceName || h.Source["traceGroupName"] != e.TraceGroupName || h.Source["hashId"] != h.ID {
			t.Errorf("edge %s: %v, want %+v", h.ID, h.Source, e)
		}
	}
	if len(got) != len(want) || len(res.Hits.Hits) != len(want) {
		t.Fatalf("%d edge documents (%d distinct expected ones), want %d", len(res.Hits.Hits), len(got), len(want))
	}
}

// exportWorkload bootstraps nothing itself: the exporter (otel-v1, with
// install_templates) has made the alias; it sends the three calls in
// order and waits for the fix-up and the service map.
func exportWorkload(t *testing.T, e *osExporter, w *taWorkload) {
	t.Helper()
	for _, td := range w.calls {
		exportTraces(t, e, td)
	}
}

// checkWorkloadMetrics checks the trace group and service map counters
// after the workload: every span counted once by where its group came
// from, nothing unresolved, every edge written once.
func checkWorkloadMetrics(t *testing.T, reader *sdkmetric.ManualReader, w *taWorkload) {
	t.Helper()
	third := w.n / 3 // traces per third (n a multiple of 3)
	late := third * 3
	tg := "otelcol.opensearchrouted.trace_groups"
	if got := waitMetric(t, reader, tg, map[string]string{"outcome": "fixed_up"}, int64(late), 20*time.Second); got != int64(late) {
		t.Fatalf("fixed_up %d, want %d (spans written before their root)", got, late)
	}
	want := map[string]int64{"inline": int64(len(w.spans) - 2*late), "cache": int64(late), "fixed_up": int64(late), "unresolved": 0}
	for o, n := range want {
		if got := sumMetric(t, reader, tg, map[string]string{"outcome": o}); got != n {
			t.Errorf("trace_groups{outcome=%s} = %d, want %d", o, got, n)
		}
	}
	edges := "otelcol.opensearchrouted.service_map.edges"
	nEdges := int64(len(w.expectedEdges()))
	if got := waitMetric(t, reader, edges, map[string]string{"outcome": "indexed"}, nEdges, 20*time.Second); got != nEdges {
		t.Fatalf("service_map.edges indexed %d, want %d", got, nEdges)
	}
	for _, o := range []string{"failed", "dropped"} {
		if got := sumMetric(t, reader, edges, map[string]string{"outcome": o}); got != 0 {
			t.Errorf("service_map.edges{outcome=%s} = %d", o, got)
		}
	}
}

// TestOtelV1OnEmulator: the otel-v1 mode on the emulator: the alias is
// bootstrapped, every span of the multi-service workload is stored once
// with its trace group (inline, from the cache, or fixed up after its
// root came in a later call), and the service map holds each edge once.
func TestOtelV1OnEmulator(t *testing.T) {
	sim := ossim.StartT(t, ossim.Options{Nodes: 3, NoHopLatency: true})
	cfg := otelV1Config(sim.Addrs())
	e, reader := startExporter(t, cfg, signalTraces)
	base := sim.Addr(0)
	checkBootstrapped(t, base)
	w := newTAWorkload(300, time.Now().Add(-time.Hour).Truncate(time.Millisecond))
	exportWorkload(t, e, w)
	checkWorkloadMetrics(t, reader, w)
	checkSpanDocs(t, base, w)
	checkEdgeDocs(t, base, w)
}

// checkBootstrapped checks that the write alias exists over the first
// span index.
func checkBootstrapped(t *testing.T, base string) {
	t.Helper()
	var rows []map[string]string
	if st := httpJSON(t, "GET", base+"/_cat/aliases/"+otelv1.DefaultSpanAlias+"?format=json&h=alias,index,is_write_index", "", &rows); st != 200 ||
		len(rows) != 1 || rows[0]["index"] != otelv1.FirstSpanIndex || rows[0]["is_write_index"] != "true" {
		t.Fatalf("after start: HTTP %d, aliases %v; want %s the write index of %s", st, rows, otelv1.FirstSpanIndex, otelv1.DefaultSpanAlias)
	}
}

// An alias that exists already is written to as it is: no first index is
// made, spans go to its write index, and the fix-up finds them there.
func TestOtelV1ExistingAlias(t *testing.T) {
	sim := ossim.StartT(t, ossim.Options{Nodes: 1, NoHopLatency: true})
	base := sim.Addr(0)
	if st := httpJSON(t, "PUT", base+"/spans-000007", `{"aliases":{"spans":{"is_write_index":true}}}`, nil); st != 200 {
		t.Fatalf("create spans-000007: HTTP %d", st)
	}
	cfg := otelV1Config(sim.Addrs())
	cfg.TracesIndex = "spans"
	e, reader := startExporter(t, cfg, signalTraces)
	if st := httpJSON(t, "GET", base+"/spans-000001", "", nil); st != 404 {
		t.Fatalf("spans-000001: HTTP %d, want 404 (the alias existed)", st)
	}
	w := newTAWorkload(30, time.Now().Add(-time.Hour).Truncate(time.Millisecond))
	exportWorkload(t, e, w)
	if got := waitMetric(t, reader, "otelcol.opensearchrouted.trace_groups", map[string]string{"outcome": "fixed_up"}, 30, 10*time.Second); got != 30 {
		t.Fatalf("fixed up %d, want 30", got)
	}
	if n := count(t, base, "spans-000007"); n != len(w.spans) {
		t.Fatalf("spans-000007 holds %d, want %d", n, len(w.spans))
	}
}

// Spans stored before their root, then a rollover, then the root: the
// fix-up updates them in the index they were stored in (the alias now
// writes to the next one).
func TestOtelV1FixupAfterRollover(t *testing.T) {
	sim := ossim.StartT(t, ossim.Options{Nodes: 2, NoHopLatency: true})
	base := sim.Addr(0)
	cfg := otelV1Config(sim.Addrs())
	e, reader := startExporter(t, cfg, signalTraces)
	w := newTAWorkload(30, time.Now().Add(-time.Hour).Truncate(time.Millisecond))
	exportTraces(t, e, w.calls[0])
	if st := httpJSON(t, "POST", base+"/"+otelv1.DefaultSpanAlias+"/_rollover", "", nil); st != 200 {
		t.Fatalf("rollover: HTTP %d", st)
	}
	exportTraces(t, e, w.calls[1])
	exportTraces(t, e, w.calls[2])
	if got := waitMetric(t, reader, "otelcol.opensearchrouted.trace_groups", map[string]string{"outcome": "fixed_up"}, 30, 10*time.Second); got != 30 {
		t.Fatalf("fixed up %d, want 30", got)
	}
	if n := sumMetric(t, reader, "otelcol.opensearchrouted.trace_groups", map[string]string{"outcome": "unresolved"}); n != 0 {
		t.Fatalf("%d unresolved", n)
	}
	checkSpanDocs(t, base, w)
}

// An otel-v1 span refused for its shape goes to the dead-letter index as
// it was written: the unmapped shape is SS4O's (it would move events and
// links into a string the otel-v1 decoder does not read, and keep the
// flattened span.attributes.* fields that conflict).
func TestOtelV1RefusedSpanDeadLettered(t *testing.T) {
	fs := &shapeServer{stored: map[string]string{}}
	srv := httptest.NewServer(fs)
	defer srv.Close()
	cfg := testConfig([]string{srv.URL})
	cfg.Mapping.Mode = MappingOtelV1
	e, reader := startExporter(t, cfg, signalTraces)
	td := makeSpans(0, 3)
	td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(1).Attributes().PutStr("secret.kind", "bad")
	if err := e.pushTraces(context.Background(), td); err != nil {
		t.Fatalf("push: %v", err)
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	dead, spans := 0, 0
	for k, src := range fs.stored {
		switch {
		case strings.HasPrefix(k, defaultDeadLetterTraces+"/"):
			dead++
		case strings.HasPrefix(k, otelv1.DefaultSpanAlias+"/"):
			spans++
			if strings.Contains(src, `"unmapped"`) {
				t.Errorf("a span stored in the unmapped shape: %s", k)
			}
		}
	}
	if dead != 1 || spans != 2 {
		t.Fatalf("%d dead-lettered, %d spans stored; want 1 and 2", dead, spans)
	}
	if f := sumMetric(t, reader, "otelcol.opensearchrouted.documents.fallback", map[string]string{"fallback": "unmapped_shape"}); f != 0 {
		t.Fatalf("unmapped_shape counted %d", f)
	}
}

// A user who may install templates but not create the first span index
// gets a start error naming the privileges; an answer of another kind is
// quoted.
func TestOtelV1BootstrapRefused(t *testing.T) {
	for _, tc := range []struct {
		status int
		body   string
		want   string
	}{
		{403, `{"error":{"type":"security_exception"}}`, "needs indices:admin/create and indices:admin/aliases"},
		{400, `{"error":{"type":"invalid_index_name_exception"}}`, "PUT otel-v1-apm-span-000001: HTTP 400: " + `{"error":{"type":"invalid_index_name_exception"}}`},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case strings.HasPrefix(r.URL.Path, "/_index_template/"):
				w.WriteHeader(200)
			case r.Method == "HEAD" && r.URL.Path == "/"+otelv1.DefaultSpanAlias:
				w.WriteHeader(404)
			case r.Method == "PUT" && r.URL.Path == "/"+otelv1.FirstSpanIndex:
				w.WriteHeader(tc.status)
				fmt.Fprint(w, tc.body)
			default:
				w.WriteHeader(403)
			}
		}))
		cfg := otelV1Config([]string{srv.URL})
		e, err := newExporter(cfg, exportertestSettings(), signalTraces)
		if err != nil {
			t.Fatal(err)
		}
		err = e.start(context.Background(), nopHost())
		srv.Close()
		if err == nil {
			_ = e.shutdown(context.Background())
			t.Fatalf("HTTP %d: started", tc.status)
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("HTTP %d: %v, want it to say %q", tc.status, err, tc.want)
		}
	}
}
