// Package otelv1 encodes spans as OpenSearch documents in the otel-v1
// layout that Data Prepper writes and OpenSearch Dashboards' Trace
// Analytics reads (span indices otel-v1-apm-span-*, the service-map index
// otel-v1-apm-service-map), gives the index templates for both, derives
// service-map edges, and decodes span documents back into pdata.
//
// # Sources of facts
//
// Field names, types and string forms are those of Data Prepper
// (opensearch-project/data-prepper): the index templates
// otel-v1-apm-span-index-template.json and
// otel-v1-apm-service-map-index-template.json with their schema notes in
// docs/schemas/trace-analytics, the OTLP codec of the otel_traces source
// (OTelProtoCodec: attribute keys prefixed "span.attributes." and
// "resource.attributes." with every '.' replaced by '@', "status.code" as
// the protobuf status code number, kind as the protobuf enum name, times
// as java.time.Instant.toString, ids in lower-case hex, trace group from
// a span whose parent id is empty, serviceName from the resource's
// non-empty string "service.name", slice and map values as JSON text) and
// the service-map processor (ServiceMapRelationship: the destination and
// target documents of a parent-child pair across services, hashId the
// base64 MD5 of "serviceName,kind,traceGroupName,target…,destination…").
// Trace Analytics (opensearch-project/dashboards-observability) queries
// traceId, spanId, parentSpanId, name, kind, serviceName, startTime,
// endTime, durationInNanos, status.code (2 for an error), traceGroup and
// traceGroupFields.{endTime,durationInNanos,statusCode}, and the service
// map's serviceName, destination.{domain,resource},
// target.{domain,resource} and traceGroupName.
//
// # Span documents
//
// Members in this order, every one always present unless noted:
//
//	traceId, spanId, parentSpanId  lower-case hex; "" for an empty id
//	traceState                     W3C trace state ("" when none)
//	name                           span name
//	kind                           "SPAN_KIND_UNSPECIFIED", "SPAN_KIND_INTERNAL", "SPAN_KIND_SERVER",
//	                               "SPAN_KIND_CLIENT", "SPAN_KIND_PRODUCER", "SPAN_KIND_CONSUMER";
//	                               "UNRECOGNIZED" for another value
//	startTime, endTime             UTC, like Instant.toString: "2021-05-18T18:58:44.695Z"
//	                               (no fraction, or 3, 6 or 9 digits)
//	durationInNanos                endTime - startTime (a long; negative when the end is earlier)
//	flags                          span flags, when not 0 (not in Data Prepper's layout)
//	status.code                    the status code number (0 unset, 1 ok, 2 error)
//	status.message                 when not empty
//	traceGroup                     the root span's name            } only when the encoder is
//	traceGroupFields               {endTime, durationInNanos,      } given the trace group
//	                                statusCode} of the root span   }
//	span.attributes.<key>          one member per attribute, '.' in the key replaced by '@'
//	droppedAttributesCount         integer
//	events                         [{time, name, attributes: {<key with '@'>: value}, droppedAttributesCount}]
//	droppedEventsCount             integer
//	links                          [{traceId, spanId, traceState, flags (when not 0),
//	                                attributes, droppedAttributesCount}]
//	droppedLinksCount              integer
//	serviceName                    the resource's "service.name", when a non-empty string
//	resource.attributes.<key>      one member per resource attribute, as for span attributes
//	instrumentationScope.name      when not empty
//	instrumentationScope.version   when not empty
//	roundTrip                      only when needed: what the members above cannot hold
//
// Members are written flat with dotted names ("status.code",
// "span.attributes.http@method"), as Data Prepper writes them; OpenSearch
// maps a dotted name as the path of objects, so queries address them the
// same either way.
//
// Attribute values are written as Data Prepper writes them: a string, int
// or bool as itself, a double as a JSON number that always has a '.' or an
// exponent (so that it reads back as a double), a slice or a map as its
// JSON text (a string), bytes as their standard base64, NaN and ±Inf as
// "NaN", "Infinity" and "-Infinity", an empty value as "". A key that is
// empty or blank is not written (the server refuses an empty field name).
//
// # Exact round trip: roundTrip
//
// What those members cannot give back exactly is kept in one more member,
// "roundTrip", an object the span template maps with "enabled": false
// (stored in _source, never indexed, never mapped: it cannot make a
// document be refused and costs no field). It is written only when needed,
// so a span with string, int, bool and finite double attributes under
// keys without '@' has none. Its members:
//
//	span, resource, scope          the whole attribute set as [[key, typed value], …], when the flat
//	                               members cannot give it back: a key holds '@' (the '.' → '@'
//	                               replacement would be ambiguous) or is empty or blank, or a value is
//	                               bytes, a slice, a map, empty, NaN or ±Inf. Scope attributes
//	                               have no place in the layout and are always kept here.
//	events, links                  [{"i": index, "attributes": [[key, typed value], …],
//	                                "time": "<ns>"}] for the events and links that need it
//	resourceDropped, scopeDropped  dropped attribute counts of the resource and scope, when not 0
//	resourceSchemaUrl, scopeSchemaUrl  when not empty
//	kind                           the kind number, when "UNRECOGNIZED"
//	startTime, endTime             decimal nanoseconds, for a time after 2262-04-11T23:47:16.854775807Z
//	                               (the last instant date_nanos holds, written in its place above)
//
// A typed value is a string, bool or int as itself, a finite double with a
// '.' or an exponent, null for empty, an array of typed values for a
// slice, {"d": "NaN"|"Infinity"|"-Infinity"}, {"y": base64} for bytes and
// {"m": [[key, typed value], …]} for a map.
//
// # Decoding and its normalisations
//
// DecodeSpan is the exact inverse of Encoder.AppendSpan except for:
//   - invalid UTF-8 anywhere comes back as U+FFFD (byte by byte);
//   - of map keys that are equal after that, only the first is kept (the one
//     pcommon.Map.Get returns; the server refuses a repeated member);
//   - every document carries its own resource and scope: DecodeSpan gives
//     each span its own copy (a caller groups equal ones again).
//
// Key order, int versus double, -0.0, NaN and ±Inf, bytes, empty values,
// every uint64 time and id, unknown kinds and status codes are kept. The
// derived members (durationInNanos, serviceName, traceGroup,
// traceGroupFields) are read past. A document with a member this layout
// does not have gives an error matching ErrForeign.
//
// # Index templates
//
// SpanIndexTemplate has Data Prepper's span mappings (date_detection off,
// keyword attributes through dynamic templates, date_nanos times, nested
// events and links) plus: ignore_above on every keyword that can hold long
// text (8191 characters for attributes, so that no value reaches
// Lucene's 32766-byte term limit; such a value stays in _source but is not
// indexed), keyword dynamic templates for event and link attributes (a
// dynamic mapping would take the type of the first value seen and refuse
// the next of another type), explicit mappings for what Data Prepper
// leaves to dynamic mapping (traceState, dropped counts,
// instrumentationScope, flags), roundTrip unmapped, and a field limit of
// 10000 (every distinct attribute key is a field in this layout). The
// template carries no rollover settings: the write alias is
// DefaultSpanAlias over FirstSpanIndex, the naming an ISM rollover policy
// with rollover_alias DefaultSpanAlias expects.
//
// # Service map
//
// EdgesOf gives the two documents a parent → child pair across two
// services makes (see Edge); AppendEdge writes one; Edge.ID is Data
// Prepper's hashId, used as the document id, so the same edge from any
// writer is one document.
package otelv1
