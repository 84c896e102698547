// Package jsonstr writes Go strings as JSON strings, the one way every
// encoder of this project does it. Invalid UTF-8 is written as U+FFFD, byte
// by byte, exactly as routing.SanitizeUTF8 (and encoding/json) replace it:
// the string the server decodes is the string routing.Hash hashed.
package jsonstr

import (
	"encoding/binary"
	"slices"
	"unicode/utf8"
)

const hexDigits = "0123456789abcdef"

// safe[c] is true for the ASCII bytes that stand for themselves inside a
// JSON string.
var safe = func() (t [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// Append writes s as a quoted JSON string: '"' and '\\' escaped, control
// characters as \n, \r, \t, \b, \f or \u00XX, every byte that is not part
// of valid UTF-8 replaced by U+FFFD. Everything else, including
// U+2028/U+2029, is copied.
//
// Like append, it may write into dst's spare capacity; unlike append, also
// past the end of what it returns (up to maxShort+2 bytes after len(dst)):
// nothing may be kept there.
func Append(dst []byte, s string) []byte {
	n, k := len(dst), len(s)
	if k > maxShort {
		// Most strings need no escaping at all: they are copied in one go.
		if !Plain(s) {
			return appendSlow(dst, s)
		}
		dst = slices.Grow(dst, k+2)[:n+k+2]
		dst[n] = '"'
		copy(dst[n+1:], s)
		dst[len(dst)-1] = '"'
		return dst
	}
	// Most keys and many values are short: they are tested and copied a
	// word at a time, in overlapping loads and stores (which may write past
	// the quoted string, inside dst's capacity), without calling memmove.
	if cap(dst)-n < maxShort+2 {
		dst = slices.Grow(dst, maxShort+2)
	}
	d := dst[n : n+maxShort+2 : n+maxShort+2]
	switch {
	case k >= 8:
		w1, w2 := word(s, 0), word(s, k-8)
		if !cleanWord(w1) || !cleanWord(w2) {
			return appendSlow(dst, s)
		}
		binary.LittleEndian.PutUint64(d[1:], w1)
		binary.LittleEndian.PutUint64(d[k-7:], w2)
	case k >= 4:
		w1, w2 := word4(s, 0), word4(s, k-4)
		if !cleanWord(uint64(w1) | uint64(w2)<<32) {
			return appendSlow(dst, s)
		}
		binary.LittleEndian.PutUint32(d[1:], w1)
		binary.LittleEndian.PutUint32(d[k-3:], w2)
	default:
		for i := 0; i < k; i++ {
			c := s[i]
			if !safe[c] {
				return appendSlow(dst, s)
			}
			d[1+i] = c
		}
	}
	d[0], d[k+1] = '"', '"'
	return dst[:n+k+2]
}

// maxShort is the longest string Append tests and copies a word at a time.
const maxShort = 16

// appendSlow is Append for a string that needs escaping somewhere.
func appendSlow(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start, i := 0, 0
	for i < len(s) {
		if i+8 <= len(s) && cleanWord(word(s, i)) {
			i += 8
			continue
		}
		c := s[i]
		if safe[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, "\uFFFD"...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// word is s[i:i+8] as a little-endian 64-bit word (the compiler makes it
// one load).
func word(s string, i int) uint64 {
	s = s[i : i+8]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// word4 is s[i:i+4] as a little-endian 32-bit word.
func word4(s string, i int) uint32 {
	s = s[i : i+4]
	return uint32(s[0]) | uint32(s[1])<<8 | uint32(s[2])<<16 | uint32(s[3])<<24
}

// cleanWord reports whether none of the 8 bytes of the word x needs
// escaping or UTF-8 checking: no control character, '"', '\\' or byte
// ≥ 0x80 (SWAR tests).
func cleanWord(x uint64) bool {
	const lo, hi = 0x0101010101010101, 0x8080808080808080
	q := x ^ (lo * '"')
	b := x ^ (lo * '\\')
	bad := x | // ≥ 0x80
		(x-lo*0x20) & ^x | // < 0x20 (exact once no byte is ≥ 0x80)
		(q-lo) & ^q | // == '"'
		(b-lo) & ^b // == '\\'
	return bad&hi == 0
}

// Plain reports whether s is written by Append exactly as itself between
// the quotes: printable ASCII without '"' or '\\'. From 8 bytes on it tests
// a word at a time, the last word overlapping the one before it.
func Plain(s string) bool {
	n := len(s)
	if n < 8 {
		for i := 0; i < n; i++ {
			if !safe[s[i]] {
				return false
			}
		}
		return true
	}
	for i := 0; i < n-8; i += 8 {
		if !cleanWord(word(s, i)) {
			return false
		}
	}
	return cleanWord(word(s, n-8))
}
