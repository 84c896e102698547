package pit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// sameResponse compares two decoded responses by value (nil and empty
// slices are equal; raw values compare as bytes).
func sameResponse(a, b *searchResponse) error {
	if a.PITID != b.PITID || a.TimedOut != b.TimedOut {
		return fmt.Errorf("pit_id/timed_out: %q %v vs %q %v", a.PITID, a.TimedOut, b.PITID, b.TimedOut)
	}
	sa, _ := json.Marshal(a.Shards)
	sb, _ := json.Marshal(b.Shards)
	if !bytes.Equal(sa, sb) {
		return fmt.Errorf("_shards: %s vs %s", sa, sb)
	}
	if len(a.Hits.Hits) != len(b.Hits.Hits) {
		return fmt.Errorf("%d vs %d hits", len(a.Hits.Hits), len(b.Hits.Hits))
	}
	for i := range a.Hits.Hits {
		x, y := &a.Hits.Hits[i], &b.Hits.Hits[i]
		if x.Index != y.Index || x.ID != y.ID || x.Routing != y.Routing || x.Version != y.Version ||
			x.SeqNo != y.SeqNo || x.PrimaryTerm != y.PrimaryTerm || !bytes.Equal(x.Source, y.Source) || len(x.Sort) != len(y.Sort) {
			return fmt.Errorf("hit %d: %+v vs %+v", i, *x, *y)
		}
		for j := range x.Sort {
			if !bytes.Equal(x.Sort[j], y.Sort[j]) {
				return fmt.Errorf("hit %d sort %d: %s vs %s", i, j, x.Sort[j], y.Sort[j])
			}
		}
	}
	return nil
}

var scanCases = []string{
	`{"pit_id":"p1","took":1,"timed_out":false,"_shards":{"total":2,"successful":2,"skipped":0,"failed":0},"hits":{"total":{"value":0,"relation":"gte"},"max_score":null,"hits":[]}}`,
	`{"pit_id":"p\u00e9\"x","timed_out":true,"_shards":{"total":2,"successful":1,"skipped":0,"failed":1,"failures":[{"shard":-1,"index":null,"reason":{"type":"search_context_missing_exception","reason":"No search context found for id [7]"}}]},` +
		`"hits":{"hits":[{"_index":"logs","_id":"a\"b\\c\u2603","_version":3,"_seq_no":-2,"_primary_term":1,"_score":null,"_routing":"r1",` +
		`"_source":{"msg":"brace } and ] and \" quote","n":[1,2.5e3,-0.0,{"x":null}],"t":true,"f":false},"sort":[1704067200000,"a\"b"],"fields":{"x":[1]}},` +
		`{"_index":"logs","_id":"𝄞 surrogate","sort":[9223372036854775807,null,-1.5E-3,"s",true],"_source":null,"highlight":{"m":["<em>x</em>"]}},` +
		`{"_index":"other","_id":"x","_source":{}, "sort" : [ ] , "_ignored":["a"]}]}}`,
	"{\n  \"pit_id\" : \"p\",\n  \"hits\" : {\n    \"hits\" : [\n      {\n        \"_index\" : \"i\",\n        \"_id\" : \"1\",\n        \"_source\" : { \"a\" : 1 },\n        \"sort\" : [ 1, \"1\" ]\n      }\n    ]\n  }\n}\n",
	`{"hits":{"hits":[{"_id":"no index"}]},"extra":[[[[{}]]]],"s":"\\\\"}`,
	`{"hits":{"hits":[{"_id":"1"}],"hits":[{"_id":"2","_version":1,"_version":null}]},"_shards":{"total":1},"_shards":{"failed":2}}`,
}

func TestScanAgreesWithEncodingJSON(t *testing.T) {
	for i, c := range scanCases {
		fast, err := scanSearch([]byte(c))
		if err != nil {
			t.Fatalf("case %d: fast path refused: %v", i, err)
		}
		var slow searchResponse
		if err := json.Unmarshal([]byte(c), &slow); err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		if err := sameResponse(fast, &slow); err != nil {
			t.Errorf("case %d: %v", i, err)
		}
	}
	// Index names are shared between hits, not allocated per hit.
	r, _ := scanSearch([]byte(scanCases[1]))
	if r.Hits.Hits[0].Index != "logs" || r.Hits.Hits[1].ID != "𝄞 surrogate" || r.Hits.Hits[1].Version != (optInt{}) {
		t.Errorf("decoded %+v", r.Hits.Hits[:2])
	}
}

func TestScanFallsBack(t *testing.T) {
	for _, c := range []string{
		`{"HITS":{"hits":[{"_id":"x"}]}}`,             // case-folded key: encoding/json matches it
		`{"hits":{"hits":[{"_ID":"x","_id":"y"}]}}`,   // same, on a hit
		`{"hits":{"hits":[{"_id":"\xff"}]}}`,          // invalid UTF-8 is replaced by encoding/json
		`{"hits":{"hits":[{"_id":null}]}}`,            // null string
		`{"hits":{"hits":[{"_id":"x","sort":null}]}}`, // null sort
	} {
		if _, err := scanSearch([]byte(c)); err == nil {
			t.Errorf("fast path accepted %s", c)
		}
		fast, err := decodeSearch([]byte(c))
		var slow searchResponse
		if err2 := json.Unmarshal([]byte(c), &slow); (err == nil) != (err2 == nil) || (err == nil && sameResponse(fast, &slow) != nil) {
			t.Errorf("decodeSearch(%s) = %v, encoding/json %v", c, err, err2)
		}
	}
	for _, c := range []string{``, `[]`, `{"hits":`, `{"hits":{"hits":[{"_id":"x"}]}} x`, `{"a":tru}`, `{"a":01x}`, `{"hits":{"hits":[{"_version":"1"}]}}`} {
		if _, err := decodeSearch([]byte(c)); err == nil {
			t.Errorf("accepted %q", c)
		}
	}
}

// FuzzScanSearch: whenever the fast path accepts an input, encoding/json
// accepts it too and decodes the same values.
func FuzzScanSearch(f *testing.F) {
	for _, c := range scanCases {
		f.Add([]byte(c))
	}
	f.Add([]byte(`{"hits":{"hits":[{"_index":"a","_id":"1","sort":[1e400]}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fast, err := scanSearch(b)
		if err != nil {
			return
		}
		var slow searchResponse
		if err := json.Unmarshal(b, &slow); err != nil {
			t.Fatalf("fast path accepted what encoding/json refuses (%v): %q", err, b)
		}
		if err := sameResponse(fast, &slow); err != nil {
			t.Fatalf("%v: %q", err, b)
		}
	})
}

func TestScanLargePage(t *testing.T) {
	var sb strings.Builder
	sb.WriteString(`{"hits":{"hits":[`)
	for i := range 3000 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"_index":"i%d","_id":"%d","_source":{"n":%d},"sort":[%d,"%d"]}`, i%3, i, i, i, i)
	}
	sb.WriteString(`]}}`)
	fast, err := scanSearch([]byte(sb.String()))
	if err != nil {
		t.Fatal(err)
	}
	var slow searchResponse
	json.Unmarshal([]byte(sb.String()), &slow)
	if err := sameResponse(fast, &slow); err != nil {
		t.Fatal(err)
	}
}

func TestValidNumber(t *testing.T) {
	for _, c := range []string{"0", "-0", "1", "-12", "1.5", "1e5", "1E+5", "-1.25e-3", "9223372036854775807", "0.0", "1e400",
		"", "-", "01", "1.", ".5", "1e", "1e+", "+1", "--1", "1.2.3", "0x1", "1-", "1e5e5", "00"} {
		if got, want := validNumber([]byte(c)), json.Valid([]byte(c)); got != want {
			t.Errorf("validNumber(%q) = %v, json.Valid %v", c, got, want)
		}
	}
}

// TestLongFieldsFullRange: _version, _seq_no and _primary_term are longs;
// an external version may be epoch nanoseconds (19 digits).
func TestLongFieldsFullRange(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1700000000000000000", 1700000000000000000, true},
		{"9223372036854775807", 9223372036854775807, true},
		{"-9223372036854775808", -9223372036854775808, true},
		{"-1", -1, true},
		{"0", 0, true},
		{"9223372036854775808", 0, false},
		{"-9223372036854775809", 0, false},
		{"99999999999999999999", 0, false},
		{"1e3", 0, false},
		{"-", 0, false},
	} {
		var o optInt
		err := o.UnmarshalJSON([]byte(c.in))
		if (err == nil) != c.ok || (c.ok && o.v != c.want) {
			t.Errorf("%s: got %d, %v", c.in, o.v, err)
		}
	}
	body := `{"hits":{"hits":[{"_index":"logs","_id":"a","_version":1700000000000000000,"_seq_no":9223372036854775807,"_primary_term":1,"_source":{},"sort":[1,"a"]}]}}`
	r, err := decodeSearch([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if h := r.Hits.Hits[0]; h.Version.value() != 1700000000000000000 || h.SeqNo.value() != 9223372036854775807 {
		t.Fatalf("decoded %+v", h)
	}
}
