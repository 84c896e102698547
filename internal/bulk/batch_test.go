package bulk

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// sanitize replaces each byte that is not valid UTF-8 by U+FFFD (what
// routing.SanitizeUTF8 does; kept local so this package's tests do not
// depend on routing's work in progress).
func sanitize(s string) string {
	var sb strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			sb.WriteRune(utf8.RuneError)
		} else {
			sb.WriteString(s[i : i+size])
		}
		i += size
	}
	return sb.String()
}

func add(t testing.TB, b *Batch, index, id, src string) int32 {
	t.Helper()
	buf := b.Begin(index, id)
	buf = append(buf, src...)
	n, err := b.Commit(buf)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

type action struct {
	Create *struct {
		Index *string `json:"_index"`
		ID    *string `json:"_id"`
	} `json:"create"`
}

func TestBatchItems(t *testing.T) {
	var b Batch
	ids := []string{"plain", "", `q"uote\back`, "tab\tnl\nctl\x01\x1f", "bad\xffutf8\xc3", "ünïcødé😀", "\u2028"}
	for i, id := range ids {
		if n := add(t, &b, "logs-"+string(rune('a'+i)), id, `{"n":`+string(rune('0'+i))+`}`); n != int32(i) {
			t.Fatalf("item number %d, want %d", n, i)
		}
	}
	if b.Len() != len(ids) {
		t.Fatal(b.Len())
	}
	total := 0
	for i, id := range ids {
		index, gotID, size := b.Item(int32(i))
		if index != "logs-"+string(rune('a'+i)) || gotID != id {
			t.Errorf("Item(%d) = %q %q", i, index, gotID)
		}
		raw := b.Bytes(int32(i))
		if len(raw) != size {
			t.Errorf("size %d, bytes %d", size, len(raw))
		}
		total += size
		lines := bytes.Split(raw, []byte("\n"))
		if len(lines) != 3 || len(lines[2]) != 0 {
			t.Fatalf("item %d is not two lines: %q", i, raw)
		}
		var a action
		if err := json.Unmarshal(lines[0], &a); err != nil {
			t.Fatalf("action line %q: %v", lines[0], err)
		}
		if a.Create == nil || a.Create.Index == nil || *a.Create.Index != index {
			t.Fatalf("action line %q", lines[0])
		}
		if id == "" {
			if a.Create.ID != nil {
				t.Errorf("empty id written: %q", lines[0])
			}
		} else if a.Create.ID == nil || *a.Create.ID != sanitize(id) {
			t.Errorf("id %q decoded as %v (want %q)", id, a.Create.ID, sanitize(id))
		}
		if !json.Valid(lines[1]) {
			t.Errorf("source %q", lines[1])
		}
	}
	if b.Size() != total {
		t.Fatalf("Size %d, sum of items %d", b.Size(), total)
	}
}

func TestBatchCommitChecks(t *testing.T) {
	var b Batch
	add(t, &b, "i", "1", `{"a":1}`)
	size := b.Size()

	if _, err := b.Commit(nil); err != ErrNotBegun {
		t.Fatalf("Commit without Begin: %v", err)
	}
	for _, tc := range []struct{ index, src string }{
		{"", `{"a":1}`},
		{"i", ``},
		{"i", `   `},
		{"i", `[1]`},
		{"i", `"s"`},
	} {
		buf := append(b.Begin(tc.index, "x"), tc.src...)
		if n, err := b.Commit(buf); err == nil || n != -1 {
			t.Errorf("Commit(%q, %q) = %d, %v; want an error", tc.index, tc.src, n, err)
		}
		if b.Size() != size || b.Len() != 1 || len(b.arena) != size {
			t.Fatalf("refused item left bytes behind: %d, %d", len(b.arena), size)
		}
	}
	// Raw newlines in a source become spaces; the item stays two lines.
	n := add(t, &b, "i", "2", "{\n\"a\":\n1}\n")
	if got := string(b.Bytes(n)); got != `{"create":{"_index":"i","_id":"2"}}`+"\n"+`{ "a": 1} `+"\n" {
		t.Fatalf("%q", got)
	}
	// A second Begin discards the open item.
	_ = append(b.Begin("i", "dropped"), `{"x":1}`...)
	add(t, &b, "i", "3", `{}`)
	if b.Len() != 3 || bytes.Contains(b.arena, []byte("dropped")) {
		t.Fatalf("discarded item kept: %q", b.arena)
	}
	_ = b.Begin("i", "aborted")
	b.Abort()
	if bytes.Contains(b.arena, []byte("aborted")) {
		t.Fatal("Abort kept the item")
	}
}

func TestBatchZeroAllocs(t *testing.T) {
	var b Batch
	src := []byte(`{"@timestamp":"2024-01-01T00:00:00Z","body":"` + strings.Repeat("x", 200) + `"}`)
	fill := func() {
		b.Reset()
		for i := 0; i < 1000; i++ {
			buf := b.Begin("ss4o_logs-default-namespace", "0123456789abcdef0123456789abcdef")
			buf = append(buf, src...)
			if _, err := b.Commit(buf); err != nil {
				t.Fatal(err)
			}
		}
	}
	fill()
	capBefore := cap(b.arena)
	if a := testing.AllocsPerRun(10, fill); a != 0 {
		t.Fatalf("%v allocations per 1000 items after warm-up", a)
	}
	if cap(b.arena) != capBefore {
		t.Fatal("Reset did not keep the arena")
	}
}

func TestSplit(t *testing.T) {
	var b Batch
	var all []int32
	for i := 0; i < 50; i++ {
		src := `{"v":"` + strings.Repeat("y", (i*37)%120) + `"}`
		if i == 20 {
			src = `{"big":"` + strings.Repeat("z", 1000) + `"}`
		}
		all = append(all, add(t, &b, "i", "", src))
	}
	// A node's items: every other item, in order.
	var items []int32
	for i := 0; i < len(all); i += 2 {
		items = append(items, all[i])
	}
	for _, maxBytes := range []int{1, 100, 300, 1000, 5000, 1 << 20, 0, -1} {
		subs := Split(&b, items, maxBytes, nil)
		var joined []int32
		for _, s := range subs {
			if len(s) == 0 {
				t.Fatal("empty sub-bulk")
			}
			size := 0
			for _, it := range s {
				_, _, sz := b.Item(it)
				size += sz
			}
			if maxBytes > 0 && size > maxBytes && len(s) != 1 {
				t.Fatalf("max %d: sub-bulk of %d items has %d bytes", maxBytes, len(s), size)
			}
			if cap(s) != len(s) {
				t.Fatal("sub-bulk not capped")
			}
			joined = append(joined, s...)
		}
		if !equalInt32(joined, items) {
			t.Fatalf("max %d: split lost or reordered items", maxBytes)
		}
		if maxBytes <= 0 && len(subs) != 1 {
			t.Fatalf("no limit gave %d sub-bulks", len(subs))
		}
		// Greedy: no two neighbouring sub-bulks would fit together.
		for k := 1; maxBytes > 0 && k < len(subs); k++ {
			size := 0
			for _, it := range append(append([]int32{}, subs[k-1]...), subs[k][0]) {
				_, _, sz := b.Item(it)
				size += sz
			}
			if size <= maxBytes {
				t.Fatalf("max %d: cut too early", maxBytes)
			}
		}
	}
	if got := Split(&b, nil, 10, make([][]int32, 3)); len(got) != 0 {
		t.Fatal("split of nothing")
	}
}

func equalInt32(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func FuzzActionLine(f *testing.F) {
	for _, s := range []string{"", "a", `"\`, "\x00\x7f\x80\xff", "é😀\u2028", "\xed\xa0\x80"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, index, id string) {
		if index == "" {
			index = "i"
		}
		var b Batch
		buf := append(b.Begin(index, id), `{}`...)
		n, err := b.Commit(buf)
		if err != nil {
			t.Fatal(err)
		}
		line, _, _ := bytes.Cut(b.Bytes(n), []byte("\n"))
		var a action
		if err := json.Unmarshal(line, &a); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if *a.Create.Index != sanitize(index) {
			t.Fatalf("index %q decoded as %q", index, *a.Create.Index)
		}
		if id != "" && *a.Create.ID != sanitize(id) || id == "" && a.Create.ID != nil {
			t.Fatalf("id %q decoded as %v", id, a.Create.ID)
		}
	})
}

// TestBeginSized checks that an item whose id is written after its source
// is byte for byte the item Begin would have made, and that an id that does
// not fit is refused without leaving anything behind.
func TestBeginSized(t *testing.T) {
	var want, b Batch
	add(t, &want, "logs", "0123456789abcdef", `{"a":1}`)
	add(t, &want, "logs", "x", `{"b":2}`)
	buf := b.BeginSized("logs", 16)
	buf = append(buf, `{"a":1}`...)
	if got := string(b.OpenSource(buf)); got != `{"a":1}` {
		t.Fatalf("OpenSource = %q", got)
	}
	if n, err := b.CommitID(buf, "0123456789abcdef"); err != nil || n != 0 {
		t.Fatal(n, err)
	}
	size := b.Size()
	for _, bad := range []string{"short", "0123456789abcdef0", `0123456789abcde"`, "0123456789abcd\n\n"} {
		buf := b.BeginSized("logs", 16)
		buf = append(buf, `{"bad":true}`...)
		if _, err := b.CommitID(buf, bad); err == nil {
			t.Fatalf("CommitID(%q) accepted", bad)
		}
		if b.Len() != 1 || b.Size() != size || len(b.arena) != size {
			t.Fatalf("refused id %q left bytes behind", bad)
		}
	}
	buf = b.Begin("logs", "x")
	if _, err := b.CommitID(append(buf, `{"b":2}`...), "x"); err == nil {
		t.Fatal("CommitID after Begin accepted")
	}
	add(t, &b, "logs", "x", `{"b":2}`)
	if !bytes.Equal(b.arena, want.arena) {
		t.Fatalf("BeginSized items:\n%s\nBegin items:\n%s", b.arena, want.arena)
	}
	if _, id, _ := b.Item(0); id != "0123456789abcdef" {
		t.Fatalf("id %q", id)
	}
	// A reserved place longer than the filler constant.
	long := strings.Repeat("ab", 25)
	var want2, b2 Batch
	add(t, &want2, "logs", long, `{"c":3}`)
	buf = b2.BeginSized("logs", len(long))
	if _, err := b2.CommitID(append(buf, `{"c":3}`...), long); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b2.arena, want2.arena) {
		t.Fatalf("long id:\n%s\nwant\n%s", b2.arena, want2.arena)
	}
}

// TestCommitCompact checks that CommitCompact makes the item CommitID makes
// for a compact source and a plain id, and that it still refuses what it
// checks: an id of the wrong length, a source that is not an object, an
// empty index, an item not opened by BeginSized.
func TestCommitCompact(t *testing.T) {
	var want, b Batch
	add(t, &want, "logs", "0123456789abcdef", `{"a":"x\ny"}`)
	buf := b.BeginSized("logs", 16)
	if _, err := b.CommitCompact(append(buf, `{"a":"x\ny"}`...), "0123456789abcdef"); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b.arena, want.arena) {
		t.Fatalf("CommitCompact item:\n%s\nwant\n%s", b.arena, want.arena)
	}
	size := b.Size()
	for name, commit := range map[string]func() error{
		"short id": func() error {
			_, err := b.CommitCompact(append(b.BeginSized("logs", 16), `{}`...), "0123")
			return err
		},
		"long id": func() error {
			_, err := b.CommitCompact(append(b.BeginSized("logs", 4), `{}`...), "01234")
			return err
		},
		"empty id": func() error {
			_, err := b.CommitCompact(append(b.BeginSized("logs", 0), `{}`...), "")
			return err
		},
		"empty id, CommitID": func() error {
			_, err := b.CommitID(append(b.BeginSized("logs", 0), `{}`...), "")
			return err
		},
		"not an object": func() error {
			_, err := b.CommitCompact(append(b.BeginSized("logs", 4), `[1]`...), "0123")
			return err
		},
		"empty index": func() error {
			_, err := b.CommitCompact(append(b.BeginSized("", 4), `{}`...), "0123")
			return err
		},
		"after Begin": func() error {
			_, err := b.CommitCompact(append(b.Begin("logs", "0123"), `{}`...), "0123")
			return err
		},
	} {
		if err := commit(); err == nil {
			t.Fatalf("%s: accepted", name)
		}
		if b.Len() != 1 || b.Size() != size || len(b.arena) != size {
			t.Fatalf("%s: refused item left bytes behind", name)
		}
	}
}

// TestItemsViewWhileSourceGrows takes views of a Batch's items as they are
// committed and appends them to another Batch on another goroutine while
// the first goes on committing (growing, so reallocating, its arena and
// item table): the second must end up with every item, bytes, index and id
// intact, in order (run with -race).
func TestItemsViewWhileSourceGrows(t *testing.T) {
	src := new(Batch)
	views := make(chan Items, 64)
	go func() {
		defer close(views)
		for chunk := 0; chunk < 40; chunk++ {
			first := src.Len()
			for k := 0; k < 25; k++ {
				n := chunk*25 + k
				buf := src.Begin(fmt.Sprintf("logs-%d", n%3), fmt.Sprintf("id-%d", n))
				buf = fmt.Appendf(buf, `{"n":%d,"pad":"%s"}`, n, strings.Repeat("x", n%97))
				if _, err := src.Commit(buf); err != nil {
					t.Error(err)
					return
				}
			}
			views <- src.Items(first, src.Len())
		}
	}()
	var dst Batch
	for v := range views {
		if v.Len() != 25 {
			t.Fatalf("view of %d items, want 25", v.Len())
		}
		dst.AppendItems(v)
	}
	if dst.Len() != 1000 || dst.Size() != src.Size() {
		t.Fatalf("%d items, %d bytes; want 1000, %d", dst.Len(), dst.Size(), src.Size())
	}
	for i := int32(0); i < 1000; i++ {
		index, id, _ := dst.Item(i)
		want := fmt.Sprintf(`{"create":{"_index":"logs-%d","_id":"id-%d"}}`+"\n"+`{"n":%d,"pad":"%s"}`+"\n", i%3, i, i, strings.Repeat("x", int(i)%97))
		if index != fmt.Sprintf("logs-%d", i%3) || id != fmt.Sprintf("id-%d", i) || string(dst.Bytes(i)) != want {
			t.Fatalf("item %d: %q %q %q", i, index, id, dst.Bytes(i))
		}
	}
}

func TestBatchReplaceAndSource(t *testing.T) {
	var b Batch
	buf := b.Begin("logs", "a")
	if _, err := b.Commit(append(buf, `{"x":1}`...)); err != nil {
		t.Fatal(err)
	}
	buf = b.Begin("logs", "b")
	if _, err := b.Commit(append(buf, `{"y":2}`...)); err != nil {
		t.Fatal(err)
	}
	orig := b.Source(0)
	if string(orig) != `{"x":1}` {
		t.Fatalf("source %q", orig)
	}
	if err := b.Replace(0, "dlq", "z\"q", []byte("{\"doc\":\n\"s\"}")); err != nil {
		t.Fatal(err)
	}
	if got := string(b.Bytes(0)); got != "{\"create\":{\"_index\":\"dlq\",\"_id\":\"z\\\"q\"}}\n{\"doc\": \"s\"}\n" {
		t.Fatalf("replaced item %q", got)
	}
	if index, id, size := b.Item(0); index != "dlq" || id != "z\"q" || size != len(b.Bytes(0)) {
		t.Fatalf("item %q %q %d", index, id, size)
	}
	if string(orig) != `{"x":1}` || string(b.Source(1)) != `{"y":2}` {
		t.Fatalf("old source %q, neighbour %q", orig, b.Source(1))
	}
	if b.Size() != len(b.Bytes(0))+len(b.Bytes(1)) {
		t.Fatalf("size %d", b.Size())
	}
	if err := b.Replace(1, "", "", []byte(`{}`)); err == nil {
		t.Fatal("empty index accepted")
	}
	if err := b.Replace(1, "x", "", []byte(`[1]`)); err == nil {
		t.Fatal("non-object source accepted")
	}
	if string(b.Source(1)) != `{"y":2}` {
		t.Fatalf("refused Replace changed the item: %q", b.Source(1))
	}
	if b.Replace(1, "x", "", []byte(`{"k":1}`)) != nil || string(b.Bytes(1)) != "{\"create\":{\"_index\":\"x\"}}\n{\"k\":1}\n" {
		t.Fatalf("no-id replace %q", b.Bytes(1))
	}
}
