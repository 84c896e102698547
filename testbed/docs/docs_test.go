package docs

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// forbidden are what no Markdown file of the repository may contain: paths
// outside the repository or on one machine, and words that narrate how the
// text was written instead of describing the product.
var forbidden = []struct {
	re  *regexp.Regexp
	why string
}{
	{regexp.MustCompile(`\.\./shared|\bshared/(spec|seeds|design)`), "a path outside the repository"},
	{regexp.MustCompile(`/work/`), "a path of one machine"},
	{regexp.MustCompile(`/usr/lib/jvm`), "a JDK path of one machine (say how the JDK is found)"},
	{regexp.MustCompile(`/root/|/home/[a-z]|/Users/[A-Za-z]`), "a home directory of one machine"},
	{regexp.MustCompile(`(?i)\b(this|that|a|the|one|earlier|later|last|next|[a-z]+th|first|second|third|other|five|four|several|many) sessions?\b`), "narration (\"session\")"},
	{regexp.MustCompile(`(?i)\bthe lead\b`), "narration (\"the lead\")"},
	{regexp.MustCompile(`(?i)\b(issue|seed|design document) [0-9]+`), "a reference to a document outside the repository"},
	{regexp.MustCompile(`(?i)\bhelpers'|\bother helpers\b`), "narration (who worked on the machine)"},
	{regexp.MustCompile(`(?i)\bthe issue\b|\bissue's\b|\(issue\)|\bissue target`), "narration (\"the issue\")"},
}

// TestMarkdownSpeaksOfTheProduct fails naming file:line for every forbidden
// reference in a tracked Markdown file.
func TestMarkdownSpeaksOfTheProduct(t *testing.T) {
	root := repoRoot(t)
	files := markdownFiles(t, root)
	if len(files) < 5 {
		t.Fatalf("found only %d Markdown files under %s: %v", len(files), root, files)
	}
	for _, rel := range files {
		for _, p := range check(t, filepath.Join(root, rel)) {
			t.Errorf("%s:%s", rel, p)
		}
	}
}

// TestCheckFindsEachKind proves each pattern matches what it is meant to
// (and not ordinary product prose), so that a clean run means something.
func TestCheckFindsEachKind(t *testing.T) {
	bad := []string{
		"see ../shared/spec/opensearch.md",
		"as shared/spec/real-opensearch.md says",
		"cd /work/main",
		"JAVA_HOME=/usr/lib/jvm/temurin-25-jdk-amd64",
		"cache in /root/.cache",
		"cache in /home/alice/.cache",
		"Ninth session: measured again",
		"see the report to the lead",
		"belongs to the receiver (issue 6)",
		"Design document 000 puts the chance",
		"while other helpers' builds ran",
		"The issue's target is not met",
		"| target (issue) |",
	}
	for _, line := range bad {
		if len(matches(line)) == 0 {
			t.Errorf("not caught: %q", line)
		}
	}
	good := []string{
		"the build cache is ~/.cache/opensearchrouted/launcher",
		"the exporter's shared router logs once",
		"`make opensearch-up` starts a cluster",
		"a JDK 21+ found on PATH",
		"new TLS connections resume an earlier TLS session",
	}
	for _, line := range good {
		if m := matches(line); len(m) != 0 {
			t.Errorf("ordinary prose flagged: %q: %v", line, m)
		}
	}
}

func matches(line string) []string {
	var out []string
	for _, f := range forbidden {
		if loc := f.re.FindStringIndex(line); loc != nil {
			out = append(out, fmt.Sprintf("%q is %s", line[loc[0]:loc[1]], f.why))
		}
	}
	return out
}

func check(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var problems []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		for _, m := range matches(sc.Text()) {
			problems = append(problems, fmt.Sprintf("%d: %s", n, m))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return problems
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test's directory")
		}
		dir = parent
	}
}

// markdownFiles lists the repository's Markdown files: the tracked ones (and
// untracked ones not ignored) when git is there, else every *.md file below
// root outside dot-directories and ./dist.
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "--cached", "--others", "--exclude-standard", "*.md")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil {
		var files []string
		for _, l := range strings.Split(string(bytes.TrimSpace(out)), "\n") {
			if l != "" {
				if _, err := os.Stat(filepath.Join(root, l)); err == nil {
					files = append(files, l)
				}
			}
		}
		return files
	}
	var files []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "dist") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(p, ".md") {
			rel, _ := filepath.Rel(root, p)
			files = append(files, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
