package bulk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/opensearchrouted/opensearchrouted/testbed/cluster"
)

// TestRealClusterRefusals sends, through Send (and so through filter_path),
// documents that a real node refuses for their shape, items into blocked
// and closed indices, a request with one over-long id, and a request under
// a cluster-wide block, and checks what the package makes of the answers:
// the caused_by read, Classify, IsShapeRefusal, SafeReason, KindBlocked and
// IsValidationFailure. One 1-node cluster ($OSR_OPENSEARCH_VERSION, else
// 2.19.6). It needs Java: without it the test fails.
func TestRealClusterRefusals(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Nodes: 1})
	base := c.Addr(0)
	rc := func(method, path, body string) {
		t.Helper()
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 300 {
			t.Fatalf("%s %s: %d %s", method, path, resp.StatusCode, msg)
		}
	}
	// Mappings that the refused documents then conflict with.
	rc("POST", "/_bulk?refresh=true", `{"create":{"_index":"rc-map"}}
{"n":1,"b":true,"o":{"x":1},"s":"text","a.b":"kw","d":"2024-01-01T00:00:00Z"}
`)
	rc("PUT", "/rc-blocked", `{}`)
	rc("PUT", "/rc-blocked/_settings", `{"index.blocks.write":true}`)
	rc("PUT", "/rc-closed", `{}`)
	rc("POST", "/rc-closed/_close", ``)

	deep := `"leaf"`
	for i := 0; i < 25; i++ {
		deep = fmt.Sprintf(`{"l%d":%s}`, i, deep)
	}
	var many strings.Builder
	many.WriteString(`{`)
	for i := 0; i < 1001; i++ {
		if i > 0 {
			many.WriteByte(',')
		}
		fmt.Fprintf(&many, `"f%d":"v"`, i)
	}
	many.WriteString(`}`)
	type doc struct {
		index, src string
		class      Class
		shape      bool
		causeType  string // "" when the server sends no caused_by
		cause      string // a part of CauseReason
	}
	docs := []doc{
		{"rc-map", `{"n":"abcsecret"}`, Permanent, true, "illegal_argument_exception", "For input string"},
		{"rc-map", `{"b":"abcsecret"}`, Permanent, true, "illegal_argument_exception", "only [true] or [false]"},
		{"rc-map", `{"o":"scalarsecret"}`, Permanent, true, "", ""},
		{"rc-map", `{"s":{"x":"objsecret"}}`, Permanent, true, "illegal_state_exception", "START_OBJECT"},
		{"rc-map", `{"a.b.c":"childsecret"}`, Permanent, true, "", ""},
		{"rc-map", `{"d":"notadatesecret"}`, Permanent, true, "illegal_argument_exception", "failed to parse date field"},
		{"rc-map", `{"n":123456789012345678901234567890}`, Permanent, true, "input_coercion_exception", "out of range of"},
		{"rc-depth", `{"deep":` + deep + `}`, Permanent, true, "parse_exception", "The depth of the field has exceeded the allowed limit of [20]"},
		{"rc-fields", many.String(), Permanent, true, "", ""},
		{"rc-map", `{"n":2}`, Done, false, "", ""},
		{"rc-blocked", `{"x":1}`, Retry, false, "", ""},
		{"rc-closed", `{"x":1}`, Retry, false, "", ""},
	}
	b := new(Batch)
	var items []int32
	for k, d := range docs {
		items = append(items, add(t, b, d.index, fmt.Sprintf("rc-%d", k), d.src))
	}
	cl := testClient()
	out := make([]Outcome, len(items))
	if _, err := cl.Send(context.Background(), base, b, items, out); err != nil {
		t.Fatal(err)
	}
	for k, d := range docs {
		o := out[k]
		if Classify(o) != d.class || IsShapeRefusal(o) != d.shape || o.CauseType != d.causeType || !strings.Contains(o.CauseReason, d.cause) {
			t.Errorf("%s %s: %+v: %v, shape %v", d.index, d.src[:min(len(d.src), 40)], o, Classify(o), IsShapeRefusal(o))
		}
		for _, r := range []string{SafeReason(o.ErrorReason), SafeReason(o.CauseReason)} {
			if strings.Contains(r, "secret") || strings.Contains(r, fmt.Sprintf("rc-%d", k)) {
				t.Errorf("%s: content survived: %q", d.src[:min(len(d.src), 40)], r)
			}
		}
	}

	// One 600-byte id refuses the whole request (nothing written); Send
	// sends the items again in halves: the good one is written, the bad
	// one keeps the refusal.
	b = new(Batch)
	items = []int32{add(t, b, "rc-valid", strings.Repeat("idsecret", 75), `{"x":1}`), add(t, b, "rc-valid", "good", `{"x":2}`)}
	out = make([]Outcome, 2)
	res, err := cl.Send(context.Background(), base, b, items, out)
	if err != nil || res.Requests != 3 || out[0].ErrorType != errValidation || Classify(out[0]) != Permanent || Classify(out[1]) != Done ||
		SafeReason(out[0].ErrorReason) != "Validation Failed: 1: id […] is too long, must be no longer than 512 bytes but was: 600;" {
		t.Fatalf("over-long id: %v %+v %+v", err, res, out)
	}
	if _, err := http.Post(base+"/rc-valid/_refresh", "application/json", nil); err != nil {
		t.Fatal(err)
	}
	resp, err := http.Get(base + "/rc-valid*/_count")
	if err != nil {
		t.Fatal(err)
	}
	var count struct{ Count int }
	_ = json.NewDecoder(resp.Body).Decode(&count)
	resp.Body.Close()
	if count.Count != 1 {
		t.Fatalf("%d documents written, want the good one", count.Count)
	}

	// A cluster-wide block refuses the whole request: KindBlocked, retried.
	rc("PUT", "/_cluster/settings", `{"persistent":{"cluster.blocks.read_only":true}}`)
	b, items = testBatch(t, 2, 30)
	out = make([]Outcome, 2)
	_, err = cl.Send(context.Background(), base, b, items, out)
	rc("PUT", "/_cluster/settings", `{"persistent":{"cluster.blocks.read_only":null}}`)
	var re *RequestError
	if !errors.As(err, &re) || re.Kind != KindBlocked || !IsRetryable(err) || re.Type != "cluster_block_exception" {
		t.Fatalf("cluster read-only: %v", err)
	}
	checkAll(t, out, Retry)
}
