package opensearchrouted

import (
	"errors"
	"fmt"
	"github.com/opensearchrouted/opensearchrouted/internal/endpoints"
	"strings"
	"time"

	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
)

// Document id modes for logs (spans always use trace id + span id).
const (
	// DocumentIDContent: a 128-bit hash of everything that makes the record
	// distinct (resource, scope, every field), plus an occurrence suffix for
	// exact repeats within one call. An upstream resend maps to the same
	// ids, so it is stored once. The default.
	DocumentIDContent = "content"
	// DocumentIDAttribute: the value of the log attribute named by
	// document_id_attribute (records without it fall back to content ids).
	DocumentIDAttribute = "attribute"
	// DocumentIDRandom: a random 128-bit id per record, fixed before the
	// first attempt: in-call retries never duplicate, but a resend by the
	// collector's queue after a partial failure gets new ids for the
	// records it resends.
	DocumentIDRandom = "random"
	// DocumentIDNone: the server assigns ids. Nothing can be routed (the
	// shard depends on the id) and a retry after a lost response can
	// duplicate.
	DocumentIDNone = "none"
)

// Config is the exporter's configuration.
type Config struct {
	// ClientConfig is the collector's HTTP client configuration: TLS, auth
	// extensions, headers, compression, proxy, timeout (per request,
	// default 90s), and a single `endpoint`.
	confighttp.ClientConfig `mapstructure:",squash"`

	// Username and Password send HTTP basic authentication with every
	// request, discovery and bulk (the password is never logged). Mutually
	// exclusive with auth and an Authorization header.
	Username string              `mapstructure:"username"`
	Password configopaque.String `mapstructure:"password"`

	// Endpoints are seed URLs of the cluster (default: `endpoint`).
	// Discovery finds the other nodes from them.
	Endpoints []string `mapstructure:"endpoints"`

	// QueueConfig is the collector's sending queue (default: enabled, with
	// batching of 8192 to 16384 records and a 200ms flush).
	QueueConfig configoptional.Optional[exporterhelper.QueueBatchConfig] `mapstructure:"sending_queue"`
	// RetryConfig is the collector's retry of whole calls (default:
	// enabled, 5s initial, 30s max interval, 300s max elapsed).
	RetryConfig configretry.BackOffConfig `mapstructure:"retry_on_failure"`

	// Dataset and Namespace name the SS4O data streams
	// ss4o_logs-{dataset}-{namespace} and ss4o_traces-{dataset}-{namespace}
	// (defaults "default" and "namespace"). The resource or record
	// attributes data_stream.dataset and data_stream.namespace override
	// them per record.
	Dataset   string `mapstructure:"dataset"`
	Namespace string `mapstructure:"namespace"`
	// LogsIndex and TracesIndex, when set, send every log / span to this
	// one index or data stream instead (default: empty, SS4O names).
	LogsIndex   string `mapstructure:"logs_index"`
	TracesIndex string `mapstructure:"traces_index"`

	// InstallTemplates installs, at start, index templates that make the
	// SS4O names data streams with SS4O-compatible mappings (idempotent).
	// Default false.
	InstallTemplates bool `mapstructure:"install_templates"`

	// DocumentID is how log documents get their _id: content (default),
	// attribute, random or none.
	DocumentID string `mapstructure:"document_id"`
	// DocumentIDAttribute names the log attribute holding the id when
	// document_id is attribute.
	DocumentIDAttribute string `mapstructure:"document_id_attribute"`

	// RoutingAttribute names the attribute holding each document's custom
	// routing value (_routing): the record's attribute, else its
	// resource's; none when both are absent or empty (customrouting.go).
	// Default empty: no custom routing.
	RoutingAttribute string `mapstructure:"routing_attribute"`

	// Mapping chooses the documents' layout: ss4o (default) or otel-v1
	// (spans for Trace Analytics; see MappingConfig).
	Mapping MappingConfig `mapstructure:"mapping"`

	Routing    RoutingConfig    `mapstructure:"routing"`
	Bulk       BulkConfig       `mapstructure:"bulk"`
	DeadLetter DeadLetterConfig `mapstructure:"dead_letter"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// RoutingConfig controls shard-exact routing.
type RoutingConfig struct {
	// Enabled sends each document to the node holding its primary shard
	// (default true). false: plain round-robin over healthy nodes.
	Enabled bool `mapstructure:"enabled"`
	// RefreshInterval between topology refreshes (default 30s).
	RefreshInterval time.Duration `mapstructure:"refresh_interval"`
	// MinRefreshInterval: refreshes triggered by events (unknown index,
	// node failure, rollover) never run more often (default 1s).
	MinRefreshInterval time.Duration `mapstructure:"min_refresh_interval"`
	// NodeStatsInterval between node stats polls (default 10s).
	NodeStatsInterval time.Duration `mapstructure:"node_stats_interval"`
	// WindowCeiling caps each node's congestion window, the requests in
	// flight to it (default 0: discovered, the node's write thread pool
	// size, else 4 × its processors).
	WindowCeiling int `mapstructure:"window_ceiling"`
	// DegradedDetection marks nodes whose routed bulk requests are
	// latency outliers degraded (see DegradedDetectionConfig).
	DegradedDetection DegradedDetectionConfig `mapstructure:"degraded_detection"`
	// Steering of content-id documents away from degraded nodes' shards
	// (see SteeringConfig).
	Steering SteeringConfig `mapstructure:"steering"`
}

// BulkConfig controls bulk requests.
type BulkConfig struct {
	// MaxBytes is the largest body of one per-node sub-bulk (default 5 MiB;
	// never above a node's http.max_content_length).
	MaxBytes int `mapstructure:"max_bytes"`
	// MaxAttempts is how many times, within one export call, an item is
	// sent before what is still retryable goes back to the collector's
	// retry and queue (default 4).
	MaxAttempts int `mapstructure:"max_attempts"`
	// RetryBackoff is the first in-call backoff before resending rejected
	// items; it doubles per attempt, with jitter, up to 30s per wait (or
	// RetryBackoff itself if longer) (default 100ms).
	RetryBackoff time.Duration `mapstructure:"retry_backoff"`
	// Transport sends the _bulk requests (default auto): auto uses the
	// exporter's own HTTP/1.1 transport unless the HTTP client settings ask
	// for something only the collector's client does (auth, compression,
	// proxy_url or a proxy from the environment, middlewares,
	// dialer_middleware, cookies, max_conns_per_host, a Host header);
	// confighttp always uses the collector's client. Discovery always uses
	// the collector's client.
	Transport string `mapstructure:"transport"`
	// CallTimeout bounds one export call, every attempt and backoff
	// included (default 2m; at least timeout). When it passes, requests in
	// flight are canceled and what is not stored goes back to the
	// collector's retry as retryable (error type call_deadline_exceeded).
	CallTimeout time.Duration `mapstructure:"call_timeout"`
}

// DeadLetterConfig controls where records go that the server refuses in
// both shapes (as written, and with their attributes as one string).
type DeadLetterConfig struct {
	// Enabled writes each such record to the dead-letter index, as the
	// original document (unindexed, in a string), where it was meant to go
	// and the server's reason (default true). false: such records are
	// counted failed and dropped.
	Enabled bool `mapstructure:"enabled"`
	// LogsIndex and TracesIndex name the dead-letter index or data stream
	// of each signal (defaults opensearchrouted-deadletter-logs and
	// opensearchrouted-deadletter-traces; with install_templates, a
	// template makes them data streams).
	LogsIndex   string `mapstructure:"logs_index"`
	TracesIndex string `mapstructure:"traces_index"`
}

// Default dead-letter names.
const (
	defaultDeadLetterLogs   = "opensearchrouted-deadletter-logs"
	defaultDeadLetterTraces = "opensearchrouted-deadletter-traces"
)

// Bulk transports.
const (
	TransportAuto       = "auto"
	TransportConfighttp = "confighttp"
)

// defaultIdleConnsPerHost is keepalive.max_idle_conns_per_host unless set:
// enough for a node's window of in-flight sub-bulks (its write threads).
const defaultIdleConnsPerHost = 32

func createDefaultConfig() *Config {
	q := exporterhelper.NewDefaultQueueConfig()
	batch := exporterhelper.NewDefaultBatchConfig()
	batch.MinSize = 8192
	batch.MaxSize = 16384
	q.Batch = configoptional.Some(batch)
	httpCfg := confighttp.NewDefaultClientConfig()
	httpCfg.Timeout = 90 * time.Second
	// Net/http keeps 2 idle connections per host unless told otherwise:
	// with the queue's concurrent calls each sending to every node, the
	// rest would be closed after one request and dialled (and, with TLS,
	// handshaken) again for the next.
	ka := confighttp.NewDefaultKeepaliveClientConfig()
	ka.MaxIdleConnsPerHost = defaultIdleConnsPerHost
	// No total cap (net/http: 0 is none): its default of 100 would undercut
	// the per-node number from the fourth node on.
	ka.MaxIdleConns = 0
	httpCfg.Keepalive = configoptional.Some(ka)
	return &Config{
		ClientConfig: httpCfg,
		QueueConfig:  configoptional.Some(q),
		RetryConfig:  configretry.NewDefaultBackOffConfig(),
		Dataset:      "default",
		Namespace:    "namespace",
		DocumentID:   DocumentIDContent,
		Mapping:      defaultMappingConfig(),
		Routing: RoutingConfig{
			Enabled:            true,
			RefreshInterval:    30 * time.Second,
			MinRefreshInterval: time.Second,
			NodeStatsInterval:  10 * time.Second,
			DegradedDetection:  defaultDegradedDetection(),
			Steering:           SteeringConfig{Enabled: true},
		},
		Bulk: BulkConfig{
			MaxBytes:     5 << 20,
			MaxAttempts:  4,
			RetryBackoff: 100 * time.Millisecond,
			Transport:    TransportAuto,
			CallTimeout:  defaultCallTimeout,
		},
		DeadLetter: DeadLetterConfig{
			Enabled:     true,
			LogsIndex:   defaultDeadLetterLogs,
			TracesIndex: defaultDeadLetterTraces,
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
	for key, v := range map[string]string{"dataset": c.Dataset, "namespace": c.Namespace} {
		if v == "" {
			add("%s: must not be empty", key)
		}
		if err := checkNamePart(v); err != nil {
			add("%s: %v", key, err)
		}
	}
	for key, v := range map[string]string{"logs_index": c.LogsIndex, "traces_index": c.TracesIndex} {
		if v != "" {
			if err := checkIndexName(v); err != nil {
				add("%s: %v", key, err)
			}
		}
	}
	if c.DeadLetter.Enabled {
		for key, v := range map[string]string{"dead_letter.logs_index": c.DeadLetter.LogsIndex, "dead_letter.traces_index": c.DeadLetter.TracesIndex} {
			if v == "" {
				add("%s: must not be empty when dead_letter.enabled is true", key)
			} else if err := checkIndexName(v); err != nil {
				add("%s: %v", key, err)
			}
		}
	}
	switch c.DocumentID {
	case DocumentIDContent, DocumentIDRandom, DocumentIDNone:
	case DocumentIDAttribute:
		if c.DocumentIDAttribute == "" {
			add("document_id_attribute: required when document_id is attribute")
		}
	default:
		add("document_id: %q is not one of content, attribute, random, none", c.DocumentID)
	}
	errs = append(errs, c.Mapping.validate()...)
	if c.Routing.RefreshInterval <= 0 {
		add("routing.refresh_interval: must be positive, got %v", c.Routing.RefreshInterval)
	}
	if c.Routing.MinRefreshInterval <= 0 {
		add("routing.min_refresh_interval: must be positive, got %v", c.Routing.MinRefreshInterval)
	}
	if c.Routing.NodeStatsInterval < 0 {
		add("routing.node_stats_interval: must not be negative (0 disables node stats), got %v", c.Routing.NodeStatsInterval)
	}
	if c.Routing.WindowCeiling < 0 {
		add("routing.window_ceiling: must not be negative (0 = discovered), got %d", c.Routing.WindowCeiling)
	}
	errs = append(errs, c.Routing.DegradedDetection.validate()...)
	if c.Bulk.MaxBytes < 1024 {
		add("bulk.max_bytes: must be at least 1024, got %d", c.Bulk.MaxBytes)
	}
	if c.Bulk.MaxAttempts < 1 {
		add("bulk.max_attempts: must be at least 1, got %d", c.Bulk.MaxAttempts)
	}
	if c.Bulk.RetryBackoff < 0 {
		add("bulk.retry_backoff: must not be negative, got %v", c.Bulk.RetryBackoff)
	}
	if c.Bulk.Transport != TransportAuto && c.Bulk.Transport != TransportConfighttp {
		add("bulk.transport: %q is not one of auto, confighttp", c.Bulk.Transport)
	}
	errs = append(errs, c.validateCredentials()...)
	if c.Timeout < 0 {
		add("timeout: must not be negative, got %v", c.Timeout)
	}
	if err := c.validateCallTimeout(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// checkNamePart checks a dataset or namespace: it becomes part of an index
// name, so it follows OpenSearch's index name rules, and may not contain
// '-' (the SS4O separator).
func checkNamePart(s string) error {
	if len(s) > maxNamePart {
		return fmt.Errorf("%q is longer than %d bytes (the data stream name and its backing indices, .ds-<name>-000001, must fit in OpenSearch's 255)", s, maxNamePart)
	}
	if strings.ContainsRune(s, '-') {
		return fmt.Errorf("%q must not contain '-' (it separates the parts of ss4o_<type>-<dataset>-<namespace>)", s)
	}
	if s != strings.ToLower(s) {
		return fmt.Errorf("%q must be lowercase", s)
	}
	if i := strings.IndexAny(s, invalidIndexChars); i >= 0 {
		return fmt.Errorf("%q must not contain %q", s, s[i:i+1])
	}
	return nil
}

const invalidIndexChars = `\/*?"<>| ,#:`

// maxNamePart bounds dataset and namespace: ss4o_traces-<100>-<100> with
// its backing index prefix and generation stays under 255 bytes.
const maxNamePart = 100

// checkIndexName applies OpenSearch's index name rules.
func checkIndexName(s string) error {
	switch {
	case s != strings.ToLower(s):
		return fmt.Errorf("%q must be lowercase", s)
	case strings.HasPrefix(s, "-") || strings.HasPrefix(s, "_") || strings.HasPrefix(s, "+"):
		return fmt.Errorf("%q must not start with '-', '_' or '+'", s)
	case s == "." || s == "..":
		return fmt.Errorf("%q is not a valid index name", s)
	case len(s) > 255:
		return fmt.Errorf("%q is longer than 255 bytes", s)
	}
	if i := strings.IndexAny(s, invalidIndexChars); i >= 0 {
		return fmt.Errorf("%q must not contain %q", s, s[i:i+1])
	}
	return nil
}

// validateCredentials checks that at most one way of authenticating is
// configured: username/password, an auth extension, or an Authorization
// header.
func (c *Config) validateCredentials() []error {
	var errs []error
	if c.Password != "" && c.Username == "" {
		errs = append(errs, errors.New("username: required when password is set"))
	}
	if c.Username == "" {
		return errs
	}
	if c.Auth.HasValue() {
		errs = append(errs, errors.New("username/password and auth are mutually exclusive: basic authentication comes from one of them (remove one)"))
	}
	for _, h := range c.Headers {
		if strings.EqualFold(h.Name, "Authorization") {
			errs = append(errs, errors.New("username/password and headers (Authorization) are mutually exclusive: both would set the Authorization header (remove one)"))
		}
	}
	return errs
}
