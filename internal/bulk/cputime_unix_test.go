//go:build unix

package bulk

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time (user + system) this process has used.
// Benchmarks report it per item beside wall time: on a machine shared with
// other work, wall time counts the waits for a core, CPU time does not.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
