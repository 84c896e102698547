package opensearchrouted

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/collector/exporter/exportertest"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/opensearchrouted/opensearchrouted/exporter/opensearchrouted/internal/metadata"
	"github.com/opensearchrouted/opensearchrouted/internal/routing"
	"github.com/opensearchrouted/opensearchrouted/testbed/ossim"
)

// testConfig returns a valid config for the given endpoints, with fast
// in-call retries.
func testConfig(endpoints []string) *Config {
	cfg := createDefaultConfig()
	cfg.Endpoints = endpoints
	cfg.Bulk.RetryBackoff = 20 * time.Millisecond
	cfg.Bulk.MaxAttempts = 6
	cfg.Routing.MinRefreshInterval = 100 * time.Millisecond
	cfg.Routing.NodeStatsInterval = 0
	return cfg
}

// startExporter builds and starts an exporter directly (no queue), with a
// manual metric reader, its telemetry configured as a collector's is by
// default (level normal).
func startExporter(t testing.TB, cfg *Config, sig signal) (*osExporter, *sdkmetric.ManualReader) {
	return startExporterTelemetry(t, cfg, sig, false)
}

// otelhttpMeter is the meter of the HTTP client instrumentation that
// confighttp wraps every client in.
const otelhttpMeter = "go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"

// startExporterTelemetry is startExporter with the collector's telemetry at
// level detailed (detailed) or normal. Below detailed the collector's
// default views drop every otelhttp metric (http.client.*), so at level
// normal its instruments record nothing; the same view is applied here.
func startExporterTelemetry(t testing.TB, cfg *Config, sig signal, detailed bool, mods ...func(*exporter.Settings)) (*osExporter, *sdkmetric.ManualReader) {
	t.Helper()
	set := exportertest.NewNopSettings(metadata.Type)
	for _, m := range mods {
		m(&set)
	}
	reader := sdkmetric.NewManualReader()
	opts := []sdkmetric.Option{sdkmetric.WithReader(reader)}
	if !detailed {
		opts = append(opts, sdkmetric.WithView(sdkmetric.NewView(
			sdkmetric.Instrument{Scope: instrumentation.Scope{Name: otelhttpMeter}},
			sdkmetric.Stream{Aggregation: sdkmetric.AggregationDrop{}})))
	}
	mp := sdkmetric.NewMeterProvider(opts...)
	set.MeterProvider = mp
	e, err := newExporter(cfg, set, sig)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.start(context.Background(), componenttest.NewNopHost()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.shutdown(context.Background()); err != nil {
			t.Error(err)
		}
		_ = mp.Shutdown(context.Background())
	})
	return e, reader
}

// startRoutedEmulator starts a 3-node emulator whose new indices get 6
// primaries and an exporter of sig writing to index there, pushes one
// record to create the index, and waits until the router knows it.
func startRoutedEmulator(t testing.TB, sig signal, index string) (*ossim.Cluster, *osExporter) {
	t.Helper()
	sim := ossim.StartT(t, ossim.Options{Nodes: 3, NoHopLatency: true, DefaultShards: 6})
	cfg := testConfig(sim.Addrs())
	cfg.LogsIndex, cfg.TracesIndex = index, index
	e, _ := startExporter(t, cfg, sig)
	var err error
	if sig == signalTraces {
		err = e.pushTraces(context.Background(), makeSpans(1_000_000, 1))
	} else {
		err = e.pushLogs(context.Background(), makeLogs(1_000_000, 1))
	}
	if err != nil {
		t.Fatal(err)
	}
	waitRouted(t, e, index)
	return sim, e
}

// waitRouted waits until the router knows target.
func waitRouted(t testing.TB, e *osExporter, target string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if _, why := e.router.Locate(target, "probe-id", ""); why == routing.Routed || why == routing.ReasonDisabled {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("topology never learnt %s", target)
}

// makeLogs builds n distinct log records (first record number from) over a
// few resources and scopes.
func makeLogs(from, n int) plog.Logs {
	ld := plog.NewLogs()
	base := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var sl plog.ScopeLogs
	for i := from; i < from+n; i++ {
		if (i-from)%250 == 0 {
			rl := ld.ResourceLogs().AppendEmpty()
			rl.Resource().Attributes().PutStr("service.name", fmt.Sprintf("svc-%d", (i/250)%4))
			rl.Resource().Attributes().PutStr("host.name", "host-a")
			sl = rl.ScopeLogs().AppendEmpty()
			sl.Scope().SetName("test")
		}
		lr := sl.LogRecords().AppendEmpty()
		lr.SetTimestamp(pcommon.NewTimestampFromTime(base.Add(time.Duration(i) * time.Millisecond)))
		lr.SetObservedTimestamp(pcommon.NewTimestampFromTime(base.Add(time.Duration(i)*time.Millisecond + time.Microsecond)))
		lr.SetSeverityNumber(plog.SeverityNumberInfo)
		lr.SetSeverityText("Info")
		lr.Body().SetStr(fmt.Sprintf("log message number %d with some text", i))
		lr.Attributes().PutInt("seq", int64(i))
		lr.Attributes().PutStr("http.method", "GET")
		lr.Attributes().PutBool("ok", i%2 == 0)
		lr.Attributes().PutDouble("latency", float64(i)/7)
		lr.Attributes().PutStr("path", "/api/v1/items")
	}
	return ld
}

// makeSpans builds n distinct spans.
func makeSpans(from, n int) ptrace.Traces {
	td := ptrace.NewTraces()
	base := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var ss ptrace.ScopeSpans
	for i := from; i < from+n; i++ {
		if (i-from)%250 == 0 {
			rs := td.ResourceSpans().AppendEmpty()
			rs.Resource().Attributes().PutStr("service.name", fmt.Sprintf("svc-%d", (i/250)%4))
			ss = rs.ScopeSpans().AppendEmpty()
			ss.Scope().SetName("test")
		}
		sp := ss.Spans().AppendEmpty()
		var tid [16]byte
		var sid [8]byte
		binary.BigEndian.PutUint64(tid[8:], uint64(i)+1)
		tid[0] = 0xa1
		binary.BigEndian.PutUint64(sid[:], uint64(i)*2654435761+1)
		sp.SetTraceID(tid)
		sp.SetSpanID(sid)
		sp.SetName(fmt.Sprintf("op-%d", i%17))
		sp.SetKind(ptrace.SpanKindServer)
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(base.Add(time.Duration(i) * time.Millisecond)))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(base.Add(time.Duration(i)*time.Millisecond + 3*time.Millisecond)))
		sp.Attributes().PutInt("seq", int64(i))
		sp.Status().SetCode(ptrace.StatusCodeOk)
	}
	return td
}

// httpJSON sends a request and decodes a JSON answer.
func httpJSON(t testing.TB, method, url, body string, v any) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if v != nil {
		if err := json.Unmarshal(data, v); err != nil {
			t.Fatalf("%s %s: %v: %s", method, url, err, data)
		}
	}
	return resp.StatusCode
}

// count refreshes and counts the documents of target.
func count(t testing.TB, base, target string) int {
	t.Helper()
	httpJSON(t, "POST", base+"/"+target+"/_refresh", "", nil)
	var c struct {
		Count int `json:"count"`
	}
	if st := httpJSON(t, "GET", base+"/"+target+"/_count", "", &c); st != 200 {
		t.Fatalf("count %s: HTTP %d", target, st)
	}
	return c.Count
}

// sumMetric adds up the data points of an Int64 sum metric whose
// attributes include every key=value in match.
func sumMetric(t testing.TB, r *sdkmetric.ManualReader, name string, match map[string]string) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range d.DataPoints {
					if attrsMatch(dp.Attributes.ToSlice(), match) {
						total += dp.Value
					}
				}
			case metricdata.Gauge[int64]:
				for _, dp := range d.DataPoints {
					if attrsMatch(dp.Attributes.ToSlice(), match) {
						total += dp.Value
					}
				}
			}
		}
	}
	return total
}

func attrsMatch(kvs []attributeKV, match map[string]string) bool {
	n := 0
	for _, kv := range kvs {
		if v, ok := match[string(kv.Key)]; ok {
			if kv.Value.Emit() != v {
				return false
			}
			n++
		}
	}
	return n == len(match)
}

type attributeKV = attribute.KeyValue

func exportertestSettings() exporter.Settings { return exportertest.NewNopSettings(metadata.Type) }

func nopHost() component.Host { return componenttest.NewNopHost() }

// shapeServer is a one-node _bulk endpoint that stores what it is sent
// (by index and _id) and refuses, with a mapper_parsing_exception whose
// reason quotes "secret", every document marked "bad" as written; in the
// unmapped shape only when refuseUnmapped; and every dead-letter document
// when refuseDeadLetter. With unauthorized it answers 401 to everything.
// Discovery is refused: the exporter writes unrouted.
type shapeServer struct {
	mu                                             sync.Mutex
	unauthorized, refuseUnmapped, refuseDeadLetter bool
	stored                                         map[string]string // index/_id → source
	unauthorizedBulks                              int               // requests answered 401
}

func (fs *shapeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/_bulk") {
		w.WriteHeader(403)
		return
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.unauthorized {
		fs.unauthorizedBulks++
		w.WriteHeader(401)
		fmt.Fprint(w, `{"error":{"type":"security_exception","reason":"missing authentication credentials"},"status":401}`)
		return
	}
	var items []string
	body, _ := io.ReadAll(r.Body)
	lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	pathIndex := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/"), "/_bulk")
	for i := 0; i+1 < len(lines); i += 2 {
		var a map[string]map[string]string
		_ = json.Unmarshal([]byte(lines[i]), &a)
		index := a["create"]["_index"]
		if index == "" {
			index = pathIndex
		}
		src := lines[i+1]
		dead := strings.HasPrefix(index, "opensearchrouted-deadletter-")
		refused := !dead && strings.Contains(src, "bad") && (!strings.Contains(src, `"unmapped"`) || fs.refuseUnmapped)
		if dead && fs.refuseDeadLetter {
			refused = true
		}
		key := index + "/" + a["create"]["_id"]
		switch _, ok := fs.stored[key]; {
		case refused:
			items = append(items, `{"create":{"_index":"x","status":400,"error":{"type":"mapper_parsing_exception","reason":"failed to parse field [attributes.seq] of type [date] in document with id 'a'. Preview of field's value: 'secret'","caused_by":{"type":"illegal_argument_exception","reason":"failed to parse date field [secret] with format [strict_date_optional_time||epoch_millis]"}}}}`)
		case ok:
			items = append(items, `{"create":{"_index":"x","status":409,"error":{"type":"version_conflict_engine_exception","reason":"exists"}}}`)
		default:
			fs.stored[key] = src
			items = append(items, `{"create":{"_index":"x","status":201}}`)
		}
	}
	fmt.Fprintf(w, `{"took":1,"errors":true,"items":[%s]}`, strings.Join(items, ","))
}

// badLogs is makeLogs(from, n) with every third record marked "bad" for
// shapeServer.
func badLogs(from, n int) plog.Logs {
	ld := makeLogs(from, n)
	lrs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	for i := 0; i < lrs.Len(); i += 3 {
		lrs.At(i).Attributes().PutStr("secret.kind", "bad")
	}
	return ld
}
