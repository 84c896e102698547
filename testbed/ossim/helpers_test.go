package ossim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

var testClient = &http.Client{Timeout: 20 * time.Second}

// do sends a request and decodes a JSON response (numbers as float64).
func do(t testing.TB, method, url, body string) (int, map[string]any) {
	t.Helper()
	status, raw := doRaw(t, method, url, body, nil)
	var m map[string]any
	if len(raw) > 0 && raw[0] == '{' {
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("%s %s: bad JSON %q: %v", method, url, raw, err)
		}
	}
	return status, m
}

func doRaw(t testing.TB, method, url, body string, hdr map[string]string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	ct := "application/json"
	if strings.HasSuffix(req.URL.Path, "_bulk") {
		ct = "application/x-ndjson"
	}
	req.Header.Set("Content-Type", ct)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

func mustOK(t testing.TB, method, url, body string) map[string]any {
	t.Helper()
	st, m := do(t, method, url, body)
	if st != 200 {
		t.Fatalf("%s %s: status %d: %v", method, url, st, m)
	}
	return m
}

// bulkBody builds NDJSON from action/source pairs.
func bulkBody(lines ...string) string {
	var b bytes.Buffer
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// get walks a decoded JSON value: get(m, "hits", "hits", 0, "_id").
func get(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, ok := v.(map[string]any)
			if !ok {
				return nil
			}
			v = m[k]
		case int:
			a, ok := v.([]any)
			if !ok || k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

func str(v any) string {
	if v == nil {
		return "<nil>"
	}
	return fmt.Sprint(v)
}

func items(m map[string]any) []map[string]any {
	var out []map[string]any
	for _, it := range get(m, "items").([]any) {
		for _, v := range it.(map[string]any) {
			out = append(out, v.(map[string]any))
		}
	}
	return out
}

func createIndex(t testing.TB, base, name string, shards, replicas int, extra string) {
	t.Helper()
	body := fmt.Sprintf(`{"settings":{"index":{"number_of_shards":%d,"number_of_replicas":%d%s}}}`, shards, replicas, extra)
	mustOK(t, "PUT", base+"/"+name, body)
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }
