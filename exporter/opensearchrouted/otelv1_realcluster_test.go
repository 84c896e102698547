package opensearchrouted

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/opensearchrouted/opensearchrouted/internal/otelv1"
	"github.com/opensearchrouted/opensearchrouted/testbed/cluster"
)

// The queries OpenSearch Dashboards' Trace Analytics (dashboards-
// observability, public/components/trace_analytics/requests/queries) sends
// in Data Prepper mode, with its constants (TRACES_MAX_NUM 3000,
// SERVICE_MAP_MAX_NODES 500, SERVICE_MAP_MAX_EDGES 1000). %s marks where
// the page puts its arguments.
const (
	// Services page: services with their trace counts (getServicesQuery).
	taServicesQuery = `{"size":0,"query":{"bool":{"must":[],"filter":[],"should":[],"must_not":[]}},
	  "aggs":{"service":{"terms":{"field":"serviceName","size":10000},"aggs":{"trace_count":{"cardinality":{"field":"traceId"}}}}}}`

	// Services page: latency and error rate of each service, over its
	// roots and the spans the service map names as its entry points
	// (getServiceMetricsQuery); %s: the services, %s: the target
	// resources.
	taServiceMetricsQuery = `{"size":0,"query":{"bool":{"must":[],"should":[],"must_not":[],"filter":[
	  {"terms":{"serviceName":%s}},
	  {"bool":{"should":[
	    {"bool":{"filter":[{"bool":{"must_not":{"term":{"parentSpanId":{"value":""}}}}},{"terms":{"name":%s}}]}},
	    {"bool":{"must":{"term":{"parentSpanId":{"value":""}}}}}],"adjust_pure_negative":true,"boost":1}}]}},
	  "aggregations":{"service_name":{"terms":{"field":"serviceName","size":500,"min_doc_count":1,"shard_min_doc_count":0,"show_term_doc_count_error":false,"order":[{"_count":"desc"},{"_key":"asc"}]},
	    "aggregations":{
	      "average_latency_nanos":{"avg":{"field":"durationInNanos"}},
	      "average_latency":{"bucket_script":{"buckets_path":{"count":"_count","latency":"average_latency_nanos.value"},"script":"Math.round(params.latency / 10000) / 100.0"}},
	      "error_count":{"filter":{"term":{"status.code":"2"}}},
	      "error_rate":{"bucket_script":{"buckets_path":{"total":"_count","errors":"error_count._count"},"script":"params.errors / params.total * 100"}}}}}}`

	// Service map (getServiceMapQuery), on the service-map index.
	taServiceMapQuery = `{"size":0,"query":{"bool":{"must":[],"filter":[],"should":[],"must_not":[]}},
	  "aggs":{"service_name":{"terms":{"field":"serviceName","size":500},"aggs":{
	    "target_resource":{"terms":{"field":"target.resource","size":1000}},
	    "target_edges":{"terms":{"field":"target.resource","size":1000},"aggs":{"service":{"terms":{"field":"target.serviceName","size":1000}},"domain":{"terms":{"field":"target.domain","size":1000}}}},
	    "destination_edges":{"terms":{"field":"destination.resource","size":1000},"aggs":{"service":{"terms":{"field":"destination.serviceName","size":1000}},"domain":{"terms":{"field":"destination.domain","size":1000}}}}}}}}`

	// Dashboard: trace groups with their latency, trace count and error
	// rate (getDashboardQuery).
	taDashboardQuery = `{"size":0,"query":{"bool":{"must":[],"filter":[],"should":[],"must_not":[]}},
	  "aggs":{"trace_group_name":{"terms":{"field":"traceGroup","size":10000},"aggs":{
	    "average_latency":{"scripted_metric":{"init_script":"state.traceIdToLatencyMap = [:];",
	      "map_script":"if (doc.containsKey('traceGroupFields.durationInNanos') && !doc['traceGroupFields.durationInNanos'].empty) { def traceId = doc['traceId'].value; if (!state.traceIdToLatencyMap.containsKey(traceId)) { state.traceIdToLatencyMap[traceId] = doc['traceGroupFields.durationInNanos'].value; } }",
	      "combine_script":"return state.traceIdToLatencyMap",
	      "reduce_script":"def seenTraceIdsMap = [:]; def totalLatency = 0.0; def traceCount = 0.0; for (s in states) { if (s == null) { continue; } for (entry in s.entrySet()) { def traceId = entry.getKey(); def traceLatency = entry.getValue(); if (!seenTraceIdsMap.containsKey(traceId)) { seenTraceIdsMap[traceId] = true; totalLatency += traceLatency; traceCount++; } } } def average_latency_nanos = totalLatency / traceCount; return Math.round(average_latency_nanos / 10000) / 100.0;"}},
	    "trace_count":{"cardinality":{"field":"traceId"}},
	    "error_count":{"filter":{"term":{"traceGroupFields.statusCode":"2"}},"aggs":{"trace_count":{"cardinality":{"field":"traceId"}}}},
	    "error_rate":{"bucket_script":{"buckets_path":{"total":"trace_count.value","errors":"error_count>trace_count.value"},"script":"params.errors / params.total * 100"}}}}}}`

	// Dashboard: latency of each trace group over time
	// (getLatencyTrendQuery).
	taLatencyTrendQuery = `{"size":0,"query":{"bool":{"must":[],"filter":[],"should":[],"must_not":[]}},
	  "aggs":{"trace_group_name":{"terms":{"field":"traceGroup","size":10000},"aggs":{"group_by_hour":{"date_histogram":{"field":"endTime","calendar_interval":"hour"},"aggs":{
	    "average_latency":{"scripted_metric":{"init_script":"state.traceIdToLatencyMap = [:];",
	      "map_script":"if (doc.containsKey('traceGroupFields.durationInNanos') && !doc['traceGroupFields.durationInNanos'].empty) { def traceId = doc['traceId'].value; if (!state.traceIdToLatencyMap.containsKey(traceId)) { state.traceIdToLatencyMap[traceId] = doc['traceGroupFields.durationInNanos'].value; } }",
	      "combine_script":"return state.traceIdToLatencyMap",
	      "reduce_script":"def seenTraceIdsMap = [:]; def totalLatency = 0.0; def traceCount = 0.0; for (s in states) { if (s == null) { continue; } for (entry in s.entrySet()) { def traceId = entry.getKey(); def traceLatency = entry.getValue(); if (!seenTraceIdsMap.containsKey(traceId)) { seenTraceIdsMap[traceId] = true; totalLatency += traceLatency; traceCount++; } } } def average_latency_nanos = totalLatency / traceCount; return Math.round(average_latency_nanos / 10000) / 100.0;"}}}}}}}}`

	// Dashboard: error rate over time (getErrorRatePltQuery); %s: the
	// fixed interval.
	taErrorRateQuery = `{"size":0,"query":{"bool":{"must":[],"filter":[],"should":[],"must_not":[]}},
	  "aggs":{"error_rate":{"date_histogram":{"field":"startTime","fixed_interval":%q},"aggs":{
	    "error_count":{"filter":{"term":{"traceGroupFields.statusCode":"2"}},"aggs":{"trace_count":{"cardinality":{"field":"traceId"}}}},
	    "trace_count":{"cardinality":{"field":"traceId"}},
	    "error_rate":{"bucket_script":{"buckets_path":{"total":"trace_count.value","errors":"error_count>trace_count.value"},"script":"params.errors / params.total * 100"}}}}}}`

	// Traces page: every trace with its latency, group, errors and end
	// (getTracesQuery).
	taTracesQuery = `{"size":0,"query":{"bool":{"must":[],"filter":[],"should":[],"must_not":[]}},
	  "aggs":{"traces":{"terms":{"field":"traceId","size":3000,"order":{"_key":"asc"}},"aggs":{
	    "latency":{"max":{"script":{"source":"if (doc.containsKey('traceGroupFields.durationInNanos') && !doc['traceGroupFields.durationInNanos'].empty) { return Math.round(doc['traceGroupFields.durationInNanos'].value / 10000) / 100.0 } return 0","lang":"painless"}}},
	    "trace_group":{"terms":{"field":"traceGroup","size":1}},
	    "error_count":{"filter":{"term":{"traceGroupFields.statusCode":"2"}}},
	    "last_updated":{"max":{"field":"traceGroupFields.endTime"}}}}},"track_total_hits":false}`

	// Trace view: the spans of one trace (getSpanDetailQuery); %q: the
	// trace id.
	taSpanDetailQuery = `{"size":3000,"query":{"bool":{"must":[{"term":{"traceId":%q}},{"exists":{"field":"serviceName"}}],"filter":[],"should":[],"must_not":[]}},
	  "sort":[{"startTime":{"order":"desc"}}],
	  "_source":{"includes":["serviceName","name","startTime","endTime","spanId","status.code","durationInNanos"]}}`

	// Trace view: time spent per service (getServiceBreakdownQuery); %q:
	// the trace id.
	taServiceBreakdownQuery = `{"size":0,"query":{"bool":{"must":[{"term":{"traceId":%q}}],"filter":[],"should":[],"must_not":[]}},
	  "aggs":{"service_type":{"terms":{"field":"serviceName","order":[{"total_latency_nanos":"desc"}]},"aggs":{
	    "total_latency_nanos":{"sum":{"field":"durationInNanos"}},
	    "total_latency":{"bucket_script":{"buckets_path":{"count":"_count","latency":"total_latency_nanos.value"},"script":"Math.round(params.latency / 10000) / 100.0"}}}}}}`
)

// javaRound is Java's Math.round of a double: floor(x + 0.5).
func javaRound(x float64) float64 { return math.Floor(x + 0.5) }

// msRounded is Trace Analytics' Math.round(nanos / 10000) / 100.0:
// milliseconds with two decimals.
func msRounded(nanos float64) float64 { return javaRound(nanos/10000) / 100.0 }

// msTruncated is the same of a long field's value in a Painless script:
// doc['f'].value / 10000 divides integers (the trace list's latency).
func msTruncated(nanos int64) float64 { return javaRound(float64(nanos/10000)) / 100.0 }

// jpath walks decoded JSON by object keys and array indices.
func jpath(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func jnum(v any) float64 {
	f, ok := v.(float64)
	if !ok {
		return math.NaN()
	}
	return f
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// buckets returns the buckets of agg path (an object of bucket objects by
// "key" ... or "key_as_string" for dates).
func buckets(v any, path ...any) map[string]map[string]any {
	out := map[string]map[string]any{}
	l, _ := jpath(v, path...).([]any)
	for _, b := range l {
		m := b.(map[string]any)
		key := fmt.Sprint(m["key"])
		if s, ok := m["key_as_string"].(string); ok {
			key = s
		}
		out[key] = m
	}
	return out
}

// taSearch sends a Trace Analytics query to index and returns the answer.
func taSearch(t *testing.T, base, index, query string) map[string]any {
	t.Helper()
	var res map[string]any
	if st := httpJSON(t, "POST", base+"/"+index+"/_search", query, &res); st != 200 {
		b, _ := json.Marshal(res)
		t.Fatalf("query on %s: HTTP %d: %s", index, st, b)
	}
	return res
}

// TestRealClusterOtelV1TraceAnalytics exports a multi-service workload in
// otel-v1 mode (a third of its spans before their root) to real
// OpenSearch with lang-painless (the server Trace Analytics runs on has
// it), then asks it what Trace Analytics asks, and checks every answer
// against what was sent: the services list, service metrics, the service
// map, the dashboard's trace groups, latency and error rate over time, the
// trace list and the trace view. Trace groups must be on every span within
// the bounded wait; every span is stored exactly once.
func TestRealClusterOtelV1TraceAnalytics(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Nodes: 2, Painless: true})
	base := c.Addr(0)
	cfg := otelV1Config(c.Addrs())
	e, reader := startExporter(t, cfg, signalTraces)
	checkBootstrapped(t, base)

	w := newTAWorkload(300, time.Now().Add(-time.Hour).Truncate(time.Millisecond))
	exportWorkload(t, e, w)
	sent := time.Now()
	checkWorkloadMetrics(t, reader, w)

	span := otelv1.DefaultSpanAlias
	t.Run("groups within a bounded delay", func(t *testing.T) {
		// Every span has its group, seen by the server, soon after the
		// last call (the fix-up runs every 100ms here, every second by
		// default).
		deadline := sent.Add(20 * time.Second)
		for {
			httpJSON(t, "POST", base+"/"+span+"/_refresh", "", nil)
			var cnt struct {
				Count int `json:"count"`
			}
			httpJSON(t, "POST", base+"/"+span+"/_count", `{"query":{"bool":{"must_not":{"exists":{"field":"traceGroup"}}}}}`, &cnt)
			if cnt.Count == 0 {
				t.Logf("every span has its group %v after the last export", time.Since(sent).Round(time.Millisecond))
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d spans still without their group 20s after the last export (want ≥ 99.9%% grouped)", cnt.Count, len(w.spans))
			}
			time.Sleep(100 * time.Millisecond)
		}
		checkSpanDocs(t, base, w)
	})

	t.Run("exactly once", func(t *testing.T) {
		if n := count(t, base, span); n != len(w.spans) {
			t.Fatalf("%d span documents, sent %d", n, len(w.spans))
		}
		res := taSearch(t, base, span, `{"size":0,"aggs":{"dup":{"terms":{"field":"span.attributes.seq","min_doc_count":2,"size":10}},"seqs":{"cardinality":{"field":"span.attributes.seq"}}}}`)
		if d := jpath(res, "aggregations", "dup", "buckets").([]any); len(d) != 0 {
			t.Fatalf("sequence numbers stored twice: %v", d)
		}
	})

	t.Run("services", func(t *testing.T) {
		res := taSearch(t, base, span, taServicesQuery)
		got := buckets(res, "aggregations", "service", "buckets")
		want := map[string][2]int{} // spans, traces
		traces := map[string]map[string]bool{}
		for _, s := range w.spans {
			v := want[s.service]
			v[0]++
			want[s.service] = v
			if traces[s.service] == nil {
				traces[s.service] = map[string]bool{}
			}
			traces[s.service][s.trace] = true
		}
		if len(got) != len(want) {
			t.Fatalf("services %v, want %v", keysOf(got), want)
		}
		for svc, v := range want {
			b := got[svc]
			if jnum(b["doc_count"]) != float64(v[0]) || jnum(jpath(b, "trace_count", "value")) != float64(len(traces[svc])) {
				t.Errorf("service %s: %v, want %d spans in %d traces", svc, b, v[0], len(traces[svc]))
			}
		}
	})

	var targets []string
	t.Run("service map", func(t *testing.T) {
		// The edges are written by the exporter's background pass (every
		// fix-up interval), after the spans: wait for all of them to be
		// searchable before asking.
		edges := len(w.expectedEdges())
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			httpJSON(t, "POST", base+"/"+otelv1.ServiceMapIndex+"/_refresh", "", nil)
			var cnt struct {
				Count int `json:"count"`
			}
			// 404 until the first edge creates the index.
			httpJSON(t, "GET", base+"/"+otelv1.ServiceMapIndex+"/_count", "", &cnt)
			n := cnt.Count
			if n >= edges {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d service-map edges stored 20s after the last export", n, edges)
			}
		}
		res := taSearch(t, base, otelv1.ServiceMapIndex, taServiceMapQuery)
		got := buckets(res, "aggregations", "service_name", "buckets")
		type sm struct{ targets, dests map[string]string } // resource → domain ("" for targets)
		want := map[string]*sm{}
		for _, ed := range w.expectedEdges() {
			s := want[ed.ServiceName]
			if s == nil {
				s = &sm{map[string]string{}, map[string]string{}}
				want[ed.ServiceName] = s
			}
			if ed.Target != nil {
				s.targets[ed.Target.Resource] = ed.Target.Domain
			}
			if ed.Destination != nil {
				s.dests[ed.Destination.Resource] = ed.Destination.Domain
			}
		}
		if len(got) != len(want) {
			t.Fatalf("service map services %v, want %d", keysOf(got), len(want))
		}
		seenTargets := map[string]bool{}
		for svc, s := range want {
			b := got[svc]
			tr := buckets(b, "target_resource", "buckets")
			if len(tr) != len(s.targets) {
				t.Errorf("%s: target resources %v, want %v", svc, keysOf(tr), s.targets)
			}
			for r := range s.targets {
				if tr[r] == nil {
					t.Errorf("%s: target resource %q missing", svc, r)
				}
				seenTargets[r] = true
			}
			de := buckets(b, "destination_edges", "buckets")
			if len(de) != len(s.dests) {
				t.Errorf("%s: destinations %v, want %v", svc, keysOf(de), s.dests)
			}
			for r, dom := range s.dests {
				if d := buckets(de[r], "domain", "buckets"); len(d) != 1 || d[dom] == nil {
					t.Errorf("%s → %s: domains %v, want %s", svc, r, keysOf(d), dom)
				}
			}
		}
		for r := range seenTargets {
			targets = append(targets, r)
		}
		sort.Strings(targets)
	})

	t.Run("service metrics", func(t *testing.T) {
		if len(targets) == 0 {
			t.Fatal("no target resources: the service map subtest failed")
		}
		services := []string{"cart", "frontend", "payment"}
		svcJSON, _ := json.Marshal(services)
		tgtJSON, _ := json.Marshal(targets)
		res := taSearch(t, base, span, fmt.Sprintf(taServiceMetricsQuery, svcJSON, tgtJSON))
		got := buckets(res, "aggregations", "service_name", "buckets")
		isTarget := map[string]bool{}
		for _, r := range targets {
			isTarget[r] = true
		}
		type agg struct {
			n, errors int
			sum       float64
		}
		want := map[string]*agg{}
		for _, s := range w.spans {
			if s.parent != "" && !isTarget[s.name] {
				continue
			}
			a := want[s.service]
			if a == nil {
				a = &agg{}
				want[s.service] = a
			}
			a.n++
			a.sum += float64(s.durNanos())
			if s.status == 2 {
				a.errors++
			}
		}
		if len(got) != len(want) {
			t.Fatalf("services %v, want %d", keysOf(got), len(want))
		}
		for svc, a := range want {
			b := got[svc]
			avg := a.sum / float64(a.n)
			if jnum(b["doc_count"]) != float64(a.n) || !near(jnum(jpath(b, "average_latency_nanos", "value")), avg) ||
				!near(jnum(jpath(b, "average_latency", "value")), msRounded(avg)) ||
				jnum(jpath(b, "error_count", "doc_count")) != float64(a.errors) ||
				!near(jnum(jpath(b, "error_rate", "value")), float64(a.errors)/float64(a.n)*100) {
				t.Errorf("service %s: %v\nwant %d spans, avg %.1f ns (%.2f ms), %d errors", svc, b, a.n, avg, msRounded(avg), a.errors)
			}
		}
	})

	// Per trace group: its traces, their root durations, error traces.
	type group struct {
		spans  int
		traces map[string]float64 // trace → root duration
		errors map[string]bool
	}
	groups := map[string]*group{}
	for _, s := range w.spans {
		root := w.root(s.k)
		g := groups[root.name]
		if g == nil {
			g = &group{traces: map[string]float64{}, errors: map[string]bool{}}
			groups[root.name] = g
		}
		g.spans++
		g.traces[s.trace] = float64(root.durNanos())
		if root.status == 2 {
			g.errors[s.trace] = true
		}
	}
	avgOf := func(traces map[string]float64) float64 {
		sum := 0.0
		for _, d := range traces {
			sum += d
		}
		return sum / float64(len(traces))
	}

	t.Run("dashboard trace groups", func(t *testing.T) {
		res := taSearch(t, base, span, taDashboardQuery)
		got := buckets(res, "aggregations", "trace_group_name", "buckets")
		if len(got) != len(groups) {
			t.Fatalf("trace groups %v, want %d", keysOf(got), len(groups))
		}
		for name, g := range groups {
			b := got[name]
			rate := float64(len(g.errors)) / float64(len(g.traces)) * 100
			if jnum(b["doc_count"]) != float64(g.spans) || !near(jnum(jpath(b, "average_latency", "value")), msRounded(avgOf(g.traces))) ||
				jnum(jpath(b, "trace_count", "value")) != float64(len(g.traces)) ||
				jnum(jpath(b, "error_count", "trace_count", "value")) != float64(len(g.errors)) ||
				!near(jnum(jpath(b, "error_rate", "value")), rate) {
				t.Errorf("trace group %q: %v\nwant %d spans, %d traces (%.2f ms), %d with errors", name, b, g.spans, len(g.traces), msRounded(avgOf(g.traces)), len(g.errors))
			}
		}
	})

	t.Run("latency over time", func(t *testing.T) {
		res := taSearch(t, base, span, taLatencyTrendQuery)
		got := buckets(res, "aggregations", "trace_group_name", "buckets")
		for name := range groups {
			// By the hour of each span's end: the traces with a span
			// ending in it, averaged by their root's duration.
			byHour := map[int64]map[string]float64{}
			for _, s := range w.spans {
				root := w.root(s.k)
				if root.name != name {
					continue
				}
				h := s.end.Truncate(time.Hour).UnixMilli()
				if byHour[h] == nil {
					byHour[h] = map[string]float64{}
				}
				byHour[h][s.trace] = float64(root.durNanos())
			}
			l, _ := jpath(got[name], "group_by_hour", "buckets").([]any)
			n := 0
			for _, bv := range l {
				b := bv.(map[string]any)
				traces := byHour[int64(jnum(b["key"]))]
				if jnum(b["doc_count"]) == 0 {
					continue
				}
				n++
				if traces == nil || !near(jnum(jpath(b, "average_latency", "value")), msRounded(avgOf(traces))) {
					t.Errorf("group %q hour %v: %v, want %.2f ms over %d traces", name, b["key_as_string"], b, msRounded(avgOf(traces)), len(traces))
				}
			}
			if n != len(byHour) {
				t.Errorf("group %q: %d hours with spans, want %d", name, n, len(byHour))
			}
		}
	})

	t.Run("error rate over time", func(t *testing.T) {
		res := taSearch(t, base, span, fmt.Sprintf(taErrorRateQuery, "1m"))
		type minute struct{ traces, errors map[string]bool }
		want := map[int64]*minute{}
		for _, s := range w.spans {
			m := s.start.Truncate(time.Minute).UnixMilli()
			if want[m] == nil {
				want[m] = &minute{map[string]bool{}, map[string]bool{}}
			}
			want[m].traces[s.trace] = true
			if w.root(s.k).status == 2 {
				want[m].errors[s.trace] = true
			}
		}
		l, _ := jpath(res, "aggregations", "error_rate", "buckets").([]any)
		n := 0
		for _, bv := range l {
			b := bv.(map[string]any)
			m := want[int64(jnum(b["key"]))]
			if jnum(b["doc_count"]) == 0 {
				continue
			}
			n++
			if m == nil || jnum(jpath(b, "trace_count", "value")) != float64(len(m.traces)) ||
				jnum(jpath(b, "error_count", "trace_count", "value")) != float64(len(m.errors)) ||
				!near(jnum(jpath(b, "error_rate", "value")), float64(len(m.errors))/float64(len(m.traces))*100) {
				t.Errorf("minute %v: %v, want %+v", b["key_as_string"], b, m)
			}
		}
		if n != len(want) {
			t.Errorf("%d minutes with spans, want %d", n, len(want))
		}
	})

	t.Run("trace list", func(t *testing.T) {
		res := taSearch(t, base, span, taTracesQuery)
		l, _ := jpath(res, "aggregations", "traces", "buckets").([]any)
		if len(l) != w.n {
			t.Fatalf("%d traces listed, want %d", len(l), w.n)
		}
		grouped := 0
		for i, bv := range l {
			b := bv.(map[string]any)
			k := i // ids sort as their number (zero-padded hex)
			root := w.root(k)
			if b["key"] != root.trace || jnum(b["doc_count"]) != 5 {
				t.Fatalf("trace %d: %v", k, b)
			}
			errs := 0.0
			if root.status == 2 {
				errs = 5
			}
			if g := buckets(b, "trace_group", "buckets")[root.name]; g != nil {
				grouped += int(jnum(g["doc_count"]))
			}
			if !near(jnum(jpath(b, "latency", "value")), msTruncated(root.durNanos())) ||
				jnum(jpath(b, "error_count", "doc_count")) != errs ||
				math.Abs(jnum(jpath(b, "last_updated", "value"))-float64(root.end.UnixNano())/1e6) > 1 {
				t.Errorf("trace %d: %v\nwant latency %.2f ms, %v error spans, last updated %v", k, b, msTruncated(root.durNanos()), errs, root.end)
			}
		}
		if grouped != len(w.spans) {
			t.Errorf("%d of %d spans listed under their trace group", grouped, len(w.spans))
		}
	})

	t.Run("trace view", func(t *testing.T) {
		for _, k := range []int{0, w.n / 2, w.n - 1} { // inline, cached, fixed up
			tr := append([]taSpan(nil), w.traceOf(k)...)
			res := taSearch(t, base, span, fmt.Sprintf(taSpanDetailQuery, tr[0].trace))
			hits, _ := jpath(res, "hits", "hits").([]any)
			sort.SliceStable(tr, func(i, j int) bool { return tr[i].start.After(tr[j].start) })
			if len(hits) != len(tr) {
				t.Fatalf("trace %d: %d spans, want %d", k, len(hits), len(tr))
			}
			for i, hv := range hits {
				src := jpath(hv, "_source").(map[string]any)
				s := tr[i]
				if src["spanId"] != s.id && tr[i].start.Equal(tr[max(0, i-1)].start) {
					continue // spans starting at the same instant sort either way
				}
				if src["spanId"] != s.id || src["serviceName"] != s.service || src["name"] != s.name ||
					jnum(src["durationInNanos"]) != float64(s.durNanos()) || jnum(jpath(src, "status.code")) != float64(s.status) {
					t.Errorf("trace %d span %d: %v, want %+v", k, i, src, s)
				}
			}
			res = taSearch(t, base, span, fmt.Sprintf(taServiceBreakdownQuery, tr[0].trace))
			got := buckets(res, "aggregations", "service_type", "buckets")
			sums := map[string]float64{}
			for _, s := range tr {
				sums[s.service] += float64(s.durNanos())
			}
			for svc, sum := range sums {
				if b := got[svc]; b == nil || jnum(jpath(b, "total_latency_nanos", "value")) != sum || !near(jnum(jpath(b, "total_latency", "value")), msRounded(sum)) {
					t.Errorf("trace %d service %s: %v, want %.0f ns", k, svc, got[svc], sum)
				}
			}
		}
	})
}

func keysOf[V any](m map[string]V) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ", ")
}
