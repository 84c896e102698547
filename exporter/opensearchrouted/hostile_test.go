package opensearchrouted

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/opensearchrouted/opensearchrouted/testbed/ossim"
)

var updateCorpus = flag.Bool("update", false, "rewrite testdata/hostile_*.pb from the corpus builders")

// The hostile corpus: records whose content the server refuses or that
// broke delivery, each mixed into a call among normal records. Every
// record carries its sequence number (attribute seq) and an id (attribute
// record.id, for document_id: attribute), so that what the server holds
// can be counted by the record. It is committed as OTLP protobuf in
// testdata/hostile_logs.pb and testdata/hostile_traces.pb; the tests load
// those files, and TestHostileCorpusCommitted keeps them equal to what the
// builders below make.
const (
	hostileNormal = 400 // normal records around the hostile ones
	hostileSeq0   = 1_000_000
)

// hostileRecord sets the attributes (and body) of one hostile record; k
// numbers them.
type hostileRecord func(attrs pcommon.Map, body pcommon.Value, k int)

func nested(m pcommon.Map, depth int) {
	for d := 0; d < depth; d++ {
		m = m.PutEmptyMap(fmt.Sprintf("level%d", d))
	}
	m.PutStr("leaf", "deep")
}

var hostileRecords = []hostileRecord{
	func(a pcommon.Map, b pcommon.Value, k int) { // invalid UTF-8: key, value, body
		a.PutStr("bad\xffkey", "v\xfe\xfdalue")
		b.SetStr("body \xc3\x28 invalid")
	},
	func(a pcommon.Map, b pcommon.Value, k int) {
		a.PutStr("huge", strings.Repeat("0123456789abcdef", 1<<16))
	}, // 1 MiB value
	func(a pcommon.Map, b pcommon.Value, k int) { // 5,000 distinct keys
		for i := 0; i < 5000; i++ {
			a.PutInt(fmt.Sprintf("key.%04d", i), int64(i))
		}
	},
	func(a pcommon.Map, b pcommon.Value, k int) { nested(a.PutEmptyMap("deep"), 25) }, // maps 25 deep
	func(a pcommon.Map, b pcommon.Value, k int) { a.PutStr("deployment.environment", "prod") },
	func(a pcommon.Map, b pcommon.Value, k int) { a.PutStr("deployment.environment.name", "prod") },
	func(a pcommon.Map, b pcommon.Value, k int) { a.PutStr("code.function.name", "main") }, // the other order
	func(a pcommon.Map, b pcommon.Value, k int) { a.PutStr("code.function", "main") },
	func(a pcommon.Map, b pcommon.Value, k int) { a.PutBool("flag.kind", true) },
	func(a pcommon.Map, b pcommon.Value, k int) { a.PutStr("flag.kind", "maybe") }, // boolean, then another string
	func(a pcommon.Map, b pcommon.Value, k int) { a.PutEmptyMap("shape.a").PutStr("x", "map first") },
	func(a pcommon.Map, b pcommon.Value, k int) { a.PutStr("shape.a", "then a value") },
	func(a pcommon.Map, b pcommon.Value, k int) { a.PutStr("shape.b", "value first") },
	func(a pcommon.Map, b pcommon.Value, k int) { a.PutEmptyMap("shape.b").PutStr("x", "then a map") },
	func(a pcommon.Map, b pcommon.Value, k int) { // NaN and infinities
		a.PutDouble("nan", math.NaN())
		a.PutDouble("inf", math.Inf(1))
		a.PutDouble("ninf", math.Inf(-1))
	},
	func(a pcommon.Map, b pcommon.Value, k int) { b.SetEmptyBytes().FromRaw([]byte{0, 1, 2, 0xff, 0xfe}) }, // a bytes body
	func(a pcommon.Map, b pcommon.Value, k int) { a.PutStr("record.id", strings.Repeat("i", 600)) },        // an id over 512 bytes
	func(a pcommon.Map, b pcommon.Value, k int) {},                                                         // an empty record
}

// hostileLogs is the logs corpus: normal records with the hostile ones
// spread among them, over two resources.
func hostileLogs() plog.Logs {
	ld := plog.NewLogs()
	base := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	var sl plog.ScopeLogs
	h := 0
	total := hostileNormal + len(hostileRecords)
	for i := 0; i < total; i++ {
		if i%(total/2+1) == 0 {
			rl := ld.ResourceLogs().AppendEmpty()
			rl.Resource().Attributes().PutStr("service.name", fmt.Sprintf("hostile-%d", i))
			sl = rl.ScopeLogs().AppendEmpty()
			sl.Scope().SetName("corpus")
		}
		lr := sl.LogRecords().AppendEmpty()
		seq := hostileSeq0 + i
		lr.SetTimestamp(pcommon.NewTimestampFromTime(base.Add(time.Duration(i) * time.Millisecond)))
		lr.Attributes().PutInt("seq", int64(seq))
		lr.Attributes().PutStr("record.id", fmt.Sprintf("rec-%d", seq))
		if i%(hostileNormal/len(hostileRecords)+1) == 7 && h < len(hostileRecords) {
			if h < len(hostileRecords)-1 { // the last is empty: no body at all
				lr.Body().SetStr(fmt.Sprintf("hostile record %d", h))
			}
			hostileRecords[h](lr.Attributes(), lr.Body(), h)
			h++
			continue
		}
		lr.Body().SetStr(fmt.Sprintf("normal record %d", seq))
		lr.Attributes().PutStr("http.method", "GET")
	}
	if h != len(hostileRecords) {
		panic("hostile corpus: records left over")
	}
	return ld
}

// hostileTraces is the traces corpus: the same attributes on spans, and
// spans whose trace id or span id is all zeros.
func hostileTraces() ptrace.Traces {
	td := ptrace.NewTraces()
	base := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	rs := td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", "hostile")
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("corpus")
	total := hostileNormal + len(hostileRecords) + 6
	h := 0
	for i := 0; i < total; i++ {
		sp := ss.Spans().AppendEmpty()
		seq := hostileSeq0 + i
		tid, sid := pcommon.TraceID{0xab, byte(i >> 8), byte(i)}, pcommon.SpanID{0xcd, byte(i >> 8), byte(i)}
		switch {
		case i >= total-6 && i%2 == 0: // zero trace ids, span ids that repeat
			tid, sid = pcommon.TraceID{}, pcommon.SpanID{7}
		case i >= total-6: // zero span ids in one trace
			tid, sid = pcommon.TraceID{0xee}, pcommon.SpanID{}
		}
		sp.SetTraceID(tid)
		sp.SetSpanID(sid)
		sp.SetName(fmt.Sprintf("op-%d", i%7))
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(base.Add(time.Duration(i) * time.Millisecond)))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(base.Add(time.Duration(i)*time.Millisecond + time.Millisecond)))
		sp.Attributes().PutInt("seq", int64(seq))
		if i%(hostileNormal/len(hostileRecords)+1) == 7 && h < len(hostileRecords) {
			hostileRecords[h](sp.Attributes(), pcommon.NewValueEmpty(), h)
			h++
		}
	}
	return td
}

func hostilePath(name string) string { return filepath.Join("testdata", "hostile_"+name+".pb") }

// TestHostileCorpusCommitted: the committed corpus is what the builders
// make (go test -run TestHostileCorpusCommitted -update rewrites it).
func TestHostileCorpusCommitted(t *testing.T) {
	logs, err := (&plog.ProtoMarshaler{}).MarshalLogs(hostileLogs())
	if err != nil {
		t.Fatal(err)
	}
	traces, err := (&ptrace.ProtoMarshaler{}).MarshalTraces(hostileTraces())
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"logs": logs, "traces": traces} {
		if *updateCorpus {
			if err := os.WriteFile(hostilePath(name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(hostilePath(name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, b) {
			t.Fatalf("%s differs from the corpus builder; run go test -run TestHostileCorpusCommitted -update", hostilePath(name))
		}
	}
	ld := loadHostileLogs(t)
	if ld.LogRecordCount() != hostileNormal+len(hostileRecords) {
		t.Fatalf("%d log records", ld.LogRecordCount())
	}
	if s := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords(); !strings.Contains(fmt.Sprint(s.At(7).Attributes().AsRaw()), "\xff") {
		t.Fatal("invalid UTF-8 did not survive the protobuf round trip")
	}
}

func loadHostileLogs(t testing.TB) plog.Logs {
	t.Helper()
	b, err := os.ReadFile(hostilePath("logs"))
	if err != nil {
		t.Fatal(err)
	}
	ld, err := (&plog.ProtoUnmarshaler{}).UnmarshalLogs(b)
	if err != nil {
		t.Fatal(err)
	}
	return ld
}

func loadHostileTraces(t testing.TB) ptrace.Traces {
	t.Helper()
	b, err := os.ReadFile(hostilePath("traces"))
	if err != nil {
		t.Fatal(err)
	}
	td, err := (&ptrace.ProtoUnmarshaler{}).UnmarshalTraces(b)
	if err != nil {
		t.Fatal(err)
	}
	return td
}

// seqsStored reads every document of the indices (refreshed first) and
// counts them by record: the attribute seq, found in the document as
// written, in the unmapped shape's string, or in a dead-letter document's
// original. It also returns how many were in the unmapped shape and how
// many dead-letter documents there were.
func seqsStored(t testing.TB, base string, indices ...string) (bySeq map[int64]int, unmapped, deadLetters int) {
	t.Helper()
	bySeq = map[int64]int{}
	for _, index := range indices {
		httpJSON(t, "POST", base+"/"+index+"/_refresh?ignore_unavailable=true", "", nil)
		hits, code := searchSources(t, base+"/"+index+"/_search?size=10000&ignore_unavailable=true", `{"query":{"match_all":{}}}`)
		if code != 200 {
			t.Fatalf("search %s: HTTP %d", index, code)
		}
		for _, src := range hits {
			doc := map[string]any{}
			if err := json.Unmarshal(src, &doc); err != nil {
				t.Fatalf("%s: %v", index, err)
			}
			if d, ok := doc["document"].(string); ok {
				deadLetters++
				doc = map[string]any{}
				if err := json.Unmarshal([]byte(d), &doc); err != nil {
					t.Fatalf("dead-letter document: %v", err)
				}
			}
			if u, ok := doc["unmapped"].(string); ok {
				unmapped++
				if err := json.Unmarshal([]byte(u), &doc); err != nil {
					t.Fatalf("unmapped: %v", err)
				}
			}
			attrs, _ := doc["attributes"].(map[string]any)
			seq, ok := attrs["seq"].(float64)
			if !ok {
				t.Fatalf("%s: a document without seq: %.300s", index, src)
			}
			bySeq[int64(seq)]++
		}
	}
	return bySeq, unmapped, deadLetters
}

// searchSources runs the search at url (with body, if any) and returns
// the hits' _source and the HTTP status.
func searchSources(t testing.TB, url, body string) ([]json.RawMessage, int) {
	t.Helper()
	var res struct {
		Hits struct {
			Hits []struct {
				Source json.RawMessage `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
	method := "GET"
	if body != "" {
		method = "POST"
	}
	code := httpJSON(t, method, url, body, &res)
	out := make([]json.RawMessage, len(res.Hits.Hits))
	for i, h := range res.Hits.Hits {
		out[i] = h.Source
	}
	return out, code
}

// checkOnce fails unless every seq of [from, from+n) is stored exactly
// once.
func checkOnce(t testing.TB, bySeq map[int64]int, from, n int) {
	t.Helper()
	var missing, twice []int64
	for s := int64(from); s < int64(from+n); s++ {
		switch bySeq[s] {
		case 1:
		case 0:
			missing = append(missing, s)
		default:
			twice = append(twice, s)
		}
	}
	if len(missing) > 0 || len(twice) > 0 || len(bySeq) != n {
		t.Fatalf("%d records stored, want %d: missing %v, more than once %v", len(bySeq), n, missing, twice)
	}
}

// pushHostile sends the corpus of sig twice (the second time everything
// answers 409) and checks every record stored exactly once in target or
// the dead-letter index, nothing counted failed.
func pushHostile(t *testing.T, e *osExporter, base, target string, sig signal) (unmapped, deadLetters int) {
	t.Helper()
	n := 0
	for k := 0; k < 2; k++ {
		var err error
		if sig == signalTraces {
			td := loadHostileTraces(t)
			n = td.SpanCount()
			err = e.pushTraces(context.Background(), td)
		} else {
			ld := loadHostileLogs(t)
			n = ld.LogRecordCount()
			err = e.pushLogs(context.Background(), ld)
		}
		if err != nil {
			t.Fatalf("push %d: %v", k+1, err)
		}
	}
	bySeq, unmapped, deadLetters := seqsStored(t, base, target, e.deadLetterIndex())
	checkOnce(t, bySeq, hostileSeq0, n)
	return unmapped, deadLetters
}

// TestHostileCorpusEmulator is the real cluster's "hostile records stored
// once" and "refused in both shapes: dead-lettered" on the emulator, whose
// mapping model refuses what OpenSearch refuses: every record stored once,
// as written, in the unmapped shape or in the dead-letter index, and none
// counted failed.
func TestHostileCorpusEmulator(t *testing.T) {
	sim := ossim.StartT(t, ossim.Options{Nodes: 3, NoHopLatency: true, DefaultShards: 3})
	for _, tc := range []struct {
		name, dataset, index string
		sig                  signal
		deadLetters          bool
	}{
		{"logs", "hostile", "ss4o_logs-hostile-namespace", signalLogs, false},
		{"spans", "hostile", "ss4o_traces-hostile-namespace", signalTraces, false},
		{"logs without templates", "", "hostile-plain", signalLogs, false},
		{"strict index", "", "strict", signalLogs, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(sim.Addrs())
			if tc.dataset != "" {
				cfg.InstallTemplates = true
				cfg.Dataset = tc.dataset
			} else {
				cfg.LogsIndex = tc.index
			}
			if tc.deadLetters {
				body := `{"mappings":{"dynamic":"strict","properties":{"@timestamp":{"type":"date_nanos"}}}}`
				if code := httpJSON(t, "PUT", sim.Addr(0)+"/"+tc.index, body, nil); code != 200 {
					t.Fatalf("create: HTTP %d", code)
				}
			}
			e, reader := startExporter(t, cfg, tc.sig)
			unmapped, deadLetters := pushHostile(t, e, sim.Addr(0), tc.index, tc.sig)
			if f := sumMetric(t, reader, "otelcol.opensearchrouted.documents", map[string]string{"outcome": "failed"}); f != 0 {
				t.Fatalf("%d counted failed", f)
			}
			t.Logf("%d in the unmapped shape, %d dead-lettered", unmapped, deadLetters)
			switch {
			case tc.deadLetters && deadLetters != hostileNormal+len(hostileRecords):
				t.Fatalf("%d dead-lettered, want all %d", deadLetters, hostileNormal+len(hostileRecords))
			case !tc.deadLetters && (unmapped < 6 || deadLetters != 0):
				t.Fatalf("%d in the unmapped shape, %d dead-lettered", unmapped, deadLetters)
			}
		})
	}
}
