package ossim

import (
	"testing"
	"time"
)

// FuzzParseAction: whenever the fast action-line parser accepts a line,
// encoding/json (the slow path) reads the same action from it.
func FuzzParseAction(f *testing.F) {
	for _, s := range []string{
		`{"index":{"_index":"x","_id":"1"}}`, `{"create":{"_id":"a","routing":"r"}}`, `{"delete":{"_index":"i","_id":"d"}}`,
		`{ "index" : { } }`, `{"index":{"_id":"a\"b"}}`, `{"index":{"version":3,"if_seq_no":-1,"_id":"x"}}`,
		`{"index":{"_index":"x","op_type":"create"}}`, `{"index":{"_routing":"r"}}`, `{"index":{"_id":1}}`, `{"index":{"_id":"é😀"}}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		fast, ok := parseActionFast([]byte(line))
		if !ok {
			return
		}
		slow, err := parseActionSlow([]byte(line), 1)
		if err != nil {
			t.Fatalf("fast path accepted %q, encoding/json refuses it: %v", line, err)
		}
		if fast != slow {
			t.Fatalf("%q: fast %+v, slow %+v", line, fast, slow)
		}
	})
}

func TestAppendStrIsValidJSON(t *testing.T) {
	for _, s := range []string{"", "plain", `q"uote\back`, "ctl\x01\n\t\r", "bad\xffutf8", "é😀"} {
		b := appendStr(nil, s)
		var got string
		if err := jsonUnmarshal(b, &got); err != nil {
			t.Fatalf("%q → %s: %v", s, b, err)
		}
		if want := string([]rune(s)); got != want {
			t.Errorf("%q round-trips to %q, want %q", s, got, want)
		}
	}
}

func TestHopLatencyByZone(t *testing.T) {
	c := StartT(t, Options{Nodes: 3, Zones: []string{"a", "a", "b"}, HopLatency: 3 * time.Millisecond, CrossZoneHopLatency: 9 * time.Millisecond})
	if d := c.hopLatency(c.Node(0), c.Node(1)); d != 3*time.Millisecond {
		t.Errorf("same zone: %v", d)
	}
	if d := c.hopLatency(c.Node(0), c.Node(2)); d != 9*time.Millisecond {
		t.Errorf("cross zone: %v", d)
	}
	d, _ := Start(Options{Nodes: 2})
	defer d.Close()
	if o := d.Options(); o.HopLatency != 250*time.Microsecond || o.CrossZoneHopLatency != time.Millisecond || o.WriteQueue != 10000 {
		t.Errorf("defaults: %+v", o)
	}
	// A forwarded write pays the one-way latency twice (request, response)
	// on each hop: coordinator → primary, primary → replica.
	createIndex(t, c.Addr(0), "h", 1, 1, "")
	sh := mustShards(t, c, "h")
	coord := 0
	for i := 0; i < 3; i++ {
		busy := false
		for _, s := range sh {
			busy = busy || s.Node == i
		}
		if !busy {
			coord = i
		}
	}
	start := time.Now()
	mustOK(t, "POST", c.Addr(coord)+"/_bulk", bulkBody(`{"index":{"_index":"h","_id":"1"}}`, `{}`))
	if el := time.Since(start); el < 2*3*time.Millisecond+2*3*time.Millisecond {
		t.Errorf("forwarded + replicated write took %v, want ≥ 12ms", el)
	}
	if s := c.NodeStats(coord); s.GroupsForwarded != 1 || s.HopRequests != 1 {
		t.Errorf("coordinator: %d groups forwarded, %d hops", s.GroupsForwarded, s.HopRequests)
	}
}
