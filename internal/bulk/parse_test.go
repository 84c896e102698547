package bulk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
)

// refParse is an independent reading of the rules in parse.go on top of
// encoding/json: json.Valid for syntax, then a walk over Decoder tokens.
func refParse(body []byte, out []Outcome) (n int, errorsFlag bool, err error) {
	if !json.Valid(body) {
		return 0, false, errors.New("invalid JSON")
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	tok := func() json.Token {
		t, e := d.Token()
		if e != nil {
			panic(e)
		}
		return t
	}
	defer func() {
		if r := recover(); r != nil {
			n, errorsFlag, err = 0, false, fmt.Errorf("%v", r)
		}
	}()
	// skip consumes one value whose first token is t.
	var skip func(t json.Token)
	skip = func(t json.Token) {
		if t == json.Delim('{') || t == json.Delim('[') {
			for d.More() {
				if t == json.Delim('{') {
					tok() // key
				}
				skip(tok())
			}
			tok()
		}
	}
	str := func(t json.Token) string {
		switch v := t.(type) {
		case nil:
			return ""
		case string:
			return v
		}
		panic("not a string")
	}
	if tok() != json.Delim('{') {
		panic("not an object")
	}
	seen := map[string]bool{}
	for d.More() {
		k := tok().(string)
		switch k {
		case "items", "errors":
			if seen[k] {
				panic("dup")
			}
			seen[k] = true
		}
		switch k {
		case "errors":
			b, ok := tok().(bool)
			if !ok {
				panic("errors not bool")
			}
			errorsFlag = b
		case "items":
			if tok() != json.Delim('[') {
				panic("items not array")
			}
			n = 0
			for d.More() {
				var o Outcome
				if tok() != json.Delim('{') {
					panic("item not object")
				}
				if !d.More() {
					panic("no op")
				}
				tok() // op
				if tok() != json.Delim('{') {
					panic("result not object")
				}
				rs := map[string]bool{}
				for d.More() {
					rk := tok().(string)
					switch rk {
					case "_index", "status", "error":
						if rs[rk] {
							panic("dup")
						}
						rs[rk] = true
					}
					switch rk {
					case "_index":
						o.Index = str(tok())
					case "status":
						num, ok := tok().(json.Number)
						if !ok || strings.ContainsAny(string(num), ".eE") {
							panic("status")
						}
						v, e := strconv.Atoi(string(num))
						if e != nil || v < 0 || v > 999 {
							panic("status range")
						}
						o.Status = v
					case "error":
						switch t := tok().(type) {
						case nil:
						case string:
							o.ErrorReason = t
						case json.Delim:
							if t != '{' {
								panic("error")
							}
							es := map[string]bool{}
							for d.More() {
								ek := tok().(string)
								if (ek == "type" || ek == "reason" || ek == "caused_by") && es[ek] {
									panic("dup")
								}
								es[ek] = true
								switch ek {
								case "type":
									o.ErrorType = str(tok())
								case "reason":
									o.ErrorReason = str(tok())
								case "caused_by":
									ct := tok()
									if ct != json.Delim('{') {
										skip(ct)
										break
									}
									cs := map[string]bool{}
									for d.More() {
										ck := tok().(string)
										if (ck == "type" || ck == "reason") && cs[ck] {
											panic("dup")
										}
										cs[ck] = true
										switch ck {
										case "type":
											o.CauseType = str(tok())
										case "reason":
											o.CauseReason = str(tok())
										default:
											skip(tok())
										}
									}
									tok()
								default:
									skip(tok())
								}
							}
							tok()
						default:
							panic("error type")
						}
					default:
						skip(tok())
					}
				}
				tok() // '}' of result
				if !rs["status"] {
					panic("no status")
				}
				if d.More() {
					panic("two ops")
				}
				tok() // '}' of item
				if n < len(out) {
					out[n] = o
				}
				n++
			}
			tok()
		default:
			skip(tok())
		}
	}
	tok()
	if _, e := d.Token(); e != io.EOF {
		panic("trailing data")
	}
	if !seen["items"] {
		panic("no items")
	}
	return n, errorsFlag, nil
}

func parseForTest(body string, size int) ([]Outcome, int, bool, error) {
	out := make([]Outcome, size)
	var in interner
	p := &parser{in: &in}
	n, flag, err := p.parseResponse([]byte(body), out)
	return out, n, flag, err
}

func TestParseShapes(t *testing.T) {
	cases := []struct {
		name string
		body string
		n    int
		flag bool
		want []Outcome
	}{
		{
			name: "filtered success",
			body: `{"errors":false,"items":[{"create":{"_index":".ds-logs-000001","status":201}},{"create":{"_index":".ds-logs-000001","status":201}}]}`,
			n:    2,
			want: []Outcome{{Status: 201, Index: ".ds-logs-000001"}, {Status: 201, Index: ".ds-logs-000001"}},
		},
		{
			name: "full success shape (spec §2), keys in server order",
			body: `{"took":30,"errors":false,"items":[{"create":{"_index":"test","_id":"1","_version":1,"result":"created","_shards":{"total":2,"successful":1,"failed":0},"_seq_no":0,"_primary_term":1,"status":201}}]}`,
			n:    1,
			want: []Outcome{{Status: 201, Index: "test"}},
		},
		{
			name: "mixed errors",
			body: `{"took":3,"errors":true,"items":[
				{"create":{"_index":"a","_id":"1","status":409,"error":{"type":"version_conflict_engine_exception","reason":"[1]: version conflict, document already exists (current version [1])","index":"a","shard":"0","index_uuid":"x"}}},
				{"create":{"_index":"a","_id":"2","status":429,"error":{"type":"rejected_execution_exception","reason":"rejected execution of coordinating operation"}}},
				{"create":{"_index":"a","_id":"3","status":400,"error":{"type":"mapper_parsing_exception","reason":"failed to parse field [n] of type [long] in document with id '3'. Preview of field's value: 'abc'","caused_by":{"type":"illegal_argument_exception","reason":"For input string: \"abc\""}}}},
				{"create":{"_index":"a","_id":"4","_version":1,"result":"created","status":201}},
				{"index":{"_index":"a","status":503,"error":{"type":"unavailable_shards_exception","reason":null}}},
				{"create":{"_index":null,"status":500,"error":"plain text error"}}
			]}`,
			n:    6,
			flag: true,
			want: []Outcome{
				{Status: 409, Index: "a", ErrorType: "version_conflict_engine_exception", ErrorReason: "[1]: version conflict, document already exists (current version [1])"},
				{Status: 429, Index: "a", ErrorType: "rejected_execution_exception", ErrorReason: "rejected execution of coordinating operation"},
				{Status: 400, Index: "a", ErrorType: "mapper_parsing_exception", ErrorReason: "failed to parse field [n] of type [long] in document with id '3'. Preview of field's value: 'abc'",
					CauseType: "illegal_argument_exception", CauseReason: "For input string: \"abc\""},
				{Status: 201, Index: "a"},
				{Status: 503, Index: "a", ErrorType: "unavailable_shards_exception"},
				{Status: 500, ErrorReason: "plain text error"},
			},
		},
		{
			name: "escapes decoded like encoding/json",
			body: `{"items":[{"create":{"_index":"a\u00e9\ud83d\ude00\ud800x","status":400,"error":{"type":"t","reason":"q\"\\\/\n\t\u0041"}}}]}`,
			n:    1,
			want: []Outcome{{Status: 400, Index: "aé😀\uFFFDx", ErrorType: "t", ErrorReason: "q\"\\/\n\tA"}},
		},
		{
			name: "fast path declines what it does not cover",
			body: `{"items":[{"create":{"_index":"a","status":201}},{"create":{"_index":"a","status":429,"error":{"type":"rejected_execution_exception","reason":"r"}}},{"create":{"_index":"a","status":201 } },{"create":{"_index":"a","status":2e2}},{"create":{"_index":"a","status":201,"_index":"b"}}]}`,
			n:    -1, // an error: 2e2 is not an integer
		},
		{
			name: "fast path and slow path mixed",
			body: `{"items":[{"create":{"_index":"a","status":201}},{"create":{"_index":"a","status":429,"error":{"type":"rejected_execution_exception","reason":"r"}}},{"create":{"_index":"a","status":201 } },{"create":{"_index":"a","status":409,"error":null}},{"create":{"_index":"a","status":20}},{"create":{"_index":"a","status":201}}]}`,
			n:    6,
			want: []Outcome{{Status: 201, Index: "a"}, {Status: 429, Index: "a", ErrorType: "rejected_execution_exception", ErrorReason: "r"}, {Status: 201, Index: "a"}, {Status: 409, Index: "a"}, {Status: 20, Index: "a"}, {Status: 201, Index: "a"}},
		},
		{
			name: "caused_by: first level read, deeper levels and other keys skipped, null and odd values tolerated",
			body: `{"items":[
				{"create":{"_index":"a","status":400,"error":{"caused_by":{"reason":"The depth of the field has exceeded the allowed limit of [20].","x":[1],"type":"parse_exception","caused_by":{"type":"deeper","reason":"deeper reason"}},"type":"mapper_parsing_exception","reason":"failed to parse"}}},
				{"create":{"_index":"a","status":400,"error":{"type":"t","reason":"r","caused_by":null}}},
				{"create":{"_index":"a","status":400,"error":{"type":"t","reason":"r","caused_by":{"type":null,"reason":null}}}},
				{"create":{"_index":"a","status":400,"error":{"type":"t","reason":"r","caused_by":"a string"}}},
				{"create":{"_index":"a","status":400,"error":{"type":"t","reason":"r","caused_by":{}}}},
				{"create":{"_index":"a","status":400,"error":{"type":"t","reason":"r","caused_by":{"type":"c\u00e9","reason":"q\"x"}}}},
				{"create":{"_index":"a","status":400,"error":{"type":"t","reason":"r","caused_by":{"type":"c\u00e9","reason":"q\"x"}}}},
				{"create":{"_index":"a","status":201}}
			]}`,
			n:    8,
			flag: false,
			want: []Outcome{
				{Status: 400, Index: "a", ErrorType: "mapper_parsing_exception", ErrorReason: "failed to parse", CauseType: "parse_exception", CauseReason: "The depth of the field has exceeded the allowed limit of [20]."},
				{Status: 400, Index: "a", ErrorType: "t", ErrorReason: "r"},
				{Status: 400, Index: "a", ErrorType: "t", ErrorReason: "r"},
				{Status: 400, Index: "a", ErrorType: "t", ErrorReason: "r"},
				{Status: 400, Index: "a", ErrorType: "t", ErrorReason: "r"},
				{Status: 400, Index: "a", ErrorType: "t", ErrorReason: "r", CauseType: "cé", CauseReason: "q\"x"},
				{Status: 400, Index: "a", ErrorType: "t", ErrorReason: "r", CauseType: "cé", CauseReason: "q\"x"},
				{Status: 201, Index: "a"},
			},
		},
		{
			name: "empty items",
			body: ` {"items":[]} `,
			n:    0,
			want: []Outcome{},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, n, flag, err := parseForTest(tc.body, 8)
			if tc.n < 0 {
				if err == nil {
					t.Fatal("accepted")
				}
				if _, _, rerr := refParse([]byte(tc.body), make([]Outcome, 8)); rerr == nil {
					t.Fatal("reference accepted")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if n != tc.n || flag != tc.flag {
				t.Fatalf("n=%d errors=%v, want %d %v", n, flag, tc.n, tc.flag)
			}
			for i, w := range tc.want {
				if out[i] != w {
					t.Errorf("item %d: %+v, want %+v", i, out[i], w)
				}
			}
			rout := make([]Outcome, 8)
			rn, rflag, rerr := refParse([]byte(tc.body), rout)
			if rerr != nil || rn != n || rflag != flag || fmt.Sprint(rout) != fmt.Sprint(out) {
				t.Errorf("reference disagrees: %v %d %v %+v", rerr, rn, rflag, rout)
			}
		})
	}
}

func TestParseRejects(t *testing.T) {
	bad := []string{
		``,
		`[]`,
		`{}`,
		`{"errors":false}`,
		`{"items":[{"create":{"_index":"a","status":201}}]`,            // truncated
		`{"items":[{"create":{"_index":"a","status":201}}]}x`,          // trailing
		`{"items":[{"create":{"_index":"a"}}]}`,                        // no status
		`{"items":[{"create":{"status":"201"}}]}`,                      // status string
		`{"items":[{"create":{"status":201.0}}]}`,                      // not integer
		`{"items":[{"create":{"status":2e2}}]}`,                        // not integer
		`{"items":[{"create":{"status":1000}}]}`,                       // range
		`{"items":[{"create":{"status":-1}}]}`,                         // range
		`{"items":[{"create":{"status":0201}}]}`,                       // leading zero
		`{"items":[{}]}`,                                               // no op
		`{"items":[{"create":{"status":201},"index":{"status":201}}]}`, // two ops
		`{"items":[{"create":{"status":201,"status":201}}]}`,           // duplicate
		`{"items":[],"items":[]}`,
		`{"errors":null,"items":[]}`,
		`{"items":[{"create":{"status":201,"error":5}}]}`,
		`{"items":[{"create":{"status":201,"_index":"a` + "\x01" + `"}}]}`,
		`{"items":[{"create":{"status":201,"x":[1,]}}]}`,
		`{"items":[{"create":{"status":201,"x":"\q"}}]}`,
		`{"items":[{"create":{"status":201,"x":"\u12"}}]}`,
		`{"items":[{"create":{"status":201,"x":tru}}]}`,
		`{"items":[{"create":{"status":201,"x":-}}]}`,
		`{"items":[{"create":{"status":201,"x":1.}}]}`,
		`{"items":[{"create":{"status":201,"x":1e}}]}`,
		`{"items":[{"create":{"status":201}},]}`,
		`{"items":"no"}`,
		`{"items":[{"create":{"status":400,"error":{"caused_by":null,"caused_by":null}}}]}`,
		`{"items":[{"create":{"status":400,"error":{"caused_by":{"type":"a","type":"b"}}}}]}`,
		`{"items":[{"create":{"status":400,"error":{"caused_by":{"reason":"a","reason":"b"}}}}]}`,
		`{"items":[{"create":{"status":400,"error":{"caused_by":{"type":5}}}}]}`,
		`{"items":[{"create":{"status":400,"error":{"caused_by":{"reason":[]}}}}]}`,
		`{"items":[{"create":{"status":400,"error":{"caused_by":{"caused_by":{"x":}}}}}]}`,
		`{"took":1,}`,
	}
	for _, body := range bad {
		if _, _, _, err := parseForTest(body, 4); err == nil {
			t.Errorf("accepted %q", body)
		}
		if _, _, err := refParse([]byte(body), make([]Outcome, 4)); err == nil {
			t.Errorf("reference accepted %q", body)
		}
	}
}

func TestParseCountsBeyondOut(t *testing.T) {
	body := `{"items":[{"create":{"status":201}},{"create":{"status":201}},{"create":{"status":429}}]}`
	out, n, _, err := parseForTest(body, 1)
	if err != nil || n != 3 || out[0].Status != 201 {
		t.Fatalf("n=%d err=%v out=%+v", n, err, out)
	}
}

func TestParseSuccessAllocs(t *testing.T) {
	body := []byte(cannedResponse(1000, ".ds-ss4o_logs-default-namespace-000001"))
	out := make([]Outcome, 1000)
	var in interner
	p := &parser{in: &in}
	allocs := testing.AllocsPerRun(20, func() {
		n, _, err := p.parseResponse(body, out)
		if err != nil || n != 1000 {
			t.Fatal(n, err)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per 1000-item parse, want 0", allocs)
	}
}

// cannedResponse is the filter_path-trimmed all-success answer for n items.
func cannedResponse(n int, index string) string {
	var sb strings.Builder
	sb.WriteString(`{"errors":false,"items":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(`{"create":{"_index":"` + index + `","status":201}}`)
	}
	sb.WriteString(`]}`)
	return sb.String()
}

func FuzzParseResponse(f *testing.F) {
	f.Add([]byte(cannedResponse(3, "idx")))
	f.Add([]byte(`{"took":3,"errors":true,"items":[{"create":{"_index":"a","_id":"1","status":409,"error":{"type":"version_conflict_engine_exception","reason":"x","shard":"0"}}},{"index":{"_index":null,"status":500,"error":"s"}},{"create":{"status":400,"error":null,"_shards":{"total":2,"a":[1,2.5e-3,true,false,null]}}}]}`))
	f.Add([]byte(`{"items":[{"create":{"_index":"a\u00e9\ud83d\ude00\ud800x\udc00","status":201}}]}`))
	f.Add([]byte(`{"items":[{"create":{"_index":"\xff\xfe","st\u0061tus":201}}]}`))
	f.Add([]byte(`{"items":[],"errors":false}`))
	f.Add([]byte(`{"items":[{"create":{"_index":"a","status":400,"error":{"type":"mapper_parsing_exception","reason":"failed to parse","caused_by":{"type":"parse_exception","reason":"d","caused_by":{"type":"x","reason":"y"}}}}},{"create":{"status":400,"error":{"caused_by":null}}},{"create":{"status":400,"error":{"caused_by":"s"}}}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		out := make([]Outcome, 4)
		var in interner
		p := &parser{in: &in}
		n, flag, err := p.parseResponse(body, out)
		rout := make([]Outcome, 4)
		rn, rflag, rerr := refParse(body, rout)
		if (err == nil) != (rerr == nil) {
			t.Fatalf("parser err=%v, reference err=%v for %q", err, rerr, body)
		}
		if err != nil {
			return
		}
		if n != rn || flag != rflag {
			t.Fatalf("n=%d errors=%v, reference %d %v for %q", n, flag, rn, rflag, body)
		}
		for i := 0; i < min(n, len(out)); i++ {
			if out[i] != rout[i] {
				t.Fatalf("item %d: %+v, reference %+v for %q", i, out[i], rout[i], body)
			}
		}
	})
}
