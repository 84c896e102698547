package demo

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/opensearchrouted/opensearchrouted/exporter/opensearchrouted"
)

// Documents whose ```yaml blocks are collector configurations: every
// block must pass `otelcol-opensearchrouted validate`.
var docFiles = []string{
	"README.md",
	"exporter/opensearchrouted/README.md",
	"receiver/opensearchbackfill/README.md",
}

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// collectorBinary builds (or reuses) ./dist/otelcol-opensearchrouted once
// per test binary: ocb on a fresh clone, an incremental go build after.
func collectorBinary(t *testing.T) (root, bin string) {
	t.Helper()
	root, err := FindRoot()
	if err != nil {
		t.Fatal(err)
	}
	buildOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		var log bytes.Buffer
		builtBin, buildErr = EnsureCollector(ctx, root, &log)
		if buildErr != nil {
			buildErr = &buildError{buildErr, tailString(log.String(), 4000)}
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return root, builtBin
}

type buildError struct {
	err error
	log string
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.log }

func tailString(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

// yamlBlocks returns the ```yaml fenced blocks of a Markdown file with the
// line each starts on.
func yamlBlocks(t *testing.T, path string) (blocks []string, lines []int) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	var cur *strings.Builder
	start := 0
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && (trimmed == "```yaml" || trimmed == "```yml"):
			cur, start = &strings.Builder{}, n+1
		case cur != nil && trimmed == "```":
			blocks, lines = append(blocks, cur.String()), append(lines, start)
			cur = nil
		case cur != nil:
			cur.WriteString(line)
			cur.WriteByte('\n')
		}
	}
	if cur != nil {
		t.Fatalf("%s: unterminated ```yaml block at line %d", path, start)
	}
	return blocks, lines
}

func validate(t *testing.T, bin, file string, env ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "validate", "--config", file)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestDocsExamplesValidate runs `otelcol-opensearchrouted validate` on
// every YAML example of the docs and on the demo's collector.yaml.
func TestDocsExamplesValidate(t *testing.T) {
	root, bin := collectorBinary(t)
	dir := t.TempDir()
	// Examples read secrets from the environment; validate needs them set.
	// sigv4auth resolves AWS credentials while validating: example keys in
	// the environment, and no instance metadata lookup (no network).
	env := []string{"OPENSEARCH_TOKEN=example-token", "OPENSEARCH_ENDPOINT=https://127.0.0.1:9200",
		"OPENSEARCH_PASSWORD=example-password",
		"AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE", "AWS_SECRET_ACCESS_KEY=example-secret-key",
		"AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null"}

	total := 0
	for _, doc := range docFiles {
		path := filepath.Join(root, doc)
		if _, err := os.Stat(path); err != nil {
			t.Fatalf("%s: %v", doc, err)
		}
		blocks, lines := yamlBlocks(t, path)
		for i, b := range blocks {
			total++
			file := filepath.Join(dir, strings.NewReplacer("/", "_", ".", "_").Replace(doc)+"_"+itoa(lines[i])+".yaml")
			if err := os.WriteFile(file, []byte(b), 0o644); err != nil {
				t.Fatal(err)
			}
			if out, err := validate(t, bin, file, env...); err != nil {
				t.Errorf("%s:%d: the example does not validate: %v\n%s\n---\n%s", doc, lines[i], err, out, b)
			}
		}
	}
	if total < 3 {
		t.Errorf("found only %d YAML examples in %v; the README must carry a minimal and a full configuration", total, docFiles)
	}
	if out, err := validate(t, bin, filepath.Join(root, "testbed", "demo", "collector.yaml")); err != nil {
		t.Errorf("testbed/demo/collector.yaml does not validate: %v\n%s", err, out)
	}
}

// TestValidateRejectsBadConfig proves validate checks the exporter's
// configuration (so the examples' success means something): an unknown
// document_id mode and an unknown key are refused, naming the key.
func TestValidateRejectsBadConfig(t *testing.T) {
	_, bin := collectorBinary(t)
	dir := t.TempDir()
	for name, c := range map[string]struct{ yaml, want string }{
		"bad value":   {"document_id: uuid", "document_id"},
		"unknown key": {"routing:\n      enabld: true", "enabld"},
	} {
		cfg := "receivers:\n  otlp:\n    protocols:\n      grpc:\n        endpoint: 127.0.0.1:4317\n" +
			"exporters:\n  opensearchrouted:\n    endpoint: http://127.0.0.1:9200\n    " + c.yaml + "\n" +
			"service:\n  pipelines:\n    logs:\n      receivers: [otlp]\n      exporters: [opensearchrouted]\n"
		file := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".yaml")
		if err := os.WriteFile(file, []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		out, err := validate(t, bin, file)
		if err == nil {
			t.Errorf("%s: validate accepted\n%s", name, cfg)
			continue
		}
		if !strings.Contains(out, c.want) {
			t.Errorf("%s: validate's error does not name %q:\n%s", name, c.want, out)
		}
	}
}

// TestDemoRunsEmulator runs the demo's two runs with a small load on free
// ports: with routing on nothing is forwarded between nodes, with routing
// off about two thirds of the items are; both store every record exactly
// once, and the report carries both columns.
func TestDemoRunsEmulator(t *testing.T) {
	root, bin := collectorBinary(t)
	b, err := StartEmulator(3, 0, 3)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var ports [3]int
	for i := range ports {
		if ports[i], err = FreePort(); err != nil {
			t.Fatal(err)
		}
	}
	o := Options{
		Collector:    bin,
		Config:       filepath.Join(root, "testbed", "demo", "collector.yaml"),
		Load:         Load{Logs: 3000, Spans: 1500, Batch: 250, Workers: 2},
		OTLPAddr:     "127.0.0.1:" + itoa(ports[0]),
		MetricsPort:  ports[1],
		HealthPort:   ports[2],
		StoreTimeout: 60 * time.Second,
		LogDir:       t.TempDir(),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	on, err := RunOnce(ctx, b, o, true, "routed")
	if err != nil {
		t.Fatalf("routing on: %v", err)
	}
	off, err := RunOnce(ctx, b, o, false, "roundrobin")
	if err != nil {
		t.Fatalf("routing off: %v", err)
	}
	for _, r := range []Run{on, off} {
		if !r.Ok() || r.Measured != 4500 {
			t.Errorf("%s: sent %d (measured %d), stored %d, duplicates %d, missing %d", r.Label, r.Sent(), r.Measured, r.Stored(), r.DuplicatesStored(), r.Missing())
		}
		if r.Received() != r.Measured {
			t.Errorf("%s: the nodes received %d items, want %d", r.Label, r.Received(), r.Measured)
		}
		if !r.HasLatency || len(r.Windows) != 3 {
			t.Errorf("%s: latency %v, windows %v: the collector's metrics were not read", r.Label, r.HasLatency, r.Windows)
		}
	}
	if on.Forwarded() != 0 {
		t.Errorf("routing on forwarded %d items between nodes, want 0", on.Forwarded())
	}
	// 3 shards on 3 nodes: round-robin sends 2 of 3 items to a node without
	// their primary.
	if f := float64(off.Forwarded()) / float64(off.Measured); f < 0.5 || f > 0.8 {
		t.Errorf("routing off forwarded %d of %d items (%.2f), want about 2/3", off.Forwarded(), off.Measured, f)
	}
	var out strings.Builder
	if err := Format(&out, "test", on, off); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "routing removed 100.0% of the node-to-node forwards") {
		t.Errorf("report:\n%s", out.String())
	}
	// Nothing left listening.
	for _, a := range []string{o.OTLPAddr, hostPort(o.MetricsPort), hostPort(o.HealthPort)} {
		if err := checkFree(a); err != nil {
			t.Errorf("after the runs: %v", err)
		}
	}
}

func itoa(i int) string { return strconv.Itoa(i) }

// TestDocsListEveryExporterKey: the configuration tables of the top-level
// README and of the exporter's README name every key of the exporter's
// Config (as `key` or `parent.key`).
func TestDocsListEveryExporterKey(t *testing.T) {
	root, err := FindRoot()
	if err != nil {
		t.Fatal(err)
	}
	keys := configKeys(reflect.TypeFor[opensearchrouted.Config](), "")
	if len(keys) < 15 {
		t.Fatalf("found only %d keys in Config: %v", len(keys), keys)
	}
	for _, doc := range []string{"README.md", "exporter/opensearchrouted/README.md"} {
		data, err := os.ReadFile(filepath.Join(root, doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			if !strings.Contains(string(data), "`"+k+"`") {
				t.Errorf("%s does not document the key %s", doc, k)
			}
		}
	}
}

// configKeys lists the mapstructure keys of the exporter's own fields,
// nested ones as parent.key (the collector's squashed HTTP client settings
// are the collector's and are not listed).
func configKeys(typ reflect.Type, prefix string) []string {
	var out []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		tag := f.Tag.Get("mapstructure")
		if tag == "" || tag == "-" || strings.Contains(tag, "squash") {
			continue
		}
		if f.Type.Kind() == reflect.Struct && strings.HasPrefix(f.Type.PkgPath(), "github.com/opensearchrouted/") {
			out = append(out, configKeys(f.Type, prefix+tag+".")...)
			continue // a section: its keys are listed
		}
		out = append(out, prefix+tag)
	}
	return out
}
