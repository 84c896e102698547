package pit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

func base() Options {
	return Options{Endpoints: []string{"http://127.0.0.1:9200"}, Indices: []string{"logs"}}
}

func TestSortValidation(t *testing.T) {
	for _, tc := range []struct {
		name      string
		sort      string
		tie       string
		noRecreat bool
		wantErr   string // substring; empty: valid
	}{
		{"default", ``, "", false, ""},
		{"string entries", `["@timestamp","_id"]`, "", false, ""},
		{"single object", `{"_id":"asc"}`, "", false, ""},
		{"nested options", `[{"ts":{"order":"desc","missing":"_first"}},{"_id":{"order":"desc"}}]`, "", false, ""},
		{"custom tiebreaker", `[{"@timestamp":"asc"},{"event.sequence":"asc"}]`, "event.sequence", false, ""},
		{"no tiebreaker", `[{"@timestamp":"asc"}]`, "", false, "no tiebreaker: add _id"},
		{"doc only", `["_doc"]`, "", false, "_doc is not stable across PITs"},
		{"shard_doc tiebreaker", `[{"@timestamp":"asc"},{"_shard_doc":"asc"}]`, "", false, "_shard_doc is not stable across PITs"},
		{"score", `["_score","_id"]`, "", false, "_score is not stable"},
		{"shard_doc without recreation", `[{"@timestamp":"asc"},"_shard_doc"]`, "", true, ""},
		{"doc only without recreation", `["_doc"]`, "", true, "no tiebreaker"},
		{"empty array", `[]`, "", false, "empty array"},
		{"bad json", `[{"_id":]`, "", false, "not a valid JSON array"},
		{"two fields in one object", `[{"a":"asc","_id":"asc"}]`, "", false, "one field"},
		{"number", `[5]`, "", false, "field name or an object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := base()
			o.Sort = json.RawMessage(tc.sort)
			o.Tiebreaker = tc.tie
			if tc.noRecreat {
				o.MaxRecreateAttempts = -1
			}
			_, err := o.validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != "Sort" || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want Sort error containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestOptionValidation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		mod   func(*Options)
		field string
		msg   string
	}{
		{"no endpoints", func(o *Options) { o.Endpoints = nil }, "Endpoints", "at least one"},
		{"bad scheme", func(o *Options) { o.Endpoints = []string{"ftp://h:1"} }, "Endpoints", "http or https"},
		{"no host", func(o *Options) { o.Endpoints = []string{"http://"} }, "Endpoints", "host"},
		{"query in endpoint", func(o *Options) { o.Endpoints = []string{"http://h:1/?x=1"} }, "Endpoints", "query"},
		{"no indices", func(o *Options) { o.Indices = nil }, "Indices", "at least one"},
		{"empty index", func(o *Options) { o.Indices = []string{""} }, "Indices", "empty"},
		{"comma in index", func(o *Options) { o.Indices = []string{"a,b"} }, "Indices", "not allowed"},
		{"existing PIT without indices", func(o *Options) { o.Indices = nil; o.ExistingPITID = "x" }, "Indices", "recreate"},
		{"bad query", func(o *Options) { o.Query = json.RawMessage(`{"match_all":`) }, "Query", "JSON object"},
		{"query not object", func(o *Options) { o.Query = json.RawMessage(`[1]`) }, "Query", "JSON object"},
		{"bad source", func(o *Options) { o.Source = json.RawMessage(`[`) }, "Source", "JSON"},
		{"negative page", func(o *Options) { o.PageSize = -1 }, "PageSize", "positive"},
		{"tiny keep-alive", func(o *Options) { o.KeepAlive = time.Microsecond }, "KeepAlive", "1ms"},
		{"slice id out of range", func(o *Options) { o.Slice = &Slice{ID: 4, Max: 4} }, "Slice", "id 4 max 4"},
		{"slice max zero", func(o *Options) { o.Slice = &Slice{} }, "Slice", "max 0"},
		{"cursor length", func(o *Options) { o.SearchAfter = []json.RawMessage{json.RawMessage(`1`)} }, "SearchAfter", "1 values for 3 sort fields"},
		{"cursor json", func(o *Options) { o.SearchAfter = []json.RawMessage{json.RawMessage(`1`), json.RawMessage(`x`)} }, "SearchAfter", "value 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := base()
			tc.mod(&o)
			_, err := Open(context.Background(), o)
			var ce *ConfigError
			if !errors.As(err, &ce) || ce.Field != tc.field || !strings.Contains(err.Error(), tc.msg) {
				t.Fatalf("err = %v, want %s error containing %q", err, tc.field, tc.msg)
			}
		})
	}
	// Existing PIT, recreation off: no indices needed, no request sent.
	o := base()
	o.Indices, o.ExistingPITID, o.MaxRecreateAttempts = nil, "abc", -1
	p, err := Open(context.Background(), o)
	if err != nil || p.PITID() != "abc" {
		t.Fatalf("existing PIT: %v", err)
	}
	if err := p.Close(context.Background()); err != nil {
		t.Fatalf("closing a PIT we do not own sent a request: %v", err)
	}
}

func TestDefaults(t *testing.T) {
	c, err := base().validate()
	if err != nil {
		t.Fatal(err)
	}
	if c.keepAlive != "300000ms" || c.PageSize != 1000 || c.MaxRecreateAttempts != 3 || c.DedupWindow != 32768 ||
		c.MaxRetries != 3 || !c.recreate || string(c.query) != `{"match_all":{}}` || string(c.sort) != string(DefaultSort) {
		t.Errorf("defaults: %+v", c)
	}
}

func TestDefaultBackoffIsBoundedFullJitter(t *testing.T) {
	for n := range 10 {
		ceiling := min(250*time.Millisecond<<n, 10*time.Second)
		if got := backoffCeiling(n); got != ceiling {
			t.Fatalf("ceiling(%d) = %v, want %v", n, got, ceiling)
		}
		var maxSeen time.Duration
		low := false
		for range 2000 {
			d := DefaultBackoff(n)
			if d < 0 || d > ceiling {
				t.Fatalf("attempt %d: %v outside [0, %v]", n, d, ceiling)
			}
			maxSeen = max(maxSeen, d)
			low = low || d < ceiling/4
		}
		// Full jitter: the whole range is used (fails with p ≈ 2^-800).
		if maxSeen < ceiling*3/4 || !low {
			t.Errorf("attempt %d: draws not spread over [0, %v] (max %v)", n, ceiling, maxSeen)
		}
	}
	if backoffCeiling(1000) != 10*time.Second || backoffCeiling(-1) != 250*time.Millisecond {
		t.Error("ceiling overflow or negative attempt")
	}
	// Three recreate attempts wait at most 250ms + 500ms + 1s in total.
	if backoffCeiling(0)+backoffCeiling(1)+backoffCeiling(2) != 1750*time.Millisecond {
		t.Error("sum of the first three ceilings")
	}
}

func TestSleepCtxHonoursCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := sleepCtx(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v", err)
	}
	if err := sleepCtx(context.Background(), time.Microsecond); err != nil {
		t.Fatal(err)
	}
}

func TestIsFatal(t *testing.T) {
	sfe := &ShardFailureError{Failures: []ShardFailure{{Type: "x"}}}
	for _, tc := range []struct {
		err   error
		fatal bool
	}{
		{nil, false},
		{ErrSnapshotBreak, false},
		{ErrHitOutOfOrder, false},
		{sfe, false},
		{errors.Join(ErrSnapshotBreak, sfe, ErrHitOutOfOrder), false},
		{errors.Join(ErrSnapshotBreak, errors.New("boom")), true},
		{&ContextLostError{}, true},
		{context.Canceled, true},
		{fmt.Errorf("wrapped: %w", ErrHitOutOfOrder), true}, // not a bare sentinel
	} {
		if got := IsFatal(tc.err); got != tc.fatal {
			t.Errorf("IsFatal(%v) = %v", tc.err, got)
		}
	}
}

func TestWindow(t *testing.T) {
	w := newWindow(3)
	if w.observe("a", "1", 1, 0) != dedupNew || w.observe("b", "1", 1, 0) != dedupNew {
		t.Fatal("same id in another index is another document")
	}
	if w.observe("a", "1", 1, 0) != dedupDuplicate {
		t.Fatal("same version is a duplicate")
	}
	if w.observe("a", "1", 2, 0) != dedupChanged || w.observe("a", "1", 2, 0) != dedupDuplicate {
		t.Fatal("new version is a change, then remembered")
	}
	w.observe("a", "2", 1, 0) // evicts nothing yet: 3 entries
	w.observe("a", "3", 1, 0) // evicts the oldest, a/1
	if w.len() != 3 {
		t.Fatalf("len %d", w.len())
	}
	if w.observe("a", "1", 2, 0) != dedupNew {
		t.Fatal("the oldest entry was not evicted")
	}
	if w.observe("a", "3", 1, 0) != dedupDuplicate {
		t.Fatal("a recent entry was evicted")
	}
	if w.observe("a", "x", -1, 0) != dedupNew || w.observe("a", "x", -1, 0) != dedupDuplicate {
		t.Fatal("unknown versions compare equal")
	}
}

// autoID mimics a 20-character OpenSearch auto-generated _id.
func autoID(i int) string {
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	var b [20]byte
	x := uint64(i)*0x9E3779B97F4A7C15 + 1
	for j := range b {
		b[j] = alphabet[x&63]
		x = x>>6 | x<<58
		if j == 9 {
			x ^= uint64(i) * 0xBF58476D1CE4E5B9
		}
	}
	return string(b[:])
}

// BenchmarkDedupWindow measures observe on a full window of 32768 entries
// (the steady state: every call inserts and evicts), and the heap held per
// entry. The baseline is an unbounded map[string]int64 insert.
func BenchmarkDedupWindow(b *testing.B) {
	const n = DefaultDedupWindow
	keys := make([]string, 4*n)
	for i := range keys {
		keys[i] = autoID(i)
	}
	b.Run("window-observe", func(b *testing.B) {
		w := newWindow(n)
		for i := range n {
			w.observe(".ds-logs-000001", keys[i], 1, 0)
		}
		b.ReportAllocs()
		cpu := startCPU(b)
		for i := 0; i < b.N; i++ {
			w.observe(".ds-logs-000001", keys[n+i%(3*n)], 1, 0)
		}
		b.ReportMetric(float64(cpu.stop())/float64(b.N), "cpu-ns/op")
	})
	b.Run("baseline-map", func(b *testing.B) {
		m := make(map[string]int64, n)
		b.ReportAllocs()
		cpu := startCPU(b)
		for i := 0; i < b.N; i++ {
			k := keys[i%len(keys)]
			m[k] = 1
			if len(m) >= 2*n {
				clear(m)
			}
		}
		b.ReportMetric(float64(cpu.stop())/float64(b.N), "cpu-ns/op")
	})
	b.Run("memory-per-entry", func(b *testing.B) {
		// Measured once: the timer is irrelevant here, the metric is not.
		ids := make([]string, n)
		for j := range ids {
			ids[j] = string([]byte(autoID(j))) // fresh heap strings, as decoded hits are
		}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		w := newWindow(n)
		for j := range ids {
			w.observe(".ds-logs-000001", ids[j], 1, 0)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		structure := float64(after.HeapAlloc-before.HeapAlloc) / n
		runtime.KeepAlive(w)
		for i := 0; i < b.N; i++ {
			_ = w.len()
		}
		b.ReportMetric(structure, "B/entry-struct")
		b.ReportMetric(structure+24, "B/entry-with-id") // a 20-byte id lives in a 24-byte size class
	})
}

// cpuClock measures the process's CPU time (user + system) over a
// benchmark loop: on a machine shared with other work it moves far less
// than wall time.
type cpuClock struct{ start time.Duration }

func startCPU(b *testing.B) cpuClock {
	b.ResetTimer()
	return cpuClock{start: processCPU()}
}

func (c cpuClock) stop() time.Duration { return processCPU() - c.start }

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
