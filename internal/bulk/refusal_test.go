package bulk

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"
)

// testdata/reasons-<version>.json hold what real OpenSearch 2.19.6 and 3.9.0
// (one node each, default settings) answered, verbatim: "item" maps a case
// to the bulk item the server returned for one document sent with create
// (unfiltered), "request" to a whole-request error (HTTP status and body).
// Every value a document or id held that may show in a reason contains
// "secret" (or, for the ids, is one long run of one letter), so a test can
// tell content from template. The cases:
//
//	kind_long_abc            {"n":1} then {"n":"abcsecret"}
//	bool_abc                 {"b":true} then {"b":"abcsecret"}
//	object_then_scalar       {"o":{"x":1}} then {"o":"scalarsecret"}
//	scalar_then_object       {"o":"s"} then {"o":{"x":"objsecret"}}
//	prefix_kw_then_child     {"a.b":"kw"} then {"a.b.c":"childsecret"}
//	prefix_child_then_kw     {"a.b.c":"v"} then {"a.b":"kwsecret"}
//	depth25                  maps nested 25 deep
//	fields1001               1,001 distinct fields in one document
//	long_field_name          a 40,000-byte field name (stored: no limit by default)
//	field_name_length_limit  index.mapping.field_name_length.limit 10, a 21-byte name
//	field_name_length_limit_30 (3.9.0) the same with limit 30 and a 38-byte name
//	numeric_out_of_range     {"n":1} then {"n":123456789012345678901234567890}
//	date_bad                 a date field gets "notadatesecret"
//	json_bad                 {"a": trusecret}
//	json_unbalanced          {"a": "x", "b": [1,2}
//	invalid_utf8             a value with the bytes FF FE
//	immense_term             a 39,000-byte value in a keyword field
//	nested_objects_limit     index.mapping.nested_objects.limit 1, two nested objects
//	empty_field_name, dot_field_name  {"":"v"}, {"a..b":"v"}
//	block_<setting>          the index setting true, then one create
//	data_stream_write_block  index.blocks.write on a data stream's backing index
//	index_closed             a create into a closed index
//	cluster_read_only(_allow_delete)  cluster.blocks.* true, then a bulk
//	id_too_long_bulk         a 2-item bulk: a 600-byte _id and a good one
//	two_long_ids             (3.9.0) a 2-item bulk with a 600- and a 513-byte _id
//	nested_fields_limit_mapping_api  (the limit through the mapping API)
type serverAnswers struct {
	Version string
	Item    map[string]json.RawMessage
	Request map[string]struct {
		Status int
		Body   json.RawMessage
	}
}

func loadAnswers(t *testing.T, version string) serverAnswers {
	t.Helper()
	data, err := os.ReadFile("testdata/reasons-" + version + ".json")
	if err != nil {
		t.Fatal(err)
	}
	var a serverAnswers
	if err := json.Unmarshal(data, &a); err != nil || a.Version != version {
		t.Fatalf("testdata for %s: %v (version %q)", version, err, a.Version)
	}
	return a
}

var answerVersions = []string{"2.19.6", "3.9.0"}

// leaks reports document content that survived in s.
func leaks(s string) bool {
	return strings.Contains(s, "secret") || strings.Contains(s, "AAAAAAAA") || strings.Contains(s, "BBBBBBBB") ||
		strings.Contains(s, "105, 109, 109") // the immense term's bytes
}

// TestServerItemAnswers reads each real item answer with the response
// parser and checks its cause, Classify, IsShapeRefusal and what SafeReason
// keeps of the reason and the cause's reason.
func TestServerItemAnswers(t *testing.T) {
	type want struct {
		class     Class
		shape     bool
		typ       string
		causeType string
		reason    string // SafeReason(ErrorReason)
		cause     string // SafeReason(CauseReason); a per-version value in causeBy
	}
	const (
		depthReason = "The depth of the field has exceeded the allowed limit of [20]. This limit can be set by changing the [index.mapping.depth.limit] index level setting."
		tokenReason = "Unrecognized token '…': was expecting (JSON String, Number, Array, Object or token 'null', 'true' or 'false')"
	)
	cases := map[string]want{
		"kind_long_abc":        {Permanent, true, "mapper_parsing_exception", "illegal_argument_exception", "failed to parse field [n] of type [long]", `For input string: "…"`},
		"bool_abc":             {Permanent, true, "mapper_parsing_exception", "illegal_argument_exception", "failed to parse field [b] of type [boolean]", "Failed to parse value […] as only [true] or [false] are allowed."},
		"object_then_scalar":   {Permanent, true, "mapper_parsing_exception", "", "object mapping for [o] tried to parse field [o] as object, but found a concrete value", ""},
		"scalar_then_object":   {Permanent, true, "mapper_parsing_exception", "illegal_state_exception", "failed to parse field [o] of type [text]", "Can't get text on a START_OBJECT at 1:7"},
		"prefix_kw_then_child": {Permanent, true, "mapper_parsing_exception", "", "Could not dynamically add mapping for field [a.b.c]. Existing mapping for [a.b] must be of type object but found [text].", ""},
		"prefix_child_then_kw": {Permanent, true, "mapper_parsing_exception", "", "object mapping for [a.b] tried to parse field [a.b] as object, but found a concrete value", ""},
		"depth25":              {Permanent, true, "mapper_parsing_exception", "parse_exception", "failed to parse", depthReason},
		"fields1001":           {Permanent, true, "illegal_argument_exception", "", "Limit of total fields [1000] has been exceeded", ""},
		"long_field_name":      {Done, false, "", "", "", ""},
		"field_name_length_limit": {Permanent, true, "illegal_argument_exception", "",
			"Field name [_nested_path] is longer than the limit of [10] characters", ""},
		"field_name_length_limit_30": {Permanent, true, "illegal_argument_exception", "",
			"Field name [averyveryverylongnamethatisoverthirty] is longer than the limit of [30] characters", ""},
		"numeric_out_of_range": {Permanent, true, "mapper_parsing_exception", "input_coercion_exception", "failed to parse field [n] of type [long]", "per version"},
		"date_bad":             {Permanent, true, "mapper_parsing_exception", "illegal_argument_exception", "failed to parse field [d] of type [date]", "failed to parse date field […] with format [strict_date_optional_time||epoch_millis]"},
		"json_bad":             {Permanent, true, "mapper_parsing_exception", "json_parse_exception", "failed to parse", tokenReason},
		"json_unbalanced":      {Permanent, true, "mapper_parsing_exception", "json_parse_exception", "failed to parse", "Unexpected close marker '}': expected ']' (for Array starting"},
		"invalid_utf8":         {Permanent, true, "mapper_parsing_exception", "json_parse_exception", "failed to parse", "Invalid UTF-8 start byte 0xff"},
		"immense_term": {Permanent, true, "illegal_argument_exception", "max_bytes_length_exceeded_exception",
			`Document contains at least one immense term in field="k" (whose UTF8 encoding is longer than the max length 32766), all of which were skipped.  Please correct the analyzer to not produce such terms`,
			"bytes can be at most 32766 in length; got 39000"},
		"nested_objects_limit": {Permanent, true, "mapper_parsing_exception", "",
			"The number of nested documents has exceeded the allowed limit of [1]. This limit can be set by changing the [index.mapping.nested_objects.limit] index level setting.", ""},
		"empty_field_name": {Permanent, true, "mapper_parsing_exception", "illegal_argument_exception", "failed to parse", "field name cannot be an empty string"},
		"dot_field_name":   {Permanent, true, "mapper_parsing_exception", "illegal_argument_exception", "failed to parse", "object field starting or ending with a [.] makes object resolution ambiguous: [a..b]"},
		"block_index.blocks.write": {Retry, false, "cluster_block_exception", "",
			"index [p-write] blocked by: [FORBIDDEN/8/index write (api)];", ""},
		"block_index.blocks.read_only": {Retry, false, "cluster_block_exception", "",
			"index [p-read-only] blocked by: [FORBIDDEN/5/index read-only (api)];", ""},
		"block_index.blocks.read_only_allow_delete": {Retry, false, "cluster_block_exception", "",
			"index [p-read-only-allow-delete] blocked by: [TOO_MANY_REQUESTS/12/disk usage exceeded flood-stage watermark, index has read-only-allow-delete block];", ""},
		"data_stream_write_block": {Retry, false, "cluster_block_exception", "",
			"index [.ds-p-ds-000001] blocked by: [FORBIDDEN/8/index write (api)];", ""},
		"index_closed": {Retry, false, "index_closed_exception", "", "closed", ""},
	}
	causeBy := map[string]map[string]string{
		"numeric_out_of_range": {
			"2.19.6": "Numeric value (…) out of range of long (-9223372036854775808 - 9223372036854775807)",
			"3.9.0":  "Numeric value (…) out of range of `long` (-9223372036854775808 - 9223372036854775807)",
		},
	}
	for _, v := range answerVersions {
		a := loadAnswers(t, v)
		seen := 0
		for name, w := range cases {
			raw, ok := a.Item[name]
			if !ok {
				if name == "field_name_length_limit_30" && v == "2.19.6" {
					continue // captured on 3.9.0 only
				}
				t.Fatalf("%s: no %s in testdata", v, name)
			}
			seen++
			out, n, _, err := parseForTest(`{"items":[`+string(raw)+`]}`, 1)
			if err != nil || n != 1 {
				t.Fatalf("%s %s: %d items, %v", v, name, n, err)
			}
			o := out[0]
			var id struct {
				Create struct {
					ID string `json:"_id"`
				}
			}
			_ = json.Unmarshal(raw, &id)
			if o.ErrorType != w.typ || o.CauseType != w.causeType {
				t.Errorf("%s %s: type %q cause %q, want %q %q", v, name, o.ErrorType, o.CauseType, w.typ, w.causeType)
			}
			if got := Classify(o); got != w.class {
				t.Errorf("%s %s: Classify = %v, want %v", v, name, got, w.class)
			}
			if got := IsShapeRefusal(o); got != w.shape {
				t.Errorf("%s %s: IsShapeRefusal = %v, want %v", v, name, got, w.shape)
			}
			wantCause := w.cause
			if m := causeBy[name]; m != nil {
				wantCause = m[v]
			}
			r, c := SafeReason(o.ErrorReason), SafeReason(o.CauseReason)
			if r != w.reason || c != wantCause {
				t.Errorf("%s %s: SafeReason\n reason %q\n want   %q\n cause  %q\n want   %q", v, name, r, w.reason, c, wantCause)
			}
			if leaks(r) || leaks(c) || id.Create.ID != "" && (strings.Contains(r, id.Create.ID) || strings.Contains(c, id.Create.ID)) {
				t.Errorf("%s %s: content survived: %q / %q", v, name, r, c)
			}
		}
		if seen < len(a.Item) {
			t.Errorf("%s: %d of the %d answers in testdata have no case", v, len(a.Item)-seen, len(a.Item))
		}
	}
}

// TestServerRequestAnswers replays the real whole-request errors through
// Send: the error's Kind, Type, IsValidationFailure and a message without
// content; every item gets the failure, classified.
func TestServerRequestAnswers(t *testing.T) {
	cases := map[string]struct {
		kind       Kind
		validation bool
		class      Class
		reason     string
	}{
		"id_too_long_bulk":               {KindRejected, true, Permanent, "Validation Failed: 1: id […] is too long, must be no longer than 512 bytes but was: 600;"},
		"two_long_ids":                   {KindRejected, true, Permanent, "Validation Failed: 1: id […] is too long, must be no longer than 512 bytes but was: 513;"},
		"cluster_read_only":              {KindBlocked, false, Retry, "blocked by: [FORBIDDEN/6/cluster read-only (api)];"},
		"cluster_read_only_allow_delete": {KindBlocked, false, Retry, "blocked by: [FORBIDDEN/13/cluster read-only / allow delete (api)];"},
	}
	for _, v := range answerVersions {
		a := loadAnswers(t, v)
		for name, w := range cases {
			ans, ok := a.Request[name]
			if !ok {
				if name == "two_long_ids" && v == "2.19.6" {
					continue // captured on 3.9.0 only
				}
				t.Fatalf("%s: no %s in testdata", v, name)
			}
			t.Run(v+"/"+name, func(t *testing.T) {
				b, items := testBatch(t, 2, 30)
				srv, _ := fakeNode(t, func([]reqItem) (int, string) { return ans.Status, string(ans.Body) })
				out := make([]Outcome, len(items))
				res, err := testClient().Send(context.Background(), srv.URL, b, items, out)
				if w.validation {
					// Send isolates the refused items (see
					// TestSendIsolatesValidationFailures): this server
					// refuses every request, so each item alone.
					if err != nil {
						t.Fatalf("error %v", err)
					}
					for _, o := range out {
						if o.Status != 400 || o.ErrorType != errValidation || SafeReason(o.ErrorReason) != w.reason || Classify(o) != w.class {
							t.Fatalf("outcome %+v", o)
						}
					}
					return
				}
				var re *RequestError
				if !errors.As(err, &re) {
					t.Fatalf("error %v", err)
				}
				if re.Kind != w.kind || re.Status != ans.Status || re.Reason != w.reason || IsValidationFailure(err) != w.validation {
					t.Fatalf("kind %v status %d type %q reason %q validation %v", re.Kind, re.Status, re.Type, re.Reason, IsValidationFailure(err))
				}
				if re.Type == "" || !strings.Contains(err.Error(), re.Type) || leaks(err.Error()) {
					t.Fatalf("message %q", err)
				}
				if IsRetryable(err) != (w.class == Retry) {
					t.Fatalf("IsRetryable = %v", IsRetryable(err))
				}
				checkAll(t, out, w.class)
				if res.Counts[w.class] != len(items) {
					t.Fatalf("counts %v", res.Counts)
				}
			})
		}
	}
}

// TestValidationFailureCutShort: a validation failure quotes every bad id,
// in root_cause and again in the error: for many long ids its body is
// larger than what Send reads. It is still told by its type.
func TestValidationFailureCutShort(t *testing.T) {
	var reason strings.Builder
	reason.WriteString("Validation Failed: ")
	for i := 1; i <= 300; i++ {
		reason.WriteString(strconv.Itoa(i) + ": id [" + strings.Repeat("A", 600) + "] is too long, must be no longer than 512 bytes but was: 600;")
	}
	r, _ := json.Marshal(reason.String())
	full := `{"error":{"root_cause":[{"type":"action_request_validation_exception","reason":` + string(r) + `}],"type":"action_request_validation_exception","reason":` + string(r) + `},"status":400}`
	filtered := `{"error":{"type":"action_request_validation_exception","reason":` + string(r) + `}}` // as filter_path=error.type,error.reason gives it
	for name, body := range map[string]string{"full": full, "filtered": filtered} {
		t.Run(name, func(t *testing.T) {
			if len(body) <= maxErrorBody {
				t.Fatalf("body of %d bytes fits", len(body))
			}
			b, items := testBatch(t, 3, 30)
			srv, _ := fakeNode(t, func([]reqItem) (int, string) { return 400, body })
			out := make([]Outcome, len(items))
			_, err := testClient().Send(context.Background(), srv.URL, b, items, out)
			if err != nil { // each item refused alone (this server refuses every request)
				t.Fatalf("error %v", err)
			}
			for _, o := range out {
				if o.ErrorType != errValidation || leaks(SafeReason(o.ErrorReason)) {
					t.Fatalf("outcome %+v", o)
				}
			}
			checkAll(t, out, Permanent)
		})
	}
}

func TestIsValidationFailure(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{nil, false},
		{errors.New("x"), false},
		{&RequestError{Kind: KindRejected, Status: 400, Type: "action_request_validation_exception"}, true},
		{wrapErr{&RequestError{Kind: KindRejected, Status: 400, Type: "action_request_validation_exception"}}, true},
		{&RequestError{Kind: KindRejected, Status: 400, Type: "illegal_argument_exception"}, false},
		{&RequestError{Kind: KindServer, Status: 500, Type: "action_request_validation_exception"}, false},
	}
	for _, tc := range cases {
		if got := IsValidationFailure(tc.err); got != tc.want {
			t.Errorf("IsValidationFailure(%v) = %v", tc.err, got)
		}
	}
}

type wrapErr struct{ error }

func (w wrapErr) Unwrap() error { return w.error }

// TestClassifyTemporaryRefusals: blocks, closed indices and an item's
// security_exception are retried; a whole-request 403 (no Index) is not.
func TestClassifyTemporaryRefusals(t *testing.T) {
	cases := []struct {
		o    Outcome
		want Class
	}{
		{Outcome{Status: 403, Index: "i", ErrorType: "cluster_block_exception"}, Retry},
		{Outcome{Status: 429, Index: "i", ErrorType: "cluster_block_exception"}, Retry},
		{Outcome{Status: 403, ErrorType: "cluster_block_exception"}, Retry},
		{Outcome{Status: 400, Index: "i", ErrorType: "index_closed_exception"}, Retry},
		{Outcome{Status: 403, Index: "i", ErrorType: "security_exception", ErrorReason: "no permissions for [indices:data/write/bulk[s]] and User [name=otel, backend_roles=[], requestedTenant=null]"}, Retry},
		{Outcome{Status: 403, ErrorType: "security_exception"}, Permanent},
		{Outcome{Status: 401, ErrorType: "security_exception"}, Permanent},
		{Outcome{Status: 403, Index: "i"}, Permanent},
	}
	for _, tc := range cases {
		if got := Classify(tc.o); got != tc.want {
			t.Errorf("Classify(%+v) = %v, want %v", tc.o, got, tc.want)
		}
	}
}

// TestIsShapeRefusal covers what the server answers do not: the status, the
// types 3.x or strict mappings may use, and the illegal_argument_exception
// reasons that are and are not about the mapping.
func TestIsShapeRefusal(t *testing.T) {
	cases := []struct {
		o    Outcome
		want bool
	}{
		{Outcome{Status: 400, ErrorType: "document_parsing_exception", ErrorReason: "[1:8] failed to parse field [n] of type [long] in document with id 'x'"}, true},
		{Outcome{Status: 400, ErrorType: "strict_dynamic_mapping_exception", ErrorReason: "mapping set to strict, dynamic introduction of [x] within [_doc] is not allowed"}, true},
		{Outcome{Status: 400, ErrorType: "illegal_argument_exception", ErrorReason: "mapper [a] cannot be changed from type [long] to [text]"}, true},
		{Outcome{Status: 400, ErrorType: "illegal_argument_exception", ErrorReason: "Can't merge a non object mapping [a.b] with an object mapping"}, true},
		{Outcome{Status: 400, ErrorType: "illegal_argument_exception", ErrorReason: "can't merge a non object mapping [a.b] with an object mapping"}, true},
		{Outcome{Status: 400, ErrorType: "illegal_argument_exception", ErrorReason: "Limit of nested fields [50] has been exceeded"}, true},
		{Outcome{Status: 400, ErrorType: "illegal_argument_exception", ErrorReason: "x", CauseReason: "The depth of the field has exceeded the allowed limit of [20]."}, true},
		{Outcome{Status: 400, ErrorType: "illegal_argument_exception", ErrorReason: "only write ops with an op_type of create are allowed in data streams"}, false},
		{Outcome{Status: 400, ErrorType: "illegal_argument_exception", ErrorReason: "no write index is defined for alias [a]"}, false},
		{Outcome{Status: 500, ErrorType: "mapper_parsing_exception"}, false},
		{Outcome{Status: 429, ErrorType: "mapper_parsing_exception"}, false},
		{Outcome{Status: 400, ErrorType: "version_conflict_engine_exception"}, false},
		{Outcome{Status: 400, ErrorType: "action_request_validation_exception"}, false},
		{Outcome{Status: 201}, false},
	}
	for _, tc := range cases {
		if got := IsShapeRefusal(tc.o); got != tc.want {
			t.Errorf("IsShapeRefusal(%+v) = %v, want %v", tc.o, got, tc.want)
		}
	}
}

// TestSafeReasonHostile: content that quotes the templates' own markers
// cannot move the cut.
func TestSafeReasonHostile(t *testing.T) {
	const suffix = "] is too long, must be no longer than 512 bytes but was: "
	cases := map[string]string{
		"Validation Failed: 1: id [x" + suffix + "1; secret" + suffix + "600;":                                      "Validation Failed: 1: id […" + suffix + "600;",
		"Validation Failed: 1: id [secretA" + suffix + "600;2: id [secretB" + suffix + "513;":                       "Validation Failed: 1: id […" + suffix + "513;",
		"Validation Failed: 1: id [secret":                                                                          "Validation Failed: 1: id",
		"[secret]: version conflict, x]: version conflict, document already exists (current version [1])":           "[…]: version conflict, document already exists (current version [1])",
		"failed to parse date field [secret] with format [x] with format [yyyy]":                                    "failed to parse date field […] with format [yyyy]",
		"failed to parse date field [secret]":                                                                       "failed to parse date field",
		`For input string: "se"cret"`:                                                                               `For input string: "…"`,
		"Numeric value (1) out of range of long (secret) out of range of long (-1 - 1)":                             "Numeric value (…) out of range of long (-1 - 1)",
		"Unrecognized token 'secret': was expecting 'x': was expecting (JSON String)":                               "Unrecognized token '…': was expecting (JSON String)",
		"Failed to parse value [secret] as only [true] or [false] are allowed.":                                     "Failed to parse value […] as only [true] or [false] are allowed.",
		"Illegal character\n at [Source: (byte[])\"{\"a\":\"secret\"}\"; line: 1, column: 9]":                       "Illegal character",
		"failed to parse field [f] of type [long] in document with id 'secret'. Preview of field's value: 'secret'": "failed to parse field [f] of type [long]",
	}
	for in, want := range cases {
		if got := SafeReason(in); got != want {
			t.Errorf("SafeReason(%q)\n = %q\nwant %q", in, got, want)
		}
	}
}
