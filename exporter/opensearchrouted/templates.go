package opensearchrouted

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"go.uber.org/zap"
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
//     not one (the fields that are dates, a span event's @timestamp
//     included, are mapped as such);
//   - strings are keywords, which also take numbers and booleans;
//   - integers are long and doubles double (dynamic mapping made them
//     float), both with ignore_malformed: a value of another kind is kept
//     in _source, not indexed, and named in the document's _ignored field.
//
// Booleans keep OpenSearch's boolean (which has no ignore_malformed; a
// mapping asking for it refuses the document that creates the field).
//
// Attribute names are dotted ("deployment.environment"), and OpenSearch
// reads a dotted name as a path of objects: an attribute whose name is
// also the prefix of another's ("deployment.environment" and, after a
// semantic-conventions rename, "deployment.environment.name") cannot be
// both a value and an object, and the record that carries the second is
// refused. Newer OpenSearch (3.9.0 here; its documentation lists the
// parameter from 3.6) has disable_objects: on an attribute object it keeps
// the names flat, and both are stored; flat asks for it, and
// installTemplates falls back to the template without it when the server
// does not know it (2.19.6 refuses it: "unsupported parameters"). Refused
// either way: an attribute that is a string, number or boolean in one
// record and then a map.
//
// logsTemplate and tracesTemplate are the template bodies, with
// disable_objects on every attribute object when flat.
func logsTemplate(flat bool) string {
	return indexTemplate("ss4o_logs-*-*", fmt.Sprintf(`
        "@timestamp": {"type": "date_nanos"},
        "observedTimestamp": {"type": "date_nanos"},
        "traceId": {"type": "keyword"},
        "spanId": {"type": "keyword"},
        "flags": {"type": "long"},
        "severity": {"properties": {"text": {"type": "keyword", "ignore_above": 8191}, "number": {"type": "integer"}}},
        "eventName": {"type": "keyword", "ignore_above": 8191},
        "body": {"type": "text"},
        "bodyType": {"type": "keyword"},
        "attributes": {"type": "object"%[1]s},
        "droppedAttributesCount": {"type": "integer"},
        "resource": {"type": "object"%[1]s},
        "schemaUrl": {"type": "keyword"},
        "instrumentationScope": {"properties": {"name": {"type": "keyword"}, "version": {"type": "keyword"}, "schemaUrl": {"type": "keyword"}, "attributes": {"type": "object"%[1]s}}}`,
		disableObjects(flat)),
		"attributes", "resource", "instrumentationScope.attributes")
}

func tracesTemplate(flat bool) string {
	return indexTemplate("ss4o_traces-*-*", fmt.Sprintf(`
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
        "attributes": {"type": "object"%[1]s},
        "resource": {"type": "object"%[1]s},
        "events": {"properties": {"@timestamp": {"type": "date_nanos"}, "name": {"type": "keyword", "ignore_above": 8191}, "attributes": {"type": "object"%[1]s}, "droppedAttributesCount": {"type": "integer"}}},
        "links": {"properties": {"traceId": {"type": "keyword"}, "spanId": {"type": "keyword"}, "traceState": {"type": "keyword", "ignore_above": 8191}, "flags": {"type": "long"}, "attributes": {"type": "object"%[1]s}, "droppedAttributesCount": {"type": "integer"}}},
        "schemaUrl": {"type": "keyword"},
        "instrumentationScope": {"properties": {"name": {"type": "keyword"}, "version": {"type": "keyword"}, "schemaUrl": {"type": "keyword"}, "attributes": {"type": "object"%[1]s}}}`,
		disableObjects(flat)),
		"attributes", "resource", "instrumentationScope.attributes", "events.attributes", "links.attributes")
}

func disableObjects(flat bool) string {
	if flat {
		return `, "disable_objects": true`
	}
	return ""
}

// indexTemplate is the body of a composable index template making pattern
// data streams: properties (JSON object members) and, for the values under
// each of the attribute objects, dynamicTemplates.
func indexTemplate(pattern, properties string, attributeObjects ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `{
  "index_patterns": [%q],
  "data_stream": {},
  "priority": 100,
  "template": {
    "mappings": {
      "date_detection": false,
      "dynamic_templates": [`, pattern)
	for i, obj := range attributeObjects {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(dynamicTemplates(obj))
	}
	fmt.Fprintf(&b, `
      ],
      "properties": {%s
      }
    }
  }
}`, properties)
	return b.String()
}

// dynamicTemplates maps the values found anywhere under the object obj:
// strings as keyword, integers as long and doubles as double, the numbers
// with ignore_malformed (see logsTemplate).
func dynamicTemplates(obj string) string {
	name := strings.ReplaceAll(obj, ".", "_")
	return fmt.Sprintf(`
        {%[1]q: {"path_match": "%[2]s.*", "match_mapping_type": "string", "mapping": {"type": "keyword", "ignore_above": 1024}}},
        {%[3]q: {"path_match": "%[2]s.*", "match_mapping_type": "long", "mapping": {"type": "long", "ignore_malformed": true}}},
        {%[4]q: {"path_match": "%[2]s.*", "match_mapping_type": "double", "mapping": {"type": "double", "ignore_malformed": true}}}`,
		name+"_strings", obj, name+"_integers", name+"_doubles")
}

// installTemplates PUTs the signal's index template (idempotent: a PUT
// replaces it with the same content): the flat one, or, when the server
// does not know disable_objects, the other. A refusal is an error naming
// the privilege needed.
func installTemplates(ctx context.Context, c *http.Client, seeds []string, sig signal, log *zap.Logger) error {
	name, body := "ss4o_logs", logsTemplate
	if sig == signalTraces {
		name, body = "ss4o_traces", tracesTemplate
	}
	err := putTemplate(ctx, c, seeds, name, body(true))
	var refused *templateRefused
	if errors.As(err, &refused) && refused.status == http.StatusBadRequest && bytes.Contains(refused.msg, []byte("disable_objects")) {
		log.Info("install_templates: this OpenSearch does not support disable_objects (3.6 and later do): attribute names are mapped as object paths, and a record with an attribute named like the prefix of another's (deployment.environment, deployment.environment.name) is refused",
			zap.String("template", name))
		err = putTemplate(ctx, c, seeds, name, body(false))
	}
	return err
}

// templateRefused is a template PUT answered with an error status other
// than 401/403.
type templateRefused struct {
	name   string
	status int
	msg    []byte
}

func (e *templateRefused) Error() string {
	return fmt.Sprintf("opensearchrouted: install_templates: PUT _index_template/%s: HTTP %d: %s", e.name, e.status, bytes.TrimSpace(e.msg))
}

// putTemplate PUTs body as the index template name through the first seed
// that answers.
func putTemplate(ctx context.Context, c *http.Client, seeds []string, name, body string) error {
	var last error
	for _, s := range seeds {
		u, err := url.Parse(s)
		if err != nil {
			return fmt.Errorf("opensearchrouted: install_templates: endpoint %q: %w", s, err)
		}
		// Under the endpoint's path; without its query or fragment (the
		// writes ignore them too).
		u.Path = strings.TrimSuffix(u.Path, "/") + "/_index_template/" + name
		u.RawPath, u.RawQuery, u.Fragment = "", "", ""
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, u.String(), strings.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			last = err
			continue
		}
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		switch {
		case resp.StatusCode/100 == 2:
			return nil
		case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
			return fmt.Errorf("opensearchrouted: install_templates: HTTP %d: the exporter's credentials may not create index templates (needs cluster privilege indices:admin/index_template/put, e.g. manage_index_templates); install them yourself or set install_templates: false", resp.StatusCode)
		default:
			return &templateRefused{name: name, status: resp.StatusCode, msg: msg}
		}
	}
	return fmt.Errorf("opensearchrouted: install_templates: no endpoint answered: %w", last)
}
