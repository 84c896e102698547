package opensearchrouted

import (
	"fmt"
	"time"

	"github.com/opensearchrouted/opensearchrouted/internal/routing"
)

// DegradedDetectionConfig controls the detection of degraded nodes: alive,
// but their routed bulk requests take much longer per item than the other
// nodes'. A degraded node still receives the writes for its own primaries
// (a document's shard is where it is); unrouted documents avoid it as
// coordinator, as they avoid an overloaded node.
type DegradedDetectionConfig struct {
	// Enabled turns detection on (default true; needs routing.enabled).
	Enabled bool `mapstructure:"enabled"`
	// Ratio: a node whose average exceeds Ratio × the median of the nodes
	// is an outlier (default 1.5: with one replica, a sub-bulk waits for a
	// primary and a replica write, so a node k times slower shows as about
	// (k+1)/2 times slower: 2.5× for k = 4).
	Ratio float64 `mapstructure:"ratio"`
	// MinExcess is the least excess over the median per unit (item or KiB)
	// for an ejection (default 10µs).
	MinExcess time.Duration `mapstructure:"min_excess"`
	// MinRequests is the sub-bulks a node needs before it is judged or
	// counts toward the median (default 20).
	MinRequests int64 `mapstructure:"min_requests"`
	// MinHealthyNodes: never mark a node when fewer nodes than this would
	// remain unmarked (default 2).
	MinHealthyNodes int `mapstructure:"min_healthy_nodes"`
	// MaxDegradedPercent caps the nodes marked at once, as a percentage of
	// the nodes written to, rounded down (default 34: 2 of 6).
	MaxDegradedPercent int `mapstructure:"max_degraded_percent"`
	// Interval between evaluations (default 1s).
	Interval time.Duration `mapstructure:"interval"`
	// BaseEjectionTime is the least time a node stays marked, × the number
	// of times it was marked recently (one forgiven per BaseEjectionTime
	// unmarked), capped at MaxEjectionTime (defaults 30s and 5m). After it,
	// the node is unmarked once it is no longer an outlier.
	BaseEjectionTime time.Duration `mapstructure:"base_ejection_time"`
	MaxEjectionTime  time.Duration `mapstructure:"max_ejection_time"`
	// NormalizeBy is the unit a sub-bulk's latency is divided by: item
	// (default) or kib (its body's size).
	NormalizeBy string `mapstructure:"normalize_by"`
}

// Latency normalisations.
const (
	NormalizeByItem = "item"
	NormalizeByKiB  = "kib"
)

func defaultDegradedDetection() DegradedDetectionConfig {
	return DegradedDetectionConfig{
		Enabled: true, Ratio: 1.5, MinExcess: routing.DefaultDegradedMinExcess, MinRequests: 20,
		MinHealthyNodes: 2, MaxDegradedPercent: 34, Interval: time.Second,
		BaseEjectionTime: 30 * time.Second, MaxEjectionTime: 5 * time.Minute, NormalizeBy: NormalizeByItem,
	}
}

// validate checks the section; every error names its key.
func (d *DegradedDetectionConfig) validate() []error {
	if !d.Enabled {
		return nil
	}
	const p = "routing.degraded_detection."
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(p+format, a...)) }
	if d.Ratio <= 1 {
		add("ratio: must be above 1, got %v", d.Ratio)
	}
	if d.MinExcess <= 0 {
		add("min_excess: must be positive, got %v", d.MinExcess)
	}
	if d.MinRequests < 1 {
		add("min_requests: must be at least 1, got %d", d.MinRequests)
	}
	if d.MinHealthyNodes < 1 {
		add("min_healthy_nodes: must be at least 1, got %d", d.MinHealthyNodes)
	}
	if d.MaxDegradedPercent < 1 || d.MaxDegradedPercent > 100 {
		add("max_degraded_percent: must be between 1 and 100, got %d", d.MaxDegradedPercent)
	}
	if d.Interval <= 0 {
		add("interval: must be positive, got %v", d.Interval)
	}
	if d.BaseEjectionTime <= 0 {
		add("base_ejection_time: must be positive, got %v", d.BaseEjectionTime)
	}
	if d.MaxEjectionTime < d.BaseEjectionTime {
		add("max_ejection_time: %v is shorter than base_ejection_time (%v)", d.MaxEjectionTime, d.BaseEjectionTime)
	}
	if d.NormalizeBy != NormalizeByItem && d.NormalizeBy != NormalizeByKiB {
		add("normalize_by: %q is not one of item, kib", d.NormalizeBy)
	}
	return errs
}

// routing is the router's detector configuration.
func (d *DegradedDetectionConfig) routing() routing.DegradedConfig {
	return routing.DegradedConfig{
		Enabled: d.Enabled,
		PerKiB:  d.NormalizeBy == NormalizeByKiB,
		Outliers: routing.OutlierConfig{
			Ratio: d.Ratio, MinExcess: float64(d.MinExcess), MinRequests: d.MinRequests,
			MinCandidates: d.MinHealthyNodes, MaxEjectionPercent: d.MaxDegradedPercent, Interval: d.Interval,
			BaseEjectionTime: d.BaseEjectionTime, MaxEjectionTime: d.MaxEjectionTime,
		},
	}
}
