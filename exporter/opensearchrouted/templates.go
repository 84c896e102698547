package opensearchrouted

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// SS4O-compatible index templates: they make ss4o_logs-*-* and
// ss4o_traces-*-* data streams with the fields our documents carry. Keyword
// fields that may hold long free text have ignore_above 8191 characters:
// a longer value stays in _source but is not indexed, where it would
// otherwise exceed Lucene's 32766-byte term and get the document refused.
//
// Attribute values (of the record, the resource, the scope, span events
// and links) are mapped by dynamicTemplates, so that an attribute whose
// kind changes from one record to the next does not get records refused
// (400 mapper_parsing_exception, the record lost); checked on OpenSearch
// 2.19.6 and 3.9.0:
//   - date_detection is off: a string that looks like a date no longer
//     makes the field a date, which refused every later string that is
//     not one (the fields that are dates are mapped as such);
//   - strings are keywords (the record's and the resource's) or text with
//     a keyword sub-field (the scope's, and span events' and links', where
//     exception.message and exception.stacktrace live); both also take
//     numbers and booleans;
//   - integers are long and doubles double (dynamic mapping made them
//     float), both with ignore_malformed: a value of another kind is kept
//     in _source, not indexed, and named in the document's _ignored field.
//
// A span event's @timestamp is a date (milliseconds), not date_nanos like
// the span's own times: date_nanos refuses instants after 2262-04-11, and
// one such event would lose its whole span (date detection made it a date
// before). droppedAttributesCount is a uint32, so long: integer refuses
// values over 2^31-1.
//
// Not solved by a mapping, so refused (and documented in the README):
//   - a boolean attribute that later carries another string: boolean has
//     no ignore_malformed (a mapping asking for it refuses the document
//     that creates the field);
//   - an attribute that is a value in one record and a map in another
//     (either order on 2.19.6; on 3.9.0 a map where a number came first
//     is kept by ignore_malformed);
//   - an attribute named like the prefix of another's
//     ("deployment.environment" and "deployment.environment.name"):
//     OpenSearch reads a dotted name as a path of objects, and a field
//     cannot be both. OpenSearch 3.x's disable_objects keeps such names
//     flat, but on 3.9.0 an object with it refuses every array of strings
//     or booleans (a field of type [keyword] "Can't get text on a
//     START_ARRAY"), which attributes often are: not used;
//   - values of two kinds under one new field within one document (two
//     events of a span, a mixed array): "cannot be changed from type".
var (
	logsTemplate = indexTemplate("ss4o_logs-*-*", `
        "@timestamp": {"type": "date_nanos"},
        "observedTimestamp": {"type": "date_nanos"},
        "traceId": {"type": "keyword"},
        "spanId": {"type": "keyword"},
        "flags": {"type": "long"},
        "severity": {"properties": {"text": {"type": "keyword", "ignore_above": 8191}, "number": {"type": "integer"}}},
        "eventName": {"type": "keyword", "ignore_above": 8191},
        "body": {"type": "text"},
        "bodyType": {"type": "keyword"},
        "droppedAttributesCount": {"type": "long"},
        "schemaUrl": {"type": "keyword"},
        "unmapped": {"type": "text"},
        "instrumentationScope": {"properties": {"name": {"type": "keyword"}, "version": {"type": "keyword"}, "schemaUrl": {"type": "keyword"}}}`,
		keywordValues("attributes"), keywordValues("resource"), textValues("instrumentationScope.attributes"))

	tracesTemplate = indexTemplate("ss4o_traces-*-*", `
        "@timestamp": {"type": "date_nanos"},
        "startTime": {"type": "date_nanos"},
        "endTime": {"type": "date_nanos"},
        "traceId": {"type": "keyword"},
        "spanId": {"type": "keyword"},
        "parentSpanId": {"type": "keyword"},
        "traceState": {"type": "keyword", "ignore_above": 8191},
        "name": {"type": "keyword", "ignore_above": 8191},
        "kind": {"type": "keyword"},
        "status": {"properties": {"code": {"type": "keyword"}, "message": {"type": "keyword", "ignore_above": 8191}}},
        "events": {"properties": {"@timestamp": {"type": "date"}, "name": {"type": "keyword", "ignore_above": 8191}, "droppedAttributesCount": {"type": "long"}}},
        "links": {"properties": {"traceId": {"type": "keyword"}, "spanId": {"type": "keyword"}, "traceState": {"type": "keyword", "ignore_above": 8191}, "flags": {"type": "long"}, "droppedAttributesCount": {"type": "long"}}},
        "schemaUrl": {"type": "keyword"},
        "unmapped": {"type": "text"},
        "instrumentationScope": {"properties": {"name": {"type": "keyword"}, "version": {"type": "keyword"}, "schemaUrl": {"type": "keyword"}}}`,
		keywordValues("attributes"), keywordValues("resource"), textValues("instrumentationScope.attributes"),
		textValues("events.attributes"), textValues("links.attributes"))
)

// deadLetterTemplate makes the dead-letter index name a data stream whose
// documents are never refused: nothing but the listed fields is mapped
// (dynamic: false keeps the rest in _source, unindexed), and the refused
// document itself is one unindexed string. The reason is searchable by
// word; index, error.type and shape find and count the refusals.
func deadLetterTemplate(name string) string {
	return fmt.Sprintf(`{
  "index_patterns": [%q],
  "data_stream": {},
  "priority": 200,
  "template": {
    "mappings": {
      "dynamic": false,
      "properties": {
        "@timestamp": {"type": "date_nanos"},
        "signal": {"type": "keyword"},
        "index": {"type": "keyword"},
        "id": {"type": "keyword"},
        "status": {"type": "integer"},
        "shape": {"type": "keyword"},
        "error": {"properties": {
          "type": {"type": "keyword"},
          "reason": {"type": "text"},
          "caused_by": {"properties": {"type": {"type": "keyword"}, "reason": {"type": "text"}}}
        }}
      }
    }
  }
}`, name)
}

// indexTemplate is the body of a composable index template making pattern
// data streams: properties (JSON object members) and the dynamic templates
// (attributeValues' JSON array members).
func indexTemplate(pattern, properties string, attributeValues ...string) string {
	return fmt.Sprintf(`{
  "index_patterns": [%q],
  "data_stream": {},
  "priority": 100,
  "template": {
    "mappings": {
      "date_detection": false,
      "dynamic_templates": [%s
      ],
      "properties": {%s
      }
    }
  }
}`, pattern, strings.Join(attributeValues, ","), properties)
}

// keywordValues maps the values found anywhere under the object obj:
// strings as keyword, integers as long and doubles as double, the numbers
// with ignore_malformed (see logsTemplate).
func keywordValues(obj string) string {
	return attributeValues(obj, `{"type": "keyword", "ignore_above": 1024}`)
}

// textValues is keywordValues with strings as text (searchable by word),
// with a keyword sub-field.
func textValues(obj string) string {
	return attributeValues(obj, `{"type": "text", "fields": {"keyword": {"type": "keyword", "ignore_above": 1024}}}`)
}

func attributeValues(obj, strs string) string {
	name := strings.ReplaceAll(obj, ".", "_")
	return fmt.Sprintf(`
        {%[1]q: {"path_match": "%[2]s.*", "match_mapping_type": "string", "mapping": %[5]s}},
        {%[3]q: {"path_match": "%[2]s.*", "match_mapping_type": "long", "mapping": {"type": "long", "ignore_malformed": true}}},
        {%[4]q: {"path_match": "%[2]s.*", "match_mapping_type": "double", "mapping": {"type": "double", "ignore_malformed": true}}}`,
		name+"_strings", obj, name+"_integers", name+"_doubles", strs)
}

// installTemplates PUTs the signal's index template (idempotent: a PUT
// replaces it with the same content). A refusal is an error naming the
// privilege needed.
// With the dead-letter index on, its template too.
func installTemplates(ctx context.Context, c *http.Client, seeds []string, sig signal, deadLetter string) error {
	name, body := "ss4o_logs", logsTemplate
	if sig == signalTraces {
		name, body = "ss4o_traces", tracesTemplate
	}
	if err := putTemplate(ctx, c, seeds, name, body); err != nil {
		return err
	}
	if deadLetter == "" {
		return nil
	}
	return putTemplate(ctx, c, seeds, "opensearchrouted_deadletter_"+sig.String(), deadLetterTemplate(deadLetter))
}

// putTemplate PUTs body as the index template name through the first seed
// that answers.
func putTemplate(ctx context.Context, c *http.Client, seeds []string, name, body string) error {
	status, msg, err := seedDo(ctx, c, seeds, http.MethodPut, "/_index_template/"+name, body)
	switch {
	case err != nil:
		return fmt.Errorf("opensearchrouted: install_templates: %w", err)
	case status/100 == 2:
		return nil
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return fmt.Errorf("opensearchrouted: install_templates: HTTP %d: the exporter's credentials may not create index templates (needs cluster privilege indices:admin/index_template/put, e.g. manage_index_templates); install them yourself or set install_templates: false", status)
	default:
		return fmt.Errorf("opensearchrouted: install_templates: PUT _index_template/%s: HTTP %d: %s", name, status, msg)
	}
}

// seedDo sends one request (path under each endpoint's own path, without
// its query or fragment: the writes ignore them too) through the first seed
// that answers, and returns the status and the start of the answer.
func seedDo(ctx context.Context, c *http.Client, seeds []string, method, path, body string) (int, string, error) {
	var last error
	for _, s := range seeds {
		u, err := url.Parse(s)
		if err != nil {
			return 0, "", fmt.Errorf("endpoint %q: %w", s, err)
		}
		u.Path = strings.TrimSuffix(u.Path, "/") + path
		u.RawPath, u.RawQuery, u.Fragment = "", "", ""
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
		if err != nil {
			return 0, "", err
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := c.Do(req)
		if err != nil {
			last = err
			continue
		}
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return resp.StatusCode, string(bytes.TrimSpace(msg)), nil
	}
	return 0, "", fmt.Errorf("no endpoint answered: %w", last)
}
