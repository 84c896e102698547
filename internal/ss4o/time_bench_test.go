package ss4o

import "testing"

func BenchmarkAppendTime(b *testing.B) {
	buf := make([]byte, 0, 64)
	base := uint64(1795953600123456789)
	for i := 0; i < b.N; i++ {
		buf = appendTime(buf[:0], base+uint64(i)*1000003)
	}
}

// BenchmarkClock is appendTime through a reused clock, timestamps 1 ms
// apart as in a busy export call.
func BenchmarkClock(b *testing.B) {
	buf := make([]byte, 0, 64)
	base := uint64(1795953600123456789)
	var c clock
	for i := 0; i < b.N; i++ {
		buf = c.appendTime(buf[:0], base+uint64(i%100000)*1000003)
	}
}
