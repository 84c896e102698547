package ss4o

import (
	"encoding/binary"
	"slices"
	"strconv"

	"github.com/zeebo/xxh3"
	"go.opentelemetry.io/collector/pdata/pcommon"
)

// ContentID is the 128-bit XXH3 hash (seed 0, high half then low half,
// big-endian) of an encoded document. The document holds the resource, the
// scope and every field of the record, so two records get the same
// ContentID exactly when SS4O cannot tell them apart (see the package
// documentation for the few distinctions it does not keep). The value depends
// on the encoding: a change of the layout changes every content id.
func ContentID(doc []byte) [16]byte {
	h := xxh3.Hash128(doc)
	var id [16]byte
	binary.BigEndian.PutUint64(id[:8], h.Hi)
	binary.BigEndian.PutUint64(id[8:], h.Lo)
	return id
}

// ContentIDLen is the length of a content id without an occurrence suffix.
const ContentIDLen = 22

// AppendID appends the document _id for a content hash: its 16 bytes in
// URL-safe base64 without padding (22 characters of A–Z, a–z, 0–9, '-' and
// '_'), followed by "-" and the decimal occurrence when occurrence > 0.
// That is the form of OpenSearch's own generated ids, which the server
// stores decoded (16 bytes instead of the 24 of 32 hex digits), and the
// shorter the id, the less there is to send and to hash for routing.
// occurrence counts earlier exact repeats of the same content in one export
// call (see Repeats): a resend of the same call yields the same ids, and a
// record genuinely repeated n times gets n distinct ids. It panics when
// occurrence < 0.
func AppendID(dst []byte, hash [16]byte, occurrence int) []byte {
	if occurrence < 0 {
		panic("ss4o: negative occurrence " + strconv.Itoa(occurrence))
	}
	dst = appendBase64URL(dst, &hash)
	if occurrence > 0 {
		dst = append(dst, '-')
		dst = strconv.AppendInt(dst, int64(occurrence), 10)
	}
	return dst
}

// base64URL is the URL-safe base64 alphabet (RFC 4648, section 5).
const base64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// base64Pairs[v] is the two characters of the 12-bit value v, the first in
// the low byte (8 KiB).
var base64Pairs = func() (t [1 << 12]uint16) {
	for v := range t {
		t[v] = uint16(base64URL[v>>6]) | uint16(base64URL[v&63])<<8
	}
	return t
}()

// appendBase64URL writes h in URL-safe base64 without padding, as
// base64.RawURLEncoding does (TestAppendBase64URL), two characters per
// step: ten 12-bit groups, then the last byte's two characters.
func appendBase64URL(dst []byte, h *[16]byte) []byte {
	n := len(dst)
	dst = slices.Grow(dst, ContentIDLen)[:n+ContentIDLen]
	out := dst[n : n+ContentIDLen : n+ContentIDLen]
	hi, lo := binary.BigEndian.Uint64(h[:8]), binary.BigEndian.Uint64(h[8:])
	t := &base64Pairs
	binary.LittleEndian.PutUint16(out[0:], t[hi>>52])
	binary.LittleEndian.PutUint16(out[2:], t[hi>>40&0xfff])
	binary.LittleEndian.PutUint16(out[4:], t[hi>>28&0xfff])
	binary.LittleEndian.PutUint16(out[6:], t[hi>>16&0xfff])
	binary.LittleEndian.PutUint16(out[8:], t[hi>>4&0xfff])
	binary.LittleEndian.PutUint16(out[10:], t[(hi<<8|lo>>56)&0xfff])
	binary.LittleEndian.PutUint16(out[12:], t[lo>>44&0xfff])
	binary.LittleEndian.PutUint16(out[14:], t[lo>>32&0xfff])
	binary.LittleEndian.PutUint16(out[16:], t[lo>>20&0xfff])
	binary.LittleEndian.PutUint16(out[18:], t[lo>>8&0xfff])
	binary.LittleEndian.PutUint16(out[20:], t[lo<<4&0xff0]) // the last byte and four zero bits
	return dst
}

// AppendSpanID appends a span's document _id: the 32 hex digits of the trace
// id followed by the 16 hex digits of the span id.
func AppendSpanID(dst []byte, traceID pcommon.TraceID, spanID pcommon.SpanID) []byte {
	dst = appendHex(dst, traceID[:])
	return appendHex(dst, spanID[:])
}

// Repeats numbers the occurrences of content hashes within one export call.
// The zero value is ready to use. Reset between calls keeps its memory and
// costs nothing: entries of earlier generations read as empty. Not safe for
// concurrent use.
type Repeats struct {
	slots []repeatSlot // open addressing, linear probing; len is a power of two
	used  int          // slots of the current generation
	gen   uint32
}

type repeatSlot struct {
	hash [16]byte
	n    int32
	gen  uint32 // the slot is in use when gen == Repeats.gen
}

// Next returns how many times hash was passed to Next since the last Reset
// (0 the first time) and counts this occurrence.
func (r *Repeats) Next(hash [16]byte) int {
	if r.gen == 0 {
		r.gen = 1
	}
	if 2*(r.used+1) > len(r.slots) {
		r.grow()
	}
	mask := uint64(len(r.slots) - 1)
	// The hash is uniform: its first 8 bytes pick the slot.
	i := binary.LittleEndian.Uint64(hash[:8]) & mask
	for {
		sl := &r.slots[i]
		if sl.gen != r.gen {
			*sl = repeatSlot{hash: hash, n: 1, gen: r.gen}
			r.used++
			return 0
		}
		if sl.hash == hash {
			sl.n++
			return int(sl.n - 1)
		}
		i = (i + 1) & mask
	}
}

func (r *Repeats) grow() {
	old := r.slots
	r.slots = make([]repeatSlot, max(256, 2*len(old)))
	mask := uint64(len(r.slots) - 1)
	for _, sl := range old {
		if sl.gen != r.gen {
			continue
		}
		i := binary.LittleEndian.Uint64(sl.hash[:8]) & mask
		for r.slots[i].gen == r.gen {
			i = (i + 1) & mask
		}
		r.slots[i] = sl
	}
}

// Reset forgets every hash.
func (r *Repeats) Reset() {
	r.used = 0
	r.gen++
	if r.gen == 0 { // wrapped: old generations could read as current
		clear(r.slots)
		r.gen = 1
	}
}
