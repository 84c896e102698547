package ss4o

import (
	"encoding/hex"
	"encoding/json"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// typicalLog: 3 resource attributes, a named scope, 5 record attributes,
// a string body, severity, trace context.
func typicalLog() (plog.ResourceLogs, plog.ScopeLogs, plog.LogRecord) {
	rl := plog.NewResourceLogs()
	r := rl.Resource().Attributes()
	r.PutStr("service.name", "telemetrygen")
	r.PutStr("host.name", "bench-host")
	r.PutStr("k8s.pod.name", "telemetrygen-7f9c")
	sl := rl.ScopeLogs().AppendEmpty()
	sl.Scope().SetName("telemetrygen")
	sl.Scope().SetVersion("0.161.0")
	lr := sl.LogRecords().AppendEmpty()
	lr.SetTimestamp(ts("2026-11-29T16:11:46.438131144Z"))
	lr.SetObservedTimestamp(ts("2026-11-29T16:11:46.438493144Z"))
	lr.SetTraceID(pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0})
	lr.SetSpanID(pcommon.SpanID{1, 2, 3, 4, 5, 6, 7, 0})
	lr.SetSeverityText("Info")
	lr.SetSeverityNumber(plog.SeverityNumberInfo)
	lr.Body().SetStr("the message")
	a := lr.Attributes()
	a.PutStr("app", "server")
	a.PutInt("worker", 3)
	a.PutStr("http.route", "/api/v1/orders/{id}")
	a.PutBool("retry", false)
	a.PutDouble("duration_ms", 12.5)
	return rl, sl, lr
}

func typicalSpan() (ptrace.ResourceSpans, ptrace.ScopeSpans, ptrace.Span) {
	rs := ptrace.NewResourceSpans()
	r := rs.Resource().Attributes()
	r.PutStr("service.name", "telemetrygen")
	r.PutStr("host.name", "bench-host")
	r.PutStr("k8s.pod.name", "telemetrygen-7f9c")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("telemetrygen")
	sp := ss.Spans().AppendEmpty()
	sp.SetTraceID(pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 0, 0})
	sp.SetSpanID(pcommon.SpanID{1, 2, 3, 4, 5, 6, 0, 0})
	sp.SetParentSpanID(pcommon.SpanID{9, 9, 9, 9, 9, 9, 0, 0})
	sp.SetName("okey-dokey-0")
	sp.SetKind(ptrace.SpanKindServer)
	sp.SetStartTimestamp(ts("2026-11-29T16:12:12.875779959Z"))
	sp.SetEndTimestamp(ts("2026-11-29T16:12:12.875902959Z"))
	sp.Status().SetCode(ptrace.StatusCodeOk)
	a := sp.Attributes()
	a.PutStr("http.method", "GET")
	a.PutInt("http.status_code", 200)
	a.PutStr("net.peer.ip", "1.2.3.4")
	a.PutStr("peer.service", "telemetrygen-client")
	ev := sp.Events().AppendEmpty()
	ev.SetTimestamp(ts("2026-11-29T16:12:12.875829959Z"))
	ev.SetName("event-0")
	ev.Attributes().PutStr("ev.key", "ev.value")
	return rs, ss, sp
}

// jsonLog is the same document as a struct for encoding/json, built from
// pdata the way a reflection-based exporter does.
type jsonLog struct {
	Timestamp         time.Time      `json:"@timestamp"`
	ObservedTimestamp time.Time      `json:"observedTimestamp"`
	TraceID           string         `json:"traceId,omitempty"`
	SpanID            string         `json:"spanId,omitempty"`
	Severity          jsonSeverity   `json:"severity"`
	Body              any            `json:"body,omitempty"`
	Attributes        map[string]any `json:"attributes,omitempty"`
	Resource          map[string]any `json:"resource,omitempty"`
	Scope             jsonScope      `json:"instrumentationScope"`
}

type jsonSeverity struct {
	Text   string `json:"text,omitempty"`
	Number int32  `json:"number,omitempty"`
}

type jsonScope struct {
	Name    string `json:"name,omitempty"`
	Version string `json:"version,omitempty"`
}

func buildJSONLog(res pcommon.Resource, scope pcommon.InstrumentationScope, lr plog.LogRecord) jsonLog {
	tid, sid := lr.TraceID(), lr.SpanID()
	return jsonLog{
		Timestamp:         lr.Timestamp().AsTime(),
		ObservedTimestamp: lr.ObservedTimestamp().AsTime(),
		TraceID:           hex.EncodeToString(tid[:]),
		SpanID:            hex.EncodeToString(sid[:]),
		Severity:          jsonSeverity{lr.SeverityText(), int32(lr.SeverityNumber())},
		Body:              lr.Body().AsRaw(),
		Attributes:        lr.Attributes().AsRaw(),
		Resource:          res.Attributes().AsRaw(),
		Scope:             jsonScope{scope.Name(), scope.Version()},
	}
}

type jsonEvent struct {
	Timestamp  time.Time      `json:"@timestamp"`
	Name       string         `json:"name"`
	Attributes map[string]any `json:"attributes,omitempty"`
}

type jsonStatus struct {
	Code    string `json:"code"`
	Message string `json:"message,omitempty"`
}

type jsonSpan struct {
	Timestamp    time.Time      `json:"@timestamp"`
	StartTime    time.Time      `json:"startTime"`
	EndTime      time.Time      `json:"endTime"`
	TraceID      string         `json:"traceId"`
	SpanID       string         `json:"spanId"`
	ParentSpanID string         `json:"parentSpanId,omitempty"`
	Name         string         `json:"name"`
	Kind         string         `json:"kind"`
	Status       jsonStatus     `json:"status"`
	Attributes   map[string]any `json:"attributes,omitempty"`
	Events       []jsonEvent    `json:"events,omitempty"`
	Resource     map[string]any `json:"resource,omitempty"`
	Scope        jsonScope      `json:"instrumentationScope"`
}

func buildJSONSpan(res pcommon.Resource, scope pcommon.InstrumentationScope, sp ptrace.Span) jsonSpan {
	tid, sid, pid := sp.TraceID(), sp.SpanID(), sp.ParentSpanID()
	s := jsonSpan{
		Timestamp:    sp.StartTimestamp().AsTime(),
		StartTime:    sp.StartTimestamp().AsTime(),
		EndTime:      sp.EndTimestamp().AsTime(),
		TraceID:      hex.EncodeToString(tid[:]),
		SpanID:       hex.EncodeToString(sid[:]),
		ParentSpanID: hex.EncodeToString(pid[:]),
		Name:         sp.Name(),
		Kind:         sp.Kind().String(),
		Status:       jsonStatus{sp.Status().Code().String(), sp.Status().Message()},
		Attributes:   sp.Attributes().AsRaw(),
		Resource:     res.Attributes().AsRaw(),
		Scope:        jsonScope{scope.Name(), scope.Version()},
	}
	for _, ev := range sp.Events().All() {
		s.Events = append(s.Events, jsonEvent{ev.Timestamp().AsTime(), ev.Name(), ev.Attributes().AsRaw()})
	}
	return s
}

func BenchmarkEncodeLog(b *testing.B) {
	rl, sl, lr := typicalLog()
	res, scope := rl.Resource(), sl.Scope()
	buf := make([]byte, 0, 4096)
	b.Run("AppendLog", func(b *testing.B) {
		b.ReportAllocs()
		loopCPU(b, func() {
			buf = AppendLog(buf[:0], res, scope, lr)
		})
		b.SetBytes(int64(len(buf)))
	})
	b.Run("Encoder", func(b *testing.B) {
		var e Encoder
		e.ResetLogs(rl, sl)
		b.ReportAllocs()
		loopCPU(b, func() {
			buf = e.AppendLog(buf[:0], lr)
		})
	})
	b.Run("encoding-json-from-pdata", func(b *testing.B) {
		b.ReportAllocs()
		loopCPU(b, func() {
			out, err := json.Marshal(buildJSONLog(res, scope, lr))
			if err != nil {
				b.Fatal(err)
			}
			buf = append(buf[:0], out...)
		})
	})
	b.Run("encoding-json-map-prebuilt", func(b *testing.B) {
		var doc map[string]any
		if err := json.Unmarshal(AppendLog(nil, res, scope, lr), &doc); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		loopCPU(b, func() {
			out, err := json.Marshal(doc)
			if err != nil {
				b.Fatal(err)
			}
			buf = append(buf[:0], out...)
		})
	})
}

func BenchmarkEncodeSpan(b *testing.B) {
	rs, ss, sp := typicalSpan()
	res, scope := rs.Resource(), ss.Scope()
	buf := make([]byte, 0, 4096)
	b.Run("AppendSpan", func(b *testing.B) {
		b.ReportAllocs()
		loopCPU(b, func() {
			buf = AppendSpan(buf[:0], res, scope, sp)
		})
		b.SetBytes(int64(len(buf)))
	})
	b.Run("Encoder", func(b *testing.B) {
		var e Encoder
		e.ResetTraces(rs, ss)
		b.ReportAllocs()
		loopCPU(b, func() {
			buf = e.AppendSpan(buf[:0], sp)
		})
	})
	b.Run("encoding-json-from-pdata", func(b *testing.B) {
		b.ReportAllocs()
		loopCPU(b, func() {
			out, err := json.Marshal(buildJSONSpan(res, scope, sp))
			if err != nil {
				b.Fatal(err)
			}
			buf = append(buf[:0], out...)
		})
	})
	b.Run("encoding-json-map-prebuilt", func(b *testing.B) {
		var doc map[string]any
		if err := json.Unmarshal(AppendSpan(nil, res, scope, sp), &doc); err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		loopCPU(b, func() {
			out, err := json.Marshal(doc)
			if err != nil {
				b.Fatal(err)
			}
			buf = append(buf[:0], out...)
		})
	})
}

// BenchmarkContentID: hash + occurrence count + hex id of a typical log
// document, as the exporter does per record.
func BenchmarkContentID(b *testing.B) {
	rl, sl, lr := typicalLog()
	doc := AppendLog(nil, rl.Resource(), sl.Scope(), lr)
	var r Repeats
	id := make([]byte, 0, 64)
	b.ReportAllocs()
	i := 0
	loopCPU(b, func() {
		if i++; i%1000 == 0 {
			r.Reset()
		}
		h := ContentID(doc)
		id = AppendID(id[:0], h, r.Next(h))
	})
}

func BenchmarkDecodeLog(b *testing.B) {
	rl, sl, lr := typicalLog()
	doc := AppendLog(nil, rl.Resource(), sl.Scope(), lr)
	b.Run("DecodeLog", func(b *testing.B) {
		out := plog.NewResourceLogs()
		osl := out.ScopeLogs().AppendEmpty()
		olr := osl.LogRecords().AppendEmpty()
		b.ReportAllocs()
		loopCPU(b, func() {
			if err := DecodeLog(doc, out, osl, olr); err != nil {
				b.Fatal(err)
			}
		})
	})
	b.Run("encoding-json-any", func(b *testing.B) {
		b.ReportAllocs()
		loopCPU(b, func() {
			var v any
			if err := json.Unmarshal(doc, &v); err != nil {
				b.Fatal(err)
			}
		})
	})
}
