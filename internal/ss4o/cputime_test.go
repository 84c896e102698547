package ss4o

import (
	"runtime"
	"syscall"
	"testing"
	"time"
)

// loopCPU runs b.Loop() around f on a locked OS thread and also reports the
// thread's own CPU time per op ("cpu-ns/op", from getrusage RUSAGE_THREAD).
// On a machine shared with other busy processes wall time per op includes
// waiting for a core; CPU time does not, so the two together show both.
func loopCPU(b *testing.B, f func()) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := threadCPU()
	n := 0
	for b.Loop() {
		f()
		n++
	}
	if n > 0 {
		b.ReportMetric(float64((threadCPU()-start).Nanoseconds())/float64(n), "cpu-ns/op")
	}
}

func threadCPU() time.Duration {
	const rusageThread = 1 // RUSAGE_THREAD (Linux)
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
