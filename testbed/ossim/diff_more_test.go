package ossim

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/opensearchrouted/opensearchrouted/internal/bulk"
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
	if err := bulk.DecodeBody(resp); err != nil {
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
