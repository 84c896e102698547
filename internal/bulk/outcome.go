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
	// Retry: send it again, later or elsewhere. It is
	//   - 429, (es_)rejected_execution_exception at any status, 5xx, 408, or
	//     no per-item answer (Status 0);
	//   - cluster_block_exception at any status: an index block, a state that
	//     an operator, ISM or the disk monitor lifts. Checked on 2.19.6 and
	//     3.9.0 (alike): index.blocks.write answers each item 403 "index [i]
	//     blocked by: [FORBIDDEN/8/index write (api)];" (also on a data
	//     stream's backing index, named in _index), index.blocks.read_only
	//     403 "[FORBIDDEN/5/index read-only (api)]", and
	//     index.blocks.read_only_allow_delete, the block the flood-stage disk
	//     watermark sets, 429 "[TOO_MANY_REQUESTS/12/disk usage exceeded
	//     flood-stage watermark, index has read-only-allow-delete block]".
	//     (Cluster-wide blocks, cluster.blocks.read_only and
	//     read_only_allow_delete, refuse the whole request with 403: see
	//     KindBlocked.)
	//   - index_closed_exception: the index is closed (2.19.6 and 3.9.0:
	//     item status 400, reason "closed", the item's _id null); it is
	//     reopened, or a rollover race sent the item to an index being
	//     closed;
	//   - security_exception for an item (Index set: the server answered for
	//     this item), 403 from the security plugin when the user may not
	//     write this index ("no permissions for [indices:data/write/bulk[s]]
	//     and User [...]"): roles and mappings get fixed, and the collector's
	//     retry bounds the wait. A whole-request 401 or 403 carries no Index
	//     and stays Permanent (KindAuth).
	Retry
	// Permanent: every other status (other 4xx, and anything unexpected).
	// Retrying the same document never helps; IsShapeRefusal tells those
	// that another shape of the document may get stored.
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

// Error types Classify and IsShapeRefusal read.
const (
	errClusterBlock = "cluster_block_exception"
	errIndexClosed  = "index_closed_exception"
	errSecurity     = "security_exception"
)

// Classify is the one place that turns an item's outcome into what to do
// with it.
func Classify(o Outcome) Class {
	if o.Status >= 200 && o.Status < 300 && o.ErrorType == "" {
		return Done // the common case, inlined
	}
	return classify(&o)
}

func classify(o *Outcome) Class {
	switch {
	case o.ErrorType == "rejected_execution_exception" || o.ErrorType == "es_rejected_execution_exception":
		return Retry
	case o.Status >= 200 && o.Status < 300:
		return Done
	case o.Status == 409 && o.ErrorType == errVersionConf:
		return Duplicate
	case o.Status == 0, o.Status == 408, o.Status == 429, o.Status >= 500 && o.Status < 600:
		return Retry
	case o.ErrorType == errClusterBlock, o.ErrorType == errIndexClosed,
		o.ErrorType == errSecurity && o.Index != "":
		return Retry
	}
	return Permanent
}

// IsShapeRefusal reports whether the server refused the item because of
// its document's shape against the index's mapping, so that the same
// values in another shape (one the mapping cannot refuse) may be stored:
// status 400 with
//   - mapper_parsing_exception, document_parsing_exception or
//     strict_dynamic_mapping_exception, or
//   - illegal_argument_exception whose reason or caused_by reason is a
//     mapping limit or conflict (mappingReasons).
//
// What 2.19.6 and 3.9.0 answer (alike; testdata/reasons-*.json, and the
// table in TestIsShapeRefusalOnServerAnswers):
//   - a value the mapped type cannot take (a long field gets "abc", a
//     boolean "abc", a date "x", a number out of range):
//     mapper_parsing_exception "failed to parse field [f] of type [t] in
//     document with id '…'. Preview of field's value: '…'", the parser's
//     complaint in caused_by;
//   - an object where a scalar is mapped (also a.b.c after a.b):
//     mapper_parsing_exception "failed to parse field [o] of type [text]
//     …", caused_by illegal_state_exception "Can't get text on a
//     START_OBJECT at 1:7", or for dotted names "Could not dynamically add
//     mapping for field [a.b.c]. Existing mapping for [a.b] must be of type
//     object but found [text].";
//   - a scalar where an object is mapped (also a.b after a.b.c):
//     mapper_parsing_exception "object mapping for [o] tried to parse field
//     [o] as object, but found a concrete value";
//   - maps nested deeper than index.mapping.depth.limit (20):
//     mapper_parsing_exception "failed to parse", caused_by parse_exception
//     "The depth of the field has exceeded the allowed limit of [20]. …";
//   - more than index.mapping.total_fields.limit (1,000) fields:
//     illegal_argument_exception "Limit of total fields [1000] has been
//     exceeded";
//   - more nested documents than index.mapping.nested_objects.limit:
//     mapper_parsing_exception "The number of nested documents has exceeded
//     the allowed limit of [N]. …";
//   - a field name longer than index.mapping.field_name_length.limit (no
//     limit by default: a 40,000-byte name is stored):
//     illegal_argument_exception "Field name [n] is longer than the limit
//     of [N] characters";
//   - a value over Lucene's 32,766-byte term limit in a keyword field
//     without ignore_above: illegal_argument_exception "Document contains
//     at least one immense term in field=…", caused_by
//     max_bytes_length_exceeded_exception;
//   - an empty field name, or one with a leading, trailing or doubled dot:
//     mapper_parsing_exception "failed to parse", caused_by
//     illegal_argument_exception.
//
// 3.9.0 does not use document_parsing_exception for any of these; it is
// accepted in case a later version does. A refusal of the routing value
// (IsRoutingRefusal, also an immense term, in _routing) is not one.
func IsShapeRefusal(o Outcome) bool {
	if o.Status != 400 || IsRoutingRefusal(o) {
		return false
	}
	switch o.ErrorType {
	case "mapper_parsing_exception", "document_parsing_exception", "strict_dynamic_mapping_exception":
		return true
	case "illegal_argument_exception":
		return isMappingReason(o.ErrorReason) || isMappingReason(o.CauseReason)
	}
	return false
}

// mappingReasons are the parts of illegal_argument_exception reasons that
// say the mapping refused the document.
var mappingReasons = []string{
	"Limit of total fields [",
	"Limit of nested fields [",
	"The depth of the field has exceeded the allowed limit",
	"The number of nested documents has exceeded the allowed limit",
	"] is longer than the limit of [", // Field name [n] is longer than the limit of [N] characters
	"cannot be changed from type",     // mapper [f] cannot be changed from type [long] to [text]
	"Could not dynamically add mapping",
	"object mapping for [",
	"Can't merge a non object mapping",
	"can't merge a non object mapping",
	"conflicts with existing mapper",
	"Document contains at least one immense term in field=",
}

func isMappingReason(reason string) bool {
	for _, m := range mappingReasons {
		if strings.Contains(reason, m) {
			return true
		}
	}
	return false
}

// A redaction removes a part of an error reason that quotes document
// contents. It starts at the first occurrence of start; with end set, the
// part after start up to the last occurrence of end is replaced by "…" and
// the rest is kept (so that content quoting end itself cannot move the
// cut); with end empty, the reason is cut before start; with end not
// found, it is cut after start's words (before its opening bracket or
// quote).
type redaction struct{ start, end string }

// redactions are the server's reason templates that quote document
// contents (values, ids), as 2.19.6 and 3.9.0 write them.
var redactions = []redaction{
	// Validation Failed: 1: id [<id>] is too long, must be no longer than 512 bytes but was: 600;
	{"id [", "] is too long, must be no longer than 512 bytes but was: "},
	// failed to parse field [f] of type [long] in document with id '<id>'. Preview of field's value: '<value>'
	{" in document with id", ""},
	{"Preview of field's value", ""},
	// Document contains at least one immense term in field="k" (…).  The prefix of the first immense term is: '[<bytes>]...', original message: …
	{"The prefix of the first immense term", ""},
	// failed to parse date field [<value>] with format [strict_date_optional_time||epoch_millis]
	{"failed to parse date field [", "] with format ["},
	// Failed to parse value [<value>] as only [true] or [false] are allowed.
	{"Failed to parse value [", "] as only [true] or [false] are allowed"},
	// For input string: "<value>"
	{`For input string: "`, `"`},
	// Numeric value (<value>) out of range of long (-9223372036854775808 - 9223372036854775807)
	{"Numeric value (", ") out of range of "},
	// Unrecognized token '<token>': was expecting (JSON String, …)
	{"Unrecognized token '", "': was expecting"},
	// Jackson's location, "\n at [Source: (byte[])"<document>"; line: 1, column: 9]"
	// (2.19.6 and 3.9.0 write "REDACTED" there; older versions quote the document)
	{" at [Source: ", ""},
	// routing is required for [<index>]/[<id>] (2.19.6 and 3.9.0 alike)
	{"routing is required for [", "]"},
	// Alias [a] has index routing associated with it [x], and was provided with routing value [<value>], rejecting operation
	{"and was provided with routing value [", "], rejecting operation"},
	{"value [", ""},
}

// versionConflict follows the id that a 409's reason starts with.
const versionConflict = "]: version conflict, "

// maxReason bounds SafeReason's result.
const maxReason = 256

// SafeReason returns an error reason fit to log: the server's "why" with
// the parts in which OpenSearch quotes document contents (values, ids) cut
// out (redactions), at most 256 bytes. Field names stay. Examples:
//
//	failed to parse field [f] of type [long] in document with id 'x'. Preview of field's value: 'secret'
//	→ failed to parse field [f] of type [long]
//	Validation Failed: 1: id [secret…] is too long, must be no longer than 512 bytes but was: 600;
//	→ Validation Failed: 1: id […] is too long, must be no longer than 512 bytes but was: 600;
//	failed to parse date field [secret] with format [strict_date_optional_time||epoch_millis]
//	→ failed to parse date field […] with format [strict_date_optional_time||epoch_millis]
func SafeReason(reason string) string {
	var sb strings.Builder
	rest := reason
	// [<id>]: version conflict, document already exists (current version [1])
	if strings.HasPrefix(rest, "[") {
		if j := strings.LastIndex(rest, versionConflict); j >= 0 {
			sb.WriteString("[…")
			rest = rest[j:]
		}
	}
	for {
		i, r := firstRedaction(rest)
		if i < 0 {
			sb.WriteString(rest)
			break
		}
		k := i + len(r.start)
		j := -1
		if r.end != "" {
			j = strings.LastIndex(rest[k:], r.end)
		}
		if r.end == "" {
			sb.WriteString(strings.TrimRight(rest[:i], " .:\n"))
			break
		}
		if j < 0 { // not the template after all: keep its words only
			sb.WriteString(strings.TrimRight(rest[:k], " .:\n[('\""))
			break
		}
		sb.WriteString(rest[:k])
		sb.WriteString("…")
		rest = rest[k+j:]
	}
	reason = sb.String()
	if len(reason) > maxReason {
		reason = reason[:maxReason]
		for k := 0; k < utf8.UTFMax && !utf8.ValidString(reason); k++ {
			reason = reason[:len(reason)-1] // do not cut a character in two
		}
		reason += "…"
	}
	return reason
}

// firstRedaction finds the redaction whose start comes first in s (the
// longer start on a tie), -1 if none occurs.
func firstRedaction(s string) (int, redaction) {
	at, best := -1, redaction{}
	for _, r := range redactions {
		i := strings.Index(s, r.start)
		if i >= 0 && (at < 0 || i < at || i == at && len(r.start) > len(best.start)) {
			at, best = i, r
		}
	}
	return at, best
}
