package ss4o

import (
	"testing"

	"github.com/opensearchrouted/opensearchrouted/internal/benchcpu"
)

// loopCPU runs b.Loop() around f and also reports the thread's own CPU
// time per op ("cpu-ns/op"; see benchcpu).
func loopCPU(b *testing.B, f func()) { benchcpu.Loop(b, f) }
