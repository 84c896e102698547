package ss4o

import (
	"errors"
	"math"
	"math/bits"
	"time"
)

// appendTime writes ns (nanoseconds since the Unix epoch, UTC) as a quoted
// RFC 3339 timestamp exactly as time.RFC3339Nano formats it in UTC: trailing
// zeros of the fraction removed, no fraction when it is zero, "Z" as zone.
// Every uint64 value (up to year 2554) has a four-digit year.
func appendTime(dst []byte, ns uint64) []byte {
	var c clock
	return c.appendTime(dst, ns)
}

// clock is appendTime with a memory: the records of one export call are
// mostly stamped within the same second, so the date and time of the last
// second written are kept and only the fraction is formatted again.
type clock struct {
	sec    uint64
	prefix [20]byte // "YYYY-MM-DDThh:mm:ss with its opening quote
	valid  bool
}

func (c *clock) appendTime(dst []byte, ns uint64) []byte {
	secs, frac := ns/1e9, ns%1e9
	if !c.valid || c.sec != secs {
		c.setSecond(secs)
	}
	n := len(dst)
	dst = append(dst, c.prefix[:]...)
	dst = append(dst, `.000000000Z"`...)
	b := dst[n : n+32 : n+32]
	if frac == 0 {
		b[20], b[21] = 'Z', '"'
		return dst[:n+22]
	}
	// The fraction in groups of three digits: one group for a whole
	// millisecond, two for a whole microsecond, else three; then the
	// trailing zeros of the last group are dropped (frac > 0, so a digit
	// other than zero stays).
	end := 30
	switch {
	case frac%1_000_000 == 0:
		put3(b[21:], frac/1_000_000)
		end = 24
	case frac%1_000 == 0:
		us := frac / 1_000
		put3(b[21:], us/1_000)
		put3(b[24:], us%1_000)
		end = 27
	default:
		put3(b[21:], frac/1_000_000)
		put3(b[24:], frac/1_000%1_000)
		put3(b[27:], frac%1_000)
	}
	for b[end-1] == '0' {
		end--
	}
	b[end], b[end+1] = 'Z', '"'
	return dst[:n+end+2]
}

// put3 writes v (below 1000) as three digits into b[0:3].
func put3(b []byte, v uint64) {
	b = b[:3]
	r := v % 100
	b[0], b[1], b[2] = byte('0'+v/100), pairs[2*r], pairs[2*r+1]
}

// setSecond formats the date and time of secs into c.prefix.
func (c *clock) setSecond(secs uint64) {
	days, rem := secs/86400, secs%86400
	y, m, d := civil(days)
	b := &c.prefix
	copy(b[:], `"0000-00-00T00:00:00`)
	hi, lo := y/100, y%100
	b[1], b[2] = pairs[2*hi], pairs[2*hi+1]
	b[3], b[4] = pairs[2*lo], pairs[2*lo+1]
	b[6], b[7] = pairs[2*m], pairs[2*m+1]
	b[9], b[10] = pairs[2*d], pairs[2*d+1]
	h, mi, s := rem/3600, rem/60%60, rem%60
	b[12], b[13] = pairs[2*h], pairs[2*h+1]
	b[15], b[16] = pairs[2*mi], pairs[2*mi+1]
	b[18], b[19] = pairs[2*s], pairs[2*s+1]
	c.sec, c.valid = secs, true
}

// pairs holds "00" to "99": two decimal digits per lookup.
const pairs = "00010203040506070809" +
	"10111213141516171819" +
	"20212223242526272829" +
	"30313233343536373839" +
	"40414243444546474849" +
	"50515253545556575859" +
	"60616263646566676869" +
	"70717273747576777879" +
	"80818283848586878889" +
	"90919293949596979899"

// civil converts days since 1970-01-01 to a proleptic Gregorian date
// (H. Hinnant's days-to-civil algorithm, for non-negative days).
func civil(days uint64) (y, m, d uint64) {
	z := days + 719468
	era := z / 146097
	doe := z - era*146097
	yoe := (doe - doe/1460 + doe/36524 - doe/146096) / 365
	y = yoe + era*400
	doy := doe - (365*yoe + yoe/4 - yoe/100)
	mp := (5*doy + 2) / 153
	d = doy - (153*mp+2)/5 + 1
	if mp < 10 {
		m = mp + 3
	} else {
		m = mp - 9
	}
	if m <= 2 {
		y++
	}
	return y, m, d
}

// daysFromCivil is the inverse of civil for years ≥ 1970.
func daysFromCivil(y, m, d uint64) uint64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	yoe := y - era*400
	var mp uint64
	if m > 2 {
		mp = m - 3
	} else {
		mp = m + 9
	}
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}

// maxSecs is the largest whole second whose nanoseconds fit a uint64.
const maxSecs = math.MaxUint64 / 1_000_000_000

var errTimeRange = errors.New("timestamp outside 1970-01-01T00:00:00Z … 2554-07-21T23:34:33.709551615Z")

// parseTime reads an RFC 3339 timestamp into nanoseconds since the epoch.
// The form appendTime writes is parsed directly; any other RFC 3339 form
// (a numeric zone offset, lower-case letters) goes through time.Parse.
func parseTime(s string) (uint64, error) {
	if ns, ok := parseOwnTime(s); ok {
		return ns, nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, err
	}
	secs := t.Unix()
	if secs < 0 || uint64(secs) > maxSecs {
		return 0, errTimeRange
	}
	hi, lo := bits.Mul64(uint64(secs), 1e9)
	sum, carry := bits.Add64(lo, uint64(t.Nanosecond()), 0)
	if hi != 0 || carry != 0 {
		return 0, errTimeRange
	}
	return sum, nil
}

// parseOwnTime parses "YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z" with year ≥ 1970.
func parseOwnTime(s string) (uint64, bool) {
	if len(s) < 20 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' || s[len(s)-1] != 'Z' {
		return 0, false
	}
	num := func(a, b int) (uint64, bool) {
		var v uint64
		for i := a; i < b; i++ {
			c := s[i]
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + uint64(c-'0')
		}
		return v, true
	}
	y, ok1 := num(0, 4)
	mo, ok2 := num(5, 7)
	d, ok3 := num(8, 10)
	h, ok4 := num(11, 13)
	mi, ok5 := num(14, 16)
	sec, ok6 := num(17, 19)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) || y < 1970 || mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) || h > 23 || mi > 59 || sec > 59 {
		return 0, false
	}
	var frac uint64
	switch rest := s[19 : len(s)-1]; {
	case rest == "":
	case len(rest) >= 2 && len(rest) <= 10 && rest[0] == '.':
		f, ok := num(20, len(s)-1)
		if !ok {
			return 0, false
		}
		for range 10 - len(rest) {
			f *= 10
		}
		frac = f
	default:
		return 0, false
	}
	secs := daysFromCivil(y, mo, d)*86400 + h*3600 + mi*60 + sec
	if secs > maxSecs {
		return 0, false
	}
	hi, lo := bits.Mul64(secs, 1e9)
	sum, carry := bits.Add64(lo, frac, 0)
	if hi != 0 || carry != 0 {
		return 0, false
	}
	return sum, true
}

func daysIn(y, m uint64) uint64 {
	switch m {
	case 2:
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}
