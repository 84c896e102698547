package demo

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// Load describes what the load generator sends over OTLP gRPC.
type Load struct {
	Endpoint string // host:port of the collector's OTLP gRPC receiver
	Logs     int    // log records to send
	Spans    int    // spans to send
	Batch    int    // records per export request (default 500)
	Workers  int    // concurrent senders per signal (default 4)
	From     int    // number of the first record (records are numbered, so distinct)
	// MaxAttempts per request when the collector answers Unavailable or
	// ResourceExhausted (the memory limiter refusing), with backoff
	// (default 30).
	MaxAttempts int
}

// Sent counts what the collector accepted.
type Sent struct{ Logs, Spans int64 }

// SendLoad sends l.Logs distinct log records and l.Spans distinct spans,
// and returns how many the collector accepted. A request that still fails
// after its attempts is an error (its records are not counted as sent).
func SendLoad(ctx context.Context, l Load) (Sent, error) {
	if l.Batch <= 0 {
		l.Batch = 500
	}
	if l.Workers <= 0 {
		l.Workers = 4
	}
	if l.MaxAttempts <= 0 {
		l.MaxAttempts = 30
	}
	conn, err := grpc.NewClient(l.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return Sent{}, fmt.Errorf("demo: OTLP client for %s: %w", l.Endpoint, err)
	}
	defer conn.Close()
	logs, traces := plogotlp.NewGRPCClient(conn), ptraceotlp.NewGRPCClient(conn)

	var sent Sent
	var logsSent, spansSent atomic.Int64
	jobs := make(chan func(context.Context) error)
	var wg sync.WaitGroup
	var firstErr error
	var errOnce sync.Once
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for range 2 * l.Workers {
		wg.Go(func() {
			for job := range jobs {
				if err := job(ctx); err != nil {
					errOnce.Do(func() { firstErr = err; cancel() })
				}
			}
		})
	}
	base := time.Now().Truncate(time.Second)
	logFrom, spanFrom := l.From, l.From
	for (logFrom < l.From+l.Logs || spanFrom < l.From+l.Spans) && ctx.Err() == nil {
		if logFrom < l.From+l.Logs {
			from, n := logFrom, min(l.Batch, l.From+l.Logs-logFrom)
			logFrom += n
			job := func(ctx context.Context) error {
				req := plogotlp.NewExportRequestFromLogs(makeLogs(base, from, n))
				if err := retry(ctx, l.MaxAttempts, func(ctx context.Context) error {
					_, err := logs.Export(ctx, req)
					return err
				}); err != nil {
					return fmt.Errorf("demo: sending logs %d..%d: %w", from, from+n-1, err)
				}
				logsSent.Add(int64(n))
				return nil
			}
			select {
			case jobs <- job:
			case <-ctx.Done():
			}
		}
		if spanFrom < l.From+l.Spans {
			from, n := spanFrom, min(l.Batch, l.From+l.Spans-spanFrom)
			spanFrom += n
			job := func(ctx context.Context) error {
				req := ptraceotlp.NewExportRequestFromTraces(makeSpans(base, from, n))
				if err := retry(ctx, l.MaxAttempts, func(ctx context.Context) error {
					_, err := traces.Export(ctx, req)
					return err
				}); err != nil {
					return fmt.Errorf("demo: sending spans %d..%d: %w", from, from+n-1, err)
				}
				spansSent.Add(int64(n))
				return nil
			}
			select {
			case jobs <- job:
			case <-ctx.Done():
			}
		}
	}
	close(jobs)
	wg.Wait()
	sent.Logs, sent.Spans = logsSent.Load(), spansSent.Load()
	if firstErr != nil {
		return sent, firstErr
	}
	return sent, ctx.Err()
}

// retry calls f until it succeeds, fails with a code other than
// Unavailable or ResourceExhausted, or attempts run out. Backoff starts at
// 50ms and doubles up to 2s. Each call has a 30s deadline.
func retry(ctx context.Context, attempts int, f func(context.Context) error) error {
	backoff := 50 * time.Millisecond
	var err error
	for i := 0; i < attempts; i++ {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err = f(cctx)
		cancel()
		if err == nil {
			return nil
		}
		if c := status.Code(err); c != codes.Unavailable && c != codes.ResourceExhausted {
			return err
		}
		select {
		case <-time.After(backoff):
		case <-ctx.Done():
			return ctx.Err()
		}
		backoff = min(2*backoff, 2*time.Second)
	}
	return fmt.Errorf("after %d attempts: %w", attempts, err)
}

var services = [...]string{"checkout", "cart", "payment", "frontend"}

// makeLogs builds n distinct log records numbered from.
func makeLogs(base time.Time, from, n int) plog.Logs {
	ld := plog.NewLogs()
	sls := map[string]plog.LogRecordSlice{}
	for i := from; i < from+n; i++ {
		svc := services[i%len(services)]
		recs, ok := sls[svc]
		if !ok {
			rl := ld.ResourceLogs().AppendEmpty()
			rl.Resource().Attributes().PutStr("service.name", svc)
			rl.Resource().Attributes().PutStr("host.name", "demo-host")
			sl := rl.ScopeLogs().AppendEmpty()
			sl.Scope().SetName("osrdemo")
			recs = sl.LogRecords()
			sls[svc] = recs
		}
		lr := recs.AppendEmpty()
		ts := base.Add(time.Duration(i) * time.Microsecond)
		lr.SetTimestamp(pcommon.NewTimestampFromTime(ts))
		lr.SetObservedTimestamp(pcommon.NewTimestampFromTime(ts))
		lr.SetSeverityNumber(plog.SeverityNumberInfo)
		lr.SetSeverityText("INFO")
		lr.Body().SetStr(fmt.Sprintf("GET /api/items/%d answered 200 in %dms", i, i%97))
		lr.Attributes().PutInt("seq", int64(i))
		lr.Attributes().PutStr("http.route", "/api/items/{id}")
		lr.Attributes().PutInt("http.status_code", 200)
	}
	return ld
}

// makeSpans builds n distinct spans numbered from (trace id from the
// number, so every span is distinct).
func makeSpans(base time.Time, from, n int) ptrace.Traces {
	td := ptrace.NewTraces()
	sss := map[string]ptrace.SpanSlice{}
	for i := from; i < from+n; i++ {
		svc := services[i%len(services)]
		spans, ok := sss[svc]
		if !ok {
			rs := td.ResourceSpans().AppendEmpty()
			rs.Resource().Attributes().PutStr("service.name", svc)
			ss := rs.ScopeSpans().AppendEmpty()
			ss.Scope().SetName("osrdemo")
			spans = ss.Spans()
			sss[svc] = spans
		}
		sp := spans.AppendEmpty()
		var tid [16]byte
		var sid [8]byte
		binary.BigEndian.PutUint64(tid[0:], uint64(base.Unix()))
		binary.BigEndian.PutUint64(tid[8:], uint64(i)+1)
		binary.BigEndian.PutUint64(sid[:], uint64(i)+1)
		sp.SetTraceID(tid)
		sp.SetSpanID(sid)
		sp.SetName("GET /api/items/{id}")
		sp.SetKind(ptrace.SpanKindServer)
		start := base.Add(time.Duration(i) * time.Microsecond)
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(start))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(start.Add(time.Duration(i%97) * time.Millisecond)))
		sp.Attributes().PutInt("seq", int64(i))
		sp.Status().SetCode(ptrace.StatusCodeOk)
	}
	return td
}
