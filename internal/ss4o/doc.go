// Package ss4o encodes log records and spans as OpenSearch documents in the
// Simple Schema for Observability (SS4O) layout, derives their document ids,
// and decodes such documents back into pdata.
//
// Encoding appends to a caller's buffer (no maps, no reflection, no
// encoding/json): one JSON object, the bulk item's _source, without a
// newline. A field whose value is zero or empty is left out, and reads back
// as zero or empty. Field order is fixed: "@timestamp" first, then the
// record's fields in the order below, then the resource and scope fields.
//
// # Log documents
//
//	field                           value
//	@timestamp                      record time; the observed time when the record time is 0
//	                                (1970-01-01T00:00:00Z when both are 0). Always present.
//	timestampUnset                  true when the record time is 0 (so that @timestamp is the observed time)
//	observedTimestamp               the record's own observed time
//	traceId, spanId                 lower-case hex (32 and 16 digits)
//	flags                           LogRecordFlags as an integer
//	severity.text, severity.number  severity text; severity number as an integer
//	eventName                       event name
//	body                            the body, always a string: a body of another type as its
//	                                JSON text (below)
//	bodyType                        for a body that is not a string: int, double, bool,
//	                                bytes, map or slice
//	attributes                      the record attributes as an object
//	droppedAttributesCount          integer
//
// # Span documents
//
//	@timestamp                      start time (1970-01-01T00:00:00Z when 0). Always present.
//	startTime, endTime              start and end time
//	traceId, spanId, parentSpanId   lower-case hex
//	traceState                      W3C trace state string
//	flags                           span flags as an integer
//	name                            span name
//	kind                            "Internal", "Server", "Client", "Producer", "Consumer";
//	                                another non-zero value as a decimal string ("7")
//	status.code, status.message     "Unset", "Ok", "Error" (others as decimal strings); message.
//	                                The object is left out when the code is Unset and the message empty.
//	attributes                      object
//	droppedAttributesCount          integer
//	events[]                        {"@timestamp", "name", "attributes", "droppedAttributesCount"}
//	droppedEventsCount              integer
//	links[]                         {"traceId", "spanId", "traceState", "flags", "attributes", "droppedAttributesCount"}
//	droppedLinksCount               integer
//
// # Resource and scope (both signals)
//
//	resource                        the resource attributes as an object
//	resourceDroppedAttributesCount  integer
//	schemaUrl                       the ResourceLogs/ResourceSpans schema URL (Encoder only)
//	instrumentationScope            {"name", "version", "schemaUrl" (of the ScopeLogs/ScopeSpans,
//	                                Encoder only), "attributes", "droppedAttributesCount"}
//
// # Values
//
// Times are RFC 3339 strings in UTC with nanoseconds, formatted like
// time.RFC3339Nano ("2026-11-29T16:11:46.438493144Z", trailing zeros of the
// fraction removed). Attribute values keep their types:
// a string is a JSON string; a bool true/false; an int a JSON integer; a
// double a JSON number that always has a '.' or an exponent ("1.0", "1e+21"),
// so that it reads back as a double; NaN, +Inf and -Inf, which JSON cannot
// express, are the strings "NaN", "Infinity" and "-Infinity"; bytes are a
// standard padded base64 string; a slice is an array; a map is an object;
// an empty value is null. Every byte of a string or key that is not part of
// valid UTF-8 is replaced by U+FFFD (as routing.SanitizeUTF8 does), control
// characters are escaped (\n, \t, \u001f, …). A map that repeats a key keeps
// only its first occurrence (the one pcommon.Map.Get returns): OpenSearch
// rejects a document with a repeated key.
//
// The log body is always a string, because an OpenSearch field has one
// type: SS4O maps body as text, which refuses an object, and a dynamic
// mapping takes the type of the first body it sees. A body of another type
// is written as the JSON text of its value as above, except that bytes are
// their base64 and a non-finite double is NaN, Infinity or -Infinity
// without quotes; "bodyType" names the type, and DecodeLog restores it
// (bytes and non-finite doubles included).
//
// Documents are compact: no whitespace is written and control characters
// are escaped, so a document holds no byte below 0x20 and is one NDJSON line
// as it is (bulk.Batch.CommitCompact relies on it).
//
// # Ids
//
// Content ids (ContentID, AppendID, Repeats) are an XXH3 128-bit hash of
// the encoded document, written in URL-safe base64 without padding (22
// characters, the form of OpenSearch's generated ids), plus an occurrence
// counter for exact repeats within one export call. Span ids
// (AppendSpanID) are the trace id and span id.
// Because the hash covers the document bytes, records that differ only in
// attribute order get different content ids, and records SS4O cannot tell
// apart (the list under Decoding) get the same one; a change of this layout
// changes every content id.
//
// # Decoding
//
// DecodeLog and DecodeSpan are the exact inverse of the encoder except for
// what the JSON layout cannot keep:
//   - invalid UTF-8 anywhere comes back as U+FFFD;
//   - a bytes value comes back as its base64 string;
//   - a NaN or infinite double comes back as the string "NaN", "Infinity"
//     or "-Infinity";
//   - of repeated map keys only the first is kept;
//   - every document carries its own resource and scope: DecodeLog and
//     DecodeSpan give each record its own copy; LogsDecoder and TracesDecoder
//     group records with equal resources and scopes again (an input that
//     held two equal resources separately comes back as one);
//   - AppendLog and AppendSpan do not know the schema URLs; only Encoder
//     writes them.
//
// Map key order, integer versus double, -0.0, every int64 and every float64
// value, every uint64 nanosecond time and unknown enum values are kept.
// Documents of another shape give an error matching ErrForeign; DecodeValue
// reads any JSON document as a pcommon.Value for them.
//
// # Fallback shape
//
// A document that an index refuses for its shape (a mapping conflict: an
// attribute named like the prefix of another, a key whose value changes
// kind, maps nested deeper than the index allows, more distinct keys than
// its field limit) can be sent again in the fallback shape that
// AppendUnmapped writes: the top-level members whose names and types come
// from the record's data, attributes, resource, instrumentationScope,
// events and links, are taken out and written, in their order and as their
// exact bytes, into one JSON object whose text is a JSON string under
// "unmapped", the document's last member:
//
//	{"@timestamp":"…","body":"m","unmapped":"{\"attributes\":{\"a\":1},\"resource\":{…}}"}
//
// Every other member stays as it was, so time, ids, severity, body, span
// name, kind and status keep their mapping and stay searchable as such. A
// string cannot conflict with a mapping, adds at most one field (two with a
// keyword sub-field) to the index whatever the record holds, and its words
// stay searchable; when the index template maps "unmapped" in advance, a
// fallback document adds no field at all, so an index at its field limit
// still takes it.
// A document without any of these members has no fallback shape:
// AppendUnmapped returns it unchanged.
//
// DecodeLog, DecodeSpan and the group decoders read a fallback document as
// if the members inside "unmapped" stood at the top level: the record is
// exactly the one the original document gives (the same pdata, which
// encodes to the same document bytes). Only those five members may be
// inside, each once in the whole document.
//
// # Dead-letter documents
//
// A record the server refuses in both shapes is kept in a dead-letter index
// (AppendDeadLetter, ParseDeadLetter):
//
//	@timestamp      when it was dead-lettered (RFC 3339 in UTC, nanoseconds)
//	signal          "logs" or "traces"
//	index           the index the record was meant for
//	id              its _id ("" when the server was to generate one)
//	status          the HTTP status of the refused item
//	error           {"type", "reason", "caused_by": {"type", "reason"}}: the server's
//	                answer to the last attempt, in full; caused_by only when given
//	shape           the shape refused last: "original" or "unmapped"
//	document        the original document (never the fallback shape) as one JSON string
//
// The document is a string so that nothing in it is ever mapped: whatever
// the record holds, its dead-letter document has these same few fields, and
// a search by error type or reason finds it. DecodeLog (for signal "logs") and DecodeSpan (for
// "traces"), and so the group decoders, read a dead-letter document as the
// record its "document" holds, exactly as that document itself decodes;
// reading a dead-letter index with them replays its records. A dead-letter
// document is recognised by a string "document" and an object "error";
// one of the other signal, or whose document is not one of ours, matches
// ErrForeign. Strings in it are written like the encoder's (invalid UTF-8
// as U+FFFD).
//
// # Mapping notes
//
// Typed attribute values mean that one attribute key seen with two JSON
// types (say an int in one record and a string in another) can conflict
// in a dynamic mapping; flat_object mappings for attributes, resource and
// instrumentationScope.attributes (as contrib's templates use) avoid that.
// The strings used for NaN and ±Inf are rejected by a float-mapped field.
package ss4o
