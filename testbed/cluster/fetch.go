package cluster

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// cachedDir returns the cache directory name, filling it first (once:
// guarded by the build lock, marked complete by an "ok" file) with fill,
// which writes into a temporary directory that then becomes name. what
// names the content for the lock and the log.
func cachedDir(ctx context.Context, name, what string, logf func(string, ...any), fill func(tmp string) error) (string, error) {
	cache, err := CacheDir()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return "", fmt.Errorf("cluster: cache dir: %w", err)
	}
	final := filepath.Join(cache, name)
	done := filepath.Join(final, "ok")
	if _, err := os.Stat(done); err == nil {
		return final, nil
	}
	lock, err := lockFile(ctx, filepath.Join(cache, "build.lock"), Holder{What: what}, nil)
	if err != nil {
		return "", fmt.Errorf("cluster: launcher build lock: %w", err)
	}
	defer lock.Close()
	if _, err := os.Stat(done); err == nil {
		return final, nil
	}
	if logf != nil {
		logf("cluster: fetching %s into %s", what, final)
	}
	tmp := final + ".tmp"
	os.RemoveAll(tmp)
	os.RemoveAll(final)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return "", err
	}
	if err := fill(tmp); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, final); err != nil {
		return "", err
	}
	return final, os.WriteFile(done, []byte("ok\n"), 0o644)
}

// runMaven runs mvn with args in dir (its own process group, killed with
// ctx) and returns its output on failure.
func runMaven(ctx context.Context, mvn, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, mvn, args...)
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return tail(out.String(), 3000), err
}
