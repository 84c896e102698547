package opensearchbackfill

import (
	"encoding/json"
	"fmt"
	"github.com/opensearchrouted/opensearchrouted/testbed/ossim"
	"strings"
	"testing"
	"time"
)

// followConfig is follow mode polling every 30ms on the emulator.
func followConfig(endpoints []string, index string) *Config {
	cfg := testConfig(endpoints, index)
	cfg.Mode = ModeFollow
	cfg.PollInterval = 30 * time.Millisecond
	return cfg
}

func tsDoc(t time.Time) string {
	return fmt.Sprintf(`{"@timestamp":%q,"n":0}`, t.UTC().Format(time.RFC3339Nano)) // n: a foreign document, delivered with its _id
}

// writeAt writes one document per id at time ts and refreshes.
func writeAt(t *testing.T, base, index string, ts time.Time, ids ...string) {
	t.Helper()
	bulkDocs(t, base, index, ids, func(int) string { return tsDoc(ts) })
}

// settle waits until a poll that started after now has ended: every
// document visible now has been offered to the sink.
func settle(t *testing.T, h *harness) {
	t.Helper()
	start := h.r.Stats().PITsOpened
	waitFor(t, 10*time.Second, func() bool { return h.r.Stats().PITsOpened >= start+2 })
}

// A document with the same @timestamp as the last one read and an _id
// that sorts before it, written after it was read, is read, once.
func TestFollowEqualTimestampLowerIDLater(t *testing.T) {
	c := newCluster(t)
	createIndex(t, c.Addr(0), "events", 1, 0)
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	writeAt(t, c.Addr(0), "events", t0, "b")
	cfg := followConfig(c.Addrs(), "events")
	sink := newIDSink()
	h := mustStart(t, cfg, sink, nil)
	waitFor(t, 10*time.Second, func() bool { return sink.snapshot()["b"] == 1 })
	writeAt(t, c.Addr(0), "events", t0, "a")
	writeAt(t, c.Addr(0), "events", t0.Add(time.Millisecond), "c")
	waitFor(t, 10*time.Second, func() bool { return sink.snapshot()["c"] == 1 })
	settle(t, h)
	checkAllOnce(t, sink.snapshot(), []string{"a", "b", "c"}, true)
	if st := h.r.Stats(); st.HitsDeduped == 0 {
		t.Errorf("nothing was re-read and deduplicated: %+v", st)
	}
}

// The edge of the guarantee: with follow_lag L and the newest document
// read at time C, a document that becomes visible later is read when its
// time is ≥ C − L, and missed when it is older than C − L − 1 unit.
func TestFollowLagEdge(t *testing.T) {
	c := newCluster(t)
	createIndex(t, c.Addr(0), "events", 1, 0)
	C := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	writeAt(t, c.Addr(0), "events", C, "last")
	cfg := followConfig(c.Addrs(), "events")
	cfg.FollowLag = time.Second
	sink := newIDSink()
	h := mustStart(t, cfg, sink, nil)
	waitFor(t, 10*time.Second, func() bool { return sink.snapshot()["last"] == 1 })
	writeAt(t, c.Addr(0), "events", C.Add(-time.Second), "edge")
	writeAt(t, c.Addr(0), "events", C.Add(-time.Second-2*time.Millisecond), "beyond")
	settle(t, h)
	got := sink.snapshot()
	if got["edge"] != 1 || got["last"] != 1 {
		t.Fatalf("edge read %d times, last %d times, want 1 and 1", got["edge"], got["last"])
	}
	if got["beyond"] != 0 {
		t.Fatalf("a document older than C − follow_lag − 1ms was read (%d): the guarantee documented is wrong", got["beyond"])
	}
}

// Past max_dedup_window, documents of the lag window are forgotten:
// counted, warned about, and emitted again when re-read.
func TestFollowDedupOverflowCountedAndWarned(t *testing.T) {
	c := newCluster(t)
	createIndex(t, c.Addr(0), "events", 1, 0)
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	ids := make([]string, 40)
	for i := range ids {
		ids[i] = fmt.Sprintf("d%02d", i)
	}
	writeAt(t, c.Addr(0), "events", t0, ids...)
	h, sink := overlapRead(t, c, 16)
	if h.r.Stats().DedupOverflows == 0 {
		t.Fatal("no overflow counted")
	}
	if n := h.logs.FilterMessageSnippet("reached max_dedup_window").Len(); n == 0 {
		t.Fatal("no warning")
	}
	dups := 0
	for _, n := range sink.snapshot() {
		if n > 1 {
			dups++
		}
	}
	if dups == 0 {
		t.Fatal("forgotten documents were not emitted again: the overflow count is wrong")
	}

	// The same read with room for the overlap: nothing twice, no overflow.
	h2, sink2 := overlapRead(t, c, 64)
	checkAllOnce(t, sink2.snapshot(), ids, true)
	if st := h2.r.Stats(); st.DedupOverflows != 0 {
		t.Fatalf("overflows %d with room for the window", st.DedupOverflows)
	}
}

// overlapRead follows the 40 documents of events with a dedup window of 4
// that may grow to max, pages of 10, until every one was read and a poll
// started after that ended.
func overlapRead(t *testing.T, c *ossim.Cluster, max int) (*harness, *idSink) {
	t.Helper()
	cfg := followConfig(c.Addrs(), "events")
	cfg.DedupWindow = 4
	cfg.MaxDedupWindow = max
	cfg.PageSize = 10
	sink := newIDSink()
	h := mustStart(t, cfg, sink, nil)
	waitFor(t, 10*time.Second, func() bool { return len(sink.snapshot()) == 40 })
	settle(t, h)
	return h, sink
}

func TestRewind(t *testing.T) {
	raw := func(s ...string) []json.RawMessage {
		out := make([]json.RawMessage, len(s))
		for i, v := range s {
			out[i] = json.RawMessage(v)
		}
		return out
	}
	for _, c := range []struct {
		in   []json.RawMessage
		want string
	}{
		{raw("1733047200000", `"ix"`, `"id"`), `[1733047194999,"ix","id"]`},             // ms: 5s + 1ms
		{raw("1733047200000000000", `"ix"`, `"id"`), `[1733047194999999999,"ix","id"]`}, // ns: 5s + 1ns
		{raw("9223372036854775807", `"ix"`, `"id"`), `[9223372036854775807,"ix","id"]`}, // missing time
		{nil, `null`},
	} {
		got, err := rewind(c.in, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(got)
		if string(b) != c.want {
			t.Errorf("rewind(%s) = %s, want %s", c.in, b, c.want)
		}
	}
	if _, err := rewind(raw(`"2026-12-01"`, `"id"`), time.Second); err == nil || !strings.Contains(err.Error(), "not an epoch integer") {
		t.Errorf("a formatted date: err = %v", err)
	}
}

func TestFollowSortMustStartWithTimeField(t *testing.T) {
	cfg := followConfig([]string{"http://127.0.0.1:9200"}, "events")
	cfg.Sort = `[{"n":"asc"},{"_id":"asc"}]`
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "sort: follow mode with a follow_lag needs the sort to start with time_field") {
		t.Fatalf("err = %v", err)
	}
	cfg.Sort = `[{"@timestamp":{"order":"desc"}},{"_id":"asc"}]`
	if err := cfg.Validate(); err == nil {
		t.Fatal("a descending time sort accepted")
	}
	cfg.FollowLag = 0
	if err := cfg.Validate(); err != nil {
		t.Fatalf("follow_lag 0 with any sort: %v", err)
	}
	cfg.FollowLag = time.Second
	cfg.Sort = `[{"@timestamp":"asc"},{"_id":"asc"}]`
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	cfg.DedupWindow = -1
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "dedup_window") {
		t.Fatalf("follow_lag without dedup: %v", err)
	}
}

func TestParseTimeValue(t *testing.T) {
	for in, want := range map[string]time.Duration{"1s": time.Second, "500ms": 500 * time.Millisecond, "2m": 2 * time.Minute, "-1": -1, "30s": 30 * time.Second} {
		if got, err := parseTimeValue(in); err != nil || got != want {
			t.Errorf("%s: %v %v", in, got, err)
		}
	}
	if _, err := parseTimeValue("soon"); err == nil {
		t.Error("soon accepted")
	}
}
