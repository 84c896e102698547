package opensearchrouted

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/opensearchrouted/opensearchrouted/exporter/opensearchrouted/internal/metadata"
	"go.opentelemetry.io/collector/exporter/exportertest"
)

// refusalTemplates are OpenSearch's item refusals (2.19.6 and 3.9.0) that
// quote document contents, with {{c}} where the content goes: an error
// type, a reason and a caused_by reason.
var refusalTemplates = [][3]string{
	{"mapper_parsing_exception", "failed to parse field [attributes.n] of type [long] in document with id '{{c}}'. Preview of field's value: '{{c}}'", `For input string: "{{c}}"`},
	{"mapper_parsing_exception", "failed to parse field [attributes.b] of type [boolean] in document with id 'x'. Preview of field's value: '{{c}}'", "Failed to parse value [{{c}}] as only [true] or [false] are allowed."},
	{"mapper_parsing_exception", "failed to parse field [attributes.d] of type [date] in document with id 'x'. Preview of field's value: '{{c}}'", "failed to parse date field [{{c}}] with format [strict_date_optional_time||epoch_millis]"},
	{"mapper_parsing_exception", "failed to parse field [attributes.o] of type [text] in document with id 'x'. Preview of field's value: '{x={{c}}}'", "Can't get text on a START_OBJECT at 1:7"},
	{"mapper_parsing_exception", "failed to parse field [attributes.n] of type [long] in document with id 'x'. Preview of field's value: '{{c}}'", "Numeric value ({{c}}) out of range of long (-9223372036854775808 - 9223372036854775807)\n at [Source: REDACTED; line: 1, column: 37]"},
	{"illegal_argument_exception", "Document contains at least one immense term in field=\"attributes.k\" (whose UTF8 encoding is longer than the max length 32766), all of which were skipped. The prefix of the first immense term is: '{{c}}...', original message: bytes can be at most 32766 in length; got 40000", "bytes can be at most 32766 in length; got 40000"},
	{"strict_dynamic_mapping_exception", "mapping set to strict, dynamic introduction of [attributes] within [_doc] is not allowed", ""},
	{"version_conflict_engine_exception_like", "[{{c}}]: some refusal quoting the id", ""},
}

// FuzzRefusalReasonsStayOutOfLogs: the server refuses every document with
// a reason built from content (random bytes, as a document can hold); the
// exporter's warnings and errors name why, never what: no content of 4
// bytes or more that is not in the template survives into a log line at
// info or above, nor into the error the push returns. Both paths that
// log: dead-lettering, and the drop when the dead-letter write is refused.
func FuzzRefusalReasonsStayOutOfLogs(f *testing.F) {
	for _, seed := range []string{"secret-value", "abc] of type [long", "x' in document", "'\n at [Source:", "\xff\xfe1e400", "1234567890123456789012", "…"} {
		f.Add(seed, uint8(0))
		f.Add(seed, uint8(5))
	}
	f.Fuzz(func(t *testing.T, content string, tmpl uint8) {
		tpl := refusalTemplates[int(tmpl)%len(refusalTemplates)]
		if len(content) < 4 || strings.Contains(tpl[1]+tpl[2]+tpl[0], content) || strings.Contains(content, "{{c}}") {
			return
		}
		reason, cause := strings.ReplaceAll(tpl[1], "{{c}}", content), strings.ReplaceAll(tpl[2], "{{c}}", content)
		item, _ := json.Marshal(map[string]any{"create": map[string]any{"_index": "x", "status": 400,
			"error": map[string]any{"type": tpl[0], "reason": reason, "caused_by": map[string]any{"type": "illegal_argument_exception", "reason": cause}}}})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !strings.HasSuffix(r.URL.Path, "/_bulk") {
				w.WriteHeader(403)
				return
			}
			body, _ := io.ReadAll(r.Body)
			n := strings.Count(string(body), "\n") / 2
			items := make([]string, n)
			for i := range items {
				items[i] = string(item)
			}
			fmt.Fprintf(w, `{"errors":true,"items":[%s]}`, strings.Join(items, ","))
		}))
		defer srv.Close()
		core, logs := observer.New(zapcore.InfoLevel)
		set := exportertest.NewNopSettings(metadata.Type)
		set.Logger = zap.New(core)
		cfg := testConfig([]string{srv.URL})
		cfg.LogsIndex = "x"
		cfg.Bulk.MaxAttempts = 1
		e, err := newExporter(cfg, set, signalLogs)
		if err != nil {
			t.Fatal(err)
		}
		if err := e.start(context.Background(), nopHost()); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = e.shutdown(context.Background()) }()
		perr := e.pushLogs(context.Background(), makeLogs(0, 3))
		if perr == nil {
			t.Fatal("every record refused in every shape, and no error")
		}
		leak := func(where, s string) {
			for _, probe := range []string{content, content[:4]} {
				if !strings.Contains(tpl[0]+tpl[1]+tpl[2]+"…[]'\"", probe) && strings.Contains(s, probe) {
					t.Fatalf("content %q in %s: %s", probe, where, s)
				}
			}
		}
		leak("the error", perr.Error())
		if logs.Len() == 0 {
			t.Fatal("nothing logged")
		}
		for _, entry := range logs.All() {
			line := entry.Message
			for k, v := range entry.ContextMap() {
				line += fmt.Sprintf(" %s=%v", k, v)
			}
			leak("a log line", line)
		}
	})
}
