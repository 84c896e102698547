package otelv1

import "github.com/opensearchrouted/opensearchrouted/internal/jsonstr"

// DefaultSpanAlias is the write alias span documents go to (Data Prepper's
// default); its first index is DefaultSpanAlias + "-000001", so that an ISM
// rollover policy (rollover_alias DefaultSpanAlias) can roll it over.
const DefaultSpanAlias = "otel-v1-apm-span"

// FirstSpanIndex is the index a new DefaultSpanAlias points to.
const FirstSpanIndex = DefaultSpanAlias + "-000001"

// ServiceMapIndex is the index service-map documents go to (Data
// Prepper's default; Trace Analytics reads it by this name).
const ServiceMapIndex = "otel-v1-apm-service-map"

// attrKeyword is the mapping of every flattened attribute: a keyword, as
// Data Prepper maps them, not indexed (but kept in _source) past 8191
// characters, so that no value reaches Lucene's 32766-byte term limit and
// makes the server refuse the document.
const attrKeyword = `{"type":"keyword","ignore_above":8191}`

// spanMappings are Data Prepper's span mappings (field names and types of
// otel-v1-apm-span-index-template.json) plus what a refusal-free, exact
// round trip needs: ignore_above on every keyword that can hold long text,
// the event and link attributes as keywords (a dynamic mapping would take
// the type of the first value it sees and refuse the next of another),
// the fields Data Prepper leaves to dynamic mapping (traceState, the
// dropped counts, instrumentationScope) mapped explicitly, flags, and
// roundTrip neither indexed nor mapped.
const spanMappings = `{"date_detection":false,` +
	`"dynamic_templates":[` +
	`{"resource_attributes_map":{"path_match":"resource.attributes.*","mapping":` + attrKeyword + `}},` +
	`{"span_attributes_map":{"path_match":"span.attributes.*","mapping":` + attrKeyword + `}},` +
	`{"events_attributes_map":{"path_match":"events.attributes.*","mapping":` + attrKeyword + `}},` +
	`{"links_attributes_map":{"path_match":"links.attributes.*","mapping":` + attrKeyword + `}}],` +
	`"_source":{"enabled":true},` +
	`"properties":{` +
	`"traceId":{"type":"keyword","ignore_above":256},` +
	`"spanId":{"type":"keyword","ignore_above":256},` +
	`"parentSpanId":{"type":"keyword","ignore_above":256},` +
	`"traceState":{"type":"keyword","ignore_above":8191},` +
	`"name":{"type":"keyword","ignore_above":1024},` +
	`"kind":{"type":"keyword","ignore_above":128},` +
	`"startTime":{"type":"date_nanos"},` +
	`"endTime":{"type":"date_nanos"},` +
	`"durationInNanos":{"type":"long"},` +
	`"flags":{"type":"long"},` +
	`"status":{"properties":{"code":{"type":"integer"},"message":{"type":"keyword","ignore_above":8191}}},` +
	`"traceGroup":{"type":"keyword","ignore_above":1024},` +
	`"traceGroupFields":{"properties":{"endTime":{"type":"date_nanos"},"durationInNanos":{"type":"long"},"statusCode":{"type":"integer"}}},` +
	`"serviceName":{"type":"keyword","ignore_above":8191},` +
	`"droppedAttributesCount":{"type":"long"},` +
	`"droppedEventsCount":{"type":"long"},` +
	`"droppedLinksCount":{"type":"long"},` +
	`"instrumentationScope":{"properties":{"name":{"type":"keyword","ignore_above":8191},"version":{"type":"keyword","ignore_above":8191}}},` +
	`"events":{"type":"nested","properties":{"time":{"type":"date_nanos"},"name":{"type":"keyword","ignore_above":1024},"droppedAttributesCount":{"type":"long"}}},` +
	`"links":{"type":"nested","properties":{"traceId":{"type":"keyword","ignore_above":256},"spanId":{"type":"keyword","ignore_above":256},` +
	`"traceState":{"type":"keyword","ignore_above":8191},"flags":{"type":"long"},"droppedAttributesCount":{"type":"long"}}},` +
	`"roundTrip":{"type":"object","enabled":false}}}`

// spanSettings raise the field limit: every distinct attribute key is a
// field of its own in this layout, and a document over the limit is
// refused.
const spanSettings = `{"index":{"mapping":{"total_fields":{"limit":10000}}}}`

// SpanIndexTemplate returns the body of a composable index template (PUT
// _index_template/<name>) for span indices matching pattern (for example
// DefaultSpanAlias + "-*").
func SpanIndexTemplate(pattern string) string {
	b := append([]byte(nil), `{"index_patterns":[`...)
	b = jsonstr.Append(b, pattern)
	b = append(b, `],"template":{"settings":`...)
	b = append(b, spanSettings...)
	b = append(b, `,"mappings":`...)
	b = append(b, spanMappings...)
	b = append(b, `}}`...)
	return string(b)
}

// SpanMappings returns the mappings of SpanIndexTemplate alone (for a
// create-index body).
func SpanMappings() string { return spanMappings }

const edgeKeyword = `{"type":"keyword","ignore_above":1024}`

// serviceMapMappings are Data Prepper's service-map mappings
// (otel-v1-apm-service-map-index-template.json).
const serviceMapMappings = `{"date_detection":false,` +
	`"dynamic_templates":[{"strings_as_keyword":{"match_mapping_type":"string","mapping":` + edgeKeyword + `}}],` +
	`"_source":{"enabled":true},` +
	`"properties":{` +
	`"hashId":` + edgeKeyword + `,` +
	`"serviceName":` + edgeKeyword + `,` +
	`"kind":` + edgeKeyword + `,` +
	`"destination":{"properties":{"domain":` + edgeKeyword + `,"resource":` + edgeKeyword + `}},` +
	`"target":{"properties":{"domain":` + edgeKeyword + `,"resource":` + edgeKeyword + `}},` +
	`"traceGroupName":` + edgeKeyword + `}}`

// ServiceMapIndexTemplate returns the body of a composable index template
// for ServiceMapIndex.
func ServiceMapIndexTemplate() string {
	return `{"index_patterns":["` + ServiceMapIndex + `"],"template":{"mappings":` + serviceMapMappings + `}}`
}
