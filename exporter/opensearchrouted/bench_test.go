package opensearchrouted

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"github.com/opensearchrouted/opensearchrouted/internal/bulk"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/opensearchrouted/opensearchrouted/internal/ss4o"
	"github.com/opensearchrouted/opensearchrouted/testbed/ossim"
)

// minimalCluster is n in-process HTTP/1.1 servers that answer discovery for
// one index spread over them and answer every _bulk with a canned
// all-created response of the right item count. The servers share the
// benchmark's two cores with the exporter, so they do as little as an HTTP
// server can: a _bulk body is read in 64 KiB pieces and its newlines counted
// (nothing is kept), and the answer is written in one piece; other requests
// go to serve through net/http's types.
type minimalCluster struct {
	lns   []net.Listener
	index string
	n     int

	bulks atomic.Int64 // _bulk requests answered
	wire  atomic.Int64 // _bulk body bytes received, as sent (compressed or not)

	// scheme is "http", or "https" for newMinimalClusterTLS.
	scheme string

	mu    sync.Mutex
	conns map[net.Conn]struct{}
}

func newMinimalCluster(tb testing.TB, n int, index string) *minimalCluster {
	return newMinimalClusterListen(tb, n, index, nil)
}

// newMinimalClusterListen is newMinimalCluster whose servers speak TLS
// with serverTLS (nil: plain HTTP).
func newMinimalClusterListen(tb testing.TB, n int, index string, serverTLS *tls.Config) *minimalCluster {
	m := &minimalCluster{index: index, n: n, conns: map[net.Conn]struct{}{}, scheme: "http"}
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		if serverTLS != nil {
			ln = tls.NewListener(ln, serverTLS)
			m.scheme = "https"
		}
		m.lns = append(m.lns, ln)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				m.mu.Lock()
				m.conns[c] = struct{}{}
				m.mu.Unlock()
				wg.Add(1)
				go func() {
					defer wg.Done()
					m.conn(c)
				}()
			}
		}()
	}
	tb.Cleanup(func() {
		for _, ln := range m.lns {
			ln.Close()
		}
		m.mu.Lock()
		for c := range m.conns {
			c.Close()
		}
		m.mu.Unlock()
		wg.Wait()
	})
	return m
}

func (m *minimalCluster) urls() []string {
	var out []string
	for _, ln := range m.lns {
		out = append(out, m.scheme+"://"+ln.Addr().String())
	}
	return out
}

// conn serves one connection's requests (HTTP/1.1, keep-alive, bodies with
// a Content-Length, which is what the exporter sends) until the client
// closes it or sends something else.
func (m *minimalCluster) conn(c net.Conn) {
	defer func() {
		m.mu.Lock()
		delete(m.conns, c)
		m.mu.Unlock()
		c.Close()
	}()
	br := bufio.NewReaderSize(c, 64<<10)
	buf := make([]byte, 64<<10)
	out := make([]byte, 0, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return
		}
		method, rest, _ := strings.Cut(string(line), " ")
		target, _, _ := strings.Cut(rest, " ")
		length, closeAfter, gz := 0, false, false
		for {
			h, err := br.ReadSlice('\n')
			if err != nil {
				return
			}
			if len(h) <= 2 {
				break
			}
			k, v, _ := bytes.Cut(h, []byte{':'})
			v = bytes.TrimSpace(v)
			switch {
			case bytes.EqualFold(k, []byte("Content-Length")):
				length, _ = strconv.Atoi(string(v))
			case bytes.EqualFold(k, []byte("Transfer-Encoding")):
				return // not sent by the exporter
			case bytes.EqualFold(k, []byte("Connection")) && bytes.EqualFold(v, []byte("close")):
				closeAfter = true
			case bytes.EqualFold(k, []byte("Content-Encoding")) && bytes.EqualFold(v, []byte("gzip")):
				gz = true
			}
		}
		path, _, _ := strings.Cut(target, "?")
		if path == "/_bulk" || path == "/"+m.index+"/_bulk" {
			m.bulks.Add(1)
			m.wire.Add(int64(length))
			lines := 0
			if gz {
				var err error
				if lines, err = gunzipLines(br, length, buf); err != nil {
					return
				}
			}
			for left := length; left > 0 && !gz; {
				k, err := br.Read(buf[:min(left, len(buf))])
				if err != nil {
					return
				}
				lines += bytes.Count(buf[:k], []byte{'\n'})
				left -= k
			}
			list := cannedItems[:max(0, (lines/2)*(len(itemOK)+1)-1)]
			out = append(out[:0], "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "...)
			out = strconv.AppendInt(out, int64(len(cannedPrefix)+len(list)+len(cannedSuffix)), 10)
			out = append(out, "\r\n\r\n"...)
			out = append(out, cannedPrefix...)
			out = append(out, list...)
			out = append(out, cannedSuffix...)
		} else {
			body := make([]byte, length)
			if _, err := io.ReadFull(br, body); err != nil {
				return
			}
			req := httptest.NewRequest(method, target, bytes.NewReader(body))
			rec := httptest.NewRecorder()
			m.serve(rec, req)
			out = append(out[:0], fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n",
				rec.Code, http.StatusText(rec.Code), rec.Body.Len())...)
			out = append(out, rec.Body.Bytes()...)
		}
		if _, err := c.Write(out); err != nil || closeAfter {
			return
		}
	}
}

// itemOK is a created item as the server writes it under the exporter's
// filter_path (errors, items.*._index, items.*.status, items.*.error.*).
var itemOK = []byte(`{"create":{"_index":"bench","status":201}}`)

var (
	cannedPrefix = []byte(`{"errors":false,"items":[`)
	cannedSuffix = []byte(`]}`)
	cannedItems  = bytes.Repeat(append(append([]byte{}, itemOK...), ','), 20000)
)

func (m *minimalCluster) serve(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case strings.HasPrefix(p, "/_nodes/stats"):
		fmt.Fprint(w, `{"nodes":{}}`)
	case strings.HasPrefix(p, "/_nodes/"):
		nodes := map[string]any{}
		for i, ln := range m.lns {
			_, port, _ := net.SplitHostPort(ln.Addr().String())
			nodes["id"+strconv.Itoa(i)] = map[string]any{"name": "n" + strconv.Itoa(i), "roles": []string{"data"},
				"http": map[string]any{"publish_address": "127.0.0.1:" + port}, "os": map[string]any{"allocated_processors": 2},
				"thread_pool": map[string]any{"write": map[string]any{"size": 8, "queue_size": 10000}}}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"nodes": nodes})
	case strings.HasPrefix(p, "/_data_stream"):
		fmt.Fprint(w, `{"data_streams":[]}`)
	case strings.HasPrefix(p, "/_cluster/state/metadata/"):
		fmt.Fprintf(w, `{"metadata":{"indices":{%q:{"routing_num_shards":%d,"settings":{"index":{"number_of_shards":"%d"}}}}}}`, m.index, 128*m.n, 2*m.n)
	case strings.HasPrefix(p, "/_cat/aliases"):
		fmt.Fprint(w, "[]") // no aliases, as the server answers
	case strings.HasPrefix(p, "/_cat/shards"):
		var rows []string
		for s := 0; s < 2*m.n; s++ {
			rows = append(rows, fmt.Sprintf(`{"index":%q,"shard":"%d","prirep":"p","state":"STARTED","node":"n%d"}`, m.index, s, s%m.n))
		}
		fmt.Fprintf(w, "[%s]", strings.Join(rows, ","))
	default:
		fmt.Fprint(w, `{"name":"n","version":{"number":"2.19.6","distribution":"opensearch"}}`)
	}
}

func benchExporter(b *testing.B, sig signal, routingOn bool) *osExporter {
	e, _ := benchExporterCluster(b, sig, routingOn)
	return e
}

func benchExporterCluster(b *testing.B, sig signal, routingOn bool) (*osExporter, *minimalCluster) {
	return benchExporterTelemetry(b, sig, routingOn, false)
}

// benchExporterTelemetry is benchExporterCluster with the collector's
// telemetry at level detailed (detailed) or at its default, normal.
func benchExporterTelemetry(b *testing.B, sig signal, routingOn, detailed bool) (*osExporter, *minimalCluster) {
	m := newMinimalCluster(b, 3, "bench")
	cfg := testConfig(m.urls())
	cfg.LogsIndex, cfg.TracesIndex = "bench", "bench"
	cfg.Routing.Enabled = routingOn
	e, _ := startExporterTelemetry(b, cfg, sig, detailed)
	if routingOn {
		waitRouted(b, e, "bench")
	}
	return e, m
}

// BenchmarkPushLogs is the full push path per log record: encode, id,
// route, split, send over loopback HTTP to an in-process server doing
// minimal work, parse the response; 1,000 records per call.
func BenchmarkPushLogs(b *testing.B) {
	e := benchExporter(b, signalLogs, true)
	ld := makeLogs(0, benchPer)
	benchPush(b, func(ctx context.Context) error { return e.pushLogs(ctx, ld) })
}

// BenchmarkPushLogsDetailedTelemetry is BenchmarkPushLogs with the
// collector's telemetry at level detailed, where the collector's HTTP
// client records its own metrics (otelhttp: http.client.request.duration,
// body sizes) for every request it sends; at the default level the
// collector drops them, as the other benchmarks do. The _bulk requests go
// through bulk.Transport (bulk.transport: auto), not through that client:
// this shows that detailed costs the push path nothing more.
func BenchmarkPushLogsDetailedTelemetry(b *testing.B) {
	e, _ := benchExporterTelemetry(b, signalLogs, true, true)
	ld := makeLogs(0, benchPer)
	benchPush(b, func(ctx context.Context) error { return e.pushLogs(ctx, ld) })
}

// BenchmarkPushSpans is BenchmarkPushLogs for spans.
func BenchmarkPushSpans(b *testing.B) {
	e := benchExporter(b, signalTraces, true)
	td := makeSpans(0, benchPer)
	benchPush(b, func(ctx context.Context) error { return e.pushTraces(ctx, td) })
}

// BenchmarkPushCallOverhead is the fixed cost of one push: the smallest
// call (of 6 log records or more) whose ids spread it over all 3 nodes of
// the minimal cluster (3 HTTP requests, reported), per call. At 1,000
// records per call each record carries a thousandth of it.
func BenchmarkPushCallOverhead(b *testing.B) {
	e, m := benchExporterCluster(b, signalLogs, true)
	ctx := context.Background()
	var ld plog.Logs
	for n := 6; ; n++ {
		if n > 64 {
			b.Fatal("no call of up to 64 records reaches every node")
		}
		ld = makeLogs(0, n)
		before := m.bulks.Load()
		if err := e.pushLogs(ctx, ld); err != nil {
			b.Fatal(err)
		}
		if m.bulks.Load()-before == int64(m.n) {
			break
		}
	}
	req0 := m.bulks.Load()
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for i := 0; i < b.N; i++ {
		if err := e.pushLogs(ctx, ld); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/call")
	b.ReportMetric(float64(m.bulks.Load()-req0)/float64(b.N), "requests/call")
}

// BenchmarkDeliveryFloor is what BenchmarkPushLogs's transfers cost with
// nothing of the exporter in them: the sub-bulk bodies of one 1,000-record
// call (encoded once, before the timer; one per node, as the push sends
// them), POSTed at the same time to the same minimal servers, each
// response read and dropped; per record. net_http: by a bare net/http
// client (no otelhttp), what the exporter sent with before it had its own
// transport (and still does with bulk.transport: confighttp); transport:
// by bulk.Transport, what it sends with now (here from a bytes.Reader,
// written through its bufio path). It is the part of the push's time per
// record that encoding, routing and outcome handling cannot shrink.
func BenchmarkDeliveryFloor(b *testing.B) {
	b.Run("net_http", func(b *testing.B) {
		benchDelivery(b, &http.Transport{MaxIdleConnsPerHost: 32})
	})
	b.Run("transport", func(b *testing.B) {
		benchDelivery(b, &bulk.Transport{})
	})
}

func benchDelivery(b *testing.B, rt interface {
	http.RoundTripper
	CloseIdleConnections()
}) {
	e, m := benchExporterCluster(b, signalLogs, true)
	c := e.getCall()
	e.encodeLogs(c, makeLogs(0, benchPer))
	byNode := map[string][]byte{}
	for it := range int32(c.batch.Len()) {
		n := c.locs[it].node
		if n == nil {
			b.Fatal("an item was not routed")
		}
		item := bytes.Replace(c.batch.Bytes(it), []byte(`"_index":"bench",`), nil, 1)
		byNode[n.URL()] = append(byNode[n.URL()], item...)
	}
	e.putCall(c)
	type sub struct {
		url  string
		body []byte
	}
	var subs []sub
	for u, body := range byNode {
		subs = append(subs, sub{u + "/bench/_bulk", body})
	}
	if len(subs) != m.n {
		b.Fatalf("%d sub-bulks for %d nodes", len(subs), m.n)
	}
	client := &http.Client{Transport: rt}
	defer rt.CloseIdleConnections()
	post := func(s sub) error {
		resp, err := client.Post(s.url, "application/x-ndjson", bytes.NewReader(s.body))
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if _, err := io.Copy(io.Discard, resp.Body); err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for i := 0; i < b.N; i += benchPer {
		var wg sync.WaitGroup
		errs := make([]error, len(subs))
		for k, s := range subs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs[k] = post(s)
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/record")
}

// benchPer is the number of records of one benchmark call.
const benchPer = 1000

// benchPush runs push (one call of benchPer records) once to warm up, then
// b.N/benchPer times, reporting per record.
func benchPush(b *testing.B, push func(context.Context) error) {
	ctx := context.Background()
	if err := push(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for i := 0; i < b.N; i += benchPer {
		if err := push(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/record")
}

// processCPU is the process's user+system CPU time in ns: on a loaded
// machine it shows the work done, where wall time also counts waiting for
// a core. It includes the in-process server's share.
func processCPU() int64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkEncodeLog compares our encoder with encoding/json on the same
// document, per record.
func BenchmarkEncodeLog(b *testing.B) {
	ld := makeLogs(0, 1)
	rl := ld.ResourceLogs().At(0)
	sl := rl.ScopeLogs().At(0)
	lr := sl.LogRecords().At(0)
	b.Run("ss4o", func(b *testing.B) {
		var buf []byte
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			buf = ss4o.AppendLog(buf[:0], rl.Resource(), sl.Scope(), lr)
		}
	})
	b.Run("encoding_json", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			doc := map[string]any{
				"@timestamp":           lr.Timestamp().AsTime(),
				"observedTimestamp":    lr.ObservedTimestamp().AsTime(),
				"severity":             map[string]any{"text": lr.SeverityText(), "number": int32(lr.SeverityNumber())},
				"body":                 lr.Body().AsRaw(),
				"attributes":           lr.Attributes().AsRaw(),
				"resource":             rl.Resource().Attributes().AsRaw(),
				"instrumentationScope": map[string]any{"name": sl.Scope().Name()},
			}
			if _, err := json.Marshal(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
}

var _ = plog.NewLogs

// BenchmarkRoutedVsRoundRobin runs the same load against the emulator with
// its default hop latency (250µs same zone, 1ms across zones; 3 nodes in
// zones a, b, c; 3 primaries + 1 replica), routed and with
// routing.enabled: false, in the same run. It reports records per second and
// the p50/p99 latency of one 1,000-record push.
func BenchmarkRoutedVsRoundRobin(b *testing.B) {
	for _, routed := range []bool{true, false} {
		name := "routed"
		if !routed {
			name = "round_robin"
		}
		b.Run(name, func(b *testing.B) {
			sim := ossim.StartT(b, ossim.Options{Nodes: 3, Zones: []string{"a", "b", "c"}, DefaultShards: 3, DefaultReplicas: 1})
			cfg := testConfig(sim.Addrs())
			cfg.LogsIndex = "bench-" + name
			cfg.Routing.Enabled = routed
			e, _ := startExporter(b, cfg, signalLogs)
			ctx := context.Background()
			const per = 1000
			if err := e.pushLogs(ctx, makeLogs(0, per)); err != nil {
				b.Fatal(err)
			}
			if routed {
				waitRouted(b, e, cfg.LogsIndex)
			}
			var lat []time.Duration
			b.ResetTimer()
			start := time.Now()
			for i := 0; i < b.N; i++ {
				ld := makeLogs((i+1)*per, per)
				t0 := time.Now()
				if err := e.pushLogs(ctx, ld); err != nil {
					b.Fatal(err)
				}
				lat = append(lat, time.Since(t0))
			}
			elapsed := time.Since(start)
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(b.N*per)/elapsed.Seconds(), "records/s")
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50_ms")
			b.ReportMetric(float64(lat[(len(lat)*99)/100].Microseconds())/1000, "p99_ms")
		})
	}
}

// BenchmarkPushLogsParallel is BenchmarkPushLogs with pushes running
// concurrently, as the collector's sending queue runs them (num_consumers,
// default 10): four goroutines (two per core) push, so up to four calls are
// in flight; per-record cost amortised over both cores.
func BenchmarkPushLogsParallel(b *testing.B) {
	e := benchExporter(b, signalLogs, true)
	ld := makeLogs(0, benchPer)
	benchPushParallel(b, func(ctx context.Context) error { return e.pushLogs(ctx, ld) })
}

// BenchmarkPushSpansParallel is BenchmarkPushLogsParallel for spans.
func BenchmarkPushSpansParallel(b *testing.B) {
	e := benchExporter(b, signalTraces, true)
	td := makeSpans(0, benchPer)
	benchPushParallel(b, func(ctx context.Context) error { return e.pushTraces(ctx, td) })
}

// benchPushParallel runs push (one call of benchPer records) from two
// goroutines per core, each pushing once per benchPer of its iterations,
// reporting per record.
func benchPushParallel(b *testing.B, push func(context.Context) error) {
	ctx := context.Background()
	if err := push(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetParallelism(2)
	b.ResetTimer()
	cpu0 := processCPU()
	var calls atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		n := 0
		for pb.Next() {
			if n++; n%benchPer != 0 {
				continue
			}
			calls.Add(1)
			if err := push(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(processCPU()-cpu0)/float64(max(1, calls.Load())*benchPer), "cpu-ns/record")
}

// BenchmarkEncodeCall is the encoding phase of BenchmarkPushLogs alone
// (documents, content ids, repeats, bulk items; shared between cores as a
// push does), per record.
func BenchmarkEncodeCall(b *testing.B) { benchEncodeCall(b, "") }

// BenchmarkEncodeCallRouted is BenchmarkEncodeCall with routing_attribute
// naming an attribute every record has (its value in each action line).
func BenchmarkEncodeCallRouted(b *testing.B) { benchEncodeCall(b, "path") }

func benchEncodeCall(b *testing.B, routingAttribute string) {
	cfg := createDefaultConfig()
	cfg.Endpoints = []string{"http://127.0.0.1:9"}
	cfg.LogsIndex = "bench"
	cfg.RoutingAttribute = routingAttribute
	e := &osExporter{cfg: cfg, signal: signalLogs}
	e.targets.init(cfg, signalLogs)
	ld := makeLogs(0, benchPer)
	c := &call{}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for i := 0; i < b.N; i += benchPer {
		c.reset()
		e.encodeLogs(c, ld)
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/record")
}

// BenchmarkItemValidation is the per-record cost of the checks that keep
// an item valid before it is sent: an attribute id's length (idFits, for a
// typical id and for one over the limit) and a span's zero ids.
func BenchmarkItemValidation(b *testing.B) {
	typical := "order-7f3a9c2e-4b1d-4e8a-9f6b-2c5d8e1a0b3c"
	long := strings.Repeat("x", 600)
	span := makeSpans(0, 1).ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0)
	b.Run("attribute_id", func(b *testing.B) {
		for b.Loop() {
			if !idFits(typical) {
				b.Fatal("typical id refused")
			}
		}
	})
	b.Run("attribute_id_too_long", func(b *testing.B) {
		for b.Loop() {
			if idFits(long) {
				b.Fatal("long id accepted")
			}
		}
	})
	b.Run("span_ids", func(b *testing.B) {
		for b.Loop() {
			if span.TraceID().IsEmpty() || span.SpanID().IsEmpty() {
				b.Fatal("zero ids")
			}
		}
	})
}
