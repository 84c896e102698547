package bulk

import (
	"strings"
	"unicode/utf8"
)

// Outcome is the server's verdict on one item.
//
// Its strings are ordinary Go strings that never alias a response buffer:
// Index, ErrorType and CauseType are interned (the same few names come back
// again and again), ErrorReason and CauseReason are their own copies. They
// stay valid forever.
type Outcome struct {
	// Status is the item's HTTP-style status (201 created, 409, 429, 400, ...).
	// 0 means no per-item answer: the whole request failed before the server
	// answered for this item (connection error, timeout, unreadable response,
	// cancellation); ErrorType then names the failure (see the Err* constants).
	Status int
	// Index is the index the item landed in (a data stream's backing index),
	// "" when the server did not say.
	Index string
	// ErrorType is the server's error.type ("" on success), or one of the
	// Err* constants when the whole request failed.
	ErrorType string
	// ErrorReason is the server's error.reason. It may quote a field's value
	// (document contents): log SafeReason(o.ErrorReason), never this.
	ErrorReason string
	// CauseType and CauseReason are the type and reason of the error's
	// first-level "caused_by" ("" when there is none), where the server
	// often says why: "The depth of the field has exceeded the allowed
	// limit of [20]..." under "failed to parse". CauseReason may quote
	// document contents too: log SafeReason(o.CauseReason).
	CauseType   string
	CauseReason string
}

// ErrorType values of outcomes that the server did not write (Status 0, or
// 413 for an item too large on its own).
const (
	ErrConnection  = "connection_error"         // refused, reset, closed: the node is down
	ErrTimeout     = "timeout"                  // the request's own timeout expired
	ErrTLS         = "tls_error"                // TLS handshake or certificate problem
	ErrBadResponse = "bad_response"             // malformed, truncated or wrong item count
	ErrCanceled    = "canceled"                 // the caller's context ended
	ErrTooLarge    = "request_entity_too_large" // 413 for this item alone
	errVersionConf = "version_conflict_engine_exception"
)

// Class says what to do with an item.
type Class uint8

const (
	// Done: written (2xx).
	Done Class = iota
	// Duplicate: 409 version_conflict_engine_exception on create. The id was
	// already written, by an earlier attempt of this item: count as written.
	Duplicate
	// Retry: 429, (es_)rejected_execution_exception at any status, 5xx, or no
	// per-item answer (Status 0). Send it again, later or elsewhere.
	Retry
	// Permanent: every other status (other 4xx, and anything unexpected).
	// Retrying never helps.
	Permanent
	numClasses
)

func (c Class) String() string {
	switch c {
	case Done:
		return "done"
	case Duplicate:
		return "duplicate"
	case Retry:
		return "retry"
	case Permanent:
		return "permanent"
	}
	return "unknown"
}

// Classify is the one place that turns an item's outcome into what to do
// with it.
func Classify(o Outcome) Class {
	switch {
	case o.ErrorType == "rejected_execution_exception" || o.ErrorType == "es_rejected_execution_exception":
		return Retry
	case o.Status >= 200 && o.Status < 300:
		return Done
	case o.Status == 409 && o.ErrorType == errVersionConf:
		return Duplicate
	case o.Status == 0, o.Status == 408, o.Status == 429, o.Status >= 500 && o.Status < 600:
		return Retry
	}
	return Permanent
}

// reasonMarkers start the parts of OpenSearch error reasons that quote
// document contents.
var reasonMarkers = []string{
	" in document with id",
	"Preview of field's value",
	"The prefix of the first immense term",
	"value [",
}

// maxReason bounds SafeReason's result.
const maxReason = 256

// SafeReason returns an error reason fit to log: cut before the parts in
// which OpenSearch quotes document contents ("Preview of field's value",
// "document with id") and at most 256 bytes. ("failed to parse field [f] of
// type [long] in document with id 'x'. Preview of field's value: 'secret'"
// becomes "failed to parse field [f] of type [long]".)
func SafeReason(reason string) string {
	for _, marker := range reasonMarkers {
		if i := strings.Index(reason, marker); i >= 0 {
			reason = strings.TrimRight(reason[:i], " .:")
		}
	}
	if len(reason) > maxReason {
		reason = reason[:maxReason]
		for k := 0; k < utf8.UTFMax && !utf8.ValidString(reason); k++ {
			reason = reason[:len(reason)-1] // do not cut a character in two
		}
		reason += "…"
	}
	return reason
}
