package opensearchrouted

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/collector/pdata/plog"

	"github.com/opensearchrouted/opensearchrouted/internal/ss4o"
)

// minimalCluster is n in-process HTTP servers that answer discovery for one
// index spread over them and answer every _bulk with a canned all-created
// response of the right item count: the server side does as little as
// possible, so a benchmark measures the exporter.
type minimalCluster struct {
	srvs  []*httptest.Server
	index string
	n     int
}

func newMinimalCluster(tb testing.TB, n int, index string) *minimalCluster {
	m := &minimalCluster{index: index, n: n}
	for i := 0; i < n; i++ {
		srv := httptest.NewUnstartedServer(nil)
		srv.Config.Handler = http.HandlerFunc(m.serve)
		srv.Start()
		tb.Cleanup(srv.Close)
		m.srvs = append(m.srvs, srv)
	}
	return m
}

func (m *minimalCluster) urls() []string {
	var out []string
	for _, s := range m.srvs {
		out = append(out, s.URL)
	}
	return out
}

var itemOK = []byte(`{"create":{"_index":"bench","_id":"x","_version":1,"result":"created","_shards":{"total":2,"successful":2,"failed":0},"_seq_no":1,"_primary_term":1,"status":201}}`)

var (
	bodyPool     = sync.Pool{New: func() any { return new(bytes.Buffer) }}
	jsonCT       = []string{"application/json"}
	cannedPrefix = []byte(`{"took":1,"errors":false,"items":[`)
	cannedSuffix = []byte(`]}`)
	cannedItems  = bytes.Repeat(append(append([]byte{}, itemOK...), ','), 20000)
)

func (m *minimalCluster) serve(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	switch {
	case p == "/_bulk":
		buf := bodyPool.Get().(*bytes.Buffer)
		buf.Reset()
		_, _ = buf.ReadFrom(r.Body)
		items := bytes.Count(buf.Bytes(), []byte{'\n'}) / 2
		bodyPool.Put(buf)
		w.Header()["Content-Type"] = jsonCT
		_, _ = w.Write(cannedPrefix)
		_, _ = w.Write(cannedItems[:items*(len(itemOK)+1)-1])
		_, _ = w.Write(cannedSuffix)
	case strings.HasPrefix(p, "/_nodes/stats"):
		fmt.Fprint(w, `{"nodes":{}}`)
	case strings.HasPrefix(p, "/_nodes/"):
		nodes := map[string]any{}
		for i, s := range m.srvs {
			_, port, _ := net.SplitHostPort(strings.TrimPrefix(s.URL, "http://"))
			nodes["id"+strconv.Itoa(i)] = map[string]any{"name": "n" + strconv.Itoa(i), "roles": []string{"data"},
				"http": map[string]any{"publish_address": "127.0.0.1:" + port}, "os": map[string]any{"allocated_processors": 2},
				"thread_pool": map[string]any{"write": map[string]any{"size": 8, "queue_size": 10000}}}
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"nodes": nodes})
	case strings.HasPrefix(p, "/_data_stream"):
		fmt.Fprint(w, `{"data_streams":[]}`)
	case strings.HasPrefix(p, "/_cluster/state/metadata/"):
		fmt.Fprintf(w, `{"metadata":{"indices":{%q:{"routing_num_shards":%d,"settings":{"index":{"number_of_shards":"%d"}}}}}}`, m.index, 128*m.n, 2*m.n)
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
	m := newMinimalCluster(b, 3, "bench")
	cfg := testConfig(m.urls())
	cfg.LogsIndex, cfg.TracesIndex = "bench", "bench"
	cfg.Routing.Enabled = routingOn
	e, _ := startExporter(b, cfg, sig)
	if routingOn {
		waitRouted(b, e, "bench")
	}
	return e
}

// BenchmarkPushLogs is the full push path per log record: encode, id,
// route, split, send over loopback HTTP to an in-process server doing
// minimal work, parse the response; 1,000 records per call.
func BenchmarkPushLogs(b *testing.B) {
	e := benchExporter(b, signalLogs, true)
	const per = 1000
	ld := makeLogs(0, per)
	ctx := context.Background()
	if err := e.pushLogs(ctx, ld); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += per {
		if err := e.pushLogs(ctx, ld); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPushSpans is BenchmarkPushLogs for spans.
func BenchmarkPushSpans(b *testing.B) {
	e := benchExporter(b, signalTraces, true)
	const per = 1000
	td := makeSpans(0, per)
	ctx := context.Background()
	if err := e.pushTraces(ctx, td); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += per {
		if err := e.pushTraces(ctx, td); err != nil {
			b.Fatal(err)
		}
	}
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
