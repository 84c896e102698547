package pit

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
)

// Context loss is named search_context_missing_exception by the server.
// A shard whose PIT context lives on a node that left the cluster or cannot
// be reached fails with one of the other types below instead: its context
// is gone too (a restarted node has none), so it is treated the same way.
const typeContextMissing = "search_context_missing_exception"

var nodeGoneTypes = map[string]bool{
	"node_not_connected_exception":        true,
	"node_disconnected_exception":         true,
	"connect_transport_exception":         true,
	"node_closed_exception":               true,
	"no_shard_available_action_exception": true,
}

// errorCause is the shape of error objects in OpenSearch responses.
type errorCause struct {
	Type     string      `json:"type"`
	Reason   string      `json:"reason"`
	CausedBy *errorCause `json:"caused_by"`
}

func (c *errorCause) contextLost() bool {
	for d := 0; c != nil && d < 8; d++ {
		if c.Type == typeContextMissing || nodeGoneTypes[c.Type] ||
			(c.Type == "illegal_state_exception" && strings.HasPrefix(c.Reason, "no node found for id")) {
			return true
		}
		c = c.CausedBy
	}
	return false
}

type shardFailureJSON struct {
	Shard  int        `json:"shard"`
	Index  string     `json:"index"`
	Node   string     `json:"node"`
	Reason errorCause `json:"reason"`
}

func (f shardFailureJSON) public() ShardFailure {
	return ShardFailure{Index: f.Index, Shard: f.Shard, Node: f.Node, Type: f.Reason.Type, Reason: f.Reason.Reason}
}

type shardsJSON struct {
	Total      int                `json:"total"`
	Successful int                `json:"successful"`
	Skipped    int                `json:"skipped"`
	Failed     int                `json:"failed"`
	Failures   []shardFailureJSON `json:"failures"`
}

// errorBody is a non-2xx answer: {"error":{...},"status":N}. error may be
// a plain string on some proxies and old paths.
type errorBody struct {
	Error json.RawMessage `json:"error"`
}

type errorJSON struct {
	errorCause
	RootCause    []errorCause       `json:"root_cause"`
	FailedShards []shardFailureJSON `json:"failed_shards"`
}

type hitJSON struct {
	Index       string            `json:"_index"`
	ID          string            `json:"_id"`
	Version     optInt            `json:"_version"`
	SeqNo       optInt            `json:"_seq_no"`
	PrimaryTerm optInt            `json:"_primary_term"`
	Routing     string            `json:"_routing"`
	Source      json.RawMessage   `json:"_source"`
	Sort        []json.RawMessage `json:"sort"`
}

type searchResponse struct {
	PITID    string     `json:"pit_id"`
	TimedOut bool       `json:"timed_out"`
	Shards   shardsJSON `json:"_shards"`
	Hits     struct {
		Hits []hitJSON `json:"hits"`
	} `json:"hits"`
}

type createResponse struct {
	PITID  string     `json:"pit_id"`
	Shards shardsJSON `json:"_shards"`
}

// outcome is what a search or probe answer means for the Paginator.
type outcome int

const (
	outOK        outcome = iota // page usable (may carry non-context shard failures)
	outLost                     // some or all contexts lost: recreate
	outTransient                // transport, 429, 5xx, timed_out: the PIT may survive
	outFatal                    // anything else
)

func (o outcome) String() string {
	return [...]string{"ok", "context lost", "transient", "fatal"}[o]
}

// classifyError reads a non-2xx answer. It returns the outcome, the
// HTTPError describing it and the shard failures it listed.
func classifyError(op, node string, status int, body []byte) (outcome, *HTTPError, []ShardFailure) {
	he := &HTTPError{Op: op, Node: redact(node), Status: status}
	var eb errorBody
	var ej errorJSON
	parsed := false
	if json.Unmarshal(body, &eb) == nil && len(eb.Error) > 0 {
		if eb.Error[0] == '"' {
			_ = json.Unmarshal(eb.Error, &he.Reason)
		} else if json.Unmarshal(eb.Error, &ej) == nil {
			parsed = true
			he.Type, he.Reason = ej.Type, ej.Reason
			for _, rc := range ej.RootCause {
				he.RootCauses = append(he.RootCauses, rc.Type)
			}
			if len(ej.RootCause) > 0 && ej.RootCause[0].Reason != he.Reason {
				he.RootCauseReason = truncate(ej.RootCause[0].Reason, 300)
			}
		}
	}
	he.Reason = truncate(he.Reason, 500)
	var failures []ShardFailure
	lost := false
	if parsed {
		lost = ej.errorCause.contextLost()
		for _, rc := range ej.RootCause {
			lost = lost || rc.contextLost()
		}
		for _, f := range ej.FailedShards {
			failures = append(failures, f.public())
			lost = lost || f.Reason.contextLost()
		}
	}
	switch {
	case lost:
		return outLost, he, failures
	case status == http.StatusTooManyRequests || status >= 500:
		return outTransient, he, failures
	default:
		return outFatal, he, failures
	}
}

// splitFailures separates context loss from other shard failures.
func splitFailures(fs []shardFailureJSON) (lost, other []ShardFailure) {
	for _, f := range fs {
		if f.Reason.contextLost() {
			lost = append(lost, f.public())
		} else {
			other = append(other, f.public())
		}
	}
	return lost, other
}

// optInt is an integer field that may be absent or null (then -1). It
// decodes without allocating, unlike *int64.
type optInt struct {
	v  int64
	ok bool
}

func (o *optInt) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		return nil
	}
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	// Any long: _version may be an external version up to 2^63-1 (epoch
	// nanoseconds are 19 digits). 19 digits cannot overflow a uint64.
	if len(b) == 0 || len(b) > 19 {
		return fmt.Errorf("pit: integer out of range: %q", b)
	}
	var u uint64
	for _, c := range b {
		if c < '0' || c > '9' {
			return fmt.Errorf("pit: not an integer: %q", b)
		}
		u = u*10 + uint64(c-'0')
	}
	switch {
	case !neg && u <= math.MaxInt64:
		o.v = int64(u)
	case neg && u <= math.MaxInt64+1:
		o.v = -int64(u-1) - 1
	default:
		return fmt.Errorf("pit: integer out of range: %q", b)
	}
	o.ok = true
	return nil
}

func (o optInt) value() int64 {
	if !o.ok {
		return -1
	}
	return o.v
}
