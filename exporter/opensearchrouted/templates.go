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
const logsTemplate = `{
  "index_patterns": ["ss4o_logs-*-*"],
  "data_stream": {},
  "priority": 100,
  "template": {
    "mappings": {
      "dynamic_templates": [
        {"attributes_strings": {"path_match": "attributes.*", "match_mapping_type": "string", "mapping": {"type": "keyword", "ignore_above": 1024}}},
        {"resource_strings": {"path_match": "resource.*", "match_mapping_type": "string", "mapping": {"type": "keyword", "ignore_above": 1024}}}
      ],
      "properties": {
        "@timestamp": {"type": "date_nanos"},
        "observedTimestamp": {"type": "date_nanos"},
        "traceId": {"type": "keyword"},
        "spanId": {"type": "keyword"},
        "flags": {"type": "long"},
        "severity": {"properties": {"text": {"type": "keyword", "ignore_above": 8191}, "number": {"type": "integer"}}},
        "eventName": {"type": "keyword", "ignore_above": 8191},
        "body": {"type": "text"},
        "bodyType": {"type": "keyword"},
        "droppedAttributesCount": {"type": "integer"},
        "schemaUrl": {"type": "keyword"},
        "instrumentationScope": {"properties": {"name": {"type": "keyword"}, "version": {"type": "keyword"}, "schemaUrl": {"type": "keyword"}}}
      }
    }
  }
}`

const tracesTemplate = `{
  "index_patterns": ["ss4o_traces-*-*"],
  "data_stream": {},
  "priority": 100,
  "template": {
    "mappings": {
      "dynamic_templates": [
        {"attributes_strings": {"path_match": "attributes.*", "match_mapping_type": "string", "mapping": {"type": "keyword", "ignore_above": 1024}}},
        {"resource_strings": {"path_match": "resource.*", "match_mapping_type": "string", "mapping": {"type": "keyword", "ignore_above": 1024}}}
      ],
      "properties": {
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
        "events": {"type": "object"},
        "links": {"type": "object"},
        "schemaUrl": {"type": "keyword"},
        "instrumentationScope": {"properties": {"name": {"type": "keyword"}, "version": {"type": "keyword"}, "schemaUrl": {"type": "keyword"}}}
      }
    }
  }
}`

// installTemplates PUTs the signal's index template (idempotent: a PUT
// replaces it with the same content). A refusal is an error naming the
// privilege needed.
func installTemplates(ctx context.Context, c *http.Client, seeds []string, sig signal) error {
	name, body := "ss4o_logs", logsTemplate
	if sig == signalTraces {
		name, body = "ss4o_traces", tracesTemplate
	}
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
		req, err := http.NewRequestWithContext(ctx, http.MethodPut, u.String(), bytes.NewReader([]byte(body)))
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
			return fmt.Errorf("opensearchrouted: install_templates: PUT _index_template/%s: HTTP %d: %s", name, resp.StatusCode, bytes.TrimSpace(msg))
		}
	}
	return fmt.Errorf("opensearchrouted: install_templates: no endpoint answered: %w", last)
}
