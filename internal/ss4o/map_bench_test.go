package ss4o

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

func benchAttrs() pcommon.Map {
	m := pcommon.NewMap()
	m.PutInt("seq", 12345)
	m.PutStr("http.method", "GET")
	m.PutBool("ok", true)
	m.PutDouble("latency", 12345.0/7)
	m.PutStr("path", "/api/v1/items")
	return m
}

func BenchmarkAppendMap(b *testing.B) {
	m := benchAttrs()
	buf := make([]byte, 0, 512)
	for i := 0; i < b.N; i++ {
		buf = appendMap(buf[:0], m)
	}
}

func BenchmarkAppendMapNoDouble(b *testing.B) {
	m := benchAttrs()
	m.PutInt("latency", 1763)
	buf := make([]byte, 0, 512)
	for i := 0; i < b.N; i++ {
		buf = appendMap(buf[:0], m)
	}
}
