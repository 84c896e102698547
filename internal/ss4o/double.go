package ss4o

import (
	"encoding/binary"
	"math"
	"math/big"
	"math/bits"
	"sync"
	"sync/atomic"
)

// Shortest decimal rendering of a double, after R. Giulietti, "The Schubfach
// way to render doubles" (2020): the decimal with the fewest digits that
// reads back as the double, and of those the closest to it (ties to an even
// last digit). That is what strconv.AppendFloat(…, -1, 64) writes; this
// renders the same text with less work than strconv.AppendFloat does.
// TestShortestMatchesStrconv checks the two against each other.

// The powers of ten: g(k) for k in [kMin, kMax] is 10^-k scaled by a power
// of two into [2^125, 2^126) and rounded up, split in 63-bit halves.
const (
	kMin = -324
	kMax = 292
)

// The table is built on first use (about 1 ms), not at every start of a
// process that imports this package. pow10 returns it; its fast path is one
// atomic load (sync.OnceValue's closure cost about 130 instructions a call).
var (
	pow10Ptr  atomic.Pointer[pow10Table]
	pow10Once sync.Once
)

func pow10() *pow10Table {
	if t := pow10Ptr.Load(); t != nil {
		return t
	}
	return pow10Build()
}

func pow10Build() *pow10Table {
	pow10Once.Do(func() { pow10Ptr.Store(buildPow10()) })
	return pow10Ptr.Load()
}

// pow10Table holds g(k) in 63-bit halves, index k - kMin.
type pow10Table struct{ hi, lo [kMax - kMin + 1]uint64 }

// buildPow10 computes g(k) exactly with math/big.
func buildPow10() *pow10Table {
	t := new(pow10Table)
	mask63 := new(big.Int).SetUint64(1<<63 - 1)
	ten := big.NewInt(10)
	for k := kMin; k <= kMax; k++ {
		// g = floor(10^-k × 2^(125 - flog2pow10(-k))) + 1.
		r := 125 - flog2pow10(-k)
		num, den := big.NewInt(1), big.NewInt(1)
		if k < 0 {
			num.Exp(ten, big.NewInt(int64(-k)), nil)
		} else {
			den.Exp(ten, big.NewInt(int64(k)), nil)
		}
		if r >= 0 {
			num.Lsh(num, uint(r))
		} else {
			den.Lsh(den, uint(-r))
		}
		g := num.Quo(num, den)
		g.Add(g, big.NewInt(1))
		t.hi[k-kMin] = new(big.Int).Rsh(g, 63).Uint64()
		t.lo[k-kMin] = new(big.Int).And(g, mask63).Uint64()
	}
	return t
}

// flog10pow2 is floor(e × log10(2)), flog10threeQuartersPow2 is
// floor(e × log10(2) + log10(3/4)) and flog2pow10 is floor(e × log2(10)),
// for the exponents of doubles.
func flog10pow2(e int) int { return (e * 661971961083) >> 41 }

func flog10threeQuartersPow2(e int) int { return (e*661971961083 - 274743187321) >> 41 }

func flog2pow10(e int) int { return (e * 913124641741) >> 38 }

// rop is g × cp scaled down by 2^127 and rounded to odd (the lowest bit set
// when anything nonzero was dropped), with g = g1·2^63 + g0.
func rop(g1, g0, cp uint64) uint64 {
	x1, _ := bits.Mul64(g0, cp)
	y1, y0 := bits.Mul64(g1, cp)
	z := (y0 >> 1) + x1
	vbp := y1 + (z >> 63)
	if z&(1<<63-1) != 0 {
		vbp |= 1
	}
	return vbp
}

// shortest returns the digits and decimal exponent (v = digits × 10^exp) of
// the shortest decimal that reads back as v, for finite, positive, normal
// v; ok is false for any other v (zero, subnormal, NaN, ±Inf, negative).
func shortest(v float64) (digits uint64, exp int, ok bool) {
	b := math.Float64bits(v)
	bq := int(b>>52) & 0x7ff
	if b>>63 != 0 || bq == 0 || bq == 0x7ff {
		return 0, 0, false
	}
	c := uint64(1)<<52 | b&(1<<52-1)
	q := bq - 1075
	// An integer below 2^53: its own digits.
	if mq := -q; mq > 0 && mq < 53 {
		if f := c >> uint(mq); f<<uint(mq) == c {
			return f, 0, true
		}
	}
	out := c & 1
	cb := c << 2
	cbr := cb + 2
	var cbl uint64
	var k int
	if c != 1<<52 {
		cbl, k = cb-2, flog10pow2(q)
	} else {
		// The double below v is closer than the one above.
		cbl, k = cb-1, flog10threeQuartersPow2(q)
	}
	h := uint(q + flog2pow10(-k) + 2)
	tab := pow10()
	g1, g0 := tab.hi[k-kMin], tab.lo[k-kMin]
	vb := rop(g1, g0, cb<<h)
	vbl := rop(g1, g0, cbl<<h)
	vbr := rop(g1, g0, cbr<<h)
	s := vb >> 2
	if s >= 100 {
		sp10 := s / 10 * 10
		tp10 := sp10 + 10
		upin := vbl+out <= sp10<<2
		wpin := tp10<<2+out <= vbr
		if upin != wpin {
			if upin {
				return sp10, k, true
			}
			return tp10, k, true
		}
	}
	t := s + 1
	uin := vbl+out <= s<<2
	win := t<<2+out <= vbr
	if uin != win {
		if uin {
			return s, k, true
		}
		return t, k, true
	}
	// Both or neither in the rounding interval: the closer, ties to even.
	if mid := (s + t) << 1; vb < mid || vb == mid && s&1 == 0 {
		return s, k, true
	}
	return t, k, true
}

// appendShortest writes v (finite, positive, normal) as strconv's 'g'
// format does with the shortest precision: in %e form (d.ddde±XX) when its
// decimal exponent is below -4 or at least 6, else in %f form. It reports
// false, writing nothing, for any other v. With dot, an integer in %f
// form gets ".0" after it, so that every output has a '.' or an 'e'.
func appendShortest(dst []byte, v float64, dot bool) ([]byte, bool) {
	d, e, ok := shortest(v)
	if !ok {
		return dst, false
	}
	// Drop trailing zeros (up to 16), 8, 4, 2 and 1 at a time.
	for d%100000000 == 0 {
		d /= 100000000
		e += 8
	}
	if d%10000 == 0 {
		d /= 10000
		e += 4
	}
	if d%100 == 0 {
		d /= 100
		e += 2
	}
	if d%10 == 0 {
		d /= 10
		e++
	}
	var buf [17]byte
	putDigits17(&buf, d)
	digs := buf[len(buf)-decimalLen(d):]
	nd := len(digs)
	dp := nd + e // v = 0.digs × 10^dp
	if x := dp - 1; x < -4 || x >= 6 {
		// %e: d[.ddd]e±XX.
		dst = append(dst, digs[0])
		if nd > 1 {
			dst = append(dst, '.')
			dst = append(dst, digs[1:]...)
		}
		dst = append(dst, 'e')
		if x < 0 {
			dst = append(dst, '-')
			x = -x
		} else {
			dst = append(dst, '+')
		}
		if x < 100 { // at least two digits, as strconv writes them
			dst = append(dst, pairs[2*x], pairs[2*x+1])
		} else {
			dst = append(dst, byte('0'+x/100), pairs[2*(x%100)], pairs[2*(x%100)+1])
		}
		return dst, true
	}
	// %f: the integer part (0 when dp ≤ 0), then the fraction, if any.
	switch {
	case dp <= 0:
		dst = append(dst, '0', '.')
		for range -dp {
			dst = append(dst, '0')
		}
		dst = append(dst, digs...)
	case dp >= nd:
		dst = append(dst, digs...)
		for range dp - nd {
			dst = append(dst, '0')
		}
		if dot {
			dst = append(dst, ".0"...)
		}
	default:
		dst = append(dst, digs[:dp]...)
		dst = append(dst, '.')
		dst = append(dst, digs[dp:]...)
	}
	return dst, true
}

// putDigits17 writes d (below 10^17, which every double's shortest digits
// are) as seventeen decimal digits, leading zeros included: the first
// digit, then two groups of eight (eightDigits).
func putDigits17(buf *[17]byte, d uint64) {
	hi := d / 1e8
	lo := uint32(d - hi*1e8)
	top := uint32(hi / 1e8)
	mid := uint32(hi - uint64(top)*1e8)
	buf[0] = byte('0' + top)
	binary.LittleEndian.PutUint64(buf[1:9], eightDigits(mid))
	binary.LittleEndian.PutUint64(buf[9:17], eightDigits(lo))
}

// eightDigits returns the eight decimal digits of v (below 10^8) as ASCII,
// the first in the lowest byte. It splits v into two halves of four
// digits, each of those into two of two, and each of those into two
// digits, every lane of a step at once with one multiply (the quotients by
// 100 and by 10 are exact in that range: (v·10486)>>20 for v < 10^4,
// (v·103)>>10 for v < 100).
func eightDigits(v uint32) uint64 {
	hi := v / 10000
	x := uint64(hi) | uint64(v-hi*10000)<<32
	q := (x * 10486 >> 20) & (0x7f<<32 | 0x7f)
	x = q | (x-q*100)<<16
	q = (x * 103 >> 10) & 0x000f000f000f000f
	x = q | (x-q*10)<<8
	return x + 0x3030303030303030
}

// decimalLen is the number of decimal digits of d (at least 1).
func decimalLen(d uint64) int {
	n := bits.Len64(d) * 1233 >> 12 // ⌊log10(2^len)⌋, one short at most
	if n < len(pow10u64) && d >= pow10u64[n] {
		n++
	}
	return max(n, 1)
}

var pow10u64 = [...]uint64{1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19}

// AppendDouble writes f as the encoder writes a double value: the shortest
// form that reads back as the same float64, always with a '.' or an
// exponent ("1.0", "1e+21", "-0.0"), so that it reads back as a double;
// NaN, +Inf and -Inf as the JSON strings "NaN", "Infinity", "-Infinity".
func AppendDouble(dst []byte, f float64) []byte { return appendDouble(dst, f) }
