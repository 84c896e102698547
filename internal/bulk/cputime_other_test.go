//go:build !unix

package bulk

import "time"

func processCPU() time.Duration { return 0 }
