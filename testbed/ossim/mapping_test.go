package ossim

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// TestMappingConcurrentFieldLimit: 64 bulks at once each add one new
// field to an index whose limit is 40 fields: exactly 40 are stored, the
// others refused with the limit, and the mapping holds exactly the
// stored ones.
func TestMappingConcurrentFieldLimit(t *testing.T) {
	c := StartT(t, Options{Nodes: 3, NoHopLatency: true})
	createIndex(t, c.Addr(0), "lim", 3, 1, `,"mapping":{"total_fields":{"limit":40}}`)
	var wg sync.WaitGroup
	var mu sync.Mutex
	stored := map[string]bool{}
	refused := 0
	for i := 0; i < 64; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, m := do(t, "POST", c.Addr(i%3)+"/_bulk", bulkBody(fmt.Sprintf(`{"create":{"_index":"lim","_id":"d%d"}}`, i), fmt.Sprintf(`{"f%d":%d}`, i, i)))
			it := items(m)[0]
			mu.Lock()
			defer mu.Unlock()
			switch {
			case it["status"] == 201.0:
				stored[fmt.Sprintf("f%d", i)] = true
			case get(it, "error", "reason") == "Limit of total fields [40] has been exceeded":
				refused++
			default:
				t.Errorf("d%d: %v", i, it)
			}
		}()
	}
	wg.Wait()
	if len(stored) != 40 || refused != 24 {
		t.Fatalf("stored %d, refused %d; want 40 and 24", len(stored), refused)
	}
	m := mustOK(t, "GET", c.Addr(1)+"/lim/_mapping", "")
	props, _ := get(m, "lim", "mappings", "properties").(map[string]any)
	if len(props) != 40 {
		t.Fatalf("mapping has %d fields, want 40", len(props))
	}
	for f := range props {
		if !stored[f] {
			t.Errorf("field %s is mapped but its document was refused", f)
		}
	}
}

// TestMappingConcurrentKinds: two bulks at once give a new field a number
// and a string. Whichever comes first decides: a number first (long)
// refuses the string; a string first (text) takes the number. The answers
// always agree with the mapping that results.
func TestMappingConcurrentKinds(t *testing.T) {
	c := StartT(t, Options{Nodes: 2, NoHopLatency: true})
	seen := map[string]int{}
	for round := 0; round < 40; round++ {
		idx := fmt.Sprintf("kinds-%d", round)
		createIndex(t, c.Addr(0), idx, 2, 0, "")
		var wg sync.WaitGroup
		st := make([]any, 2)
		for i, v := range []string{`1`, `"x"`} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, m := do(t, "POST", c.Addr(i)+"/_bulk", bulkBody(fmt.Sprintf(`{"create":{"_index":%q,"_id":"%d"}}`, idx, i), `{"k":`+v+`}`))
				st[i] = items(m)[0]["status"]
			}()
		}
		wg.Wait()
		m := mustOK(t, "GET", c.Addr(1)+"/"+idx+"/_mapping", "")
		typ := get(m, idx, "mappings", "properties", "k", "type")
		switch {
		case typ == "long" && st[0] == 201.0 && st[1] == 400.0:
			seen["long"]++
		case typ == "text" && st[0] == 201.0 && st[1] == 201.0:
			seen["text"]++
		default:
			t.Fatalf("round %d: k is %v, number answered %v, string %v", round, typ, st[0], st[1])
		}
	}
	t.Logf("outcomes: %v", seen)
}

// TestMappingDataStreamTemplate: a data stream's backing indices, the
// first and the one made by rollover, take the template's mappings.
func TestMappingDataStreamTemplate(t *testing.T) {
	c := StartT(t, Options{NoHopLatency: true})
	mustOK(t, "PUT", c.Addr(0)+"/_index_template/ss4o_logs", readTestdata(t, "ss4o_logs.json"))
	body := bulkBody(`{"create":{"_index":"ss4o_logs-a-b"}}`, `{"@timestamp":"2026-01-01T00:00:00Z","attributes":{"b":true}}`,
		`{"create":{"_index":"ss4o_logs-a-b"}}`, `{"@timestamp":"2026-01-01T00:00:00Z","attributes":{"b":"maybe"}}`)
	for gen := 1; gen <= 2; gen++ {
		_, m := do(t, "POST", c.Addr(0)+"/_bulk", body)
		its := items(m)
		if its[0]["status"] != 201.0 || get(its[1], "error", "type") != "mapper_parsing_exception" {
			t.Fatalf("generation %d: %v", gen, its)
		}
		bi := fmt.Sprintf(".ds-ss4o_logs-a-b-%06d", gen)
		mm := mustOK(t, "GET", c.Addr(0)+"/"+bi+"/_mapping", "")
		if typ := get(mm, bi, "mappings", "properties", "@timestamp", "type"); typ != "date_nanos" {
			t.Fatalf("%s: @timestamp is %v", bi, typ)
		}
		mustOK(t, "POST", c.Addr(0)+"/ss4o_logs-a-b/_rollover", "")
	}
}

// A document whose every path is mapped is one walk of its source.
func BenchmarkMappingKnownPaths(b *testing.B) {
	for _, tc := range []struct{ name, tmpl, doc string }{
		{"small-dynamic", "", smallDoc},
		{"ss4o-log", "ss4o_logs.json", ss4oLogDoc(b)},
	} {
		b.Run(tc.name, func(b *testing.B) {
			var spec map[string]any
			if tc.tmpl != "" {
				raw, err := os.ReadFile("testdata/" + tc.tmpl)
				if err != nil {
					b.Fatal(err)
				}
				var t map[string]any
				if err := jsonUnmarshal(raw, &t); err != nil {
					b.Fatal(err)
				}
				spec = get(t, "template", "mappings").(map[string]any)
			}
			m, e := newIndexMapping(spec, map[string]string{}, tc.tmpl != "")
			if e != nil {
				b.Fatal(e)
			}
			src := []byte(tc.doc)
			if e := m.check(src, "id"); e != nil {
				b.Fatal(e)
			}
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if e := m.check(src, "id"); e != nil {
					b.Fatal(e)
				}
			}
		})
	}
}
