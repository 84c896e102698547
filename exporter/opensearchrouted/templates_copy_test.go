package opensearchrouted

import (
	"os"
	"testing"
)

// TestEmulatorTemplateCopies: the emulator's differential test of its
// mapping model (testbed/ossim) sends these templates to the emulator and
// to real OpenSearch from its testdata; the copies must be the templates
// the exporter installs.
func TestEmulatorTemplateCopies(t *testing.T) {
	for name, body := range map[string]string{"ss4o_logs": logsTemplate, "ss4o_traces": tracesTemplate} {
		path := "../../testbed/ossim/testdata/" + name + ".json"
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != body {
			t.Errorf("%s differs from the exporter's %s template: write the template there again", path, name)
		}
	}
}
