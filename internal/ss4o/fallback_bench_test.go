package ss4o

import (
	"strconv"
	"testing"

	"go.opentelemetry.io/collector/pdata/plog"
)

// BenchmarkAppendUnmapped: the fallback shape of a typical log and span
// document, and of a log document with 100 attributes (strings, ints,
// doubles and booleans, a quarter each); then decoding the typical log's
// fallback document (DecodeLog of the original document is
// BenchmarkDecodeLog).
func BenchmarkAppendUnmapped(b *testing.B) {
	rl, sl, lr := typicalLog()
	logDoc := AppendLog(nil, rl.Resource(), sl.Scope(), lr)
	rs, ss, span := typicalSpan()
	spanDoc := AppendSpan(nil, rs.Resource(), ss.Scope(), span)
	a := lr.Attributes()
	for i := range 96 {
		k := "attr." + strconv.Itoa(i)
		switch i % 4 {
		case 0:
			a.PutStr(k, "value "+strconv.Itoa(i))
		case 1:
			a.PutInt(k, int64(i)*1000)
		case 2:
			a.PutDouble(k, float64(i)/7)
		case 3:
			a.PutBool(k, i%8 == 3)
		}
	}
	wideDoc := AppendLog(nil, rl.Resource(), sl.Scope(), lr)
	for _, c := range []struct {
		name string
		doc  []byte
	}{{"typical-log", logDoc}, {"typical-span", spanDoc}, {"100-attributes", wideDoc}} {
		b.Run(c.name, func(b *testing.B) {
			dst := make([]byte, 0, 4*len(c.doc))
			b.SetBytes(int64(len(c.doc)))
			b.ReportAllocs()
			loopCPU(b, func() {
				var err error
				if dst, err = AppendUnmapped(dst[:0], c.doc); err != nil {
					b.Fatal(err)
				}
			})
			b.ReportMetric(float64(len(dst))/float64(len(c.doc)), "size-ratio")
		})
	}
	b.Run("DecodeLog-of-fallback", func(b *testing.B) {
		rl, sl, lr := typicalLog()
		fb, err := AppendUnmapped(nil, AppendLog(nil, rl.Resource(), sl.Scope(), lr))
		if err != nil {
			b.Fatal(err)
		}
		out := plog.NewResourceLogs()
		osl := out.ScopeLogs().AppendEmpty()
		olr := osl.LogRecords().AppendEmpty()
		b.ReportAllocs()
		loopCPU(b, func() {
			if err := DecodeLog(fb, out, osl, olr); err != nil {
				b.Fatal(err)
			}
		})
	})
}

func BenchmarkAppendDeadLetter(b *testing.B) {
	rl, sl, lr := typicalLog()
	dl := DeadLetter{Signal: SignalLogs, Index: "ss4o_logs-default-namespace", ID: "AAAAAAAAAAAAAAAAAAAAAA", Status: 400,
		ErrorType: "mapper_parsing_exception", ErrorReason: "failed to parse field [attributes.worker] of type [long] in document with id 'AAAAAAAAAAAAAAAAAAAAAA'",
		CauseType: "illegal_argument_exception", CauseReason: "For input string: \"x\"", Shape: ShapeUnmapped,
		Document: AppendLog(nil, rl.Resource(), sl.Scope(), lr)}
	dst := make([]byte, 0, 4096)
	b.ReportAllocs()
	loopCPU(b, func() {
		dst = AppendDeadLetter(dst[:0], &dl)
	})
}
