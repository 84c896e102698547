package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// lockHelper runs in a child process: it takes the machine lock as a
// cluster does (mode "detached": as `make opensearch-up` does), hands it to
// a grandchild that stands in for the node JVMs (sleep, in a session of its
// own), prints the grandchild's pid and exits: the lock stays held by a
// process other than the one that took it.
func lockHelper(mode string) {
	h := Holder{What: "3-node OpenSearch 2.19.6"}
	if mode == "detached" {
		h.Detached, h.Dir = true, filepath.Join(os.TempDir(), "opensearch")
	}
	f, err := lockFile(context.Background(), MachineLockPath(), h, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	node := exec.Command("sleep", "120")
	node.ExtraFiles = []*os.File{f}
	node.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := node.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	h, _ = ReadHolder(MachineLockPath())
	h.Nodes = []int{node.Process.Pid}
	writeHolder(f, h)
	fmt.Println(node.Process.Pid)
	os.Exit(0)
}

// holdLock starts lockHelper in a subprocess with TMPDIR set to dir and
// returns the pid of the process left holding the lock (killed at cleanup).
func holdLock(t *testing.T, dir, mode string) (starter, node int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "OSR_LOCK_HELPER="+mode, "TMPDIR="+dir)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("lock helper: %v", err)
	}
	node, err = strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("lock helper printed %q", out)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(node, syscall.SIGKILL)
		for i := 0; i < 50 && alive(node); i++ {
			time.Sleep(20 * time.Millisecond)
		}
	})
	return cmd.Process.Pid, node
}

// A cluster left running by `make opensearch-up` holds the machine lock
// through its node processes after the command that started it has exited.
// Waiting for it would eat the test timeout: the wait fails at once, naming
// the live node processes and what to stop; `make test`'s first step fails
// the same way within a minute.
func TestMachineLockHolders(t *testing.T) {
	t.Run("detached cluster fails at once and says what to stop", func(t *testing.T) {
		dir := t.TempDir()
		t.Setenv("TMPDIR", dir)
		starter, node := holdLock(t, dir, "detached")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		start := time.Now()
		f, err := lockFile(ctx, MachineLockPath(), Holder{What: "test"}, nil)
		if err == nil {
			f.Close()
			t.Fatal("took a lock a detached cluster holds")
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("failed after %v, want at once", took)
		}
		msg := err.Error()
		if !errors.Is(err, ErrHeldByDetached) || !strings.Contains(msg, "make opensearch-down") ||
			!strings.Contains(msg, "node processes alive: "+strconv.Itoa(node)) ||
			!strings.Contains(msg, fmt.Sprintf("pid %d, exited", starter)) {
			t.Errorf("error does not name the live holder and what to stop (node %d, starter %d): %v", node, starter, err)
		}
		if _, err := CheckMachineLock(); err == nil || !strings.Contains(err.Error(), "make opensearch-down") {
			t.Errorf("CheckMachineLock: %v", err)
		}

		// make test runs `osrcluster check` before any test.
		root, err := filepath.Abs(filepath.Join("..", ".."))
		if err != nil {
			t.Fatal(err)
		}
		mctx, mcancel := context.WithTimeout(context.Background(), time.Minute)
		defer mcancel()
		mk := exec.CommandContext(mctx, "make", "-s", "-C", root, "check-cluster-lock")
		mk.Env = append(os.Environ(), "TMPDIR="+dir)
		out, err := mk.CombinedOutput()
		if err == nil || mctx.Err() != nil || !strings.Contains(string(out), "make opensearch-down") ||
			!strings.Contains(string(out), strconv.Itoa(node)) {
			t.Errorf("make check-cluster-lock: %v (ctx %v):\n%s", err, mctx.Err(), out)
		}
	})

	t.Run("a wait names the live holder, not the exited starter", func(t *testing.T) {
		dir := t.TempDir()
		t.Setenv("TMPDIR", dir)
		old := LockWaitReport
		LockWaitReport = 500 * time.Millisecond
		defer func() { LockWaitReport = old }()
		starter, node := holdLock(t, dir, "test")
		var lines []string
		logf := func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) }
		ctx, cancel := context.WithTimeout(context.Background(), 3500*time.Millisecond)
		defer cancel()
		f, err := lockFile(ctx, MachineLockPath(), Holder{What: "test"}, logf)
		if err == nil {
			f.Close()
			t.Fatal("took a held lock")
		}
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "node processes alive: "+strconv.Itoa(node)) {
			t.Errorf("wait error: %v", err)
		}
		if len(lines) < 2 {
			t.Fatalf("wait reported %d times in 3.5s with a report every 0.5s after 2s: %q", len(lines), lines)
		}
		for _, l := range lines {
			if !strings.Contains(l, fmt.Sprintf("pid %d, exited", starter)) || !strings.Contains(l, strconv.Itoa(node)) {
				t.Errorf("progress line does not name the live holder %d: %q", node, l)
			}
		}
		// Once the node processes are gone the lock is free again.
		_ = syscall.Kill(node, syscall.SIGKILL)
		ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel2()
		f, err = lockFile(ctx2, MachineLockPath(), Holder{What: "test"}, nil)
		if err != nil {
			t.Fatalf("lock after the holder died: %v", err)
		}
		f.Close()
	})
}
