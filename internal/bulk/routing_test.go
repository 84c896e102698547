package bulk

import (
	"encoding/json"
	"strings"
	"testing"
)

// routedAction is an action line with its routing value.
type routedAction struct {
	Create struct {
		Index   string  `json:"_index"`
		ID      *string `json:"_id"`
		Routing *string `json:"routing"`
	} `json:"create"`
}

func actionOf(t *testing.T, b *Batch, i int32) routedAction {
	t.Helper()
	d := b.Bytes(i)
	line := d[:strings.IndexByte(string(d), '\n')]
	var a routedAction
	dec := json.NewDecoder(strings.NewReader(string(line)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&a); err != nil {
		t.Fatalf("item %d: action line %s: %v", i, line, err)
	}
	return a
}

func routingOf(a routedAction) string {
	if a.Create.Routing == nil {
		return "<none>"
	}
	return *a.Create.Routing
}

// TestBatchRouting: an item's routing value is written in its action line
// (escaped; none for ""), kept by SetID and by Replace into the same index,
// dropped by Replace into another index, and read back by Routing.
func TestBatchRouting(t *testing.T) {
	var b Batch
	commit := func(buf []byte) int32 {
		t.Helper()
		n, err := b.Commit(append(buf, `{"a":1}`...))
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	r0 := commit(b.BeginRouted("logs", "id0", "tenant-7"))
	r1 := commit(b.BeginRouted("logs", "id1", ""))
	r2 := commit(b.BeginRouted("logs", "", `q"uo\te`+"\n\xff"))
	buf := b.BeginSizedRouted("logs", "tenant-8", 4)
	r3, err := b.CommitID(append(buf, `{"a":1}`...), "abcd")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		it            int32
		id, routing   string
		stored, wrote string
	}{
		{r0, "id0", "tenant-7", "tenant-7", "tenant-7"},
		{r1, "id1", "", "", "<none>"},
		{r2, "", `q"uo\te` + "\n\xff", `q"uo\te` + "\n\xff", `q"uo\te` + "\n\uFFFD"},
		{r3, "abcd", "tenant-8", "tenant-8", "tenant-8"},
	} {
		if got := b.Routing(c.it); got != c.stored {
			t.Errorf("item %d: Routing %q, want %q", c.it, got, c.stored)
		}
		a := actionOf(t, &b, c.it)
		if got := routingOf(a); got != c.wrote {
			t.Errorf("item %d: action line routing %q, want %q", c.it, got, c.wrote)
		}
		if a.Create.Index != "logs" || (c.id == "") != (a.Create.ID == nil) {
			t.Errorf("item %d: action %+v", c.it, a)
		}
	}
	b.SetID(r0, "new-id")
	if a := actionOf(t, &b, r0); routingOf(a) != "tenant-7" || *a.Create.ID != "new-id" {
		t.Errorf("SetID lost the routing: %s", b.Bytes(r0))
	}
	if err := b.Replace(r3, "logs", "abcd", []byte(`{"b":2}`)); err != nil {
		t.Fatal(err)
	}
	if a := actionOf(t, &b, r3); routingOf(a) != "tenant-8" || b.Routing(r3) != "tenant-8" {
		t.Errorf("Replace into the same index lost the routing: %s", b.Bytes(r3))
	}
	if err := b.Replace(r3, "dead-letter", "dl", []byte(`{"b":2}`)); err != nil {
		t.Fatal(err)
	}
	if a := actionOf(t, &b, r3); routingOf(a) != "<none>" || b.Routing(r3) != "" {
		t.Errorf("Replace into another index kept the routing: %s", b.Bytes(r3))
	}
	b.Reset()
	commit(b.Begin("logs", "x"))
	if b.Routing(0) != "" || routingOf(actionOf(t, &b, 0)) != "<none>" {
		t.Errorf("an item after Reset has a routing value: %s", b.Bytes(0))
	}
}

// TestBatchRoutedZeroAllocs: routed items encode without allocating, as
// unrouted ones do.
func TestBatchRoutedZeroAllocs(t *testing.T) {
	var b Batch
	src := []byte(`{"body":"` + strings.Repeat("x", 200) + `"}`)
	fill := func() {
		b.Reset()
		for i := 0; i < 1000; i++ {
			buf := b.BeginRouted("logs", "0123456789abcdef0123456789abcdef", "tenant-42")
			if _, err := b.Commit(append(buf, src...)); err != nil {
				t.Fatal(err)
			}
			buf = b.BeginSizedRouted("logs", "tenant-42", 32)
			if _, err := b.CommitCompact(append(buf, src...), "0123456789abcdef0123456789abcdef"); err != nil {
				t.Fatal(err)
			}
		}
	}
	fill()
	if a := testing.AllocsPerRun(10, fill); a != 0 {
		t.Fatalf("%v allocations per 2000 routed items after warm-up", a)
	}
}

// TestIsRoutingRefusal: the server's refusals of routing values (2.19.6's
// answers) are routing refusals, never shape refusals, and their reasons
// are logged without the id or the routing value.
func TestIsRoutingRefusal(t *testing.T) {
	immense := `Document contains at least one immense term in field="_routing" (whose UTF8 encoding is longer than the max length 32766), all of which were skipped.  Please correct the analyzer to not produce such terms.  The prefix of the first immense term is: '[114, 114]...', original message: bytes can be at most 32766 in length; got 40000`
	for _, c := range []struct {
		o       Outcome
		routing bool
		safe    string
	}{
		{Outcome{Status: 400, ErrorType: "routing_missing_exception", ErrorReason: "routing is required for [p]/[secret-id]"}, true, "routing is required for […]"},
		{Outcome{Status: 400, ErrorType: "illegal_argument_exception", ErrorReason: "Alias [p7] has index routing associated with it [seven], and was provided with routing value [secret], rejecting operation"}, true,
			"Alias [p7] has index routing associated with it [seven], and was provided with routing value […], rejecting operation"},
		{Outcome{Status: 400, ErrorType: "illegal_argument_exception", ErrorReason: "index request targeting data stream [ss4o_logs-a-b] specifies a custom routing. target the backing indices directly or remove the custom routing."}, true,
			"index request targeting data stream [ss4o_logs-a-b] specifies a custom routing. target the backing indices directly or remove the custom routing."},
		{Outcome{Status: 400, ErrorType: "illegal_argument_exception", ErrorReason: immense, CauseType: "max_bytes_length_exceeded_exception"}, true,
			`Document contains at least one immense term in field="_routing" (whose UTF8 encoding is longer than the max length 32766), all of which were skipped.  Please correct the analyzer to not produce such terms`},
		{Outcome{Status: 400, ErrorType: "illegal_argument_exception", ErrorReason: `Document contains at least one immense term in field="k" (…)`}, false, ""},
		{Outcome{Status: 400, ErrorType: "mapper_parsing_exception", ErrorReason: "failed to parse"}, false, ""},
		{Outcome{Status: 500, ErrorType: "routing_missing_exception"}, false, ""},
	} {
		if got := IsRoutingRefusal(c.o); got != c.routing {
			t.Errorf("IsRoutingRefusal(%+v) = %v", c.o, got)
		}
		if c.routing && IsShapeRefusal(c.o) {
			t.Errorf("a routing refusal is a shape refusal: %+v", c.o)
		}
		if c.routing && Classify(c.o) != Permanent {
			t.Errorf("Classify(%+v) = %v", c.o, Classify(c.o))
		}
		if c.safe != "" {
			if got := SafeReason(c.o.ErrorReason); got != c.safe {
				t.Errorf("SafeReason:\n got  %q\n want %q", got, c.safe)
			}
		}
	}
}
