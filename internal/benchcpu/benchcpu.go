// Package benchcpu measures benchmarks in CPU time: on a machine shared
// with other busy processes, wall time per op includes waiting for a core,
// the thread's own CPU time does not.
package benchcpu

import (
	"runtime"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

// Loop runs b.Loop() around f on a locked OS thread, reports the thread's
// own CPU time per op as "cpu-ns/op" (ThreadCPU) and returns
// it (0 when nothing ran).
func Loop(b *testing.B, f func()) float64 {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := ThreadCPU()
	n := 0
	for b.Loop() {
		f()
		n++
	}
	if n == 0 {
		return 0
	}
	per := float64((ThreadCPU() - start).Nanoseconds()) / float64(n)
	b.ReportMetric(per, "cpu-ns/op")
	return per
}

// ThreadCPU is the calling OS thread's CPU time so far, from
// clock_gettime(CLOCK_THREAD_CPUTIME_ID) (nanosecond resolution), else
// getrusage(RUSAGE_THREAD) (Linux; 0 where neither is available).
func ThreadCPU() time.Duration {
	const clockThreadCPUTime = 3 // CLOCK_THREAD_CPUTIME_ID
	var ts syscall.Timespec
	if _, _, errno := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); errno == 0 {
		return time.Duration(ts.Nano())
	}
	const rusageThread = 1 // RUSAGE_THREAD (Linux)
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
