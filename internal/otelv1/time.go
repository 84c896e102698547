package otelv1

import (
	"errors"
	"math"
	"time"
)

// maxDateNanos is the last instant an OpenSearch date_nanos field holds,
// 2262-04-11T23:47:16.854775807Z (math.MaxInt64 nanoseconds after the
// epoch). A later time is written as this instant and kept exactly under
// roundTrip.
const maxDateNanos = math.MaxInt64

// clock writes times as Java's Instant.toString does (which is what Data
// Prepper writes): "YYYY-MM-DDThh:mm:ss" in UTC, then no fraction when the
// nanoseconds are zero, else 3, 6 or 9 digits (the fewest groups of three
// that hold it exactly), then "Z". The date and time of the last second
// written are kept, so spans stamped within one second format only their
// fraction.
type clock struct {
	sec    uint64
	prefix [20]byte // "YYYY-MM-DDThh:mm:ss with its opening quote
	valid  bool
}

// appendTime writes ns (clamped to maxDateNanos) as a quoted string.
func (c *clock) appendTime(dst []byte, ns uint64) []byte {
	if ns > maxDateNanos {
		ns = maxDateNanos
	}
	secs, frac := ns/1e9, ns%1e9
	if !c.valid || c.sec != secs {
		c.setSecond(secs)
	}
	dst = append(dst, c.prefix[:]...)
	switch {
	case frac == 0:
	case frac%1_000_000 == 0:
		dst = append(dst, '.')
		dst = append3(dst, frac/1_000_000)
	case frac%1_000 == 0:
		dst = append(dst, '.')
		dst = append3(dst, frac/1_000_000)
		dst = append3(dst, frac/1_000%1_000)
	default:
		dst = append(dst, '.')
		dst = append3(dst, frac/1_000_000)
		dst = append3(dst, frac/1_000%1_000)
		dst = append3(dst, frac%1_000)
	}
	return append(dst, 'Z', '"')
}

// append3 writes v (below 1000) as three digits.
func append3(dst []byte, v uint64) []byte {
	r := v % 100
	return append(dst, byte('0'+v/100), digitPairs[2*r], digitPairs[2*r+1])
}

func (c *clock) setSecond(secs uint64) {
	t := time.Unix(int64(secs), 0).UTC()
	y, mo, d := t.Date()
	h, mi, s := t.Clock()
	b := &c.prefix
	b[0] = '"'
	put2(b[1:], uint64(y)/100)
	put2(b[3:], uint64(y)%100)
	b[5] = '-'
	put2(b[6:], uint64(mo))
	b[8] = '-'
	put2(b[9:], uint64(d))
	b[11] = 'T'
	put2(b[12:], uint64(h))
	b[14] = ':'
	put2(b[15:], uint64(mi))
	b[17] = ':'
	put2(b[18:], uint64(s))
	c.sec, c.valid = secs, true
}

func put2(b []byte, v uint64) { b[0], b[1] = digitPairs[2*v], digitPairs[2*v+1] }

// digitPairs holds the two decimal digits of 0 to 99, in order.
var digitPairs = func() (t [200]byte) {
	for i := range 100 {
		t[2*i], t[2*i+1] = byte('0'+i/10), byte('0'+i%10)
	}
	return t
}()

var errTimeRange = errors.New("time before 1970-01-01T00:00:00Z or after 2262-04-11T23:47:16.854775807Z")

// parseTime reads an RFC 3339 time (any fraction length, "Z" or an offset,
// as Data Prepper and this package write) into nanoseconds since the epoch.
func parseTime(s string) (uint64, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, err
	}
	if t.Before(time.Unix(0, 0)) || t.After(time.Unix(0, maxDateNanos)) {
		return 0, errTimeRange
	}
	return uint64(t.UnixNano()), nil
}
