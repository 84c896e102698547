package jsonstr

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/opensearchrouted/opensearchrouted/internal/routing"
)

func check(t *testing.T, s string) {
	t.Helper()
	out := Append(nil, s)
	if !json.Valid(out) || !utf8.Valid(out) {
		t.Fatalf("Append(%q) = %q: not valid JSON/UTF-8", s, out)
	}
	var back string
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatal(err)
	}
	if back != routing.SanitizeUTF8(s) {
		t.Fatalf("Append(%q) decodes to %q, want %q", s, back, routing.SanitizeUTF8(s))
	}
	if routing.Hash(back) != routing.Hash(s) {
		t.Fatalf("the server would hash %q differently from %q", back, s)
	}
}

func TestAppend(t *testing.T) {
	for _, s := range []string{"", "plain", `q"b\s`, "\n\r\t\b\f\x00\x1f\x7f", "é日本𝄞", "bad\xff\xfe", "\xed\xa0\x80", "\u2028\u2029", "<&>"} {
		check(t, s)
	}
	if got := string(Append([]byte("x"), "a\"b")); got != `x"a\"b"` {
		t.Fatalf("got %s", got)
	}
	if a := testing.AllocsPerRun(100, func() { _ = Append(make([]byte, 0, 64), "hello \"world\"\n") }); a > 1 {
		t.Fatalf("%v allocs", a)
	}
}

func FuzzAppend(f *testing.F) {
	f.Add("hello")
	f.Add("a\xffb\"\n")
	f.Fuzz(func(t *testing.T, s string) { check(t, s) })
}

// TestCleanWord checks the word-at-a-time test against the byte table for
// every byte value at every position of a word, alone and next to another
// byte that needs attention.
func TestCleanWord(t *testing.T) {
	want := func(b []byte) bool {
		for _, c := range b {
			if !safe[c] {
				return false
			}
		}
		return true
	}
	for pos := 0; pos < 8; pos++ {
		for v := 0; v < 256; v++ {
			for _, other := range []byte{'a', 0x00, 0x1f, 0x20, '"', '\\', 0x7f, 0x80, 0xff} {
				b := []byte("abcdefgh")
				b[pos] = byte(v)
				b[(pos+3)%8] = other
				if got := cleanWord(word(string(b), 0)); got != want(b) {
					t.Fatalf("cleanWord(%q) = %v", b, got)
				}
			}
		}
	}
}

func TestPlain(t *testing.T) {
	hex := "0123456789abcdef0123456789abcdef"
	for s, want := range map[string]bool{"": true, "0af-9_Z ~": true, `a"b`: false, `a\b`: false, "a\nb": false, "é": false, "\x7f": true,
		hex: true, hex[:20] + `"` + hex[21:]: false, hex[:15] + "é" + hex[17:]: false, hex[:31] + "\\": false, hex + "\x01": false} {
		if got := Plain(s); got != want {
			t.Errorf("Plain(%q) = %v", s, got)
		}
		if got := string(Append(nil, s)) == `"`+s+`"`; Plain(s) && !got {
			t.Errorf("Plain(%q) but Append escapes it", s)
		}
	}
}

// TestPlainEveryPosition checks Plain against the byte table for every
// length up to 40 with one byte that needs attention at every position, so
// that every word, the overlapping last one and the short-string loop are
// each the one that must find it.
func TestPlainEveryPosition(t *testing.T) {
	for n := 0; n <= 40; n++ {
		clean := make([]byte, n)
		for i := range clean {
			clean[i] = byte('a' + i%26)
		}
		if !Plain(string(clean)) {
			t.Fatalf("Plain(%q) = false", clean)
		}
		for pos := 0; pos < n; pos++ {
			for _, bad := range []byte{0x00, 0x1f, '"', '\\', 0x80, 0xff} {
				b := append([]byte(nil), clean...)
				b[pos] = bad
				if Plain(string(b)) {
					t.Fatalf("Plain(%q) = true", b)
				}
				check(t, string(b))
			}
		}
	}
}

// BenchmarkAppend writes the strings of a typical log record: short
// attribute keys and values, a sentence-long body.
func BenchmarkAppend(b *testing.B) {
	strs := []string{"seq", "http.method", "GET", "ok", "latency", "path", "/api/v1/items", "Info", "log message number 12345 with some text"}
	buf := make([]byte, 0, 256)
	for i := 0; i < b.N; i++ {
		buf = buf[:0]
		for _, s := range strs {
			buf = Append(buf, s)
		}
	}
}

// TestAppendShortEveryPosition checks the word-at-a-time path for short
// strings against the general one (appendSlow): every length up to a few
// past maxShort, every position of a byte that needs attention (or is
// fine), onto a prefix with no spare capacity and onto one with plenty.
func TestAppendShortEveryPosition(t *testing.T) {
	specials := []byte{0x00, 0x1f, ' ', '"', '\\', 'a', 0x7e, 0x7f, 0x80, 0xc3, 0xff}
	for k := 0; k <= maxShort+3; k++ {
		for pos := 0; pos < max(k, 1); pos++ {
			for _, c := range specials {
				b := []byte("abcdefghijklmnopqrstuvwxyz"[:k])
				if k > 0 {
					b[pos] = c
				}
				s := string(b)
				want := string(appendSlow([]byte("pre"), s))
				tight := make([]byte, 3, 3)
				copy(tight, "pre")
				roomy := make([]byte, 3, 64)
				copy(roomy, "pre")
				for _, dst := range [][]byte{tight, roomy} {
					if got := string(Append(dst, s)); got != want {
						t.Fatalf("Append(%q) = %q, want %q", s, got, want)
					}
				}
			}
		}
	}
}
