package cluster

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"syscall"
	"time"
)

// launcherMain is the Java class that starts one node (testbed/opensearch).
const launcherMain = "org.opensearchrouted.testbed.Launcher"

// jvmDir is where Debian and Ubuntu packages (and most Linux JDK packages)
// install JDKs, one home per directory. Searched for a Java 21+ JDK for
// OpenSearch 3.x when JAVA_HOME is not set.
var jvmDir = "/usr/lib/jvm"

// launcher is a built launcher: the java binary and the classpath to run it.
type launcher struct {
	java      string
	javaHome  string
	classpath string
	dir       string
}

// LauncherSourceDir returns the directory of the launcher's Maven project:
// $OSR_LAUNCHER_SRC if set, else testbed/opensearch beside this package's
// source (which works for tests and `go run` inside the repository).
func LauncherSourceDir() (string, error) {
	if d := os.Getenv("OSR_LAUNCHER_SRC"); d != "" {
		return d, nil
	}
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("cluster: cannot locate launcher source: set OSR_LAUNCHER_SRC to testbed/opensearch")
	}
	dir := filepath.Join(filepath.Dir(file), "..", "opensearch")
	if _, err := os.Stat(filepath.Join(dir, "pom.xml")); err != nil {
		return "", fmt.Errorf("cluster: launcher source not found at %s (set OSR_LAUNCHER_SRC): %w", dir, err)
	}
	return filepath.Clean(dir), nil
}

// CacheDir is where built launchers live: $OSR_CACHE_DIR, else
// <user cache dir>/opensearchrouted/launcher.
func CacheDir() (string, error) {
	if d := os.Getenv("OSR_CACHE_DIR"); d != "" {
		return d, nil
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("cluster: no cache dir (set OSR_CACHE_DIR): %w", err)
	}
	return filepath.Join(base, "opensearchrouted", "launcher"), nil
}

// isMajor3OrLater reports whether an OpenSearch version needs Java 21+.
func isMajor3OrLater(version string) bool {
	major, _, _ := strings.Cut(version, ".")
	return major != "" && major != "1" && major != "2"
}

// findJava resolves the JDK for a version: javaHome if given, else
// $JAVA_HOME, else (3.x) the newest Java 21+ JDK installed under jvmDir,
// else `java` on PATH.
func findJava(version, javaHome string) (java, home string, err error) {
	if javaHome == "" {
		javaHome = os.Getenv("JAVA_HOME")
	}
	if javaHome == "" && isMajor3OrLater(version) {
		javaHome = newestJDK(jvmDir, 21)
	}
	if javaHome != "" {
		java = filepath.Join(javaHome, "bin", "java")
		if _, err := os.Stat(java); err != nil {
			return "", "", fmt.Errorf("cluster: JAVA_HOME %s has no bin/java: real OpenSearch needs a JDK (17 for 2.x, 21+ for 3.x)", javaHome)
		}
		return java, javaHome, nil
	}
	java, err = exec.LookPath("java")
	if err != nil {
		return "", "", errors.New("cluster: java not found on PATH and JAVA_HOME not set: real OpenSearch tests need a JDK " +
			"(e.g. apt-get install openjdk-17-jdk-headless maven; OpenSearch 3.x needs a JDK 21+: set JAVA_HOME to it)")
	}
	return java, "", nil
}

// JavaFor reports the java binary a cluster of this OpenSearch version would
// run on and its major version (0 if unknown), or an error when there is no
// JDK or it is too old (2.x needs 17+, 3.x 21+).
func JavaFor(version string) (java string, major int, err error) {
	java, home, err := findJava(version, "")
	if err != nil {
		return "", 0, err
	}
	if home == "" {
		if real, err := filepath.EvalSymlinks(java); err == nil {
			home = filepath.Dir(filepath.Dir(real))
		}
	}
	major = jdkMajor(home)
	need := 17
	if isMajor3OrLater(version) {
		need = 21
	}
	if major != 0 && major < need {
		return java, major, fmt.Errorf("cluster: OpenSearch %s needs Java %d+; %s is Java %d (set JAVA_HOME to a newer JDK)", version, need, java, major)
	}
	return java, major, nil
}

// newestJDK returns the home of the JDK with the highest major version at
// least min among the directories of dir (read from each home's `release`
// file, JAVA_VERSION="25.0.3"), or "" if there is none.
func newestJDK(dir string, min int) string {
	entries, _ := os.ReadDir(dir)
	best, bestMajor := "", 0
	for _, e := range entries {
		home := filepath.Join(dir, e.Name())
		major := jdkMajor(home)
		if major < min || major <= bestMajor {
			continue
		}
		if _, err := os.Stat(filepath.Join(home, "bin", "java")); err == nil {
			best, bestMajor = home, major
		}
	}
	return best
}

// jdkMajor reads the major Java version of a JDK home from its release
// file; 0 if it cannot.
func jdkMajor(home string) int {
	b, err := os.ReadFile(filepath.Join(home, "release"))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		v, ok := strings.CutPrefix(strings.TrimSpace(line), "JAVA_VERSION=")
		if !ok {
			continue
		}
		v = strings.Trim(v, `"`)
		v = strings.TrimPrefix(v, "1.") // 1.8.0 → 8
		n := 0
		for _, r := range v {
			if r < '0' || r > '9' {
				break
			}
			n = n*10 + int(r-'0')
		}
		return n
	}
	return 0
}

// sourceHash hashes every file of the Maven project except build output,
// together with the OpenSearch version and the JDK, so that any change
// rebuilds.
func sourceHash(src, version, javaHome string) (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "version=%s\njava=%s\n", version, javaHome)
	var files []string
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			if rel == "target" || strings.HasPrefix(d.Name(), ".") && rel != "." {
				return filepath.SkipDir
			}
			return nil
		}
		files = append(files, rel)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("cluster: hashing launcher source %s: %w", src, err)
	}
	sort.Strings(files)
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			return "", fmt.Errorf("cluster: hashing launcher source: %w", err)
		}
		fmt.Fprintf(h, "%s %d\n", f, len(b))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// BuildLauncher builds the launcher for an OpenSearch version (once per
// source+version+JDK; later calls return the cached build). Concurrent
// callers, in this process or others, are serialised by a file lock in the
// cache dir. javaHome may be empty (see Options.JavaHome).
func BuildLauncher(ctx context.Context, version, javaHome string) (dir string, err error) {
	l, err := buildLauncher(ctx, version, javaHome, nil)
	if err != nil {
		return "", err
	}
	return l.dir, nil
}

func buildLauncher(ctx context.Context, version, javaHome string, logf func(string, ...any)) (*launcher, error) {
	if version == "" {
		version = DefaultVersion()
	}
	java, home, err := findJava(version, javaHome)
	if err != nil {
		return nil, err
	}
	src, err := LauncherSourceDir()
	if err != nil {
		return nil, err
	}
	cache, err := CacheDir()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return nil, fmt.Errorf("cluster: cache dir: %w", err)
	}
	sum, err := sourceHash(src, version, home)
	if err != nil {
		return nil, err
	}
	final := filepath.Join(cache, version+"-"+sum)
	l := &launcher{
		java:      java,
		javaHome:  home,
		dir:       final,
		classpath: filepath.Join(final, "classes") + string(os.PathListSeparator) + filepath.Join(final, "lib", "*"),
	}
	done := filepath.Join(final, "ok")
	if _, err := os.Stat(done); err == nil {
		return l, nil
	}
	lock, err := lockFile(ctx, filepath.Join(cache, "build.lock"), Holder{What: "launcher build for OpenSearch " + version}, nil)
	if err != nil {
		return nil, fmt.Errorf("cluster: launcher build lock: %w", err)
	}
	defer lock.Close()
	if _, err := os.Stat(done); err == nil {
		return l, nil // built by another process while we waited
	}
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return nil, errors.New("cluster: mvn not found on PATH: the launcher is built with Maven (apt-get install maven)")
	}
	tmp := final + ".tmp"
	os.RemoveAll(tmp)
	os.RemoveAll(final)
	if logf != nil {
		logf("cluster: building OpenSearch %s launcher into %s", version, final)
	}
	start := time.Now()
	release := "17"
	if isMajor3OrLater(version) {
		release = "21" // 3.x jars are Java 21 class files
	}
	cmd := exec.CommandContext(ctx, mvn, "-B", "-q", "package",
		"-f", filepath.Join(src, "pom.xml"),
		"-Dopensearch.version="+version,
		"-Dmaven.compiler.release="+release,
		"-Dlauncher.out="+tmp)
	cmd.Env = os.Environ()
	if home != "" {
		cmd.Env = append(cmd.Env, "JAVA_HOME="+home)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("cluster: building the launcher (mvn package, OpenSearch %s) failed: %w\n%s", version, err, tail(out.String(), 4000))
	}
	if err := os.Rename(tmp, final); err != nil {
		return nil, fmt.Errorf("cluster: installing launcher build: %w", err)
	}
	if err := os.WriteFile(done, []byte(time.Since(start).String()+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("cluster: marking launcher build: %w", err)
	}
	return l, nil
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}
