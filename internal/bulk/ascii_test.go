package bulk

import (
	"math/rand/v2"
	"testing"
)

func naivePlainPrefix(s []byte) int {
	for i, c := range s {
		if c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
			return i
		}
	}
	return len(s)
}

func TestPlainPrefix(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	special := []byte{0, 0x1f, 0x20, '"', '\\', 0x7f, 0x80, 0xff, '!', '#', '[', ']', 'a'}
	for n := 0; n < 20000; n++ {
		s := make([]byte, r.IntN(40))
		for i := range s {
			s[i] = byte('a' + r.IntN(26))
		}
		for k := r.IntN(3); k > 0 && len(s) > 0; k-- {
			s[r.IntN(len(s))] = special[r.IntN(len(special))]
		}
		if got, want := plainPrefix(s), naivePlainPrefix(s); got != want {
			t.Fatalf("plainPrefix(%q) = %d, want %d", s, got, want)
		}
		if got, want := plainPrefix(string(s)), naivePlainPrefix(s); got != want {
			t.Fatalf("plainPrefix(string %q) = %d, want %d", s, got, want)
		}
	}
	for c := 0; c < 256; c++ {
		for pos := 0; pos < 17; pos++ {
			s := []byte("abcdefghijklmnopq")
			s[pos] = byte(c)
			if got, want := plainPrefix(s), naivePlainPrefix(s); got != want {
				t.Fatalf("byte %#x at %d: %d, want %d", c, pos, got, want)
			}
		}
	}
}

func FuzzPlainPrefix(f *testing.F) {
	f.Add([]byte(`abc"def\ghi`))
	f.Fuzz(func(t *testing.T, s []byte) {
		if got, want := plainPrefix(s), naivePlainPrefix(s); got != want {
			t.Fatalf("plainPrefix(%q) = %d, want %d", s, got, want)
		}
	})
}
