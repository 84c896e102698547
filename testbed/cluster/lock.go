package cluster

import (
	"context"
	"encoding/json"
	"errors"
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

// LockWaitReport is how often a wait for a lock says that it is still
// waiting, and for whom.
var LockWaitReport = 15 * time.Second

// Holder is what a lock file records about the process that holds it.
type Holder struct {
	PID     int    `json:"pid"`     // the process that took the lock
	Program string `json:"program"` // its program name
	Since   string `json:"since"`   // when (RFC 3339, UTC)
	What    string `json:"what"`    // e.g. "3-node OpenSearch 2.19.6"
	// Detached is set for a cluster that outlives its starter (make
	// opensearch-up); Dir is its directory (for osrcluster down -dir).
	Detached bool   `json:"detached,omitempty"`
	Dir      string `json:"dir,omitempty"`
	// Nodes are the node processes, which inherit the lock: it is held
	// while any of them lives, after PID has exited too.
	Nodes []int `json:"nodes,omitempty"`
}

// ErrHeldByDetached is returned (wrapped) by a wait for the machine lock
// that a cluster started by `make opensearch-up` holds: it is not going to
// end by itself, so waiting is pointless.
var ErrHeldByDetached = errors.New("held by a cluster started by make opensearch-up")

// ReadHolder reads a lock file's holder record; ok is false when there is
// none (or it is not one this package wrote).
func ReadHolder(path string) (h Holder, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(b, &h) != nil || h.PID == 0 {
		return Holder{}, false
	}
	return h, true
}

// Describe names who holds the lock now: the processes of the record that
// are alive (a dead starter is said to have exited, so that the message
// never points at a process that does not exist).
func (h Holder) Describe() string {
	var live []string
	for _, p := range h.Nodes {
		if alive(p) {
			live = append(live, fmt.Sprint(p))
		}
	}
	what := h.What
	if h.Detached {
		what += " started by `make opensearch-up`"
		if h.Dir != "" {
			what += " in " + h.Dir
		}
	}
	starter := fmt.Sprintf("%s, pid %d", h.Program, h.PID)
	if !alive(h.PID) {
		starter += ", exited"
	}
	s := fmt.Sprintf("%s (started by %s; since %s)", what, starter, h.Since)
	if len(live) > 0 {
		s += "; node processes alive: " + strings.Join(live, ", ")
	}
	return s
}

// stopHint says what to run to free a lock held by h.
func (h Holder) stopHint() string {
	if h.Dir != "" {
		return fmt.Sprintf("stop it with `make opensearch-down` (or `go run ./testbed/cluster/cmd/osrcluster down -dir %s`)", h.Dir)
	}
	return "stop it with `make opensearch-down`"
}

// lockFile takes an exclusive flock on path, polling until ctx ends. It
// records who holds it in the file (see Holder); a wait longer than a
// moment is reported through logf, then again every LockWaitReport with the
// live holder. A lock held by a detached cluster (make opensearch-up) is not
// waited for: lockFile fails at once with ErrHeldByDetached and what to stop.
// The lock is released by closing the returned file (and every inherited
// copy of it).
func lockFile(ctx context.Context, path string, h Holder, logf func(string, ...any)) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	var lastReport time.Time
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if err != syscall.EWOULDBLOCK && err != syscall.EINTR {
			f.Close()
			return nil, fmt.Errorf("flock %s: %w", path, err)
		}
		holder, known := ReadHolder(path)
		if known && holder.Detached {
			f.Close()
			return nil, fmt.Errorf("%s is %w: %s; %s", path, ErrHeldByDetached, holder.Describe(), holder.stopHint())
		}
		if logf != nil && time.Since(start) > 2*time.Second && time.Since(lastReport) >= LockWaitReport {
			logf("cluster: waiting %s for %s (held by %s)", time.Since(start).Round(time.Second), path, describeLock(path))
			lastReport = time.Now()
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waited %s for %s (held by %s): %w", time.Since(start).Round(time.Second), path, describeLock(path), ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
	h.PID, h.Program, h.Since = os.Getpid(), filepath.Base(os.Args[0]), time.Now().UTC().Format(time.RFC3339)
	writeHolder(f, h)
	return f, nil
}

// describeLock names the holder of the lock at path from its record (or
// the file's text, if another program wrote it).
func describeLock(path string) string {
	if h, ok := ReadHolder(path); ok {
		return h.Describe()
	}
	if b, _ := os.ReadFile(path); len(strings.TrimSpace(string(b))) > 0 {
		return strings.TrimSpace(string(b))
	}
	return "a process that left no record"
}

// writeHolder replaces the record in a held lock file.
func writeHolder(f *os.File, h Holder) {
	b, err := json.Marshal(h)
	if err != nil {
		return
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt(append(b, '\n'), 0)
	}
}

// CheckMachineLock returns nil when the machine lock is free or held by a
// run that will end by itself (such as another test process), and an error
// saying what to stop when a cluster started by `make opensearch-up` holds
// it. It does not take the lock. make test runs it first
// (`osrcluster check`), so that such a cluster fails the run at once.
func CheckMachineLock() (string, error) {
	path := MachineLockPath()
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o666)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err == nil {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return "the machine's real-cluster lock is free", nil
	}
	h, known := ReadHolder(path)
	if known && h.Detached {
		return "", fmt.Errorf("the real-cluster lock %s is %w: %s; the tests need it: %s", path, ErrHeldByDetached, h.Describe(), h.stopHint())
	}
	return fmt.Sprintf("the real-cluster lock %s is held by %s: real-cluster tests will wait for it", path, describeLock(path)), nil
}
