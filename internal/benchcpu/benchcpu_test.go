package benchcpu

import (
	"testing"
	"time"
)

// ThreadCPU advances with work done on the thread, at a resolution fine
// enough to time a pass of a few microseconds.
func TestThreadCPUResolution(t *testing.T) {
	zero := 0
	for range 200 {
		t0 := ThreadCPU()
		deadline := time.Now().Add(20 * time.Microsecond)
		for time.Now().Before(deadline) {
		}
		if ThreadCPU() == t0 {
			zero++
		}
	}
	if zero > 100 {
		t.Fatalf("ThreadCPU did not move over 20µs of work in %d of 200 tries", zero)
	}
}
