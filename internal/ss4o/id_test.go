package ss4o

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/rand/v2"
	"regexp"
	"testing"

	"github.com/zeebo/xxh3"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

func logID(rl plog.ResourceLogs, sl plog.ScopeLogs, lr plog.LogRecord) [16]byte {
	var e Encoder
	e.ResetLogs(rl, sl)
	return ContentID(e.AppendLog(nil, lr))
}

// TestContentIDStable pins the id of the golden log: a change here means
// every content id changes and upstream resends across the upgrade would be
// stored twice. Update only on purpose.
func TestContentIDStable(t *testing.T) {
	rl, sl, lr := goldenLog()
	var e Encoder
	e.ResetLogs(rl, sl)
	doc := e.AppendLog(nil, lr)
	id := ContentID(doc)
	h := xxh3.Hash128(doc)
	if binary.BigEndian.Uint64(id[:8]) != h.Hi || binary.BigEndian.Uint64(id[8:]) != h.Lo {
		t.Fatalf("ContentID is not XXH3-128, high then low half, big-endian")
	}
	// The reference implementation's XXH3-128 of nothing (xxhsum -H2).
	empty := ContentID(nil)
	if got := hex.EncodeToString(empty[:]); got != "99aa06d3014798d86001c324468d497f" {
		t.Fatalf("ContentID(empty) = %s: not XXH3-128", got)
	}
	if got := string(AppendID(nil, id, 0)); got != goldenLogID {
		t.Errorf("golden log content id = %s, pinned %s", got, goldenLogID)
	}
}

// goldenLogID is the content id of testdata/log.json.
const goldenLogID = "nUR6WqBhWnQTbA718PGMRg"

// TestContentIDCoversEveryField changes one thing at a time in a record and
// checks that the id changes: everything that makes a record distinct is in
// the id.
func TestContentIDCoversEveryField(t *testing.T) {
	mutations := map[string]func(rl plog.ResourceLogs, sl plog.ScopeLogs, lr plog.LogRecord){
		"resource attribute": func(rl plog.ResourceLogs, _ plog.ScopeLogs, _ plog.LogRecord) {
			rl.Resource().Attributes().PutStr("host.name", "other")
		},
		"resource dropped": func(rl plog.ResourceLogs, _ plog.ScopeLogs, _ plog.LogRecord) {
			rl.Resource().SetDroppedAttributesCount(1)
		},
		"resource schema": func(rl plog.ResourceLogs, _ plog.ScopeLogs, _ plog.LogRecord) { rl.SetSchemaUrl("x") },
		"scope name":      func(_ plog.ResourceLogs, sl plog.ScopeLogs, _ plog.LogRecord) { sl.Scope().SetName("x") },
		"scope version":   func(_ plog.ResourceLogs, sl plog.ScopeLogs, _ plog.LogRecord) { sl.Scope().SetVersion("x") },
		"scope attribute": func(_ plog.ResourceLogs, sl plog.ScopeLogs, _ plog.LogRecord) { sl.Scope().Attributes().PutInt("n", 1) },
		"scope dropped": func(_ plog.ResourceLogs, sl plog.ScopeLogs, _ plog.LogRecord) {
			sl.Scope().SetDroppedAttributesCount(1)
		},
		"scope schema": func(_ plog.ResourceLogs, sl plog.ScopeLogs, _ plog.LogRecord) { sl.SetSchemaUrl("x") },
		"time +1ns":    func(_ plog.ResourceLogs, _ plog.ScopeLogs, lr plog.LogRecord) { lr.SetTimestamp(lr.Timestamp() + 1) },
		"time unset":   func(_ plog.ResourceLogs, _ plog.ScopeLogs, lr plog.LogRecord) { lr.SetTimestamp(0) },
		"observed +1ns": func(_ plog.ResourceLogs, _ plog.ScopeLogs, lr plog.LogRecord) {
			lr.SetObservedTimestamp(lr.ObservedTimestamp() + 1)
		},
		"trace id":          func(_ plog.ResourceLogs, _ plog.ScopeLogs, lr plog.LogRecord) { lr.SetTraceID(pcommon.TraceID{9}) },
		"span id":           func(_ plog.ResourceLogs, _ plog.ScopeLogs, lr plog.LogRecord) { lr.SetSpanID(pcommon.SpanID{9}) },
		"flags":             func(_ plog.ResourceLogs, _ plog.ScopeLogs, lr plog.LogRecord) { lr.SetFlags(0) },
		"severity text":     func(_ plog.ResourceLogs, _ plog.ScopeLogs, lr plog.LogRecord) { lr.SetSeverityText("INFO") },
		"severity number":   func(_ plog.ResourceLogs, _ plog.ScopeLogs, lr plog.LogRecord) { lr.SetSeverityNumber(10) },
		"event name":        func(_ plog.ResourceLogs, _ plog.ScopeLogs, lr plog.LogRecord) { lr.SetEventName("e") },
		"body":              func(_ plog.ResourceLogs, _ plog.ScopeLogs, lr plog.LogRecord) { lr.Body().SetStr("other") },
		"body type":         func(_ plog.ResourceLogs, _ plog.ScopeLogs, lr plog.LogRecord) { lr.Body().SetEmptySlice() },
		"attribute value":   func(_ plog.ResourceLogs, _ plog.ScopeLogs, lr plog.LogRecord) { lr.Attributes().PutInt("int", -41) },
		"int vs double":     func(_ plog.ResourceLogs, _ plog.ScopeLogs, lr plog.LogRecord) { lr.Attributes().PutInt("double", 2) },
		"attribute removed": func(_ plog.ResourceLogs, _ plog.ScopeLogs, lr plog.LogRecord) { lr.Attributes().Remove("empty") },
		"nested attribute": func(_ plog.ResourceLogs, _ plog.ScopeLogs, lr plog.LogRecord) {
			v, _ := lr.Attributes().Get("map")
			v.Map().PutStr("nested", "y")
		},
		"dropped attributes": func(_ plog.ResourceLogs, _ plog.ScopeLogs, lr plog.LogRecord) { lr.SetDroppedAttributesCount(7) },
		"attribute order": func(_ plog.ResourceLogs, _ plog.ScopeLogs, lr plog.LogRecord) {
			lr.Attributes().Remove("str")
			lr.Attributes().PutStr("str", "value")
		},
	}
	rl, sl, lr := goldenLog()
	base := logID(rl, sl, lr)
	seen := map[[16]byte]string{base: "base"}
	for name, mutate := range mutations {
		rl, sl, lr := goldenLog()
		mutate(rl, sl, lr)
		id := logID(rl, sl, lr)
		if other, dup := seen[id]; dup {
			t.Errorf("%s: same id as %s", name, other)
		}
		seen[id] = name
	}
	// The same record built again has the same id.
	rl2, sl2, lr2 := goldenLog()
	if logID(rl2, sl2, lr2) != base {
		t.Error("the same record gets another id")
	}
}

func TestAppendID(t *testing.T) {
	var h [16]byte
	for i := range h {
		h[i] = byte(i * 17)
	}
	// 00 11 22 … ff in URL-safe base64: both extra characters ('-' and '_')
	// are in it.
	if got := string(AppendID([]byte("x"), h, 0)); got != "xABEiM0RVZneImaq7zN3u_w" {
		t.Errorf("occurrence 0: %s", got)
	}
	if got := string(AppendID(nil, h, 1)); got != "ABEiM0RVZneImaq7zN3u_w-1" {
		t.Errorf("occurrence 1: %s", got)
	}
	if got := string(AppendID(nil, h, math.MaxInt)); !regexp.MustCompile(`^[A-Za-z0-9_-]{22}-9223372036854775807$`).MatchString(got) {
		t.Errorf("occurrence max: %s", got)
	}
	defer func() {
		if recover() == nil {
			t.Error("negative occurrence did not panic")
		}
	}()
	AppendID(nil, h, -1)
}

func TestAppendSpanID(t *testing.T) {
	got := string(AppendSpanID(nil, pcommon.TraceID{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 0xff}, pcommon.SpanID{0xa, 0xb, 0, 0, 0, 0, 0, 1}))
	if got != "0102030405060708090a0b0c0d0e0fff0a0b000000000001" {
		t.Errorf("span id: %s", got)
	}
}

// TestRepeats: a call with genuine repeats keeps them all (distinct ids), and
// the same call sent again maps to exactly the same ids.
func TestRepeats(t *testing.T) {
	logs := plog.NewLogs()
	rl := logs.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "s")
	sl := rl.ScopeLogs().AppendEmpty()
	for i := range 10 {
		lr := sl.LogRecords().AppendEmpty()
		lr.SetTimestamp(1_000_000_000)
		lr.Body().SetStr([]string{"a", "b", "a", "a", "c", "b", "a", "d", "c", "a"}[i])
	}
	ids := func(r *Repeats) []string {
		r.Reset()
		var e Encoder
		e.ResetLogs(rl, sl)
		var out []string
		for _, lr := range sl.LogRecords().All() {
			h := ContentID(e.AppendLog(nil, lr))
			out = append(out, string(AppendID(nil, h, r.Next(h))))
		}
		return out
	}
	var r Repeats
	first := ids(&r)
	distinct := map[string]bool{}
	for _, id := range first {
		distinct[id] = true
	}
	if len(distinct) != 10 {
		t.Fatalf("%d distinct ids for 10 records: %v", len(distinct), first)
	}
	// "a" appears at 0, 2, 3, 6, 9: occurrences 0..4 of one hash.
	base := first[0]
	for n, i := range []int{2, 3, 6, 9} {
		if want := base + "-" + string(rune('1'+n)); first[i] != want {
			t.Errorf("record %d: %s, want %s", i, first[i], want)
		}
	}
	if first[1] == first[5] || first[5] != first[1]+"-1" {
		t.Errorf("b repeats: %s %s", first[1], first[5])
	}
	resend := ids(&r)
	for i := range first {
		if first[i] != resend[i] {
			t.Errorf("resend: record %d id %s, first time %s", i, resend[i], first[i])
		}
	}
	var zero Repeats
	zero.Reset()
	if zero.Next([16]byte{}) != 0 || zero.Next([16]byte{}) != 1 {
		t.Error("zero Repeats")
	}
}

// Span ids do not depend on content: a changed span keeps its id.
func TestSpanIDIgnoresContent(t *testing.T) {
	_, _, sp := goldenSpan()
	a := string(AppendSpanID(nil, sp.TraceID(), sp.SpanID()))
	sp.SetName("renamed")
	var _ ptrace.Span = sp
	if b := string(AppendSpanID(nil, sp.TraceID(), sp.SpanID())); a != b {
		t.Error("span id changed")
	}
}

// TestRepeatsAgainstMap numbers random hashes (with many repeats, across
// several Resets and growths) and compares with a plain map.
func TestRepeatsAgainstMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	var r Repeats
	for round := 0; round < 20; round++ {
		r.Reset()
		want := map[[16]byte]int{}
		n := rng.IntN(3000)
		pool := make([][16]byte, 1+rng.IntN(n+1))
		for i := range pool {
			for j := range pool[i] {
				pool[i][j] = byte(rng.Uint32())
			}
			if i > 0 && rng.IntN(10) == 0 { // same first 8 bytes: a collision of slots
				copy(pool[i][:8], pool[i-1][:8])
			}
		}
		for range n {
			h := pool[rng.IntN(len(pool))]
			if got := r.Next(h); got != want[h] {
				t.Fatalf("round %d: Next = %d, want %d", round, got, want[h])
			}
			want[h]++
		}
	}
	r.gen = ^uint32(0) // the generation wraps: nothing old may come back
	r.Next([16]byte{1})
	r.Reset()
	if r.Next([16]byte{1}) != 0 {
		t.Fatal("an entry survived a generation wrap")
	}
}

// TestAppendBase64URL checks the content id's text against the standard
// library's URL-safe base64 without padding.
func TestAppendBase64URL(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for k := 0; k < 2000; k++ {
		var h [16]byte
		for i := range h {
			h[i] = byte(rng.Uint32())
		}
		if k < 256 {
			h = [16]byte{}
			h[15], h[0] = byte(k), byte(255-k) // every value of the last byte
		}
		want := base64.RawURLEncoding.EncodeToString(h[:])
		if got := string(AppendID([]byte("pre"), h, 0)); got != "pre"+want {
			t.Fatalf("%x: %s, want %s", h, got, want)
		}
	}
}
