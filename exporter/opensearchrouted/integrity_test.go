package opensearchrouted

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/pcommon"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/opensearchrouted/opensearchrouted/testbed/ossim"
)

// TestZeroSpanIDsGetContentIDs: spans whose trace id or span id is all
// zeros get content ids, so distinct spans are all stored (with trace id +
// span id they would share one _id: every span after the first answered
// 409 and was counted a duplicate); each is counted as a fallback, a
// resend of the call stores nothing twice, and valid spans beside them
// keep their usual ids. In one call of one share and of several.
func TestZeroSpanIDsGetContentIDs(t *testing.T) {
	for _, n := range []int{12, 1200} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			sim := ossim.StartT(t, ossim.Options{Nodes: 3, NoHopLatency: true})
			cfg := testConfig(sim.Addrs())
			cfg.TracesIndex = "spans"
			e, reader := startExporter(t, cfg, signalTraces)
			td := makeSpans(0, n)
			spans := td.ResourceSpans().At(0).ScopeSpans().At(0).Spans()
			zero := 0
			// Zero trace ids with span ids that repeat (span ids are
			// unique only within a trace), and zero span ids in one trace.
			for i := 0; i < spans.Len(); i += 3 {
				if i%2 == 0 {
					spans.At(i).SetTraceID(pcommon.TraceID{})
					spans.At(i).SetSpanID(pcommon.SpanID{0, 0, 0, 0, 0, 0, 0, byte(i % 4)})
				} else {
					spans.At(i).SetTraceID(pcommon.TraceID{0xee, 1})
					spans.At(i).SetSpanID(pcommon.SpanID{})
				}
				zero++
			}
			for k := 0; k < 2; k++ {
				if err := e.pushTraces(context.Background(), td); err != nil {
					t.Fatal(err)
				}
				if got := count(t, sim.Addr(0), "spans"); got != n {
					t.Fatalf("push %d: stored %d spans, want %d", k+1, got, n)
				}
			}
			if got := sumMetric(t, reader, "otelcol.opensearchrouted.documents.fallback", map[string]string{"fallback": "invalid_span_id"}); got != int64(2*zero) {
				t.Fatalf("invalid_span_id fallbacks %d, want %d", got, 2*zero)
			}
			if got := sumMetric(t, reader, "otelcol.opensearchrouted.documents", map[string]string{"outcome": "duplicate"}); got != int64(n) {
				t.Fatalf("duplicates %d, want %d (the second push)", got, n)
			}
			valid := spans.At(1)
			id := valid.TraceID().String() + valid.SpanID().String()
			if code := httpJSON(t, "GET", sim.Addr(0)+"/spans/_doc/"+id, "", nil); code != 200 {
				t.Fatalf("valid span not under its trace id + span id: HTTP %d", code)
			}
		})
	}
}

// TestOverlongAttributeIDGetsContentID: with document_id: attribute, a
// value over 512 bytes (OpenSearch refuses the whole request for it) gives
// its record a content id instead; its neighbours keep their attribute ids.
func TestOverlongAttributeIDGetsContentID(t *testing.T) {
	sim := ossim.StartT(t, ossim.Options{Nodes: 3, NoHopLatency: true})
	cfg := testConfig(sim.Addrs())
	cfg.LogsIndex = "ids"
	cfg.DocumentID, cfg.DocumentIDAttribute = DocumentIDAttribute, "my.id"
	e, reader := startExporter(t, cfg, signalLogs)
	ld := makeLogs(0, 100)
	lrs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	for i := 0; i < lrs.Len(); i++ {
		lrs.At(i).Attributes().PutStr("my.id", fmt.Sprintf("id-%d", i))
	}
	lrs.At(7).Attributes().PutStr("my.id", strings.Repeat("x", 600))
	lrs.At(8).Attributes().PutStr("my.id", strings.Repeat("\xff", 171)) // 513 bytes once each is U+FFFD
	lrs.At(9).Attributes().PutStr("my.id", strings.Repeat("é", 256))    // 512 bytes: fits
	if err := e.pushLogs(context.Background(), ld); err != nil {
		t.Fatal(err)
	}
	if got := count(t, sim.Addr(0), "ids"); got != 100 {
		t.Fatalf("stored %d, want 100", got)
	}
	if got := sumMetric(t, reader, "otelcol.opensearchrouted.documents.fallback", map[string]string{"fallback": "invalid_attribute_id"}); got != 2 {
		t.Fatalf("invalid_attribute_id fallbacks %d, want 2", got)
	}
	for _, id := range []string{"id-0", "id-99", strings.Repeat("é", 256)} {
		if code := httpJSON(t, "GET", sim.Addr(0)+"/ids/_doc/"+id, "", nil); code != 200 {
			t.Fatalf("record with id %.10q…: HTTP %d", id, code)
		}
	}
}

func TestIDFits(t *testing.T) {
	for _, c := range []struct {
		s    string
		want bool
	}{
		{"", true}, {strings.Repeat("a", 512), true}, {strings.Repeat("a", 513), false},
		{strings.Repeat("é", 256), true}, {strings.Repeat("é", 256) + "a", false},
		{strings.Repeat("\xff", 170) + "ab", true}, {strings.Repeat("\xff", 171), false},
		{strings.Repeat("€", 170) + "ab", true}, {strings.Repeat("€", 170) + "abc", false},
	} {
		if got := idFits(c.s); got != c.want {
			t.Errorf("idFits(%d bytes %.8q…) = %v, want %v", len(c.s), c.s, got, c.want)
		}
	}
}

// checkWriteBlock: a write block (index.blocks.write, as shrink, clone,
// ISM and operators set it) on index, set before an export and cleared
// while the collector's retry resends what the calls hand back: every
// record is stored exactly once, none is counted failed.
func checkWriteBlock(t *testing.T, base, index string, e *osExporter, reader *sdkmetric.ManualReader) {
	t.Helper()
	block := func(on bool) error {
		req, _ := http.NewRequest("PUT", base+"/"+index+"/_settings", strings.NewReader(fmt.Sprintf(`{"index.blocks.write":%v}`, on)))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("blocks.write %v: HTTP %d", on, resp.StatusCode)
		}
		return nil
	}
	if err := block(true); err != nil {
		t.Fatal(err)
	}
	cleared := make(chan error, 1)
	go func() {
		time.Sleep(1500 * time.Millisecond)
		cleared <- block(false)
	}()
	const n = 500
	err := e.pushLogs(context.Background(), makeLogs(0, n))
	calls := 1
	for ; err != nil && calls < 100; calls++ {
		var le consumererror.Logs
		if !errors.As(err, &le) {
			t.Fatalf("call %d: not handed back for retry: %v", calls, err)
		}
		time.Sleep(100 * time.Millisecond)
		err = e.pushLogs(context.Background(), le.Data())
	}
	if err := <-cleared; err != nil {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatalf("after %d calls: %v", calls, err)
	}
	if calls < 2 {
		t.Fatal("the block refused nothing")
	}
	bySeq, _, _ := seqsStored(t, base, index)
	checkOnce(t, bySeq, 0, n)
	if f := sumMetric(t, reader, "otelcol.opensearchrouted.documents", map[string]string{"outcome": "failed"}); f != 0 {
		t.Fatalf("%d counted failed", f)
	}
	if d := sumMetric(t, reader, "otelcol.opensearchrouted.documents", map[string]string{"outcome": "dead_lettered"}); d != 0 {
		t.Fatalf("%d dead-lettered", d)
	}
}

func TestWriteBlockRetriedEmulator(t *testing.T) {
	sim := ossim.StartT(t, ossim.Options{Nodes: 3, NoHopLatency: true, DefaultShards: 3})
	if code := httpJSON(t, "PUT", sim.Addr(0)+"/blocked", "", nil); code != 200 {
		t.Fatalf("create: HTTP %d", code)
	}
	cfg := testConfig(sim.Addrs())
	cfg.LogsIndex = "blocked"
	e, reader := startExporter(t, cfg, signalLogs)
	checkWriteBlock(t, sim.Addr(0), "blocked", e, reader)
}
