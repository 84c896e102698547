package ss4o

import (
	"testing"

	"go.opentelemetry.io/collector/pdata/ptrace"
)

func BenchmarkDecodeSpan(b *testing.B) {
	rs, ss, span := typicalSpan()
	doc := AppendSpan(nil, rs.Resource(), ss.Scope(), span)
	out := ptrace.NewResourceSpans()
	oss := out.ScopeSpans().AppendEmpty()
	osp := oss.Spans().AppendEmpty()
	b.ReportAllocs()
	loopCPU(b, func() {
		if err := DecodeSpan(doc, out, oss, osp); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkLogsDecoder: the receiver's path, 100 typical documents of one
// resource and scope per plog.Logs.
func BenchmarkLogsDecoder(b *testing.B) {
	rl, sl, lr := typicalLog()
	doc := AppendLog(nil, rl.Resource(), sl.Scope(), lr)
	var d LogsDecoder
	b.ReportAllocs()
	i := 0
	loopCPU(b, func() {
		if err := d.Add(doc); err != nil {
			b.Fatal(err)
		}
		if i++; i%100 == 0 {
			d.Logs()
		}
	})
}
