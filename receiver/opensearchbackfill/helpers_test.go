package opensearchbackfill

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/opensearchrouted/opensearchrouted/receiver/opensearchbackfill/internal/metadata"
)

// testConfig is a valid config for endpoints with fast retries.
func testConfig(endpoints []string, indices ...string) *Config {
	cfg := createDefaultConfig()
	cfg.Endpoints = endpoints
	cfg.Indices = indices
	cfg.RetryOnFailure.InitialInterval = 10 * time.Millisecond
	cfg.RetryOnFailure.MaxInterval = 50 * time.Millisecond
	cfg.Discovery.RefreshInterval = time.Second
	return cfg
}

// testHost holds extensions and records the component status events.
type testHost struct {
	mu     sync.Mutex
	exts   map[component.ID]component.Component
	events []*componentstatus.Event
}

func (h *testHost) GetExtensions() map[component.ID]component.Component { return h.exts }

func (h *testHost) Report(ev *componentstatus.Event) {
	h.mu.Lock()
	h.events = append(h.events, ev)
	h.mu.Unlock()
}

func (h *testHost) statuses() []*componentstatus.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*componentstatus.Event(nil), h.events...)
}

// completed tells whether a once-mode completion was reported.
func (h *testHost) completed() bool {
	for _, ev := range h.statuses() {
		if v, ok := ev.Attributes().Get(StateAttribute); ok && v.Str() == StateCompleted && ev.Status() == componentstatus.StatusOK {
			return true
		}
	}
	return false
}

// memStorage is an in-memory storage extension and client.
type memStorage struct {
	mu     sync.Mutex
	data   map[string][]byte
	sets   int
	failOn func(key string) error // fails Set when it returns an error
}

func newMemStorage() *memStorage { return &memStorage{data: map[string][]byte{}} }

func (m *memStorage) Start(context.Context, component.Host) error { return nil }
func (m *memStorage) Shutdown(context.Context) error              { return nil }
func (m *memStorage) GetClient(context.Context, component.Kind, component.ID, string) (storage.Client, error) {
	return m, nil
}
func (m *memStorage) Get(_ context.Context, k string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return bytes.Clone(m.data[k]), nil
}
func (m *memStorage) Set(_ context.Context, k string, v []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.failOn != nil {
		if err := m.failOn(k); err != nil {
			return err
		}
	}
	m.sets++
	m.data[k] = bytes.Clone(v)
	return nil
}
func (m *memStorage) Delete(_ context.Context, k string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.data, k)
	return nil
}
func (m *memStorage) Batch(ctx context.Context, ops ...*storage.Operation) error {
	for _, op := range ops {
		switch op.Type {
		case storage.Get:
			op.Value, _ = m.Get(ctx, op.Key)
		case storage.Set:
			if err := m.Set(ctx, op.Key, op.Value); err != nil {
				return err
			}
		case storage.Delete:
			_ = m.Delete(ctx, op.Key)
		}
	}
	return nil
}
func (m *memStorage) Close(context.Context) error { return nil }

var storageID = component.MustNewID("memstorage")

func hostExts(s *memStorage) map[component.ID]component.Component {
	return map[component.ID]component.Component{storageID: s}
}

// harness is a started receiver with its observers.
type harness struct {
	r      *backfillReceiver
	host   *testHost
	reader *sdkmetric.ManualReader
	logs   *observer.ObservedLogs
}

// startReceiver creates and starts a receiver through the factory. next is
// a consumer.Logs or consumer.Traces matching cfg.Signal.
func startReceiver(t testing.TB, cfg *Config, next any, exts map[component.ID]component.Component) (*harness, error) {
	t.Helper()
	set := receivertest.NewNopSettings(metadata.Type)
	set.ID = component.NewID(metadata.Type) // stable across runs, as in a collector (storage keys use it)
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	set.MeterProvider = mp
	core, logs := observer.New(zapcore.DebugLevel)
	set.Logger = zap.New(core)
	if err := cfg.Validate(); err != nil {
		t.Fatalf("config: %v", err)
	}
	f := NewFactory()
	var rcv receiver.Logs
	var err error
	switch c := next.(type) {
	case consumer.Logs:
		rcv, err = f.CreateLogs(context.Background(), set, cfg, c)
	case consumer.Traces:
		var tr receiver.Traces
		tr, err = f.CreateTraces(context.Background(), set, cfg, c)
		rcv = tr
	default:
		t.Fatalf("consumer %T", next)
	}
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{r: rcv.(*backfillReceiver), host: &testHost{exts: exts}, reader: reader, logs: logs}
	if err := rcv.Start(context.Background(), h.host); err != nil {
		_ = mp.Shutdown(context.Background())
		return nil, err
	}
	t.Cleanup(func() {
		if err := rcv.Shutdown(context.Background()); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		_ = mp.Shutdown(context.Background())
	})
	return h, nil
}

func mustStart(t testing.TB, cfg *Config, next any, exts map[component.ID]component.Component) *harness {
	t.Helper()
	h, err := startReceiver(t, cfg, next, exts)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// wait waits for every slice goroutine to return.
func (h *harness) wait(t testing.TB, d time.Duration) {
	t.Helper()
	select {
	case <-h.r.done:
	case <-time.After(d):
		t.Fatalf("backfill did not finish in %v (stats %+v)", d, h.r.Stats())
	}
}

// metric sums an int sum metric's data points matching attrs.
func (h *harness) metric(t testing.TB, name string, attrs map[string]string) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := h.reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok {
				t.Fatalf("%s is %T", name, m.Data)
			}
		points:
			for _, dp := range sum.DataPoints {
				for k, v := range attrs {
					if got, ok := dp.Attributes.Value(attribute.Key(k)); !ok || got.AsString() != v {
						continue points
					}
				}
				total += dp.Value
			}
		}
	}
	return total
}

// idSink records the _id attribute of every log record it accepts.
type idSink struct {
	mu    sync.Mutex
	ids   map[string]int
	calls int
	// before, if set, runs first; a non-nil error refuses the page (ids
	// are then not recorded unless record is true).
	before func(ctx context.Context, call int, ld plog.Logs) (record bool, err error)
}

func newIDSink() *idSink { return &idSink{ids: map[string]int{}} }

func (s *idSink) Capabilities() consumer.Capabilities { return consumer.Capabilities{} }

func (s *idSink) ConsumeLogs(ctx context.Context, ld plog.Logs) error {
	s.mu.Lock()
	s.calls++
	call := s.calls
	s.mu.Unlock()
	record, err := true, error(nil)
	if s.before != nil {
		record, err = s.before(ctx, call, ld)
	}
	if record {
		s.mu.Lock()
		forEachLog(ld, func(lr plog.LogRecord) {
			id, _ := lr.Attributes().Get(AttrID)
			s.ids[id.Str()]++
		})
		s.mu.Unlock()
	}
	return err
}

func (s *idSink) snapshot() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]int, len(s.ids))
	for k, v := range s.ids {
		out[k] = v
	}
	return out
}

func forEachLog(ld plog.Logs, f func(plog.LogRecord)) {
	for i := 0; i < ld.ResourceLogs().Len(); i++ {
		sls := ld.ResourceLogs().At(i).ScopeLogs()
		for j := 0; j < sls.Len(); j++ {
			lrs := sls.At(j).LogRecords()
			for k := 0; k < lrs.Len(); k++ {
				f(lrs.At(k))
			}
		}
	}
}

func forEachSpan(td ptrace.Traces, f func(ptrace.Span)) {
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		sss := td.ResourceSpans().At(i).ScopeSpans()
		for j := 0; j < sss.Len(); j++ {
			sps := sss.At(j).Spans()
			for k := 0; k < sps.Len(); k++ {
				f(sps.At(k))
			}
		}
	}
}

// ---- emulator helpers ----

func httpDo(t testing.TB, method, url, body string) (int, []byte) {
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

// createIndex creates an index with shards and replicas.
func createIndex(t testing.TB, base, name string, shards, replicas int) {
	t.Helper()
	st, b := httpDo(t, "PUT", base+"/"+name, fmt.Sprintf(`{"settings":{"number_of_shards":%d,"number_of_replicas":%d}}`, shards, replicas))
	if st != 200 {
		t.Fatalf("create %s: %d %s", name, st, b)
	}
}

// bulkDocs writes documents (id → source) with _bulk in chunks.
func bulkDocs(t testing.TB, base, index string, ids []string, src func(i int) string) {
	t.Helper()
	const chunk = 2000
	for from := 0; from < len(ids); from += chunk {
		var b strings.Builder
		for i := from; i < min(from+chunk, len(ids)); i++ {
			fmt.Fprintf(&b, `{"create":{"_index":%q,"_id":%q}}`+"\n%s\n", index, ids[i], src(i))
		}
		st, body := httpDo(t, "POST", base+"/_bulk", b.String())
		if st != 200 {
			t.Fatalf("bulk: %d %s", st, body)
		}
		var r struct {
			Errors bool `json:"errors"`
		}
		if err := json.Unmarshal(body, &r); err != nil || r.Errors {
			t.Fatalf("bulk errors: %.500s", body)
		}
	}
	httpDo(t, "POST", base+"/"+index+"/_refresh", "")
}

// seedForeign writes n foreign documents {"@timestamp", "n"} to index.
func seedForeign(t testing.TB, base, index string, n int) []string {
	t.Helper()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("doc-%05d", i)
	}
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	bulkDocs(t, base, index, ids, func(i int) string {
		return fmt.Sprintf(`{"@timestamp":%q,"n":%d}`, t0.Add(time.Duration(i%500)*time.Millisecond).Format(time.RFC3339Nano), i)
	})
	return ids
}

// httpGetJSON GETs a URL (from any goroutine) and returns the body of a
// 200 answer.
func httpGetJSON(url string) ([]byte, error) {
	resp, err := http.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("GET %s: HTTP %d: %.300s", url, resp.StatusCode, b)
	}
	return b, nil
}
