package opensearchrouted

import (
	"fmt"
	"time"
)

// Mapping modes.
const (
	// MappingSS4O writes logs and spans in the Simple Schema for
	// Observability layout, to ss4o_* data streams. The default.
	MappingSS4O = "ss4o"
	// MappingOtelV1 writes spans in the layout OpenSearch Dashboards' Trace
	// Analytics reads (the one Data Prepper writes): span documents with
	// their trace groups to the write alias otel-v1-apm-span, and the
	// service map's edges to otel-v1-apm-service-map. Logs stay SS4O (Trace
	// Analytics reads no log index).
	MappingOtelV1 = "otel-v1"
)

// MappingConfig chooses the layout of the documents.
type MappingConfig struct {
	// Mode is ss4o (default) or otel-v1 (spans only; logs stay ss4o).
	Mode string `mapstructure:"mode"`
	// TraceGroups controls how otel-v1 spans get their trace group (the
	// name, end time, duration and status of their trace's root span).
	TraceGroups TraceGroupsConfig `mapstructure:"trace_groups"`
	// ServiceMap controls the otel-v1 service map.
	ServiceMap ServiceMapConfig `mapstructure:"service_map"`
}

// TraceGroupsConfig bounds what the exporter remembers to give every span
// its trace group. A root span's group goes to the spans of its trace in
// the same export call directly, and to those of later calls through a
// cache of recent roots. A span written before its root is remembered and
// updated in place (fixed up) once the root arrives.
type TraceGroupsConfig struct {
	// CacheSize is how many recent roots (trace id → group) are remembered
	// (default 100000; the oldest go first).
	CacheSize int `mapstructure:"cache_size"`
	// CacheTTL is how long a root is remembered, and how long a span
	// written without its group waits for its root (default 5m).
	CacheTTL time.Duration `mapstructure:"cache_ttl"`
	// MaxPending is how many spans written without their group are
	// remembered for the fix-up (default 100000); a span beyond it is
	// counted unresolved at once.
	MaxPending int `mapstructure:"max_pending"`
	// FixupInterval is how often the spans whose root has arrived since
	// they were written are updated (default 1s).
	FixupInterval time.Duration `mapstructure:"fixup_interval"`
	// FixupAttempts bounds the fix-up passes that try one span before it
	// is counted unresolved (default 5).
	FixupAttempts int `mapstructure:"fixup_attempts"`
}

// ServiceMapConfig controls the service map.
type ServiceMapConfig struct {
	// Enabled writes an edge document for every pair of parent and child
	// spans of different services (default true).
	Enabled bool `mapstructure:"enabled"`
	// CacheSize is how many recent spans are remembered to pair a child
	// with a parent that came in an earlier call (default 10000).
	CacheSize int `mapstructure:"cache_size"`
}

func defaultMappingConfig() MappingConfig {
	return MappingConfig{
		Mode: MappingSS4O,
		TraceGroups: TraceGroupsConfig{
			CacheSize:     100000,
			CacheTTL:      5 * time.Minute,
			MaxPending:    100000,
			FixupInterval: time.Second,
			FixupAttempts: 5,
		},
		ServiceMap: ServiceMapConfig{Enabled: true, CacheSize: 10000},
	}
}

// otelV1 reports whether spans are written in the otel-v1 layout.
func (c *Config) otelV1() bool { return c.Mapping.Mode == MappingOtelV1 }

func (m *MappingConfig) validate() []error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	switch m.Mode {
	case MappingSS4O, MappingOtelV1:
	default:
		add("mapping.mode: %q is not one of ss4o, otel-v1", m.Mode)
	}
	tg := &m.TraceGroups
	if tg.CacheSize < 1 {
		add("mapping.trace_groups.cache_size: must be at least 1, got %d", tg.CacheSize)
	}
	if tg.CacheTTL <= 0 {
		add("mapping.trace_groups.cache_ttl: must be positive, got %v", tg.CacheTTL)
	}
	if tg.MaxPending < 0 {
		add("mapping.trace_groups.max_pending: must not be negative (0: no fix-up), got %d", tg.MaxPending)
	}
	if tg.FixupInterval <= 0 {
		add("mapping.trace_groups.fixup_interval: must be positive, got %v", tg.FixupInterval)
	}
	if tg.FixupAttempts < 1 {
		add("mapping.trace_groups.fixup_attempts: must be at least 1, got %d", tg.FixupAttempts)
	}
	if m.ServiceMap.CacheSize < 0 {
		add("mapping.service_map.cache_size: must not be negative, got %d", m.ServiceMap.CacheSize)
	}
	return errs
}
