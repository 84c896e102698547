package opensearchrouted

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/opensearchrouted/opensearchrouted/internal/otelv1"
)

// taSpan is one span of the Trace Analytics workload, as sent.
type taSpan struct {
	trace, id, parent string // hex; parent "" for a root
	k                 int    // the trace's number
	service, name     string
	kind              ptrace.SpanKind
	start, end        time.Time
	status            ptrace.StatusCode
	seq               int // unique per span (span.attributes.seq)
	call              int // which export call carries it
}

func (s *taSpan) durNanos() int64 { return s.end.Sub(s.start).Nanoseconds() }

// taWorkload is a multi-service trace workload sent in three export calls:
// a third of the traces whole in call 0 (groups inline); a third with the
// root (and its first child) in call 0 and the other spans in call 1
// (groups from the cache, service-map pairs across calls); a third with
// the spans below the root's child in call 0 and the root and its child in
// call 2 (written without their group, then fixed up; service-map pairs
// whose parent comes after the child). Five spans per trace over three
// services:
//
//	frontend SERVER "GET /p<k%3>"           root, error when k%10 == 3
//	└ frontend CLIENT "HTTP POST cart"
//	  └ cart SERVER "POST /cart"
//	    ├ payment SERVER "charge"           error when k%7 == 0
//	    └ cart INTERNAL "db.query"
type taWorkload struct {
	n     int
	base  time.Time
	spans []taSpan
	calls [3]ptrace.Traces
}

func newTAWorkload(n int, base time.Time) *taWorkload {
	w := &taWorkload{n: n, base: base}
	seq := 0
	for k := 0; k < n; k++ {
		var tid [16]byte
		tid[0] = 0x7a
		binary.BigEndian.PutUint64(tid[8:], uint64(k)+1)
		trace := hex.EncodeToString(tid[:])
		sid := func(j int) string {
			var b [8]byte
			binary.BigEndian.PutUint64(b[:], uint64(k)*16+uint64(j)+1)
			return hex.EncodeToString(b[:])
		}
		start := base.Add(time.Duration(k) * 10 * time.Millisecond)
		dur := time.Duration(20+k%50)*time.Millisecond + time.Duration(k%7)*time.Microsecond
		rootStatus, payStatus := ptrace.StatusCodeOk, ptrace.StatusCodeOk
		if k%10 == 3 {
			rootStatus = ptrace.StatusCodeError
		}
		if k%7 == 0 {
			payStatus = ptrace.StatusCodeError
		}
		third := k * 3 / n
		calls := [5]int{0, 0, 0, 0, 0}
		switch third {
		case 1:
			calls = [5]int{0, 0, 1, 1, 1}
		case 2:
			calls = [5]int{2, 2, 0, 0, 0}
		}
		add := func(j, parent int, service, name string, kind ptrace.SpanKind, off, shrink time.Duration, st ptrace.StatusCode) {
			s := taSpan{trace: trace, id: sid(j), k: k, service: service, name: name, kind: kind,
				start: start.Add(off), end: start.Add(dur - shrink), status: st, seq: seq, call: calls[j]}
			if parent >= 0 {
				s.parent = sid(parent)
			}
			seq++
			w.spans = append(w.spans, s)
		}
		add(0, -1, "frontend", fmt.Sprintf("GET /p%d", k%3), ptrace.SpanKindServer, 0, 0, rootStatus)
		add(1, 0, "frontend", "HTTP POST cart", ptrace.SpanKindClient, time.Millisecond, time.Millisecond, ptrace.StatusCodeUnset)
		add(2, 1, "cart", "POST /cart", ptrace.SpanKindServer, 2*time.Millisecond, 2*time.Millisecond, ptrace.StatusCodeOk)
		add(3, 2, "payment", "charge", ptrace.SpanKindServer, 3*time.Millisecond, 5*time.Millisecond, payStatus)
		add(4, 2, "cart", "db.query", ptrace.SpanKindInternal, 3*time.Millisecond, 8*time.Millisecond, ptrace.StatusCodeUnset)
	}
	for c := range w.calls {
		w.calls[c] = w.build(func(s *taSpan) bool { return s.call == c })
	}
	return w
}

// build returns the spans of w that keep selects, one resource per service.
func (w *taWorkload) build(keep func(*taSpan) bool) ptrace.Traces {
	td := ptrace.NewTraces()
	scopes := map[string]ptrace.ScopeSpans{}
	for i := range w.spans {
		s := &w.spans[i]
		if !keep(s) {
			continue
		}
		ss, ok := scopes[s.service]
		if !ok {
			rs := td.ResourceSpans().AppendEmpty()
			rs.Resource().Attributes().PutStr("service.name", s.service)
			ss = rs.ScopeSpans().AppendEmpty()
			ss.Scope().SetName("workload")
			scopes[s.service] = ss
		}
		sp := ss.Spans().AppendEmpty()
		sp.SetTraceID(mustTraceID(s.trace))
		sp.SetSpanID(mustSpanID(s.id))
		if s.parent != "" {
			sp.SetParentSpanID(mustSpanID(s.parent))
		}
		sp.SetName(s.name)
		sp.SetKind(s.kind)
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(s.start))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(s.end))
		sp.Status().SetCode(s.status)
		sp.Attributes().PutInt("seq", int64(s.seq))
	}
	return td
}

func mustTraceID(h string) (id pcommon.TraceID) {
	b, _ := hex.DecodeString(h)
	copy(id[:], b)
	return id
}

func mustSpanID(h string) (id pcommon.SpanID) {
	b, _ := hex.DecodeString(h)
	copy(id[:], b)
	return id
}

// root returns trace k's root span.
func (w *taWorkload) root(k int) *taSpan { return &w.spans[k*5] }

// traceOf returns the spans of trace k.
func (w *taWorkload) traceOf(k int) []taSpan { return w.spans[k*5 : k*5+5] }

// expectedEdges are the service-map documents the workload makes: for each
// trace group, the frontend client → cart server and cart server →
// payment server pairs, each a destination and a target edge.
func (w *taWorkload) expectedEdges() map[string]otelv1.Edge {
	out := map[string]otelv1.Edge{}
	for k := 0; k < w.n; k++ {
		tr := w.traceOf(k)
		for _, p := range [][2]int{{1, 2}, {2, 3}} {
			parent, child := ptrace.NewSpan(), ptrace.NewSpan()
			parent.SetKind(tr[p[0]].kind)
			parent.SetName(tr[p[0]].name)
			child.SetKind(tr[p[1]].kind)
			child.SetName(tr[p[1]].name)
			for _, e := range otelv1.EdgesOf(parent, tr[p[0]].service, child, tr[p[1]].service, w.root(k).name) {
				out[e.ID()] = e
			}
		}
	}
	return out
}

// exportTraces pushes td, resending what comes back for retry as the
// collector's retry would, until it is all stored.
func exportTraces(t testing.TB, e *osExporter, td ptrace.Traces) {
	t.Helper()
	err := e.pushTraces(context.Background(), td)
	for tries := 0; err != nil; tries++ {
		var te consumererror.Traces
		if !errors.As(err, &te) || tries > 50 {
			t.Fatalf("export: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
		err = e.pushTraces(context.Background(), te.Data())
	}
}

// otelV1Config is cfg in otel-v1 mode with templates and a fast fix-up.
func otelV1Config(endpoints []string) *Config {
	cfg := testConfig(endpoints)
	cfg.Mapping.Mode = MappingOtelV1
	cfg.InstallTemplates = true
	cfg.Mapping.TraceGroups.FixupInterval = 100 * time.Millisecond
	return cfg
}

// waitMetric waits until sumMetric(name, match) reaches want (at most
// within d) and returns the last value.
func waitMetric(t testing.TB, reader *sdkmetric.ManualReader, name string, match map[string]string, want int64, d time.Duration) int64 {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		got := sumMetric(t, reader, name, match)
		if got >= want || time.Now().After(deadline) {
			return got
		}
		time.Sleep(50 * time.Millisecond)
	}
}
