package demo

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
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
// is missing or stale. It is the one way the collector is built (`make
// build`, `make demo` and the docs test all call it):
//   - ocb is installed into root/dist/bin with `go install` (pinned);
//   - ocb generates the distribution's sources into root/dist (and runs `go
//     mod tidy` and `go mod download` there) when root/dist has none or
//     builder-config.yaml, go.mod or go.sum is newer than them;
//   - the binary is compiled in root/dist with exactly the command and
//     environment ocb itself uses (BuildArgs, CGO_ENABLED=0), so the build
//     cache of one build serves the next: a rebuild compiles only what
//     changed, and picks up changes to this module's sources through the
//     generated go.mod's replace.
//
// Each step that runs longer than a moment reports what it is doing and the
// elapsed time to log every ProgressEvery. Concurrent callers (make demo and
// the docs test) are serialised by a file lock on root/dist/.build.lock.
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
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		fmt.Fprintf(log, "waiting for another build of the collector (%s)\n", lock.Name())
		if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
			return "", fmt.Errorf("demo: lock %s: %w", lock.Name(), err)
		}
	}
	defer func() { _ = syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) }()

	builder := filepath.Join(dist, "bin", "builder")
	if _, err := os.Stat(builder); err != nil {
		cmd := exec.CommandContext(ctx, "go", "install", "go.opentelemetry.io/collector/cmd/builder@"+OCBVersion)
		cmd.Env = append(os.Environ(), "GOBIN="+filepath.Dir(builder))
		cmd.Dir = root
		if err := runStep(cmd, log, "installing ocb "+OCBVersion+" into "+filepath.Dir(builder), nil); err != nil {
			return "", fmt.Errorf("demo: go install ocb %s: %w", OCBVersion, err)
		}
	}

	bin := filepath.Join(dist, CollectorName)
	generated := []string{filepath.Join(dist, "components.go"), filepath.Join(dist, "go.mod"), filepath.Join(dist, "go.sum")}
	// The distribution's go.mod/go.sum copy our module's requirements: a
	// change of ours (a new dependency) needs a new generation too.
	if stale(filepath.Join(root, "builder-config.yaml"), generated...) ||
		stale(filepath.Join(root, "go.mod"), generated...) || stale(filepath.Join(root, "go.sum"), generated...) {
		cmd := exec.CommandContext(ctx, builder, "--config", "builder-config.yaml", "--skip-compilation", "--verbose")
		cmd.Dir = root
		what := "generating the distribution with ocb into " + dist + " (go mod tidy and go mod download: the first run downloads the collector's modules)"
		if err := runStep(cmd, log, what, nil); err != nil {
			return "", fmt.Errorf("demo: ocb --config builder-config.yaml: %w", err)
		}
	}
	cmd := exec.CommandContext(ctx, "go", append(BuildArgs(), "-v", ".")...)
	cmd.Dir = dist
	cmd.Env = append(os.Environ(), BuildEnv...)
	// -v names each package as it is compiled: count them for the progress
	// line instead of printing hundreds of lines.
	var compiled int
	var last string
	pkgs := func(line string) bool {
		if strings.Contains(line, " ") || strings.HasPrefix(line, "#") {
			return false // an error or a compiler message: print it
		}
		compiled++
		last = line
		return true
	}
	status := func() string {
		if compiled == 0 {
			return ""
		}
		return fmt.Sprintf("%d packages compiled so far, last %s", compiled, last)
	}
	if err := runStep(cmd, log, "compiling "+bin, &lineFilter{drop: pkgs, status: status}); err != nil {
		return "", fmt.Errorf("demo: go build in %s: %w", dist, err)
	}
	return bin, nil
}

// BuildEnv and BuildArgs are the environment and `go` arguments ocb
// (OCBVersion) compiles a distribution with: a build with anything else would
// not share its build cache.
var BuildEnv = []string{"CGO_ENABLED=0"}

// BuildArgs: see BuildEnv.
func BuildArgs() []string {
	return []string{"build", "-trimpath", "-o", CollectorName, "-ldflags=-s -w", "-gcflags="}
}

// ProgressEvery is how often a long build step reports that it is still
// running.
var ProgressEvery = 15 * time.Second

// lineFilter drops some output lines of a step (drop returns true) and
// describes its progress in the periodic line (status).
type lineFilter struct {
	drop   func(line string) bool
	status func() string
}

// runStep runs cmd with its output to log, printing what it does at the
// start, every ProgressEvery while it runs (with the elapsed time) and the
// time it took at the end.
func runStep(cmd *exec.Cmd, log io.Writer, what string, f *lineFilter) error {
	var mu sync.Mutex
	w := &lineWriter{emit: func(line string) {
		mu.Lock()
		defer mu.Unlock()
		if f != nil && f.drop(line) {
			return
		}
		fmt.Fprintln(log, "  "+line)
	}}
	cmd.Stdout, cmd.Stderr = w, w
	start := time.Now()
	fmt.Fprintf(log, "%s...\n", what)
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(ProgressEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				mu.Lock()
				s := ""
				if f != nil {
					if st := f.status(); st != "" {
						s = ": " + st
					}
				}
				fmt.Fprintf(log, "  still %s, %s elapsed%s\n", firstWord(what), time.Since(start).Round(time.Second), s)
				mu.Unlock()
			}
		}
	}()
	err := cmd.Run()
	close(done)
	w.flush()
	mu.Lock()
	defer mu.Unlock()
	if err == nil {
		fmt.Fprintf(log, "  done in %s\n", time.Since(start).Round(100*time.Millisecond))
	}
	return err
}

func firstWord(s string) string {
	w, _, _ := strings.Cut(s, " ")
	return w
}

// lineWriter calls emit once per complete line written to it.
type lineWriter struct {
	mu   sync.Mutex
	buf  []byte
	emit func(string)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.emit(string(w.buf[:i]))
		w.buf = w.buf[i+1:]
	}
	return len(p), nil
}

func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 {
		w.emit(string(w.buf))
		w.buf = nil
	}
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
