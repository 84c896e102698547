package pit

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinels returned with a valid value; the iteration goes on.
var (
	// ErrSnapshotBreak comes with the first page read from a recreated PIT
	// (Pages only; Hits users learn it from OnSnapshotBreak and Stats).
	ErrSnapshotBreak = errors.New("pit: snapshot break: the PIT was recreated, later pages come from a newer snapshot")
	// ErrHitOutOfOrder comes with a hit already emitted from an earlier PIT
	// that reappeared with a different version (the hit is the new one).
	ErrHitOutOfOrder = errors.New("pit: hit emitted again with a different version after a snapshot break")
	// ErrShardFailure comes with the hits or page of a response in which
	// shards failed for a reason other than context loss: their documents
	// in this cursor range are not read. The error is a *ShardFailureError.
	ErrShardFailure = errors.New("pit: shard failure")
)

// Fatal conditions (wrapped in richer errors; match with errors.Is).
var (
	// ErrContextLost: the PIT lost search contexts and recreation was
	// disabled or its budget was spent. The error is a *ContextLostError.
	ErrContextLost = errors.New("pit: search contexts lost")
	// ErrRecreateExhausted: MaxRecreateAttempts recreations in a row
	// brought no page.
	ErrRecreateExhausted = errors.New("pit: recreate attempts exhausted")
	// ErrClosed: the Paginator was closed.
	ErrClosed = errors.New("pit: paginator closed")
	// ErrBusy: another iteration of the same Paginator is running.
	ErrBusy = errors.New("pit: paginator is already being iterated")
	// ErrNoNode: the selector offered no node.
	ErrNoNode = errors.New("pit: no node available")
)

// IsFatal reports whether err ends the iteration: any non-nil error that
// is not made only of ErrSnapshotBreak, ErrHitOutOfOrder and
// ErrShardFailure.
func IsFatal(err error) bool {
	if err == nil {
		return false
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		for _, e := range j.Unwrap() {
			if IsFatal(e) {
				return true
			}
		}
		return false
	}
	if err == ErrSnapshotBreak || err == ErrHitOutOfOrder || err == ErrShardFailure {
		return false
	}
	var sf *ShardFailureError
	return !errors.As(err, &sf)
}

// ShardFailure is one entry of _shards.failures (or error.failed_shards).
type ShardFailure struct {
	Index  string
	Shard  int
	Node   string // node id, when the server gave it
	Type   string // reason.type, e.g. circuit_breaking_exception
	Reason string // reason.reason
}

// ShardFailureError carries the non-context shard failures of a response.
type ShardFailureError struct {
	Failures []ShardFailure
}

func (e *ShardFailureError) Error() string {
	return fmt.Sprintf("pit: %d shard(s) failed, their documents in this range are not read: %s", len(e.Failures), summarize(e.Failures))
}

// Unwrap makes errors.Is(err, ErrShardFailure) true.
func (e *ShardFailureError) Unwrap() error { return ErrShardFailure }

// PersistentShardFailureError: with Options.StrictShards, shards failed
// for a reason other than context loss on every attempt of one search;
// nothing of that search was emitted. Fatal.
type PersistentShardFailureError struct {
	Failures []ShardFailure
	Attempts int
}

func (e *PersistentShardFailureError) Error() string {
	return fmt.Sprintf("pit: %d shard(s) kept failing on %d attempts of the same search, nothing after the cursor is read: %s",
		len(e.Failures), e.Attempts, summarize(e.Failures))
}

// ContextLostError says which contexts were lost and why the Paginator
// could not recover.
type ContextLostError struct {
	PITID    string
	Failures []ShardFailure // may be empty (e.g. a 404 without failed_shards)
	Cause    error          // the response or probe that showed the loss
}

func (e *ContextLostError) Error() string {
	var b strings.Builder
	b.WriteString("pit: search contexts lost")
	if len(e.Failures) > 0 {
		b.WriteString(" on ")
		b.WriteString(summarize(e.Failures))
	}
	if e.Cause != nil {
		b.WriteString(": ")
		b.WriteString(e.Cause.Error())
	}
	return b.String()
}

// Unwrap returns ErrContextLost and the cause.
func (e *ContextLostError) Unwrap() []error {
	if e.Cause == nil {
		return []error{ErrContextLost}
	}
	return []error{ErrContextLost, e.Cause}
}

// HTTPError is an unexpected HTTP answer. It never holds document contents.
type HTTPError struct {
	Op         string // open, search, probe, delete
	Node       string // base URL, credentials redacted
	Status     int
	Type       string   // error.type, when the body had one
	Reason     string   // error.reason
	RootCauses []string // error.root_cause[].type
	// RootCauseReason is error.root_cause[0].reason when it differs from
	// Reason (an "all shards failed" says why only there).
	RootCauseReason string
}

func (e *HTTPError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "pit: %s on %s: HTTP %d", e.Op, e.Node, e.Status)
	if e.Type != "" {
		fmt.Fprintf(&b, " %s", e.Type)
	}
	if e.Reason != "" {
		fmt.Fprintf(&b, ": %s", e.Reason)
	}
	if len(e.RootCauses) > 0 {
		fmt.Fprintf(&b, " (root causes: %s)", strings.Join(e.RootCauses, ", "))
	}
	if e.RootCauseReason != "" {
		fmt.Fprintf(&b, ": %s", e.RootCauseReason)
	}
	return b.String()
}

// TransportError is a request that got no HTTP answer.
type TransportError struct {
	Op   string
	Node string // redacted
	Err  error
}

func (e *TransportError) Error() string { return fmt.Sprintf("pit: %s on %s: %v", e.Op, e.Node, e.Err) }
func (e *TransportError) Unwrap() error { return e.Err }

// PartialPITError: a PIT was created without some shards (they had no
// started copy); reading through it would silently miss their documents,
// so it is deleted and the creation counts as failed.
type PartialPITError struct {
	Total, Failed int
}

func (e *PartialPITError) Error() string {
	return fmt.Sprintf("pit: PIT created on only %d of %d shards (some shards have no available copy)", e.Total-e.Failed, e.Total)
}

func summarize(fs []ShardFailure) string {
	const maxShown = 5
	var b strings.Builder
	for i, f := range fs {
		if i == maxShown {
			fmt.Fprintf(&b, ", and %d more", len(fs)-maxShown)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		switch {
		case f.Index != "" && f.Shard >= 0:
			fmt.Fprintf(&b, "[%s][%d]", f.Index, f.Shard)
		case f.Index != "":
			fmt.Fprintf(&b, "[%s]", f.Index)
		default:
			b.WriteString("a shard")
		}
		if f.Node != "" {
			fmt.Fprintf(&b, " on node %s", f.Node)
		}
		fmt.Fprintf(&b, ": %s", f.Type)
		if f.Reason != "" {
			fmt.Fprintf(&b, " (%s)", truncate(f.Reason, 200))
		}
	}
	return b.String()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
