package ossim

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/opensearchrouted/opensearchrouted/internal/httpio"
)

// callGzip sends a request with Accept-Encoding: gzip and records the
// answer's Content-Encoding with its decoded body: the emulator must
// compress the answers the real server compresses, and only those.
func (r *recorder) callGzip(label string, i int, method, path, body string) {
	r.t.Helper()
	st, enc, v := gzipAnswer(r.t, method, r.tg.Addr(i)+path, body)
	r.obs = append(r.obs, observation{label, st, normalize(map[string]any{"content_encoding": enc, "body": v})})
}

func gzipAnswer(t testing.TB, method, url, body string) (int, string, any) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	enc := resp.Header.Get("Content-Encoding")
	if err := httpio.DecodeBody(resp); err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: decoding: %v", method, url, err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		v = "<non-json>"
	}
	return resp.StatusCode, enc, v
}

func TestGzipAnswers(t *testing.T) {
	c := StartT(t, Options{Nodes: 1, NoHopLatency: true})
	st, enc, v := gzipAnswer(t, "POST", c.Addr(0)+"/_bulk", bulkBody(`{"index":{"_index":"g","_id":"1"}}`, `{"n":1}`))
	if st != 200 || enc != "gzip" || get(v, "errors") != false {
		t.Fatalf("bulk: %d %q %v", st, enc, v)
	}
	st, enc, v = gzipAnswer(t, "GET", c.Addr(0)+"/nope/_doc/a", "")
	if st != 404 || enc != "gzip" || get(v, "error", "type") != "index_not_found_exception" {
		t.Fatalf("error: %d %q %v", st, enc, v)
	}
	if !acceptsGzip("deflate, gzip;q=0.5") || acceptsGzip("gzip;q=0") || acceptsGzip("br") || acceptsGzip("") {
		t.Fatal("acceptsGzip")
	}
}

// aliasScenario: write aliases (is_write_index, a single-index alias with
// index_routing), writes through them, _cat/aliases and an alias rollover.
func aliasScenario(r *recorder) {
	r.call("create al-000001 with write alias", 0, "PUT", "/al-000001", `{"settings":{"number_of_shards":2,"number_of_replicas":0},"aliases":{"al-write":{"is_write_index":true}}}`)
	r.call("create al-t", 0, "PUT", "/al-t", `{"settings":{"number_of_shards":3,"number_of_replicas":0}}`)
	r.waitGreen("al-000001,al-t")
	r.call("add routed alias", 1, "POST", "/_aliases", `{"actions":[{"add":{"index":"al-t","alias":"al-t7","index_routing":"seven"}}]}`)
	r.call("bulk through aliases", 1, "POST", "/_bulk", bulkBody(
		`{"index":{"_index":"al-write","_id":"a"}}`, `{"n":1}`,
		`{"index":{"_index":"al-t7","_id":"b"}}`, `{"n":2}`,
		`{"index":{"_index":"al-t7","_id":"c","routing":"other"}}`, `{"n":3}`))
	r.call("get b with the alias routing", 2, "GET", "/al-t/_doc/b?routing=seven", "")
	r.call("search shards for the alias routing", 2, "GET", "/al-t/_search_shards?routing=seven&filter_path=shards.shard,shards.index,shards.primary", "")
	r.catAliases("cat aliases before rollover")
	r.call("rollover alias", 0, "POST", "/al-write/_rollover", "")
	r.catAliases("cat aliases after rollover")
	r.waitGreen("al-000002")
	r.call("bulk after rollover", 1, "POST", "/_bulk", bulkBody(`{"index":{"_index":"al-write","_id":"d"}}`, `{"n":4}`))
}

// catAliases records _cat/aliases of the scenario's aliases as sorted rows.
func (r *recorder) catAliases(label string) {
	st, raw := doRaw(r.t, "GET", r.tg.Addr(1)+"/_cat/aliases/al-write,al-t7,al-none?format=json&h=alias,index,routing.index,is_write_index", "", nil)
	var rows []map[string]any
	_ = json.Unmarshal(raw, &rows)
	var out []string
	for _, row := range rows {
		out = append(out, fmt.Sprintf("%v/%v/%v/%v", row["alias"], row["index"], row["routing.index"], row["is_write_index"]))
	}
	sort.Strings(out)
	r.note(label, map[string]any{"status": st, "rows": out})
}

// publishedElsewhere records which nodes publish an HTTP address other than
// the one they are bound to, and whether that address answers.
func publishedElsewhere(r *recorder, nodesHTTP map[string]any) {
	var rows []string
	for _, n := range asMap(get(nodesHTTP, "nodes")) {
		pa, _ := get(n, "http", "publish_address").(string)
		bound, _ := get(n, "http", "bound_address").([]any)
		isBound := false
		for _, b := range bound {
			isBound = isBound || b == pa
		}
		if !isBound {
			c, err := net.DialTimeout("tcp", pa, time.Second)
			if err == nil {
				c.Close()
			}
			rows = append(rows, fmt.Sprintf("%v answers=%v", get(n, "name"), err == nil))
		}
	}
	sort.Strings(rows)
	r.note("nodes publishing another address", rows)
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
