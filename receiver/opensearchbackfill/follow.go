package opensearchbackfill

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/opensearchrouted/opensearchrouted/internal/pit"
)

// Follow mode re-reads an overlap at every poll: it resumes after the last
// cursor with its first value (the time_field, as an epoch integer) moved
// back by follow_lag, and the slice's dedup window drops the documents it
// already emitted. The window outlives the paginators of the slice and
// keeps every document whose time_field is within follow_lag of the
// cursor, growing up to max_dedup_window.

// checkFollowSort checks that the sort starts with time_field ascending,
// which follow_lag moves back.
func (c *Config) checkFollowSort() error {
	sort := json.RawMessage(c.Sort)
	if c.Sort == "" {
		sort = pit.DefaultSort
	}
	field, asc, err := firstSortKey(sort)
	if err != nil {
		return fmt.Errorf("sort: %v", err)
	}
	if field != c.TimeField || !asc {
		return fmt.Errorf("sort: follow mode with a follow_lag needs the sort to start with time_field (%q) ascending, it starts with %q (ascending: %v); set follow_lag to 0 to follow by cursor alone", c.TimeField, field, asc)
	}
	return nil
}

// firstSortKey returns the first field of an OpenSearch sort and whether it
// is ascending.
func firstSortKey(raw json.RawMessage) (string, bool, error) {
	raw = bytes.TrimSpace(raw)
	first := raw
	if len(raw) > 0 && raw[0] == '[' {
		var list []json.RawMessage
		if err := json.Unmarshal(raw, &list); err != nil || len(list) == 0 {
			return "", false, errors.New("not a non-empty JSON array")
		}
		first = list[0]
	}
	var name string
	if err := json.Unmarshal(first, &name); err == nil {
		return name, true, nil // a bare field sorts ascending (except _score)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(first, &obj); err != nil || len(obj) != 1 {
		return "", false, fmt.Errorf("entry 0 must be a field name or an object with one field, got %s", first)
	}
	for k, v := range obj {
		var order string
		if json.Unmarshal(v, &order) != nil {
			var o struct {
				Order string `json:"order"`
			}
			_ = json.Unmarshal(v, &o)
			order = o.Order
		}
		return k, order == "" || strings.EqualFold(order, "asc"), nil
	}
	return "", false, nil
}

// nanosThreshold tells epoch milliseconds (a date field's sort value) from
// epoch nanoseconds (date_nanos): 10^15 ms is the year 33658, 10^15 ns is
// 12 days after 1970.
const nanosThreshold = 1_000_000_000_000_000

// lagUnits is the follow lag in the unit of a time sort value v.
func lagUnits(v int64, lag time.Duration) int64 {
	if v >= nanosThreshold || v <= -nanosThreshold {
		return int64(lag)
	}
	return lag.Milliseconds()
}

// rewind returns the cursor to resume a follow-mode read from: the time
// value moved back by the lag, and one unit more, so that every document
// whose time is at or after cursor time − lag sorts after it. A cursor
// whose time value is a missing-value marker (math.MinInt64/MaxInt64:
// documents without time_field) is not moved.
func rewind(cursor []json.RawMessage, lag time.Duration) ([]json.RawMessage, error) {
	if len(cursor) == 0 || lag <= 0 {
		return cursor, nil
	}
	v, ok := pit.TimeKey(cursor[0])
	if !ok {
		return nil, fmt.Errorf("the cursor's first sort value %s is not an epoch integer; follow_lag needs time_field sorted as a date (no format in the sort)", truncateRaw(cursor[0]))
	}
	if v == math.MinInt64 || v == math.MaxInt64 {
		return cursor, nil
	}
	d := lagUnits(v, lag) + 1
	if v < math.MinInt64+d {
		return cursor, nil
	}
	out := append([]json.RawMessage{json.RawMessage(strconv.FormatInt(v-d, 10))}, cursor[1:]...)
	return out, nil
}

// floorOf is the smallest time key a future rewind from cursor can read
// again: the dedup window keeps every entry at or above it.
func floorOf(cursor []json.RawMessage, lag time.Duration) int64 {
	if len(cursor) == 0 {
		return math.MaxInt64
	}
	v, ok := pit.TimeKey(cursor[0])
	if !ok || v == math.MinInt64 || v == math.MaxInt64 {
		return math.MaxInt64
	}
	d := lagUnits(v, lag) + 1
	if v < math.MinInt64+d {
		return math.MinInt64
	}
	return v - d
}

func truncateRaw(b []byte) string {
	if len(b) > 40 {
		return string(b[:40]) + "..."
	}
	return string(b)
}

// checkRefreshInterval reads index.refresh_interval of the indices and
// returns an error when follow_lag is shorter than one of them (a document
// may stay invisible longer than the overlap re-read). An unreadable
// setting (no privilege, a proxy) is logged at debug level and accepted;
// a disabled refresh (-1) is warned about.
func (r *backfillReceiver) checkRefreshInterval(ctx context.Context) error {
	lag := r.cfg.FollowLag
	node, ok := r.sel.ReadNode(r.cfg.Indices, func(string) bool { return false })
	if !ok {
		return nil
	}
	parts := make([]string, len(r.cfg.Indices))
	for i, ix := range r.cfg.Indices {
		parts[i] = url.PathEscape(ix)
	}
	u := node + "/" + strings.Join(parts, ",") + "/_settings/index.refresh_interval?include_defaults=true&flat_settings=true&ignore_unavailable=true&allow_no_indices=true&expand_wildcards=open"
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, u, nil)
	if err != nil {
		return nil
	}
	resp, err := r.client.Do(req)
	if err != nil {
		r.log.Debug("Could not read index.refresh_interval; follow_lag is not checked against it", zap.Error(err))
		return nil
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		r.log.Debug("Could not read index.refresh_interval; follow_lag is not checked against it", zap.Int("status", resp.StatusCode))
		return nil
	}
	var settings map[string]struct {
		Settings map[string]string `json:"settings"`
		Defaults map[string]string `json:"defaults"`
	}
	if err := json.Unmarshal(body, &settings); err != nil {
		r.log.Debug("Could not decode index.refresh_interval; follow_lag is not checked against it", zap.Error(err))
		return nil
	}
	for ix, s := range settings {
		v, ok := s.Settings["index.refresh_interval"]
		if !ok {
			v, ok = s.Defaults["index.refresh_interval"]
		}
		if !ok {
			continue
		}
		d, err := parseTimeValue(v)
		if err != nil {
			continue
		}
		if d < 0 {
			r.log.Warn("An index has refresh disabled (index.refresh_interval -1): its documents become visible only on an explicit refresh, and follow mode misses those refreshed more than follow_lag after newer documents were read",
				zap.String("index", ix), zap.Duration("follow_lag", lag))
			continue
		}
		if d > lag {
			return fmt.Errorf("follow_lag (%v) is shorter than index.refresh_interval of %s (%s): documents may stay invisible longer than the overlap follow mode re-reads; set follow_lag to at least %v", lag, ix, v, d)
		}
	}
	return nil
}

// parseTimeValue parses an OpenSearch time value: -1, or a number with a
// unit (nanos, micros, ms, s, m, h, d).
func parseTimeValue(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	if v == "-1" {
		return -1, nil
	}
	units := []struct {
		suffix string
		d      time.Duration
	}{{"nanos", time.Nanosecond}, {"micros", time.Microsecond}, {"ms", time.Millisecond}, {"s", time.Second}, {"m", time.Minute}, {"h", time.Hour}, {"d", 24 * time.Hour}}
	for _, u := range units {
		if n, ok := strings.CutSuffix(v, u.suffix); ok {
			f, err := strconv.ParseFloat(n, 64)
			if err != nil || f < 0 {
				return 0, fmt.Errorf("bad time value %q", v)
			}
			return time.Duration(f * float64(u.d)), nil
		}
	}
	return 0, fmt.Errorf("bad time value %q", v)
}
