package opensearchrouted

import (
	"bytes"
	"fmt"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"runtime"
	"testing"

	"github.com/opensearchrouted/opensearchrouted/internal/routing"
	"github.com/opensearchrouted/opensearchrouted/internal/ss4o"
)

// TestEncodeSharedMatchesSequential encodes calls large enough to be
// shared between goroutines, with exact repeats falling into different
// shares, and checks every item against a plain one-by-one encoding: same
// order, same source, same record, and content ids numbered across the
// whole call.
func TestEncodeSharedMatchesSequential(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4)) // four shares even on a small machine
	for _, mode := range []string{DocumentIDContent, DocumentIDAttribute, DocumentIDRandom} {
		t.Run(mode, func(t *testing.T) {
			cfg := createDefaultConfig()
			cfg.Endpoints = []string{"http://127.0.0.1:9"}
			cfg.LogsIndex = "logs"
			cfg.DocumentID = mode
			cfg.DocumentIDAttribute = "doc.id"
			e := &osExporter{cfg: cfg, signal: signalLogs}
			e.targets.init(cfg, signalLogs)

			ld := makeLogs(0, 1500)
			// Exact repeats: in resources 4 and 5, the last 125 records are
			// copies of the first 125 of the same resource, in later shares
			// than their first occurrences. Resource 3 is a copy of
			// resource 0 (a client's resend merged by the batcher): its
			// records are no repeats, they get resource 0's ids.
			for r := 4; r < 6; r++ {
				lrs := ld.ResourceLogs().At(r).ScopeLogs().At(0).LogRecords()
				for k := 0; k < 125; k++ {
					lrs.At(k).CopyTo(lrs.At(125 + k))
				}
			}
			ld.ResourceLogs().At(0).CopyTo(ld.ResourceLogs().At(3))
			// Some records name their own id (document_id: attribute).
			ld.ResourceLogs().At(2).ScopeLogs().At(0).LogRecords().At(7).Attributes().PutStr("doc.id", "mine")

			if k := shares(ld.LogRecordCount()); k < 2 {
				t.Fatalf("shares = %d: the call is not shared", k)
			}
			c := &call{}
			e.encodeLogs(c, ld)
			if c.batch.Len() != 1500 || len(c.refs) != 1500 {
				t.Fatalf("%d items, %d refs", c.batch.Len(), len(c.refs))
			}

			var enc ss4o.Encoder
			var rep ss4o.Repeats
			it := int32(0)
			randomIDs := map[string]bool{}
			for ri := 0; ri < ld.ResourceLogs().Len(); ri++ {
				rl := ld.ResourceLogs().At(ri)
				sl := rl.ScopeLogs().At(0)
				enc.ResetLogs(rl, sl)
				rep.Reset() // numbered within each resource
				for li := 0; li < sl.LogRecords().Len(); li++ {
					lr := sl.LogRecords().At(li)
					doc := enc.AppendLog(nil, lr)
					_, id, _ := c.batch.Item(it)
					raw := c.batch.Bytes(it)
					if got := raw[bytes.IndexByte(raw, '\n')+1 : len(raw)-1]; !bytes.Equal(got, doc) {
						t.Fatalf("item %d: source differs", it)
					}
					if c.refs[it] != (ref{int32(ri), 0, int32(li)}) {
						t.Fatalf("item %d: ref %v", it, c.refs[it])
					}
					var want string
					switch {
					case mode == DocumentIDRandom:
						if randomIDs[id] || len(id) != ss4o.ContentIDLen {
							t.Fatalf("item %d: random id %q repeated or malformed", it, id)
						}
						randomIDs[id] = true
						want = id
					case mode == DocumentIDAttribute && ri == 2 && li == 7:
						want = "mine"
					default:
						h := ss4o.ContentID(doc)
						want = string(ss4o.AppendID(nil, h, rep.Next(h)))
					}
					if id != want {
						t.Fatalf("item %d (resource %d record %d): id %q, want %q", it, ri, li, id, want)
					}
					if !bytes.Contains(raw[:bytes.IndexByte(raw, '\n')], []byte(fmt.Sprintf(`"_id":%q`, want))) {
						t.Fatalf("item %d: action line %s", it, raw[:bytes.IndexByte(raw, '\n')])
					}
					it++
				}
			}
			if mode == DocumentIDContent {
				repeated := 0
				for _, o := range c.occ {
					if o > 0 {
						repeated++
					}
				}
				if repeated != 250 {
					t.Fatalf("%d repeats numbered, want 250", repeated)
				}
			}
		})
	}
}

// TestEncodeSharedSpansAndLocations encodes a shared call of spans with a
// router and checks each item against a one-share encoding of the same
// spans (same bytes, same record) and its location against Locate, so
// that the chunks' items, records and locations are merged in step.
func TestEncodeSharedSpansAndLocations(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	_, e := startRoutedEmulator(t, signalTraces, "spans")

	td := makeSpans(0, 1500)
	// A few spans without valid ids, in later chunks only: their content
	// ids are per item, the other items' marked as none.
	zero := map[int32]bool{700: true, 701: true, 1400: true}
	for i := range zero {
		sp := td.ResourceSpans().At(int(i) / 250).ScopeSpans().At(0).Spans().At(int(i) % 250)
		sp.SetSpanID(pcommon.SpanID{})
	}
	if k := shares(td.SpanCount()); k < 2 {
		t.Fatalf("shares = %d: the call is not shared", k)
	}
	c := &call{}
	e.encodeTraces(c, td)
	var one part
	e.encodeSpanRange(&one, td, 0, td.SpanCount())
	if c.batch.Len() != 1500 || one.batch.Len() != 1500 || len(c.locs) != 1500 || !c.located {
		t.Fatalf("%d items (one share: %d), %d locations, located %v", c.batch.Len(), one.batch.Len(), len(c.locs), c.located)
	}
	nodes := map[*routing.Node]bool{}
	for it := range int32(1500) {
		if !bytes.Equal(c.batch.Bytes(it), one.batch.Bytes(it)) || c.refs[it] != one.refs[it] {
			t.Fatalf("item %d differs from the one-share encoding", it)
		}
		index, id, _ := c.batch.Item(it)
		node, reason := e.router.Locate(index, id, "")
		if c.locs[it] != (loc{node, reason}) || reason != routing.Routed {
			t.Fatalf("item %d: located %v, Locate says %v %v", it, c.locs[it], node, reason)
		}
		nodes[node] = true
		if len(c.occ) != 1500 || (c.occ[it] >= 0) != zero[it] || (zero[it] && len(id) != ss4o.ContentIDLen) {
			t.Fatalf("item %d: %d occ, occ %d, id %q", it, len(c.occ), c.occ[it], id)
		}
	}
	if len(nodes) != 3 {
		t.Fatalf("items went to %d nodes", len(nodes))
	}
}

// TestEncodeOneShareWhileCallsOverlap: a large call is shared between
// cores while it is the only call in progress, and encoded on the caller's
// goroutine alone while another is: the same items either way.
func TestEncodeOneShareWhileCallsOverlap(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	cfg := createDefaultConfig()
	cfg.Endpoints = []string{"http://127.0.0.1:9"}
	cfg.LogsIndex = "logs"
	e := &osExporter{cfg: cfg, signal: signalLogs, workers: newWorkers(4, 0)}
	defer e.workers.close()
	e.targets.init(cfg, signalLogs)
	ld := makeLogs(0, 1500)

	e.workers.enter()
	shared := &call{}
	e.encodeLogs(shared, ld)
	e.workers.enter() // a second call is in progress
	alone := &call{}
	e.encodeLogs(alone, ld)
	e.workers.leave()
	e.workers.leave()

	if len(shared.extra) < 2 || len(alone.extra) != 0 {
		t.Fatalf("parts: %d with one call in progress (want ≥ 2), %d with two (want 0)", len(shared.extra), len(alone.extra))
	}
	if shared.batch.Len() != 1500 || alone.batch.Len() != 1500 {
		t.Fatalf("%d and %d items", shared.batch.Len(), alone.batch.Len())
	}
	for it := int32(0); it < 1500; it++ {
		if !bytes.Equal(shared.batch.Bytes(it), alone.batch.Bytes(it)) || shared.refs[it] != alone.refs[it] {
			t.Fatalf("item %d differs", it)
		}
	}
}
