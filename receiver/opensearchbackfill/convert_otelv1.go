package opensearchbackfill

import "fmt"

// Mapping modes: the layout span documents are read in.
const (
	// MappingSS4O reads the SS4O layout (the exporter's default).
	MappingSS4O = "ss4o"
	// MappingOtelV1 reads the otel-v1 layout of Data Prepper and Trace
	// Analytics (otel-v1-apm-span-* indices), as internal/otelv1 decodes it.
	MappingOtelV1 = "otel-v1"
)

// MappingConfig names the layout of span documents. It is set, not
// detected: a document of one layout is foreign to the other (skipped and
// counted, never guessed at), and one read is of one layout.
type MappingConfig struct {
	// Mode is ss4o (default) or otel-v1 (signal traces only).
	Mode string `mapstructure:"mode"`
}

func (m MappingConfig) validate(signal string) []error {
	switch m.Mode {
	case MappingSS4O:
	case MappingOtelV1:
		if signal != SignalTraces {
			return []error{fmt.Errorf("mapping.mode: %q is a layout of span documents; it needs signal: traces, not %q", m.Mode, signal)}
		}
	default:
		return []error{fmt.Errorf("mapping.mode: %q is not one of %s, %s", m.Mode, MappingSS4O, MappingOtelV1)}
	}
	return nil
}
