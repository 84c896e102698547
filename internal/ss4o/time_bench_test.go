package ss4o

import "testing"

func BenchmarkAppendTime(b *testing.B) {
	buf := make([]byte, 0, 64)
	base := uint64(1795953600123456789)
	for i := 0; i < b.N; i++ {
		buf = appendTime(buf[:0], base+uint64(i)*1000003)
	}
}
