package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// MachineLockPath is the file whose flock every running real cluster holds,
// so that only one runs on the machine at a time (they are heavy on 2 cores).
// The lock's open file is inherited by the node processes: it stays held
// until the last node of the cluster has exited, even if the Go process died.
func MachineLockPath() string {
	return filepath.Join(os.TempDir(), "opensearchrouted-realcluster.lock")
}

// lockFile takes an exclusive flock on path, polling until ctx ends. It
// writes who holds it into the file; waiting (if longer than a moment) is
// reported through logf. The lock is released by closing the returned file
// (and every inherited copy of it).
func lockFile(ctx context.Context, path, who string, logf func(string, ...any)) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	reported := false
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if err != syscall.EWOULDBLOCK && err != syscall.EINTR {
			f.Close()
			return nil, fmt.Errorf("flock %s: %w", path, err)
		}
		if !reported && logf != nil && time.Since(start) > 2*time.Second {
			holder, _ := os.ReadFile(path)
			logf("cluster: waiting for %s (held by: %s)", path, strings.TrimSpace(string(holder)))
			reported = true
		}
		select {
		case <-ctx.Done():
			holder, _ := os.ReadFile(path)
			f.Close()
			return nil, fmt.Errorf("waited %s for %s (held by: %s): %w", time.Since(start).Round(time.Second), path, strings.TrimSpace(string(holder)), ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
	if err := f.Truncate(0); err == nil {
		fmt.Fprintf(f, "pid %d (%s) since %s: %s\n", os.Getpid(), filepath.Base(os.Args[0]), time.Now().UTC().Format(time.RFC3339), who)
	}
	return f, nil
}
