package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// OCBVersion is the pinned ocb release (go.opentelemetry.io/collector/cmd/builder).
const OCBVersion = "v0.165.0"

// CollectorName is the distribution's binary name (builder-config.yaml dist.name).
const CollectorName = "otelcol-opensearchrouted"

// FindRoot walks up from the working directory to the repository root
// (the directory holding builder-config.yaml).
func FindRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "builder-config.yaml")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("demo: builder-config.yaml not found in the working directory or above it: run from the repository")
		}
		dir = parent
	}
}

// EnsureCollector returns root/dist/otelcol-opensearchrouted, building what
// is missing or stale:
//   - ocb is installed into root/dist/bin with `go install` (pinned);
//   - ocb regenerates and builds the distribution when root/dist has no
//     generated sources or builder-config.yaml, go.mod or go.sum is newer
//     than them;
//   - otherwise `go build` in root/dist rebuilds the binary, which is
//     incremental (seconds) and picks up changes to this module's sources
//     through the generated go.mod's replace.
//
// Concurrent callers (make demo and the docs test) are serialised by a
// file lock on root/dist/.build.lock. Build output goes to log.
func EnsureCollector(ctx context.Context, root string, log io.Writer) (string, error) {
	dist := filepath.Join(root, "dist")
	if err := os.MkdirAll(dist, 0o755); err != nil {
		return "", err
	}
	lock, err := os.OpenFile(filepath.Join(dist, ".build.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("demo: lock %s: %w", lock.Name(), err)
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()

	builder := filepath.Join(dist, "bin", "builder")
	if _, err := os.Stat(builder); err != nil {
		fmt.Fprintf(log, "installing ocb %s into %s\n", OCBVersion, filepath.Dir(builder))
		cmd := exec.CommandContext(ctx, "go", "install", "go.opentelemetry.io/collector/cmd/builder@"+OCBVersion)
		cmd.Env = append(os.Environ(), "GOBIN="+filepath.Dir(builder))
		cmd.Dir = root
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("demo: go install ocb %s: %w", OCBVersion, err)
		}
	}

	bin := filepath.Join(dist, CollectorName)
	generated := []string{filepath.Join(dist, "components.go"), filepath.Join(dist, "go.mod"), filepath.Join(dist, "go.sum")}
	// The distribution's go.mod/go.sum copy our module's requirements: a
	// change of ours (a new dependency) needs a new generation too.
	if stale(filepath.Join(root, "builder-config.yaml"), generated...) ||
		stale(filepath.Join(root, "go.mod"), generated...) || stale(filepath.Join(root, "go.sum"), generated...) {
		fmt.Fprintf(log, "building %s with ocb (the first build downloads the collector's modules)\n", bin)
		cmd := exec.CommandContext(ctx, builder, "--config", "builder-config.yaml")
		cmd.Dir = root
		cmd.Stdout, cmd.Stderr = log, log
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("demo: ocb --config builder-config.yaml: %w", err)
		}
		return bin, nil
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", CollectorName, ".")
	cmd.Dir = dist
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("demo: go build in %s: %w", dist, err)
	}
	return bin, nil
}

// stale reports whether any of outs is missing or older than in.
func stale(in string, outs ...string) bool {
	src, err := os.Stat(in)
	if err != nil {
		return true
	}
	for _, o := range outs {
		st, err := os.Stat(o)
		if err != nil || st.ModTime().Before(src.ModTime()) {
			return true
		}
	}
	return false
}
