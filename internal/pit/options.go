package pit

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Defaults of Options.
const (
	DefaultKeepAlive           = 5 * time.Minute
	DefaultPageSize            = 1000
	DefaultMaxRecreateAttempts = 3
	DefaultMaxRetries          = 3
	DefaultDedupWindow         = 32768
	DefaultRequestTimeout      = time.Minute
	DefaultNodeCooldown        = 30 * time.Second
	DefaultTiebreaker          = "_id"

	backoffBase = 250 * time.Millisecond
	backoffCap  = 10 * time.Second
)

// DefaultSort is the sort used when Options.Sort is empty: @timestamp, then
// _index, then _id, all ascending. An _id is unique within one index only:
// without _index, two documents of different indices (backing indices of
// one data stream, indices matched by one pattern) with the same _id and
// the same @timestamp would tie, and search_after would skip the second
// at a page boundary. unmapped_type lets indices without @timestamp take
// part (their documents sort as missing, last). unmapped_type on _index
// and _id lets an index without any mapping yet (created, never written)
// be read: OpenSearch (2.19.6) refuses to sort it on _index or _id ("No
// mapping found for [_index] in order to sort on"); the sort values of
// other indices are unchanged.
var DefaultSort = json.RawMessage(`[{"@timestamp":{"order":"asc","unmapped_type":"date"}},{"_index":{"order":"asc","unmapped_type":"keyword"}},{"_id":{"order":"asc","unmapped_type":"keyword"}}]`)

// Slice selects one of Max disjoint parts of the documents (0 <= ID < Max).
type Slice struct {
	ID  int `json:"id"`
	Max int `json:"max"`
}

// Options configure a Paginator. The zero value of every field means its
// default; a field's comment names it.
type Options struct {
	// Client sends every request; the collector's, so TLS and auth apply.
	// Nil means http.DefaultClient.
	Client *http.Client
	// Endpoints are base URLs (http or https, host, optional path prefix)
	// of the nodes. Required unless Selector is set.
	Endpoints []string
	// Selector picks the node for each request. Nil means a RoundRobin over
	// Endpoints.
	Selector NodeSelector

	// Indices are the names, patterns or data streams the PIT is opened on.
	// Required, except with ExistingPITID and recreation disabled.
	Indices []string
	// Query is the JSON query object. Empty means {"match_all":{}}.
	Query json.RawMessage
	// Sort is the JSON sort array (any shape OpenSearch accepts). Empty
	// means DefaultSort. It must contain Tiebreaker; with recreation
	// enabled it must not use _doc, _shard_doc or _score, which are not
	// stable across PITs.
	Sort json.RawMessage
	// Tiebreaker names the sort field that is unique per document, which
	// makes the order total. Empty means "_id".
	Tiebreaker string
	// Source is the JSON _source filter (true, false, a list or an object).
	// Empty means the whole _source.
	Source json.RawMessage
	// PageSize is the number of hits per search. Zero means 1000.
	PageSize int
	// Slice, if set, reads one slice of the PIT. Max 1 is the whole PIT
	// (no slice is sent: the server rejects max 1).
	Slice *Slice
	// SearchAfter is the cursor to start after (sort values of the last
	// hit read earlier, as returned by Cursor). Empty means from the start.
	SearchAfter []json.RawMessage

	// Routing, if set, is the routing value(s) (comma-separated) the PIT is
	// created with: it covers only the shards they route to. OpenSearch
	// keeps routing and preference with the PIT: its searches take neither.
	Routing string
	// Preference, if set, is called at every PIT creation (the first and
	// every recreation); a non-empty answer is sent as the preference that
	// picks the shard copies holding the PIT's contexts (_local,
	// _prefer_nodes:id,id, _only_nodes:..., a custom string).
	Preference func() string

	// KeepAlive is the PIT keep-alive, renewed by every search. Zero means
	// 5m. Sent in milliseconds.
	KeepAlive time.Duration
	// ExistingPITID reads through a PIT the caller opened. Close does not
	// delete it. If it is lost and recreation is enabled, the Paginator
	// opens a PIT of its own on Indices (reported by OnSnapshotBreak) and
	// deletes that one on Close.
	ExistingPITID string

	// MaxRecreateAttempts bounds PIT recreations in a row, counting failed
	// attempts: a page read from a recreated PIT starts the count again, so
	// a long read survives any number of losses that are far apart (a PIT
	// that expired while the caller paused for longer than KeepAlive, a
	// rolling restart). Zero means 3; negative disables recreation (context
	// loss is then fatal).
	MaxRecreateAttempts int
	// MaxRetries bounds consecutive retries of a request whose PIT
	// survived a transport error, 429 or 5xx, and of a failed PIT
	// creation. Zero means 3; negative means none.
	MaxRetries int
	// Backoff returns the wait before retry or recreate attempt n (0-based).
	// Nil means full jitter over min(250ms * 2^n, 10s).
	Backoff func(attempt int) time.Duration
	// RequestTimeout bounds each HTTP request. Zero means 1m; negative
	// means none (only ctx and Client.Timeout).
	RequestTimeout time.Duration
	// NodeCooldown is how long a node that failed is skipped when another
	// one is available. Zero means 30s.
	NodeCooldown time.Duration

	// StrictShards makes a shard failure other than context loss an error
	// of that shard: the search is retried (MaxRetries, with Backoff)
	// without emitting its page, and a failure that persists ends the
	// iteration with a *PersistentShardFailureError. Unset, the page is
	// emitted with a *ShardFailureError and the failed shards' documents
	// in its range are not read.
	StrictShards bool

	// DedupWindow is the number of recently emitted (index, _id) pairs
	// remembered to skip duplicates after a recreate. Zero means 32768;
	// negative disables dedup (emit-all).
	DedupWindow int
	// Dedup, if set, is the window used instead of a private one of
	// DedupWindow entries; it outlives the Paginator (see DedupWindow).
	Dedup *DedupWindow

	// OnSnapshotBreak, if set, is called once per successful recreate,
	// on the iterating goroutine, before the first page of the new PIT.
	OnSnapshotBreak func(SnapshotBreakEvent)
	// Counters, if set, receives this Paginator's counts (share one among
	// the slices of a read). Nil means a private one.
	Counters *Counters

	// Sleep waits d or until ctx ends (tests inject it). Nil means a timer.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now is the clock for node cooldowns. Nil means time.Now.
	Now func() time.Time
}

// config is Options validated, with defaults applied.
type config struct {
	Options
	query, sort, source json.RawMessage
	indexPath           string // comma-joined, escaped
	keepAlive           string // "300000ms"
	recreate            bool
}

// ConfigError reports a bad option.
type ConfigError struct {
	Field string
	Msg   string
}

func (e *ConfigError) Error() string { return "pit: invalid " + e.Field + ": " + e.Msg }

func cfgErr(field, format string, args ...any) error {
	return &ConfigError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

func (o Options) validate() (*config, error) {
	c := &config{Options: o}
	if c.Client == nil {
		c.Client = http.DefaultClient
	}
	if c.Selector == nil {
		if len(c.Endpoints) == 0 {
			return nil, cfgErr("Endpoints", "at least one endpoint or a Selector is required")
		}
		rr, err := NewRoundRobin(c.Endpoints)
		if err != nil {
			return nil, err
		}
		c.Selector = rr
	}
	if c.MaxRecreateAttempts == 0 {
		c.MaxRecreateAttempts = DefaultMaxRecreateAttempts
	}
	c.recreate = c.MaxRecreateAttempts > 0
	if c.MaxRetries == 0 {
		c.MaxRetries = DefaultMaxRetries
	} else if c.MaxRetries < 0 {
		c.MaxRetries = 0
	}
	if c.Backoff == nil {
		c.Backoff = DefaultBackoff
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.NodeCooldown <= 0 {
		c.NodeCooldown = DefaultNodeCooldown
	}
	if c.DedupWindow == 0 {
		c.DedupWindow = DefaultDedupWindow
	}
	if c.Sleep == nil {
		c.Sleep = sleepCtx
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Counters == nil {
		c.Counters = new(Counters)
	}
	if c.PageSize == 0 {
		c.PageSize = DefaultPageSize
	}
	if c.PageSize < 1 {
		return nil, cfgErr("PageSize", "must be positive, got %d", c.PageSize)
	}
	if c.KeepAlive == 0 {
		c.KeepAlive = DefaultKeepAlive
	}
	if c.KeepAlive < time.Millisecond {
		return nil, cfgErr("KeepAlive", "must be at least 1ms, got %v", c.KeepAlive)
	}
	c.keepAlive = fmt.Sprintf("%dms", c.KeepAlive.Milliseconds())

	if len(c.Indices) == 0 && (c.ExistingPITID == "" || c.recreate) {
		if c.ExistingPITID != "" {
			return nil, cfgErr("Indices", "required to recreate a lost PIT (or disable recreation with a negative MaxRecreateAttempts)")
		}
		return nil, cfgErr("Indices", "at least one index, pattern or data stream is required")
	}
	parts := make([]string, len(c.Indices))
	for i, ix := range c.Indices {
		if ix == "" || strings.ContainsAny(ix, ",/\\#\" \t\r\n") {
			return nil, cfgErr("Indices", "index %d %q is empty or has a character not allowed in an index name", i, ix)
		}
		parts[i] = url.PathEscape(ix)
	}
	c.indexPath = strings.Join(parts, ",")

	if c.Slice != nil && (c.Slice.Max < 1 || c.Slice.ID < 0 || c.Slice.ID >= c.Slice.Max) {
		return nil, cfgErr("Slice", "need 0 <= id < max, got id %d max %d", c.Slice.ID, c.Slice.Max)
	}

	var err error
	if c.query, err = jsonObject("Query", c.Query, `{"match_all":{}}`); err != nil {
		return nil, err
	}
	if len(bytes.TrimSpace(c.Source)) > 0 {
		if !json.Valid(c.Source) {
			return nil, cfgErr("Source", "not valid JSON")
		}
		c.source = compact(c.Source)
	}
	if c.Tiebreaker == "" {
		c.Tiebreaker = DefaultTiebreaker
	}
	sort := c.Sort
	if len(bytes.TrimSpace(sort)) == 0 {
		sort = DefaultSort
	}
	fields, err := sortFields(sort)
	if err != nil {
		return nil, err
	}
	if err := checkSort(fields, c.Tiebreaker, c.recreate); err != nil {
		return nil, err
	}
	c.sort = compact(sort)
	for i, v := range c.SearchAfter {
		if !json.Valid(v) {
			return nil, cfgErr("SearchAfter", "value %d is not valid JSON", i)
		}
	}
	if len(c.SearchAfter) > 0 && len(c.SearchAfter) != len(fields) {
		return nil, cfgErr("SearchAfter", "has %d values for %d sort fields", len(c.SearchAfter), len(fields))
	}
	return c, nil
}

func jsonObject(field string, raw json.RawMessage, def string) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage(def), nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, cfgErr(field, "must be a JSON object: %v", err)
	}
	return compact(raw), nil
}

func compact(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}

// sortFields returns the field names of an OpenSearch sort: a string, an
// object {"field": "asc"|{...}} or an array of those. Script and geo
// distance sorts are named "_script" and "_geo_distance".
func sortFields(raw json.RawMessage) ([]string, error) {
	var list []json.RawMessage
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if err := json.Unmarshal(trimmed, &list); err != nil {
			return nil, cfgErr("Sort", "not a valid JSON array: %v", err)
		}
	} else {
		list = []json.RawMessage{trimmed}
	}
	if len(list) == 0 {
		return nil, cfgErr("Sort", "is an empty array")
	}
	fields := make([]string, 0, len(list))
	for i, e := range list {
		var name string
		if err := json.Unmarshal(e, &name); err == nil {
			if name == "" {
				return nil, cfgErr("Sort", "entry %d names no field", i)
			}
			fields = append(fields, name)
			continue
		}
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(e, &obj); err != nil || len(obj) != 1 {
			return nil, cfgErr("Sort", "entry %d must be a field name or an object with one field, got %s", i, e)
		}
		for k := range obj {
			if k == "" {
				return nil, cfgErr("Sort", "entry %d names no field", i)
			}
			fields = append(fields, k)
		}
	}
	return fields, nil
}

func checkSort(fields []string, tiebreaker string, recreate bool) error {
	hasTie := false
	for _, f := range fields {
		switch f {
		case "_doc", "_shard_doc", "_score":
			if recreate {
				return cfgErr("Sort", "%s is not stable across PITs and cannot be used when recreation is enabled; sort on stored fields and %s", f, tiebreaker)
			}
			if f == "_shard_doc" {
				hasTie = true
			}
		}
		if f == tiebreaker {
			hasTie = true
		}
	}
	if !hasTie {
		return cfgErr("Sort", "has no tiebreaker: add %s (a field unique per document) so the order is total, fields are %v", tiebreaker, fields)
	}
	return nil
}

// DefaultBackoff is full jitter over min(250ms * 2^attempt, 10s).
func DefaultBackoff(attempt int) time.Duration {
	return rand.N(backoffCeiling(attempt) + 1)
}

func backoffCeiling(attempt int) time.Duration {
	if attempt < 0 {
		attempt = 0
	}
	if attempt >= 6 { // 250ms<<6 = 16s > cap
		return backoffCap
	}
	return min(backoffBase<<attempt, backoffCap)
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
