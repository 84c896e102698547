package ss4o

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestShortestMatchesStrconv checks shortest against strconv's shortest
// rendering ('e', -1) digit for digit: random bit patterns over every
// exponent, every power of two (where the double below is closer than the
// one above) and its neighbours, integers, and the ends of the normal range.
func TestShortestMatchesStrconv(t *testing.T) {
	checked := 0
	check := func(v float64) {
		v = math.Abs(v)
		d, e, ok := shortest(v)
		b := math.Float64bits(v)
		normal := b>>52 != 0 && b>>52 != 0x7ff
		if ok != normal {
			t.Fatalf("shortest(%v): ok = %v for a normal = %v double", v, ok, normal)
		}
		if !ok {
			return
		}
		checked++
		for d%10 == 0 {
			d /= 10
			e++
		}
		// strconv: "d.ddde±XX" → digits and exponent of the last digit.
		s := strconv.FormatFloat(v, 'e', -1, 64)
		mant, xs, _ := strings.Cut(s, "e")
		x, _ := strconv.Atoi(xs)
		digits := strings.Replace(mant, ".", "", 1)
		want, _ := strconv.ParseUint(digits, 10, 64)
		wantE := x - (len(digits) - 1)
		if d != want || e != wantE {
			t.Fatalf("shortest(%v) = %d e%d, strconv says %s (%d e%d)", v, d, e, s, want, wantE)
		}
	}
	for ex := -1022; ex <= 1023; ex++ {
		p := math.Ldexp(1, ex)
		check(p)
		check(math.Nextafter(p, 0))
		check(math.Nextafter(p, math.Inf(1)))
		check(3 * p / 2)
	}
	for _, v := range []float64{math.MaxFloat64, math.SmallestNonzeroFloat64, 2.2250738585072014e-308,
		1, 0.1, 0.2, 0.3, 1.0 / 3, 2.0 / 3, 1e23, 5e-324, 9007199254740991, 9007199254740993, 1e21, 1e22, 123456789012345678} {
		check(v)
	}
	rng := rand.New(rand.NewPCG(21, 22))
	n := 3_000_000
	if testing.Short() {
		n = 300_000
	}
	for range n {
		check(math.Float64frombits(rng.Uint64()))
		check(float64(rng.Int64N(1 << 53)))
		check(float64(rng.IntN(1_000_000)) / 1000)
	}
	if checked < 3*n/2 {
		t.Fatalf("only %d normal doubles checked", checked)
	}
}

// BenchmarkAppendDouble compares appendDouble with strconv's shortest 'g'
// (what it wrote before, and what it matches) on kinds of values attributes
// carry, per value.
func BenchmarkAppendDouble(b *testing.B) {
	sets := map[string][]float64{}
	for i := range 1024 {
		sets["ratio"] = append(sets["ratio"], float64(i)/7)                // 17 significant digits
		sets["decimal"] = append(sets["decimal"], float64(i*37%10000)/100) // like 12.34
		sets["large"] = append(sets["large"], float64(i+1)*1.234567e9)     // %e
	}
	for _, name := range []string{"ratio", "decimal", "large"} {
		vals := sets[name]
		b.Run(name+"/ss4o", func(b *testing.B) {
			buf := make([]byte, 0, 64)
			for i := 0; i < b.N; i++ {
				buf = appendDouble(buf[:0], vals[i%len(vals)])
			}
		})
		b.Run(name+"/strconv", func(b *testing.B) {
			buf := make([]byte, 0, 64)
			for i := 0; i < b.N; i++ {
				buf = strconv.AppendFloat(buf[:0], vals[i%len(vals)], 'g', -1, 64)
			}
		})
	}
}

// TestEightDigitsAndDecimalLen checks the digit writers against strconv:
// every value around each power of ten and random ones.
func TestEightDigitsAndDecimalLen(t *testing.T) {
	check8 := func(v uint32) {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], eightDigits(v))
		if want := fmt.Sprintf("%08d", v); string(b[:]) != want {
			t.Fatalf("eightDigits(%d) = %s", v, b[:])
		}
	}
	check17 := func(d uint64) {
		var b [17]byte
		putDigits17(&b, d)
		want := strconv.FormatUint(d, 10)
		if got := string(b[len(b)-decimalLen(d):]); got != want || strings.TrimLeft(string(b[:]), "0") != strings.TrimLeft(want, "0") {
			t.Fatalf("putDigits17/decimalLen(%d) = %s (%s)", d, got, b[:])
		}
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for p := uint64(1); p <= 1e16; p *= 10 {
		for _, d := range []uint64{p - 1, p, p + 1, 2*p - 1, 9 * p} {
			if d > 0 && d < 1e17 {
				check17(d)
			}
		}
		if p <= 1e7 {
			check8(uint32(p - 1))
			check8(uint32(p))
		}
	}
	for range 1_000_000 {
		check8(rng.Uint32N(1e8))
		check17(rng.Uint64N(1e17-1) + 1)
		check17(rng.Uint64N(1 << 53))
	}
	for v := uint32(0); v < 1e8; v += 9973 {
		check8(v)
	}
}
