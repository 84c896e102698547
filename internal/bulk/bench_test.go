package bulk

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"
)

const (
	benchItems = 1000
	benchIndex = ".ds-ss4o_logs-default-namespace-000001"
)

// benchSource is a ~300-byte item: a ~90-byte action line and a ~210-byte
// source.
var benchSource = []byte(`{"@timestamp":"2024-05-01T12:00:00.000000000Z","observedTimestamp":"2024-05-01T12:00:00.000000000Z","severity":{"text":"INFO","number":9},"body":"GET /api/v1/items 200 12ms","attributes":{"http.method":"GET"}}`)

func benchID(dst []byte, k int) []byte {
	dst = append(dst[:0], "7f3c2a9e0b1d4c5f8a6e"...)
	return strconv.AppendInt(dst, int64(k), 16)
}

// cannedNode answers every _bulk with the all-success response for
// benchItems items, reading (and dropping) the request body.
func cannedNode(b *testing.B) *httptest.Server {
	resp := []byte(cannedResponse(benchItems, benchIndex))
	cl := strconv.Itoa(len(resp))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		h := w.Header()
		h["Content-Type"] = []string{"application/json"}
		h["Content-Length"] = []string{cl}
		w.Write(resp)
	}))
	b.Cleanup(srv.Close)
	return srv
}

// perItem reports wall and process CPU time per item; cpu0 is
// processCPU() when the timed loop began.
func perItem(b *testing.B, cpu0 time.Duration) {
	cpu := processCPU() - cpu0
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchItems, "ns/item")
	if cpu > 0 {
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/benchItems, "cpu-ns/item")
	}
}

// BenchmarkSend runs the full path over loopback HTTP (net/http client and
// an in-process server) and, for bulk's own share, over an in-memory
// transport that drains the body and answers the canned response without
// allocating.
func BenchmarkSend(b *testing.B) {
	b.Run("loopback", func(b *testing.B) {
		srv := cannedNode(b)
		benchmarkSend(b, &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}, srv.URL)
	})
	b.Run("in-memory", func(b *testing.B) {
		benchmarkSend(b, &http.Client{Transport: newCannedTransport()}, "http://127.0.0.1:9200")
	})
}

// cannedTransport is a sequential-use RoundTripper: reads the whole body,
// answers the canned success response, reusing one response.
type cannedTransport struct {
	body []byte
	r    bytes.Reader
	resp http.Response
}

func newCannedTransport() *cannedTransport {
	t := &cannedTransport{body: []byte(cannedResponse(benchItems, benchIndex))}
	t.resp = http.Response{StatusCode: 200, Body: io.NopCloser(&t.r), ContentLength: int64(len(t.body))}
	return t
}

func (t *cannedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if _, err := io.Copy(io.Discard, req.Body); err != nil {
		return nil, err
	}
	req.Body.Close()
	t.r.Reset(t.body)
	return &t.resp, nil
}

// benchmarkSend: per op, build a 1000-item batch of ~300-byte items, split
// it (one sub-bulk), send it to an in-process server over loopback HTTP and
// parse the canned all-success answer. allocs/op counts everything in the
// process (over loopback: client, net/http transport and the test server).
func benchmarkSend(b *testing.B, hc *http.Client, url string) {
	c := &Client{HTTP: hc}
	var batch Batch
	items := make([]int32, benchItems)
	out := make([]Outcome, benchItems)
	var subs [][]int32
	ids := make([]string, benchItems) // the exporter's ids, made before
	for k := range ids {
		ids[k] = string(benchID(nil, k))
	}
	ctx := context.Background()
	b.SetBytes(benchItems * 300)
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for i := 0; i < b.N; i++ {
		batch.Reset()
		for k := range items {
			buf := batch.Begin("ss4o_logs-default-namespace", ids[k])
			buf = append(buf, benchSource...)
			items[k], _ = batch.Commit(buf)
		}
		subs = Split(&batch, items, 5<<20, subs)
		for _, sub := range subs {
			if _, err := c.Send(ctx, url, &batch, sub, out); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	perItem(b, cpu0)
}

// BenchmarkBuild: Begin/Commit of 1000 ~300-byte items into a warm Batch.
func BenchmarkBuild(b *testing.B) {
	var batch Batch
	ids := make([]string, benchItems)
	for k := range ids {
		ids[k] = string(benchID(nil, k))
	}
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for i := 0; i < b.N; i++ {
		batch.Reset()
		for k := 0; k < benchItems; k++ {
			buf := batch.Begin("ss4o_logs-default-namespace", ids[k])
			buf = append(buf, benchSource...)
			batch.Commit(buf)
		}
	}
	perItem(b, cpu0)
}

// BenchmarkParse compares the scanner with encoding/json decoding the same
// 1000-item response into structs (the usual client's way).
func BenchmarkParse(b *testing.B) {
	body := []byte(cannedResponse(benchItems, benchIndex))
	b.Run("scanner", func(b *testing.B) {
		out := make([]Outcome, benchItems)
		var in interner
		p := &parser{in: &in}
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		cpu0 := processCPU()
		for i := 0; i < b.N; i++ {
			if n, _, err := p.parseResponse(body, out); err != nil || n != benchItems {
				b.Fatal(n, err)
			}
		}
		perItem(b, cpu0)
	})
	b.Run("encoding-json", func(b *testing.B) {
		type result struct {
			Index  string `json:"_index"`
			Status int    `json:"status"`
			Error  *struct {
				Type   string `json:"type"`
				Reason string `json:"reason"`
			} `json:"error"`
		}
		b.SetBytes(int64(len(body)))
		b.ReportAllocs()
		cpu0 := processCPU()
		for i := 0; i < b.N; i++ {
			var v struct {
				Errors bool                `json:"errors"`
				Items  []map[string]result `json:"items"`
			}
			if err := json.Unmarshal(body, &v); err != nil || len(v.Items) != benchItems {
				b.Fatal(err)
			}
		}
		perItem(b, cpu0)
	})
}

// BenchmarkBody compares the two ways to hand a node's items to net/http:
// the arena reader Send uses (items read straight from the arena) and
// copying them into one pooled contiguous buffer first. Every other item of
// a 2000-item batch, as a node's share looks after routing.
func BenchmarkBody(b *testing.B) {
	srv := cannedNode(b)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	var batch Batch
	for k := 0; k < 2*benchItems; k++ {
		buf := batch.Begin("ss4o_logs-default-namespace", string(benchID(nil, k)))
		batch.Commit(append(buf, benchSource...))
	}
	items := make([]int32, 0, benchItems)
	for k := 0; k < 2*benchItems; k += 2 {
		items = append(items, int32(k))
	}
	post := func(b *testing.B, body io.Reader, size int64, getBody func() (io.ReadCloser, error)) {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/_bulk", body)
		req.ContentLength = size
		req.GetBody = getBody
		req.Header.Set("Content-Type", "application/x-ndjson")
		resp, err := hc.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	b.Run("arena-reader", func(b *testing.B) {
		b.ReportAllocs()
		cpu0 := processCPU()
		for i := 0; i < b.N; i++ {
			st := newBody(&batch, items)
			post(b, &st.root, st.size, st.getBody)
			st.detach()
		}
		perItem(b, cpu0)
	})
	var pool sync.Pool
	b.Run("pooled-copy", func(b *testing.B) {
		b.ReportAllocs()
		cpu0 := processCPU()
		for i := 0; i < b.N; i++ {
			bp, _ := pool.Get().(*[]byte)
			if bp == nil {
				bp = new([]byte)
			}
			buf := (*bp)[:0]
			for _, it := range items {
				buf = append(buf, batch.Bytes(it)...)
			}
			r := bytes.NewReader(buf)
			post(b, r, int64(len(buf)), nil)
			*bp = buf
			pool.Put(bp)
		}
		perItem(b, cpu0)
	})
}
