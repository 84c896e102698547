package pit

import (
	"net/url"
	"strings"
	"sync/atomic"
	"time"
)

// NodeSelector picks the node that serves a PIT request. A read can be
// served by any node (the coordinator fans out to the nodes holding the
// PIT's contexts); a topology-aware selector prefers nodes holding shard
// copies of the indices and skips dead or clearly degraded ones.
type NodeSelector interface {
	// ReadNode returns the base URL of a node for a read on indices,
	// skipping every URL for which exclude (never nil) returns true. ok is
	// false when no node is left.
	ReadNode(indices []string, exclude func(url string) bool) (url string, ok bool)
}

// FailureObserver is optionally implemented by a NodeSelector that wants to
// hear about request outcomes (a topology's node health). err is nil on
// success.
type FailureObserver interface {
	ObserveRead(url string, err error)
}

// LatencyObserver is optionally implemented by a NodeSelector that wants
// the latency of the page searches (not probes, PIT creations or
// deletions) that a node answered with 2xx: the time from sending the
// request to the end of the answer's body.
type LatencyObserver interface {
	ObserveLatency(url string, d time.Duration)
}

// RoundRobin is the default NodeSelector: it cycles over fixed endpoints.
type RoundRobin struct {
	urls []string
	next atomic.Uint64
}

// NewRoundRobin validates endpoints (http or https URLs with a host) and
// returns a RoundRobin over them.
func NewRoundRobin(endpoints []string) (*RoundRobin, error) {
	if len(endpoints) == 0 {
		return nil, cfgErr("Endpoints", "at least one endpoint is required")
	}
	rr := &RoundRobin{urls: make([]string, len(endpoints))}
	for i, e := range endpoints {
		u, err := url.Parse(e)
		if err != nil {
			return nil, cfgErr("Endpoints", "endpoint %d is not a URL: %v", i, err)
		}
		if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, cfgErr("Endpoints", "endpoint %d %q needs an http or https scheme and a host", i, u.Redacted())
		}
		if u.RawQuery != "" || u.Fragment != "" {
			return nil, cfgErr("Endpoints", "endpoint %d %q must not have a query or fragment", i, u.Redacted())
		}
		rr.urls[i] = strings.TrimRight(e, "/")
	}
	return rr, nil
}

// ReadNode implements NodeSelector.
func (r *RoundRobin) ReadNode(_ []string, exclude func(string) bool) (string, bool) {
	start := r.next.Add(1) - 1
	n := uint64(len(r.urls))
	for i := range n {
		u := r.urls[(start+i)%n]
		if !exclude(u) {
			return u, true
		}
	}
	return "", false
}

// redact hides userinfo in a base URL for error messages.
func redact(base string) string {
	u, err := url.Parse(base)
	if err != nil {
		return "<bad url>"
	}
	return u.Redacted()
}
