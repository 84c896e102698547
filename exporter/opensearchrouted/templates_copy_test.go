package opensearchrouted

import (
	"os"
	"testing"
)

// TestEmulatorTemplateCopies: the emulator's differential test of its
// mapping model (testbed/ossim) sends these templates to the emulator and
// to real OpenSearch from its testdata; the copies must be the templates
// the exporter installs (-update writes them).
func TestEmulatorTemplateCopies(t *testing.T) {
	for name, body := range map[string]string{"ss4o_logs": logsTemplate, "ss4o_traces": tracesTemplate} {
		path := "../../testbed/ossim/testdata/" + name + ".json"
		if *updateCorpus {
			if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != body {
			t.Errorf("%s differs from the exporter's %s template: run go test -run TestEmulatorTemplateCopies -update", path, name)
		}
	}
}
