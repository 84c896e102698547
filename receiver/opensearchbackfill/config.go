package opensearchbackfill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/opensearchrouted/opensearchrouted/internal/endpoints"
	"strings"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configretry"

	"github.com/opensearchrouted/opensearchrouted/internal/pit"
	"github.com/opensearchrouted/opensearchrouted/internal/routing"
)

// Signals and modes.
const (
	SignalLogs   = "logs"
	SignalTraces = "traces"

	// ModeOnce reads every slice to its end, then stays idle (reported
	// through component status).
	ModeOnce = "once"
	// ModeFollow reads to the end, then polls every poll_interval for
	// documents that sort after the last cursor.
	ModeFollow = "follow"
)

// Defaults of follow mode.
const (
	DefaultFollowLag      = 5 * time.Second
	DefaultMaxDedupWindow = 262144
)

// Config is the receiver's configuration.
type Config struct {
	// ClientConfig is the collector's HTTP client configuration: TLS, auth
	// extensions, headers, compression, proxy, timeout (per request,
	// default 60s), and a single `endpoint`.
	confighttp.ClientConfig `mapstructure:",squash"`

	// Endpoints are seed URLs of the cluster (default: `endpoint`).
	Endpoints []string `mapstructure:"endpoints"`

	// Indices are the index names, patterns or data streams to read.
	// Required.
	Indices []string `mapstructure:"indices"`
	// Query is a JSON query object (default: match_all). Combined with
	// start_time/end_time in a bool filter when those are set.
	Query string `mapstructure:"query"`
	// TimeField is the date field start_time and end_time apply to
	// (default "@timestamp").
	TimeField string `mapstructure:"time_field"`
	// StartTime (inclusive) and EndTime (exclusive) bound TimeField; RFC
	// 3339 timestamps. Unset means unbounded.
	StartTime time.Time `mapstructure:"start_time"`
	EndTime   time.Time `mapstructure:"end_time"`
	// Sort is a JSON sort array, stable across points in time and ending in
	// a unique tiebreaker (default: @timestamp, _index, then _id, all
	// ascending; a sort over several indices needs _index before _id, as
	// an _id is unique within one index only).
	Sort string `mapstructure:"sort"`

	// Routing is routing value(s), comma-separated: only the shards they
	// route to are read (documents indexed with another routing that
	// hash to the same shards are read too; add a query on _routing to
	// exclude them). Sent at PIT creation (default: none).
	Routing string `mapstructure:"routing"`
	// Preference picks the shard copies holding each PIT's contexts, as
	// OpenSearch's preference (_local, _prefer_nodes:ids, _only_nodes:ids,
	// a custom string); sent at PIT creation, which is the only place the
	// server accepts it with a PIT. Unset: the receiver prefers copies on
	// nodes that are not ejected as latency outliers.
	Preference string `mapstructure:"preference"`

	// PageSize is the number of documents per search (default 1000).
	PageSize int `mapstructure:"page_size"`
	// Slices is the number of parallel PIT slices (default 1, no slicing).
	Slices int `mapstructure:"slices"`
	// KeepAlive of each point in time, renewed by every search (default 5m).
	KeepAlive time.Duration `mapstructure:"keep_alive"`
	// MaxRecreateAttempts bounds the recreations of a lost PIT in a row,
	// per slice: a page read starts the count again (default 3; negative:
	// never recreate, context loss fails the slice).
	MaxRecreateAttempts int `mapstructure:"max_recreate_attempts"`
	// DedupWindow is the number of recently emitted documents remembered
	// per slice to skip duplicates after a PIT recreation (default 32768;
	// negative: no deduplication, emit everything).
	DedupWindow int `mapstructure:"dedup_window"`

	// Signal is what the documents become: logs (default) or traces.
	Signal string `mapstructure:"signal"`
	// Mapping is the layout span documents are read in (see
	// MappingConfig).
	Mapping MappingConfig `mapstructure:"mapping"`
	// Mode is once (default) or follow.
	Mode string `mapstructure:"mode"`
	// PollInterval is the wait between two reads in follow mode (default 30s).
	PollInterval time.Duration `mapstructure:"poll_interval"`
	// FollowLag is how far back in time_field each follow-mode read starts
	// before the last cursor, so that documents that became visible late
	// (a shard's refresh, an equal timestamp with a lower _id) are read;
	// the dedup window drops those already emitted (default 5s; 0: resume
	// strictly after the cursor). It must cover the indices'
	// index.refresh_interval, checked at start when the setting is
	// readable.
	FollowLag time.Duration `mapstructure:"follow_lag"`
	// MaxDedupWindow bounds the growth of each slice's dedup window in
	// follow mode: the window grows past dedup_window to hold every
	// document of the last follow_lag (default 262144 per slice). Past it,
	// documents are forgotten early, counted and warned about: a document
	// forgotten that way and read again is emitted again.
	MaxDedupWindow int `mapstructure:"max_dedup_window"`
	// MaxDocumentsPerSecond caps the documents handed to the pipeline per
	// second, all slices together (default 0: unlimited).
	MaxDocumentsPerSecond float64 `mapstructure:"max_documents_per_second"`

	// Storage is the id of a storage extension. When set, every slice's
	// cursor is saved after each page the pipeline accepted, and a
	// restarted collector resumes from it (default: none, start over).
	Storage *component.ID `mapstructure:"storage"`

	// RetryOnFailure is how a page the pipeline refused with a retryable
	// error is retried (default: enabled, 1s initial, 30s max interval, no
	// max elapsed time). Disabled: the first refusal fails the slice. When
	// max_elapsed_time runs out, the slice fails; its checkpoint stays
	// before the refused page.
	RetryOnFailure configretry.BackOffConfig `mapstructure:"retry_on_failure"`

	// ReadRetry is how reads that fail (the cluster or a node down, a
	// lost point in time, a shard that keeps failing) are retried: the
	// slice's point in time is reopened after its checkpoint, waiting
	// between attempts with jitter, the wait doubling from
	// initial_interval up to max_interval. Follow mode retries forever;
	// once mode fails the slice after max_elapsed_time without a page
	// read. Bad queries, missing indices and refused credentials fail at
	// once.
	ReadRetry ReadRetryConfig `mapstructure:"read_retry"`

	Discovery DiscoveryConfig `mapstructure:"discovery"`

	// OutlierDetection ejects nodes whose search latency is a clear
	// outlier from coordinating searches (needs discovery).
	OutlierDetection OutlierConfig `mapstructure:"outlier_detection"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// ReadRetryConfig is the retry schedule of failed reads.
type ReadRetryConfig struct {
	InitialInterval time.Duration `mapstructure:"initial_interval"` // default 1s
	MaxInterval     time.Duration `mapstructure:"max_interval"`     // default 30s
	// MaxElapsedTime bounds the retries of a once-mode slice without a
	// page read (default 5m). Follow mode ignores it.
	MaxElapsedTime time.Duration `mapstructure:"max_elapsed_time"`
}

// OutlierConfig controls the latency outlier detection of search nodes: a
// node whose average search latency exceeds ratio × the median of the
// nodes in use (and the median by min_excess) is not sent searches for
// base_ejection_time × its ejection count (capped at max_ejection_time),
// unless fewer than 2 nodes would remain or max_ejection_percent of them
// are already ejected.
type OutlierConfig struct {
	Enabled            bool          `mapstructure:"enabled"`              // default true
	Ratio              float64       `mapstructure:"ratio"`                // default 2
	MinExcess          time.Duration `mapstructure:"min_excess"`           // default 1ms
	MinRequests        int64         `mapstructure:"min_requests"`         // default 20 per node
	Interval           time.Duration `mapstructure:"interval"`             // default 1s
	BaseEjectionTime   time.Duration `mapstructure:"base_ejection_time"`   // default 30s
	MaxEjectionTime    time.Duration `mapstructure:"max_ejection_time"`    // default 5m
	MaxEjectionPercent int           `mapstructure:"max_ejection_percent"` // default 50
}

func (o OutlierConfig) detector() *routing.Outliers {
	if !o.Enabled {
		return nil
	}
	return routing.NewOutliers(routing.OutlierConfig{
		Ratio: o.Ratio, MinExcess: float64(o.MinExcess), MinRequests: o.MinRequests, Interval: o.Interval,
		BaseEjectionTime: o.BaseEjectionTime, MaxEjectionTime: o.MaxEjectionTime, MaxEjectionPercent: o.MaxEjectionPercent,
	})
}

// DiscoveryConfig controls topology discovery, used to send reads to nodes
// holding copies of the indices' shards.
type DiscoveryConfig struct {
	// Enabled discovers the cluster's nodes and shard copies (default
	// true). false: reads rotate over the configured endpoints.
	Enabled bool `mapstructure:"enabled"`
	// RefreshInterval between topology refreshes (default 30s).
	RefreshInterval time.Duration `mapstructure:"refresh_interval"`
}

func createDefaultConfig() *Config {
	httpCfg := confighttp.NewDefaultClientConfig()
	httpCfg.Timeout = time.Minute
	retry := configretry.NewDefaultBackOffConfig()
	retry.InitialInterval = time.Second
	retry.MaxInterval = 30 * time.Second
	retry.MaxElapsedTime = 0
	return &Config{
		ClientConfig:        httpCfg,
		TimeField:           "@timestamp",
		PageSize:            pit.DefaultPageSize,
		Slices:              1,
		KeepAlive:           pit.DefaultKeepAlive,
		MaxRecreateAttempts: pit.DefaultMaxRecreateAttempts,
		DedupWindow:         pit.DefaultDedupWindow,
		Signal:              SignalLogs,
		Mapping:             MappingConfig{Mode: MappingSS4O},
		Mode:                ModeOnce,
		PollInterval:        30 * time.Second,
		FollowLag:           DefaultFollowLag,
		MaxDedupWindow:      DefaultMaxDedupWindow,
		RetryOnFailure:      retry,
		ReadRetry:           ReadRetryConfig{InitialInterval: time.Second, MaxInterval: 30 * time.Second, MaxElapsedTime: 5 * time.Minute},
		Discovery:           DiscoveryConfig{Enabled: true, RefreshInterval: 30 * time.Second},
		OutlierDetection: OutlierConfig{
			Enabled: true, Ratio: 2, MinExcess: time.Millisecond, MinRequests: 20, Interval: time.Second,
			BaseEjectionTime: 30 * time.Second, MaxEjectionTime: 5 * time.Minute, MaxEjectionPercent: 50,
		},
	}
}

// seeds returns the configured endpoints: endpoints, else endpoint.
func (c *Config) seeds() []string { return endpoints.Seeds(c.Endpoint, c.Endpoints) }

// Validate checks the configuration; every error names the key.
func (c *Config) Validate() error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	errs = append(errs, endpoints.Validate(c.Endpoint, c.Endpoints)...)
	if len(c.Indices) == 0 {
		add("indices: at least one index, pattern or data stream is required")
	}
	for _, ix := range c.Indices {
		if ix == "" || strings.ContainsAny(ix, ",/\\#\" \t\r\n") {
			add("indices: %q is empty or has a character not allowed in an index name", ix)
		}
	}
	if c.Query != "" {
		var m map[string]json.RawMessage
		if err := json.Unmarshal([]byte(c.Query), &m); err != nil {
			add("query: must be a JSON object: %v", err)
		} else if len(m) == 0 {
			add("query: the JSON object is empty; leave query unset for match_all")
		}
	}
	if !c.StartTime.IsZero() && !c.EndTime.IsZero() && !c.EndTime.After(c.StartTime) {
		add("end_time: must be after start_time")
	}
	if (!c.StartTime.IsZero() || !c.EndTime.IsZero()) && c.TimeField == "" {
		add("time_field: required with start_time or end_time")
	}
	if c.PageSize < 1 || c.PageSize > 10000 {
		add("page_size: must be between 1 and 10000 (index.max_result_window), got %d", c.PageSize)
	}
	if c.Slices < 1 || c.Slices > 1024 {
		add("slices: must be between 1 and 1024, got %d", c.Slices)
	}
	if c.KeepAlive < time.Second {
		add("keep_alive: must be at least 1s, got %v", c.KeepAlive)
	}
	if c.MaxRecreateAttempts == 0 {
		add("max_recreate_attempts: 0 is ambiguous; use a positive number, or a negative one to disable recreation")
	}
	if c.DedupWindow == 0 {
		add("dedup_window: 0 is ambiguous; use a positive size, or a negative one to disable deduplication")
	}
	switch c.Signal {
	case SignalLogs, SignalTraces:
	default:
		add("signal: %q is not one of logs, traces", c.Signal)
	}
	errs = append(errs, c.Mapping.validate(c.Signal)...)
	switch c.Mode {
	case ModeOnce:
	case ModeFollow:
		if c.PollInterval <= 0 {
			add("poll_interval: must be positive in follow mode, got %v", c.PollInterval)
		}
		if c.FollowLag < 0 {
			add("follow_lag: must not be negative, got %v", c.FollowLag)
		}
		if c.FollowLag > 0 {
			if c.DedupWindow < 0 {
				add("dedup_window: follow mode with a follow_lag re-reads the last follow_lag at every poll and needs deduplication; enable it or set follow_lag to 0")
			}
			if c.MaxDedupWindow < c.DedupWindow {
				add("max_dedup_window: must be at least dedup_window (%d), got %d", c.DedupWindow, c.MaxDedupWindow)
			}
			if err := c.checkFollowSort(); err != nil {
				errs = append(errs, err)
			}
		}
	default:
		add("mode: %q is not one of once, follow", c.Mode)
	}
	if c.MaxDocumentsPerSecond < 0 {
		add("max_documents_per_second: must not be negative (0 = unlimited), got %v", c.MaxDocumentsPerSecond)
	}
	if c.Discovery.Enabled && c.Discovery.RefreshInterval <= 0 {
		add("discovery.refresh_interval: must be positive, got %v", c.Discovery.RefreshInterval)
	}
	if c.Timeout < 0 {
		add("timeout: must not be negative, got %v", c.Timeout)
	}
	if od := c.OutlierDetection; od.Enabled {
		switch {
		case od.Ratio <= 1:
			add("outlier_detection.ratio: must be above 1, got %v", od.Ratio)
		case od.MinExcess < 0:
			add("outlier_detection.min_excess: must not be negative, got %v", od.MinExcess)
		case od.MinRequests < 1:
			add("outlier_detection.min_requests: must be at least 1, got %d", od.MinRequests)
		case od.Interval <= 0:
			add("outlier_detection.interval: must be positive, got %v", od.Interval)
		case od.BaseEjectionTime <= 0 || od.MaxEjectionTime < od.BaseEjectionTime:
			add("outlier_detection: need 0 < base_ejection_time ≤ max_ejection_time, got %v and %v", od.BaseEjectionTime, od.MaxEjectionTime)
		case od.MaxEjectionPercent < 1 || od.MaxEjectionPercent > 100:
			add("outlier_detection.max_ejection_percent: must be between 1 and 100, got %d", od.MaxEjectionPercent)
		}
	}
	if strings.ContainsAny(c.Routing, " \t\r\n") {
		add("routing: %q has whitespace (routing values are comma-separated)", c.Routing)
	}
	if c.ReadRetry.InitialInterval <= 0 || c.ReadRetry.MaxInterval < c.ReadRetry.InitialInterval {
		add("read_retry: need 0 < initial_interval ≤ max_interval, got %v and %v", c.ReadRetry.InitialInterval, c.ReadRetry.MaxInterval)
	}
	if c.ReadRetry.MaxElapsedTime <= 0 {
		add("read_retry.max_elapsed_time: must be positive, got %v", c.ReadRetry.MaxElapsedTime)
	}
	if err := c.RetryOnFailure.Validate(); err != nil {
		add("retry_on_failure: %v", err)
	}
	// The paginator's own checks (sort shape and tiebreaker, stable sort
	// fields), without touching the network.
	if len(errs) == 0 {
		if err := c.checkPaginatorOptions(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// checkPaginatorOptions runs pit.Open's validation with a selector that
// offers no node, so that nothing is sent: a *pit.ConfigError is a bad
// option, pit.ErrNoNode means the options are valid.
func (c *Config) checkPaginatorOptions() error {
	o, err := c.pitOptions()
	if err != nil {
		return err
	}
	o.Selector = noNode{}
	o.MaxRetries = -1
	_, err = pit.Open(context.Background(), o)
	var ce *pit.ConfigError
	switch {
	case errors.As(err, &ce):
		return fmt.Errorf("%s: %s", configKey(ce.Field), ce.Msg)
	case err == nil || errors.Is(err, pit.ErrNoNode):
		return nil
	}
	return err
}

// configKey maps a pit.Options field to this receiver's key.
func configKey(field string) string {
	switch field {
	case "Sort":
		return "sort"
	case "Query":
		return "query"
	case "Indices":
		return "indices"
	case "PageSize":
		return "page_size"
	case "KeepAlive":
		return "keep_alive"
	case "Slice":
		return "slices"
	}
	return strings.ToLower(field)
}

type noNode struct{}

func (noNode) ReadNode([]string, func(string) bool) (string, bool) { return "", false }

// pitOptions are the paginator options every slice shares.
func (c *Config) pitOptions() (pit.Options, error) {
	q, err := c.query()
	if err != nil {
		return pit.Options{}, err
	}
	o := pit.Options{
		Indices:             c.Indices,
		Query:               q,
		PageSize:            c.PageSize,
		KeepAlive:           c.KeepAlive,
		MaxRecreateAttempts: c.MaxRecreateAttempts,
		DedupWindow:         c.DedupWindow,
		Routing:             c.Routing,
	}
	if c.Preference != "" {
		pref := c.Preference
		o.Preference = func() string { return pref }
	}
	if c.Sort != "" {
		o.Sort = json.RawMessage(c.Sort)
	}
	return o, nil
}

// query combines query and the time range.
func (c *Config) query() (json.RawMessage, error) {
	if c.StartTime.IsZero() && c.EndTime.IsZero() {
		if c.Query == "" {
			return nil, nil
		}
		return json.RawMessage(c.Query), nil
	}
	rng := map[string]string{}
	if !c.StartTime.IsZero() {
		rng["gte"] = c.StartTime.UTC().Format(time.RFC3339Nano)
	}
	if !c.EndTime.IsZero() {
		rng["lt"] = c.EndTime.UTC().Format(time.RFC3339Nano)
	}
	filter := []any{map[string]any{"range": map[string]any{c.TimeField: rng}}}
	if c.Query != "" {
		filter = append([]any{json.RawMessage(c.Query)}, filter...)
	}
	b, err := json.Marshal(map[string]any{"bool": map[string]any{"filter": filter}})
	if err != nil {
		return nil, fmt.Errorf("query: %w", err)
	}
	return b, nil
}

// fingerprint identifies what a checkpoint was taken for: a checkpoint of
// another read (other indices, query, sort or slice count) is not resumed.
// The sort is the one sent: a checkpoint's cursor holds one value per sort
// field, so one taken under an older default sort cannot be resumed.
func (c *Config) fingerprint() string {
	q, _ := c.query()
	sort := c.Sort
	if sort == "" {
		// The default sort's cursor has kept its shape (@timestamp,
		// _index, _id) since unmapped_type was added to _index and _id:
		// checkpoints taken before still resume.
		sort = defaultSortFingerprint
	}
	b, _ := json.Marshal([]any{c.Indices, json.RawMessage(orNull(q)), sort, c.Slices, c.Signal})
	return string(b)
}

// defaultSortFingerprint stands for pit.DefaultSort in fingerprints.
const defaultSortFingerprint = `[{"@timestamp":{"order":"asc","unmapped_type":"date"}},{"_index":{"order":"asc"}},{"_id":{"order":"asc"}}]`

func orNull(b []byte) []byte {
	if len(b) == 0 {
		return []byte("null")
	}
	return b
}
