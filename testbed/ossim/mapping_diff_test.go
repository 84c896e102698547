package ossim

// Differential tests of the mapping model: documents the real server
// refuses for their shape (and the ones it accepts) are sent to the
// emulator and to one real node, and every answer must be identical,
// including the error reasons and caused_by chains, which the general
// scenario normalises away. Only took, uuids and _ignored order are
// normalised here.

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/opensearchrouted/opensearchrouted/testbed/cluster"
)

// mapRec records exact observations of one target.
type mapRec struct {
	t    *testing.T
	base string
	obs  []observation
}

var mapNormKeys = map[string]bool{"took": true, "uuid": true, "index_uuid": true, "creation_date": true}

func normalizeExact(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, val := range x {
			if mapNormKeys[k] && val != nil {
				out[k] = "<norm>"
				continue
			}
			out[k] = normalizeExact(val)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalizeExact(e)
		}
		return out
	}
	return v
}

func (r *mapRec) call(label, method, path, body string) map[string]any {
	r.t.Helper()
	status, raw := doRaw(r.t, method, r.base+path, body, nil)
	var v any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &v); err != nil {
			v = "<non-json " + strings.TrimSpace(string(raw[:min(len(raw), 200)])) + ">"
		}
	}
	if label != "" {
		r.obs = append(r.obs, observation{label, status, normalizeExact(v)})
	}
	m, _ := v.(map[string]any)
	return m
}

// bulk sends one bulk of create items (ids as given) into index.
func (r *mapRec) bulk(label, index string, docs ...[2]string) map[string]any {
	r.t.Helper()
	var lines []string
	for _, d := range docs {
		lines = append(lines, fmt.Sprintf(`{"create":{"_index":%q,"_id":%q}}`, index, d[0]), d[1])
	}
	return r.call(label, "POST", "/_bulk", bulkBody(lines...))
}

func doc(id, src string) [2]string { return [2]string{id, src} }

// nested is depth objects, each with one member, around a leaf value.
func nested(depth int, leaf string) string {
	s := leaf
	for i := depth; i >= 1; i-- {
		s = fmt.Sprintf(`{"l%d":%s}`, i, s)
	}
	return s
}

// manyFields is an object with n members prefix0..prefix<n-1> = value.
func manyFields(prefix string, from, n int, value string) string {
	var b strings.Builder
	b.WriteByte('{')
	for i := from; i < from+n; i++ {
		if i > from {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%q:%s", fmt.Sprintf("%s%d", prefix, i), value)
	}
	b.WriteByte('}')
	return b.String()
}

const plain = `{"settings":{"number_of_shards":1,"number_of_replicas":0}}`

func readTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// mappingScenario is every mapping observation, in order.
func mappingScenario(r *mapRec) {
	t := r.t
	props := "?filter_path=*.mappings"

	// Plain dynamic mapping.
	r.call("create mp", "PUT", "/mp", plain)
	r.bulk("learn", "mp",
		doc("l1", `{"s":"hello","n":1,"f":1.5,"fz":1.0,"exp":1e3,"b":true,"o":{"x":"y","z":{"w":2}},"arr":[1,2],"sarr":["a","b"],"nul":null,"nularr":[null],"e":[],"emptyo":{},"neg":-3}`),
		doc("l2", `{"d1":"2024-01-01T00:00:00Z","d2":"2024/01/01","d3":"2024-01-01","d4":"2024/01/01 10:00:00","d5":"2024-01-01T10:00","y":"2024","ymd":"20240101","hm":"10:00:00","dash":"a-b-c","slash":"a/b/c","num":"12345","dz":"2024-01-01T00:00:00.123456789+01:00"}`),
	)
	r.call("mapping after learn", "GET", "/mp/_mapping"+props, "")
	r.bulk("coerce accepted", "mp",
		doc("c1", `{"n":"12"}`), doc("c2", `{"n":1.7}`), doc("c3", `{"n":"1.5"}`), doc("c4", `{"s":5}`),
		doc("c5", `{"s":true}`), doc("c6", `{"s":1.5}`), doc("c7", `{"b":"false"}`), doc("c8", `{"b":""}`),
		doc("c9", `{"b":"true"}`), doc("c10", `{"f":"2.5"}`), doc("c11", `{"f":3}`), doc("c12", `{"d1":"2024-02-02T00:00:00.123Z"}`),
		doc("c13", `{"d1":1700000000000}`), doc("c14", `{"sarr":"single"}`), doc("c15", `{"s":["x","y"]}`), doc("c16", `{"o":null}`),
		doc("c17", `{"n":null}`), doc("c18", `{"o":{"x":5}}`), doc("c19", `{"o.x":"dotted"}`), doc("c20", `{"n":[1,"2",3.5]}`),
		doc("c21", `{"d1":"2024-01-01"}`), doc("c22", `{"d1":"1700000000000"}`), doc("c23", `{"d2":"2024/01/01 10:00:00"}`),
		doc("c24", `{"s":null,"b":null,"f":null,"d1":null}`), doc("c25", `{"f":"1e3"}`), doc("c26", `{"o":[{"x":"a"},{"x":"b"}]}`),
	)
	r.bulk("refusals", "mp",
		doc("r1", `{"n":"abc"}`), doc("r2", `{"n":true}`), doc("r3", `{"n":{"a":1}}`), doc("r4", `{"b":"yes"}`),
		doc("r5", `{"b":1}`), doc("r6", `{"o":"str"}`), doc("r7", `{"o":5}`), doc("r8", `{"o":["a"]}`),
		doc("r9", `{"d1":"not a date"}`), doc("r10", `{"f":"abc"}`), doc("r11", `{"s":{"a":1}}`), doc("r12", `{"o.x.q":"v"}`),
		doc("r13", `{"n":1e20}`), doc("r14", `{"n":""}`), doc("r15", `{"f":"NaN"}`), doc("r16", `{"f":"Infinity"}`),
		doc("r17", `{"b":"True"}`), doc("r18", `{"s":[{"a":1}]}`), doc("r19", `{"n":"9223372036854775808"}`), doc("r20", `{"b":{"x":1}}`),
		doc("r21", `{"d1":true}`), doc("r22", `{"d1":{"x":1}}`), doc("r23", `{"s":{"a":{"b":1}},"x":1}`), doc("r24", `{"n":[1,"abc"]}`),
		doc("r25", `{"a":1,"a":2}`), doc("r26", `{"new1":1,"o":"bad"}`),
	)
	r.bulk("two kinds in one new field", "mp",
		doc("k1", `{"mix1":[1,"x"]}`), doc("k2", `{"mix2":[{"k":1},{"k":"x"}]}`), doc("k3", `{"mix3":[1,1.5]}`),
		doc("k4", `{"mix4":["x",1]}`), doc("k5", `{"mix5":[true,"x"]}`), doc("k6", `{"mix6":[1,null,2]}`),
		doc("k7", `{"mix7":[[1,2],[3]]}`), doc("k8", `{"mix8":[{"a":1},{"b":"x"}]}`), doc("k9", `{"mix9":[{"a":1},5]}`),
		doc("k10", `{"mix10":[5,{"a":1}]}`), doc("k11", `{"mix11":1,"mix11.x":2}`), doc("k12", `{"p.q":"x","p.q.r":"y"}`),
		doc("k13", `{"mix13":[1.5,1]}`), doc("k14", `{"mix14":["2024-01-01","x"]}`), doc("k15", `{"mix15":["x","2024-01-01"]}`),
	)
	r.bulk("field names", "mp",
		doc("fn1", `{"":1}`), doc("fn2", `{"a..b":1}`), doc("fn3", `{".":1}`), doc("fn4", `{" ":1}`), doc("fn5", `{"x.":1}`),
		doc("fn6", `{".x":1}`), doc("fn7", fmt.Sprintf(`{%q:1}`, strings.Repeat("n", 300))), doc("fn8", fmt.Sprintf(`{%q:1}`, strings.Repeat("m", 50001))),
		doc("fn9", `{"a\u002eb":1}`), doc("fn10", `{"o":{"":1}}`),
	)
	r.bulk("dotted prefix pairs", "mp", doc("p1", `{"de.env":"prod"}`), doc("p2", `{"cf.fn.name":"x"}`))
	r.bulk("dotted prefix conflicts", "mp", doc("p3", `{"de.env.name":"x"}`), doc("p4", `{"cf.fn":"y"}`), doc("p5", `{"de":{"env":{"name":"x"}}}`), doc("p6", `{"cf":{"fn":"y"}}`))
	r.call("mapping after refusals", "GET", "/mp/_mapping"+props, "")
	r.call("", "POST", "/mp/_refresh", "")
	r.call("count mp", "GET", "/mp/_count", "")

	// Depth.
	r.call("create md", "PUT", "/md", plain)
	r.bulk("depth", "md", doc("d19", nested(19, "1")), doc("d20", nested(20, "1")), doc("d21", nested(21, "1")), doc("d22", nested(22, `"x"`)))
	var dotted []string
	for i := 1; i <= 21; i++ {
		dotted = append(dotted, fmt.Sprintf("q%d", i))
	}
	r.bulk("depth dotted", "md", doc("dd21", fmt.Sprintf(`{%q:1}`, strings.Join(dotted, "."))), doc("dd20", fmt.Sprintf(`{%q:1}`, strings.Join(dotted[:20], "."))))
	r.bulk("depth arrays", "md", doc("da", `{"arr":`+strings.Repeat("[", 24)+"1"+strings.Repeat("]", 24)+`}`))
	r.bulk("depth boundaries", "md", doc("db20", `{"z1":`+nested(19, "1")+`}`), doc("db19", `{"z2":`+nested(18, "1")+`}`), doc("db21", `{"z3":`+nested(20, "1")+`}`),
		doc("da20", `{"a20":`+strings.Repeat("[", 20)+"1"+strings.Repeat("]", 20)+`}`), doc("da21", `{"a21":`+strings.Repeat("[", 21)+"1"+strings.Repeat("]", 21)+`}`),
		doc("dao", `{"ao":[[{"x":[[{"y":1}]]}]]}`))
	r.call("mapping md", "GET", "/md/_mapping"+props, "")

	// Total fields.
	r.call("create mf", "PUT", "/mf", plain)
	r.bulk("fields 998", "mf", doc("f1", manyFields("f", 0, 998, "1")))
	r.bulk("fields object +2", "mf", doc("f2", `{"o":{"x":1}}`))
	r.bulk("fields +1 over", "mf", doc("f3", `{"y":1}`), doc("f4", `{"s":"t"}`), doc("f5", `{"f0":2}`))
	r.call("create mf2", "PUT", "/mf2", plain)
	r.bulk("fields 1001 in one doc", "mf2", doc("g1", manyFields("f", 0, 1001, "1")))
	r.call("create mf3", "PUT", "/mf3", plain)
	r.bulk("fields 500 strings", "mf3", doc("h1", manyFields("s", 0, 500, `"v"`)), doc("h2", `{"z":1}`))
	r.call("", "POST", "/mf/_refresh", "")
	r.call("count mf", "GET", "/mf/_count", "")

	// Terms over 32766 bytes.
	r.call("create mk", "PUT", "/mk", `{"settings":{"number_of_shards":1,"number_of_replicas":0},"mappings":{"properties":{"k":{"type":"keyword"},"k2":{"type":"keyword","ignore_above":10},"t":{"type":"text"},"tk":{"type":"text","fields":{"raw":{"type":"keyword"}}}}}}`)
	r.bulk("long terms", "mk",
		doc("t1", fmt.Sprintf(`{"k":%q}`, strings.Repeat("a", 32766))), doc("t2", fmt.Sprintf(`{"k":%q}`, strings.Repeat("a", 32767))),
		doc("t3", fmt.Sprintf(`{"k2":%q}`, strings.Repeat("a", 40000))), doc("t4", fmt.Sprintf(`{"t":%q}`, strings.Repeat("a ", 20000))),
		doc("t5", fmt.Sprintf(`{"dyn":%q}`, strings.Repeat("a", 40000))), doc("t6", fmt.Sprintf(`{"k":%q}`, strings.Repeat("é", 16383))),
		doc("t7", fmt.Sprintf(`{"k":%q}`, strings.Repeat("€", 10923))), doc("t8", fmt.Sprintf(`{"tk":%q}`, strings.Repeat("b", 33000))),
		doc("t9", fmt.Sprintf(`{"k":[%q,"short"]}`, strings.Repeat("c", 33000))),
	)
	r.call("mapping mk", "GET", "/mk/_mapping"+props, "")

	// Mappings given at creation.
	r.call("create mx", "PUT", "/mx", `{"settings":{"number_of_shards":1,"number_of_replicas":0},"mappings":{"dynamic":"strict","properties":{"a":{"type":"keyword"},"free":{"type":"object","dynamic":true},"off":{"type":"object","enabled":false},"lm":{"type":"long","ignore_malformed":true},"loose":{"type":"object","dynamic":false},"i":{"type":"integer"},"dn":{"type":"date_nanos"},"dt":{"type":"date","format":"epoch_millis"},"db":{"type":"double","ignore_malformed":true},"bo":{"type":"boolean"}}}}`)
	r.bulk("explicit mappings", "mx",
		doc("x1", `{"a":"x"}`), doc("x2", `{"zz":1}`), doc("x3", `{"free":{"q":1}}`), doc("x4", `{"off":{"anything":[1,{"x":"y"}]}}`),
		doc("x5", `{"off":"scalar"}`), doc("x6", `{"lm":"abc"}`), doc("x7", `{"loose":{"n":1}}`), doc("x8", `{"loose":{"n":"abc"}}`),
		doc("x9", `{"i":2147483648}`), doc("x10", `{"i":"7"}`), doc("x11", `{"dn":"2300-01-01T00:00:00Z"}`), doc("x12", `{"dn":"2024-01-01T00:00:00.123456789Z"}`),
		doc("x13", `{"dt":"2024-01-01"}`), doc("x14", `{"dt":1700000000000}`), doc("x15", `{"lm":{"o":1}}`), doc("x16", `{"db":"x"}`),
		doc("x17", `{"db":{"o":1}}`), doc("x18", `{"free":{"q":"abc"}}`), doc("x19", `{"loose.sub":1}`), doc("x20", `{"a":{"b":1}}`),
		doc("x21", `{"lm":[1,"x",2]}`), doc("x22", `{"i":1.9}`), doc("x23", `{"bo":"off"}`), doc("x24", `{"off":null}`), doc("x25", `{"free.r":2}`),
	)
	r.call("mapping mx", "GET", "/mx/_mapping"+props, "")

	// A template with dynamic templates and dynamic: false.
	r.call("put template mt", "PUT", "/_index_template/mt", `{"index_patterns":["mt-*"],"priority":50,"template":{"settings":{"number_of_shards":1,"number_of_replicas":0},"mappings":{"dynamic":false,"date_detection":false,"dynamic_templates":[{"longs_as_strings":{"match_mapping_type":"long","match":"str_*","mapping":{"type":"keyword"}}},{"objs":{"match_mapping_type":"object","path_match":"free.*","mapping":{"type":"object","dynamic":true}}},{"bools":{"match_mapping_type":"boolean","mapping":{"type":"keyword"}}}],"properties":{"free":{"type":"object","dynamic":true},"k":{"type":"keyword"}}}}}`)
	r.bulk("template mt", "mt-1",
		doc("m1", `{"k":"v","other":1}`), doc("m2", `{"free":{"str_a":5,"n":5,"sub":{"x":true},"d":"2024-01-01"}}`),
		doc("m3", `{"free":{"str_a":"text","n":"abc"}}`), doc("m4", `{"free":{"sub":{"x":"yes"}}}`),
	)
	r.call("mapping mt", "GET", "/mt-1/_mapping"+props, "")

	// The exporter's data stream templates.
	r.call("put ss4o_logs", "PUT", "/_index_template/ss4o_logs", readTestdata(t, "ss4o_logs.json"))
	r.call("put ss4o_traces", "PUT", "/_index_template/ss4o_traces", readTestdata(t, "ss4o_traces.json"))
	ts := `"@timestamp":"2026-11-29T16:11:46.438493144Z"`
	r.bulk("logs learn", "ss4o_logs-a-b",
		doc("g1", `{`+ts+`,"observedTimestamp":"2026-11-29T16:11:46.5Z","severity":{"text":"INFO","number":9},"body":"hello","attributes":{"s":"str","n":5,"d":1.5,"b":true,"m":"v","m2":{"k":1},"num":5,"deployment.environment":"prod","date":"2024-01-01"},"resource":{"service.name":"svc","big":"`+strings.Repeat("r", 2000)+`"},"instrumentationScope":{"name":"sc","attributes":{"t":"some text","i":3}}}`),
	)
	r.bulk("logs kinds change", "ss4o_logs-a-b",
		doc("g2", `{`+ts+`,"attributes":{"s":7}}`), doc("g3", `{`+ts+`,"attributes":{"s":false}}`), doc("g4", `{`+ts+`,"attributes":{"n":"abc"}}`),
		doc("g5", `{`+ts+`,"attributes":{"d":"x"}}`), doc("g6", `{`+ts+`,"attributes":{"n":2.5}}`), doc("g7", `{`+ts+`,"attributes":{"d":3}}`),
		doc("g8", `{`+ts+`,"attributes":{"date":"not a date"}}`), doc("g9", `{`+ts+`,"attributes":{"b":"yes"}}`), doc("g10", `{`+ts+`,"attributes":{"b":"false"}}`),
		doc("g11", `{`+ts+`,"attributes":{"m":{"k":1}}}`), doc("g12", `{`+ts+`,"attributes":{"m2":"v"}}`), doc("g13", `{`+ts+`,"attributes":{"num":{"k":1}}}`),
		doc("g14", `{`+ts+`,"attributes":{"deployment.environment.name":"x"}}`), doc("g15", `{`+ts+`,"attributes":{"s":[1,"x",true]}}`),
		doc("g16", `{`+ts+`,"attributes":{"mixed":[1,"x"]}}`), doc("g17", `{`+ts+`,"attributes":{"n":"NaN"}}`), doc("g18", `{`+ts+`,"attributes":{"d":"Infinity"}}`),
		doc("g19", `{`+ts+`,"body":{"x":1}}`), doc("g20", `{`+ts+`,"severity":{"number":"high"}}`), doc("g21", `{`+ts+`,"instrumentationScope":{"attributes":{"t":5,"i":"x"}}}`),
		doc("g22", `{`+ts+`,"attributes":{"deep":`+nested(19, "1")+`}}`), doc("g23", `{`+ts+`,"severity":{"number":2147483648}}`),
		doc("g24", `{"@timestamp":"2263-01-01T00:00:00Z"}`), doc("g25", `{"@timestamp":"not a date"}`), doc("g26", `{`+ts+`,"flags":"x"}`),
	)
	r.call("mapping logs", "GET", "/ss4o_logs-a-b/_mapping"+props, "")
	r.bulk("traces", "ss4o_traces-a-b",
		doc("s1", `{`+ts+`,"startTime":"2026-11-29T16:11:46Z","name":"op","attributes":{"k":1},"events":[{"@timestamp":"2300-01-01T00:00:00Z","name":"e1","attributes":{"exception.message":"boom"}},{"@timestamp":"2026-11-29T16:11:46.1Z","name":"e2","attributes":{"exception.message":"again","c":1}}]}`),
		doc("s2", `{`+ts+`,"events":[{"attributes":{"ek":1}},{"attributes":{"ek":"x"}}]}`),
		doc("s3", `{`+ts+`,"events":[{"attributes":{"ek2":"x"}},{"attributes":{"ek2":1}}]}`),
		doc("s4", `{`+ts+`,"events":[{"attributes":{"c":"now text"}}]}`),
		doc("s5", `{`+ts+`,"links":[{"traceId":"ab","attributes":{"l":true}},{"attributes":{"l":"x"}}]}`),
		doc("s6", `{`+ts+`,"events":{"name":"single"}}`),
		doc("s7", `{`+ts+`,"startTime":"2300-01-01T00:00:00Z"}`),
	)
	r.call("mapping traces", "GET", "/ss4o_traces-a-b/_mapping"+props, "")

	// A nested field (events and links of the otel-v1 span template) checks
	// what its elements hold as an object field does.
	r.call("create mn", "PUT", "/mn", `{"settings":{"number_of_shards":1,"number_of_replicas":0},`+
		`"mappings":{"properties":{"events":{"type":"nested","properties":{"time":{"type":"date_nanos"}}}}}}`)
	r.bulk("nested", "mn",
		doc("n1", `{"events":[{"time":"2026-01-01T00:00:00Z","attributes":{"n":1}}]}`),
		doc("n2", `{"events":[{"attributes":{"n":"one"}}]}`),
		doc("n3", `{"events":[{"time":"not a date"}]}`),
		doc("n4", `{"events":{"time":"2300-01-01T00:00:00Z"}}`),
		doc("n5", `{"events":[{"attributes":{"n":2}},{"attributes":{"s":"x"}}]}`),
	)
	r.call("mapping nested", "GET", "/mn/_mapping"+props, "")

	// An _id over 512 bytes refuses the whole request.
	r.call("create mi", "PUT", "/mi", plain)
	r.bulk("id 512", "mi", doc(strings.Repeat("i", 512), `{"n":1}`))
	r.bulk("id 513", "mi", doc("ok1", `{"n":1}`), doc(strings.Repeat("j", 513), `{"n":1}`), doc("ok2", `{"n":1}`))
	r.bulk("two long ids", "mi", doc(strings.Repeat("a", 600), `{"n":1}`), doc("ok3", `{"n":1}`), doc(strings.Repeat("€", 200), `{"n":1}`))
	r.call("id long index op", "POST", "/_bulk", bulkBody(`{"index":{"_index":"mi","_id":"`+strings.Repeat("x", 513)+`"}}`, `{}`, `{"delete":{"_index":"mi","_id":"`+strings.Repeat("y", 513)+`"}}`))
	r.call("id long single doc", "PUT", "/mi/_doc/"+strings.Repeat("z", 513), `{"n":1}`)
	r.call("", "POST", "/mi/_refresh", "")
	r.call("count mi", "GET", "/mi/_count", "")
}

func runMappingScenario(t *testing.T, base string) []observation {
	r := &mapRec{t: t, base: base}
	mappingScenario(r)
	return r.obs
}

// dumpObservations writes observations (for reading what a server said).
func dumpObservations(t *testing.T, name string, obs []observation) {
	if dir := os.Getenv("OSSIM_DUMP_DIR"); dir != "" {
		b, _ := json.MarshalIndent(obs, "", " ")
		if err := os.WriteFile(dir+"/"+name+".json", b, 0o644); err != nil {
			t.Error(err)
		}
	}
}

func TestMappingDifferential(t *testing.T) {
	version := cluster.DefaultVersion()
	emu := StartT(t, Options{Nodes: 1, NoHopLatency: true, Version: version})
	emuObs := runMappingScenario(t, emu.Addr(0))
	dumpObservations(t, "emu", emuObs)
	start := time.Now()
	real := cluster.Start(t, cluster.Options{Nodes: 1, Version: version})
	up := time.Now()
	realObs := runMappingScenario(t, real.Addr(0))
	t.Logf("OpenSearch %s: node up in %s (with any wait for the machine's cluster lock), scenario %s",
		version, up.Sub(start).Round(time.Second), time.Since(up).Round(time.Second))
	dumpObservations(t, "real-"+version, realObs)
	compareExact(t, emuObs, realObs)
}

func compareExact(t *testing.T, emu, real []observation) {
	t.Helper()
	if len(emu) != len(real) {
		t.Errorf("emulator made %d observations, real %d", len(emu), len(real))
	}
	var bad []string
	for i := 0; i < min(len(emu), len(real)); i++ {
		e, r := emu[i], real[i]
		if e.Status != r.Status || !reflect.DeepEqual(e.Body, r.Body) {
			eb, _ := json.Marshal(e.Body)
			rb, _ := json.Marshal(r.Body)
			bad = append(bad, fmt.Sprintf("%s:\n  emulator HTTP %d %s\n  real     HTTP %d %s", e.Label, e.Status, eb, r.Status, rb))
		}
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
}
