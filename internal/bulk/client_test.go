package bulk

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// reqItem is one item of a received _bulk body.
type reqItem struct {
	Index, ID string
	Source    string
}

// readBulk decodes the body of a _bulk request to path ("/_bulk", or
// "/{index}/_bulk": then an action line without "_index" means that index),
// failing the test on any malformed line.
func readBulk(t testing.TB, path string, body []byte) []reqItem {
	t.Helper()
	defIndex := ""
	if p, ok := strings.CutSuffix(path, "/_bulk"); ok && p != "" {
		defIndex = strings.TrimPrefix(p, "/")
	} else if path != "/_bulk" {
		t.Errorf("not a _bulk path: %q", path)
	}
	if len(body) > 0 && body[len(body)-1] != '\n' {
		t.Errorf("body does not end with a newline")
	}
	lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	if len(lines)%2 != 0 {
		t.Errorf("odd number of lines: %d", len(lines))
		return nil
	}
	var items []reqItem
	for i := 0; i < len(lines); i += 2 {
		var a action
		if err := json.Unmarshal([]byte(lines[i]), &a); err != nil || a.Create == nil || (a.Create.Index == nil && defIndex == "") {
			t.Errorf("action line %q: %v", lines[i], err)
			return nil
		}
		it := reqItem{Index: defIndex, Source: lines[i+1]}
		if a.Create.Index != nil {
			it.Index = *a.Create.Index
		}
		if a.Create.ID != nil {
			it.ID = *a.Create.ID
		}
		if !json.Valid([]byte(lines[i+1])) {
			t.Errorf("source line %q", lines[i+1])
		}
		items = append(items, it)
	}
	return items
}

// itemJSON renders one response item.
func itemJSON(index string, status int, typ, reason string) string {
	if typ == "" {
		return fmt.Sprintf(`{"create":{"_index":%q,"status":%d}}`, index, status)
	}
	return fmt.Sprintf(`{"create":{"_index":%q,"status":%d,"error":{"type":%q,"reason":%q}}}`, index, status, typ, reason)
}

func response(items []string) string {
	errs := false
	for _, it := range items {
		if strings.Contains(it, `"error"`) {
			errs = true
		}
	}
	return fmt.Sprintf(`{"errors":%v,"items":[%s]}`, errs, strings.Join(items, ","))
}

// fakeNode answers _bulk requests with answer(items).
func fakeNode(t *testing.T, answer func(items []reqItem) (int, string)) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/_bulk") {
			t.Errorf("%s %s", r.Method, r.URL.Path)
		}
		if got := r.URL.Query().Get("filter_path"); got != filterPath {
			t.Errorf("filter_path %q", got)
		}
		if ct := r.Header.Get("Content-Type"); ct != "application/x-ndjson" {
			t.Errorf("Content-Type %q", ct)
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("read body: %v", err)
			return
		}
		if r.ContentLength != int64(len(body)) {
			t.Errorf("Content-Length %d for %d bytes", r.ContentLength, len(body))
		}
		status, resp := answer(readBulk(t, r.URL.Path, body))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, resp)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

// echoAll answers every item with 201 and _index = the item's id, so tests
// can check that outcomes are matched to the right items.
func echoAll(items []reqItem) (int, string) {
	var out []string
	for _, it := range items {
		out = append(out, itemJSON(it.ID, 201, "", ""))
	}
	return 200, response(out)
}

// testBatch makes n items with ids "id-<k>"; item k has a source of about
// size bytes.
func testBatch(t testing.TB, n, size int) (*Batch, []int32) {
	b := new(Batch)
	items := make([]int32, n)
	for k := range items {
		src := fmt.Sprintf(`{"k":%d,"pad":"%s"}`, k, strings.Repeat("p", max(0, size-20)))
		items[k] = add(t, b, "logs", fmt.Sprintf("id-%d", k), src)
	}
	return b, items
}

func checkAll(t *testing.T, out []Outcome, want Class) {
	t.Helper()
	for k, o := range out {
		if c := Classify(o); c != want {
			t.Fatalf("item %d: %+v is %v, want %v", k, o, c, want)
		}
	}
}

func TestSendSuccess(t *testing.T) {
	b, all := testBatch(t, 20, 50)
	// A node's items: not contiguous in the arena.
	items := []int32{1, 2, 5, 6, 7, 11, 19}
	var got []reqItem
	var mu sync.Mutex
	srv, _ := fakeNode(t, func(its []reqItem) (int, string) {
		mu.Lock()
		got = its
		mu.Unlock()
		return echoAll(its)
	})
	c := testClient()
	out := make([]Outcome, len(items)+3)
	res, err := c.Send(context.Background(), srv.URL+"/", b, items, out)
	if err != nil {
		t.Fatal(err)
	}
	// Every item goes to "logs": the request goes to /logs/_bulk and the
	// action lines leave "_index" out.
	wantBytes := int64(len(elidedBody(b, items, "logs")))
	for k, it := range items {
		_, id, _ := b.Item(it)
		if got[k].ID != id || got[k].Index != "logs" || !strings.Contains(got[k].Source, fmt.Sprintf(`"k":%d,`, it)) {
			t.Errorf("request item %d = %+v, want id %s", k, got[k], id)
		}
		if out[k] != (Outcome{Status: 201, Index: id}) {
			t.Errorf("outcome %d = %+v", k, out[k])
		}
	}
	if len(got) != len(items) {
		t.Fatalf("server got %d items", len(got))
	}
	if out[len(items)] != (Outcome{}) {
		t.Error("Send wrote past len(items)")
	}
	if res.Requests != 1 || res.Bytes != wantBytes || res.Status != 200 || res.Counts[Done] != len(items) {
		t.Fatalf("result %+v", res)
	}
	_ = all
	// Empty send: nothing happens.
	if res, err := c.Send(context.Background(), srv.URL, b, nil, nil); err != nil || res.Requests != 0 {
		t.Fatal(res, err)
	}
	if _, err := c.Send(context.Background(), srv.URL, b, items, out[:2]); err == nil {
		t.Fatal("short out accepted")
	}
}

func TestSendMixedItemErrors(t *testing.T) {
	answers := []struct {
		status      int
		typ, reason string
		want        Class
	}{
		{201, "", "", Done},
		{200, "", "", Done},
		{409, "version_conflict_engine_exception", "[id-2]: version conflict, document already exists (current version [1])", Duplicate},
		{429, "rejected_execution_exception", "rejected execution of primary operation", Retry},
		{429, "es_rejected_execution_exception", "rejected", Retry},
		{400, "mapper_parsing_exception", "failed to parse field [n] of type [long] in document with id 'id-5'. Preview of field's value: 'secret'", Permanent},
		{400, "illegal_argument_exception", "only write ops with an op_type of create are allowed in data streams", Permanent},
		{503, "unavailable_shards_exception", "primary shard is not active", Retry},
		{500, "rejected_execution_exception", "x", Retry},
		{409, "some_other_conflict", "x", Permanent},
		{404, "index_not_found_exception", "no such index", Permanent},
	}
	b, items := testBatch(t, len(answers), 40)
	srv, _ := fakeNode(t, func(its []reqItem) (int, string) {
		var out []string
		for k, it := range its {
			a := answers[k]
			out = append(out, itemJSON(".ds-"+it.Index+"-000002", a.status, a.typ, a.reason))
		}
		return 200, response(out)
	})
	c := testClient()
	out := make([]Outcome, len(items))
	res, err := c.Send(context.Background(), srv.URL, b, items, out)
	if err != nil {
		t.Fatal(err)
	}
	var counts [NumClasses]int
	for k, a := range answers {
		o := out[k]
		if o.Status != a.status || o.ErrorType != a.typ || o.ErrorReason != a.reason || o.Index != ".ds-logs-000002" {
			t.Errorf("item %d: %+v", k, o)
		}
		if c := Classify(o); c != a.want {
			t.Errorf("item %d (%d %s) is %v, want %v", k, a.status, a.typ, c, a.want)
		}
		counts[a.want]++
	}
	if res.Counts != counts {
		t.Fatalf("counts %v, want %v", res.Counts, counts)
	}
	if r := SafeReason(out[5].ErrorReason); strings.Contains(r, "secret") || !strings.HasPrefix(r, "failed to parse field [n] of type [long]") {
		t.Fatalf("SafeReason kept document contents: %q", r)
	}
}

func TestSendRequestLevelFailures(t *testing.T) {
	cases := []struct {
		name      string
		status    int
		body      string
		kind      Kind
		class     Class
		retryable bool
		msg       []string
	}{
		{"429", 429, `{"error":{"root_cause":[{"type":"rejected_execution_exception","reason":"rejected execution of coordinating operation [coordinating_and_primary_bytes=0]"}],"type":"rejected_execution_exception","reason":"rejected execution of coordinating operation [coordinating_and_primary_bytes=0]"},"status":429}`,
			KindThrottled, Retry, true, []string{"429", "rejected_execution_exception"}},
		{"503", 503, `{"error":{"type":"cluster_block_exception","reason":"blocked by: [SERVICE_UNAVAILABLE/2/no master];"},"status":503}`,
			KindServer, Retry, true, []string{"503", "cluster_block_exception"}},
		{"502 no body", 502, ``, KindServer, Retry, true, []string{"502"}},
		{"408 from a proxy", 408, `request timeout`, KindServer, Retry, true, []string{"408"}},
		{"401", 401, `Unauthorized`, KindAuth, Permanent, false, []string{"401", "credentials"}},
		{"403", 403, `{"error":{"root_cause":[{"type":"security_exception","reason":"no permissions for [indices:data/write/bulk] and User [name=otel, backend_roles=[], requestedTenant=null]"}],"type":"security_exception","reason":"no permissions for [indices:data/write/bulk] and User [name=otel, backend_roles=[], requestedTenant=null]"},"status":403}`,
			KindAuth, Permanent, false, []string{"403", "credentials", "security_exception", "indices:data/write/bulk"}},
		{"400", 400, `{"error":{"type":"illegal_argument_exception","reason":"The bulk request must be terminated by a newline [\n]"},"status":400}`,
			KindRejected, Permanent, false, []string{"400", "illegal_argument_exception"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, items := testBatch(t, 5, 30)
			srv, _ := fakeNode(t, func([]reqItem) (int, string) { return tc.status, tc.body })
			c := testClient()
			out := make([]Outcome, len(items))
			// Credentials in the URL must never appear in the error.
			base := strings.Replace(srv.URL, "http://", "http://otel:s3cret-pw@", 1)
			res, err := c.Send(context.Background(), base, b, items, out)
			var re *RequestError
			if !errors.As(err, &re) || re.Kind != tc.kind || re.Status != tc.status {
				t.Fatalf("error %#v", err)
			}
			if IsRetryable(err) != tc.retryable || IsNodeDown(err) {
				t.Fatalf("retryable=%v nodeDown=%v", IsRetryable(err), IsNodeDown(err))
			}
			for _, m := range tc.msg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("message %q lacks %q", err, m)
				}
			}
			if strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "otel:") {
				t.Fatalf("message leaks credentials: %q", err)
			}
			checkAll(t, out, tc.class)
			for _, o := range out {
				if o.Status != tc.status {
					t.Fatalf("outcome %+v", o)
				}
			}
			if res.Counts[tc.class] != len(items) || res.Status != tc.status {
				t.Fatalf("result %+v", res)
			}
		})
	}
}

func TestSendSplitsOn413(t *testing.T) {
	const limit = 700
	b, items := testBatch(t, 13, 100) // ~150 bytes each: about 4 per request
	big := add(t, b, "logs", "huge", `{"x":"`+strings.Repeat("h", 2*limit)+`"}`)
	items = append(items[:6], append([]int32{big}, items[6:]...)...)
	var sizes []int
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > limit {
			// Like the real server: refuse by Content-Length, unread.
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			return
		}
		body, _ := io.ReadAll(r.Body)
		its := readBulk(t, r.URL.Path, body)
		mu.Lock()
		sizes = append(sizes, len(its))
		mu.Unlock()
		_, resp := echoAll(its)
		io.WriteString(w, resp)
	}))
	defer srv.Close()
	c := testClient()
	out := make([]Outcome, len(items))
	res, err := c.Send(context.Background(), srv.URL, b, items, out)
	if err != nil {
		t.Fatal(err)
	}
	for k, it := range items {
		_, id, _ := b.Item(it)
		if it == big {
			if out[k].Status != 413 || out[k].ErrorType != ErrTooLarge || Classify(out[k]) != Permanent {
				t.Fatalf("oversized item: %+v", out[k])
			}
			continue
		}
		if out[k] != (Outcome{Status: 201, Index: id}) {
			t.Fatalf("item %d: %+v", k, out[k])
		}
	}
	total := 0
	for _, s := range sizes {
		total += s
	}
	if total != len(items)-1 || res.Requests <= len(sizes) || res.Counts[Done] != len(items)-1 || res.Counts[Permanent] != 1 {
		t.Fatalf("sizes %v, result %+v", sizes, res)
	}
}

// TestSendIsolatesValidationFailures: a whole request refused with 400
// action_request_validation_exception (an _id over 512 bytes, as OpenSearch
// refuses it: nothing written) is sent again in halves until each bad item
// is alone; every good item is written, each bad one keeps the refusal.
func TestSendIsolatesValidationFailures(t *testing.T) {
	b, items := testBatch(t, 16, 100)
	bad := map[int32]bool{}
	for _, k := range []int{3, 11} {
		it := add(t, b, "logs", strings.Repeat("B", 600), `{"x":1}`)
		items = append(items[:k], append([]int32{it}, items[k:]...)...)
		bad[it] = true
	}
	var mu sync.Mutex
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		requests++
		mu.Unlock()
		if bytes.Contains(body, []byte(strings.Repeat("B", 600))) {
			w.WriteHeader(400)
			io.WriteString(w, `{"error":{"root_cause":[{"type":"action_request_validation_exception","reason":"Validation Failed: 1: id [BBBB] is too long, must be no longer than 512 bytes but was: 600;"}],"type":"action_request_validation_exception","reason":"Validation Failed: 1: id [BBBB] is too long, must be no longer than 512 bytes but was: 600;"},"status":400}`)
			return
		}
		_, resp := echoAll(readBulk(t, r.URL.Path, body))
		io.WriteString(w, resp)
	}))
	defer srv.Close()
	out := make([]Outcome, len(items))
	res, err := testClient().Send(context.Background(), srv.URL, b, items, out)
	if err != nil {
		t.Fatal(err)
	}
	for k, it := range items {
		switch {
		case bad[it]:
			if out[k].Status != 400 || out[k].ErrorType != "action_request_validation_exception" || Classify(out[k]) != Permanent || strings.Contains(SafeReason(out[k].ErrorReason), "BBBB") {
				t.Fatalf("bad item %d: %+v", k, out[k])
			}
		case Classify(out[k]) != Done:
			t.Fatalf("good item %d: %+v", k, out[k])
		}
	}
	if res.Counts[Done] != 16 || res.Counts[Permanent] != 2 || requests > 2*5*2 {
		t.Fatalf("result %+v after %d requests", res, requests)
	}
}

func TestSend413LargeUnreadBody(t *testing.T) {
	// A body far larger than the server reads before answering 413 and
	// closing: the answer must still be seen as 413 (then split), not as a
	// broken connection.
	const limit = 2 << 20
	b, items := testBatch(t, 8, 1<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > limit {
			w.Header().Set("Connection", "close")
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			return
		}
		body, _ := io.ReadAll(r.Body)
		_, resp := echoAll(readBulk(t, r.URL.Path, body))
		io.WriteString(w, resp)
	}))
	defer srv.Close()
	c := testClient()
	out := make([]Outcome, len(items))
	res, err := c.Send(context.Background(), srv.URL, b, items, out)
	if err != nil {
		t.Fatalf("%v (result %+v)", err, res)
	}
	checkAll(t, out, Done)
}

func TestSendBadResponses(t *testing.T) {
	cases := map[string]func([]reqItem) (int, string){
		"malformed":   func([]reqItem) (int, string) { return 200, `<html>proxy error</html>` },
		"truncated":   func(its []reqItem) (int, string) { _, r := echoAll(its); return 200, r[:len(r)/2] },
		"wrong count": func(its []reqItem) (int, string) { _, r := echoAll(its[1:]); return 200, r },
		"empty":       func([]reqItem) (int, string) { return 200, `` },
		"no items":    func([]reqItem) (int, string) { return 200, `{}` },
	}
	for name, answer := range cases {
		t.Run(name, func(t *testing.T) {
			b, items := testBatch(t, 4, 30)
			srv, _ := fakeNode(t, answer)
			c := testClient()
			out := make([]Outcome, len(items))
			_, err := c.Send(context.Background(), srv.URL, b, items, out)
			var re *RequestError
			if !errors.As(err, &re) || re.Kind != KindBadResponse || !IsRetryable(err) || IsNodeDown(err) {
				t.Fatalf("error %v", err)
			}
			for _, o := range out {
				if o.Status != 0 || o.ErrorType != ErrBadResponse || Classify(o) != Retry {
					t.Fatalf("outcome %+v", o)
				}
			}
		})
	}
}

// rawNode serves each connection with handle (no HTTP server).
func rawNode(t *testing.T, handle func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer conn.Close()
				handle(conn)
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return "http://" + ln.Addr().String()
}

// readRequest reads one HTTP request with its body.
func readRequest(conn net.Conn) bool {
	req, err := http.ReadRequest(bufio.NewReader(conn))
	if err != nil {
		return false
	}
	_, err = io.Copy(io.Discard, req.Body)
	return err == nil
}

func TestSendTransportFailures(t *testing.T) {
	// A port with nothing listening.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refused := "http://" + ln.Addr().String()
	ln.Close()

	reset := rawNode(t, func(conn net.Conn) {
		if tc, ok := conn.(*net.TCPConn); ok {
			tc.SetLinger(0) // RST on close
		}
	})
	truncated := rawNode(t, func(conn net.Conn) {
		if readRequest(conn) {
			io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 500\r\n\r\n"+`{"errors":false,"items":[{"create":`)
		}
	})
	closedAfterRequest := rawNode(t, func(conn net.Conn) { readRequest(conn) })

	cases := []struct {
		name, url string
		kind      Kind
		otype     string
	}{
		{"connection refused", refused, KindNodeDown, ErrConnection},
		{"connection reset", reset, KindNodeDown, ErrConnection},
		{"closed without answer", closedAfterRequest, KindNodeDown, ErrConnection},
		{"body cut short", truncated, KindBadResponse, ErrBadResponse},
		{"invalid URL", "ftp://x", KindNodeDown, ErrConnection},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, items := testBatch(t, 3, 30)
			c := testClient()
			out := make([]Outcome, len(items))
			res, err := c.Send(context.Background(), tc.url, b, items, out)
			var re *RequestError
			if !errors.As(err, &re) || re.Kind != tc.kind {
				t.Fatalf("error %v (%#v)", err, err)
			}
			if IsNodeDown(err) != (tc.kind == KindNodeDown) || !IsRetryable(err) {
				t.Fatalf("nodeDown=%v retryable=%v", IsNodeDown(err), IsRetryable(err))
			}
			for _, o := range out {
				if o.Status != 0 || o.ErrorType != tc.otype || Classify(o) != Retry {
					t.Fatalf("outcome %+v", o)
				}
			}
			if res.Counts[Retry] != len(items) {
				t.Fatalf("result %+v", res)
			}
		})
	}
}

func TestSendSlowServer(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	b, items := testBatch(t, 3, 30)
	out := make([]Outcome, len(items))

	// The caller's deadline: canceled, not node down.
	c := testClient()
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.Send(ctx, srv.URL, b, items, out)
	if !errors.Is(err, context.DeadlineExceeded) || IsNodeDown(err) || !IsRetryable(err) {
		t.Fatalf("caller deadline: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Send returned %v after the deadline", d)
	}
	for _, o := range out {
		if o.ErrorType != ErrCanceled || Classify(o) != Retry {
			t.Fatalf("outcome %+v", o)
		}
	}

	// The request's own timeout: the node is taken to be down.
	c2 := testClient()
	c2.Timeout = 150 * time.Millisecond
	_, err = c2.Send(context.Background(), srv.URL, b, items, out)
	if !IsNodeDown(err) || !IsRetryable(err) {
		t.Fatalf("request timeout: %v", err)
	}
	for _, o := range out {
		if o.Status != 0 || o.ErrorType != ErrTimeout || Classify(o) != Retry {
			t.Fatalf("outcome %+v", o)
		}
	}

	// http.Client.Timeout counts as the request's own timeout too.
	c3 := Client{HTTP: &http.Client{Timeout: 150 * time.Millisecond, Transport: suiteRoundTripper()}}
	if _, err = c3.Send(context.Background(), srv.URL, b, items, out); !IsNodeDown(err) || out[0].ErrorType != ErrTimeout {
		t.Fatalf("http.Client timeout: %v, %+v", err, out[0])
	}
}

func TestSendConcurrentNodesSharedBatch(t *testing.T) {
	b, items := testBatch(t, 300, 80)
	var srvs []*httptest.Server
	for i := 0; i < 3; i++ {
		s, _ := fakeNode(t, echoAll)
		srvs = append(srvs, s)
	}
	c := testClient()
	var wg sync.WaitGroup
	for i, s := range srvs {
		var mine []int32
		for k := i; k < len(items); k += 3 {
			mine = append(mine, items[k])
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, sub := range Split(b, mine, 2000, nil) {
				out := make([]Outcome, len(sub))
				if _, err := c.Send(context.Background(), s.URL, b, sub, out); err != nil {
					t.Error(err)
					return
				}
				for k, it := range sub {
					if _, id, _ := b.Item(it); out[k].Index != id || out[k].Status != 201 {
						t.Errorf("item %d: %+v", it, out[k])
					}
				}
			}
		}()
	}
	wg.Wait()
}

// TestBodyNotReadAfterSend: the server answers 429 without reading a large
// body; once Send has returned the caller resets and rewrites the Batch.
// Under -race any transport read of the arena after Send returned is a
// data race, and a reader that was detached must fail.
func TestBodyNotReadAfterSend(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	c := testClient()
	for round := 0; round < 5; round++ {
		b, items := testBatch(t, 64, 16<<10) // 1 MiB: more than the server drains
		out := make([]Outcome, len(items))
		_, err := c.Send(context.Background(), srv.URL, b, items, out)
		if !IsRetryable(err) {
			t.Fatalf("%v", err)
		}
		b.Reset()
		for i := 0; i < 64; i++ {
			add(t, b, "other", "x", `{"overwritten":"`+strings.Repeat("o", 16<<10)+`"}`)
		}
	}
	b, items := testBatch(t, 2, 10)
	st := newBody(b, items)
	r, _ := st.getBody()
	st.detach()
	if _, err := r.Read(make([]byte, 10)); err != errDetached {
		t.Fatalf("read after detach: %v", err)
	}
	if _, err := st.getBody(); err != errDetached {
		t.Fatalf("GetBody after detach: %v", err)
	}
}

// elidedBody is the body of a request for items that all go to index: each
// item's bytes with the action line's "_index" field (and the comma after
// it, if any) taken out.
func elidedBody(b *Batch, items []int32, index string) []byte {
	field, _ := json.Marshal(index)
	var out []byte
	for _, it := range items {
		line := string(b.Bytes(it))
		if strings.Contains(line, `"_index":`+string(field)+`,`) {
			line = strings.Replace(line, `"_index":`+string(field)+`,`, "", 1)
		} else {
			line = strings.Replace(line, `"_index":`+string(field), "", 1)
		}
		out = append(out, line...)
	}
	return out
}

func TestBodyReader(t *testing.T) {
	b, _ := testBatch(t, 10, 33)
	// An item without an id, and one whose index needs escaping in JSON.
	noID := add(t, b, "logs", "", `{"no":"id"}`)
	other := add(t, b, `lo"gs`, "x", `{"other":1}`)
	// Routed items, without and with an id.
	routedNoID, err := b.Commit(append(b.BeginRouted("logs", "", "tenant-1"), `{"r":1}`...))
	if err != nil {
		t.Fatal(err)
	}
	routed, err := b.Commit(append(b.BeginRouted("logs", "y", "tenant-2"), `{"r":2}`...))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		items []int32
		index string // shared by every item: left out of the lines
	}{
		{"one index", []int32{9, 0, 3, 4, 5}, "logs"},
		{"one index, no id", []int32{noID, 2, noID}, "logs"},
		{"one index, routed, no id", []int32{routedNoID, noID, routed, 1}, "logs"},
		{"one escaped index", []int32{other}, `lo"gs`},
		{"two indices", []int32{9, other, 0}, ""},
	} {
		t.Run(c.name, func(t *testing.T) { checkBody(t, b, c.items, c.index) })
	}
}

func checkBody(t *testing.T, b *Batch, items []int32, index string) {
	var want []byte
	if index != "" {
		want = elidedBody(b, items, index)
	} else {
		for _, it := range items {
			want = append(want, b.Bytes(it)...)
		}
	}
	if index != "" && bytes.Contains(want, []byte(`"_index"`)) {
		t.Fatalf("expected body still names the index: %s", want)
	}
	for _, chunk := range []int{1, 7, 11, 12, 64, 1 << 16} {
		st := newBody(b, items)
		if st.index != index {
			t.Fatalf("shared index %q, want %q", st.index, index)
		}
		if st.size != int64(len(want)) {
			t.Fatal(st.size, len(want))
		}
		var got []byte
		buf := make([]byte, chunk)
		for {
			n, err := st.root.Read(buf)
			got = append(got, buf[:n]...)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("chunk %d: body differs:\n%s\nwant\n%s", chunk, got, want)
		}
		if index != "" {
			its := readBulk(t, "/"+index+"/_bulk", got)
			for k, it := range its {
				_, id, _ := b.Item(items[k])
				if it.Index != index || it.ID != id {
					t.Fatalf("chunk %d: item %d read back as %+v", chunk, k, it)
				}
			}
		}
		// GetBody starts again from the first byte.
		r, _ := st.getBody()
		again, _ := io.ReadAll(r)
		if !bytes.Equal(again, want) {
			t.Fatal("GetBody body differs")
		}
		st.detach()
	}
}

func TestClassify(t *testing.T) {
	cases := []struct {
		o    Outcome
		want Class
	}{
		{Outcome{Status: 201}, Done},
		{Outcome{Status: 200}, Done},
		{Outcome{Status: 409, ErrorType: "version_conflict_engine_exception"}, Duplicate},
		{Outcome{Status: 409}, Permanent},
		{Outcome{Status: 429}, Retry},
		{Outcome{Status: 400, ErrorType: "rejected_execution_exception"}, Retry},
		{Outcome{Status: 200, ErrorType: "es_rejected_execution_exception"}, Retry},
		{Outcome{Status: 500}, Retry},
		{Outcome{Status: 503}, Retry},
		{Outcome{Status: 599}, Retry},
		{Outcome{Status: 0, ErrorType: ErrConnection}, Retry},
		{Outcome{Status: 400, ErrorType: "mapper_parsing_exception"}, Permanent},
		{Outcome{Status: 401}, Permanent},
		{Outcome{Status: 403}, Permanent},
		{Outcome{Status: 404}, Permanent},
		{Outcome{Status: 413, ErrorType: ErrTooLarge}, Permanent},
		{Outcome{Status: 302}, Permanent},
		{Outcome{Status: 600}, Permanent},
	}
	for _, tc := range cases {
		if got := Classify(tc.o); got != tc.want {
			t.Errorf("Classify(%+v) = %v, want %v", tc.o, got, tc.want)
		}
	}
}

func TestSafeReason(t *testing.T) {
	cases := map[string]string{
		"failed to parse field [n] of type [long] in document with id 'a'. Preview of field's value: 'pw'":                                                                                                          "failed to parse field [n] of type [long]",
		"Document contains at least one immense term in field=\"b\" (whose UTF8 encoding is longer than the max length 32766), all of which were skipped. The prefix of the first immense term is: '[112, 119]...'": "Document contains at least one immense term in field=\"b\" (whose UTF8 encoding is longer than the max length 32766), all of which were skipped",
		"Limit of total fields [1000] has been exceeded": "Limit of total fields [1000] has been exceeded",
	}
	for in, want := range cases {
		if got := SafeReason(in); got != want {
			t.Errorf("SafeReason(%q) = %q, want %q", in, got, want)
		}
	}
	long := strings.Repeat("é", 300)
	got := SafeReason(long)
	if len(got) > maxReason+len("…") || !strings.HasSuffix(got, "…") || !utf8ValidString(got) {
		t.Fatalf("%q", got)
	}
}

func utf8ValidString(s string) bool { return strings.ToValidUTF8(s, "\x00") == s }

func TestSendHeadersAndUserInfo(t *testing.T) {
	type seen struct {
		user, pass string
		ok         bool
		extra, ct  string
	}
	got := make(chan seen, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		got <- seen{u, p, ok, r.Header.Get("X-Extra"), r.Header.Get("Content-Type")}
		body, _ := io.ReadAll(r.Body)
		_, resp := echoAll(readBulk(t, r.URL.Path, body))
		io.WriteString(w, resp)
	}))
	defer srv.Close()
	b, items := testBatch(t, 2, 10)
	c := testClient()
	c.Header = http.Header{"X-Extra": {"1"}, "Content-Type": {"text/plain"}}
	base := strings.Replace(srv.URL, "http://", "http://otel:p%40ss@", 1)
	if _, err := c.Send(context.Background(), base, b, items, make([]Outcome, 2)); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != (seen{"otel", "p@ss", true, "1", "application/x-ndjson"}) {
		t.Fatalf("server saw %+v", s)
	}
	// Without user info: no Authorization.
	if _, err := c.Send(context.Background(), srv.URL, b, items, make([]Outcome, 2)); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s.ok {
		t.Fatalf("server saw %+v", s)
	}
}

func TestSend413ThenFailureStopsTheRest(t *testing.T) {
	b, items := testBatch(t, 8, 100)
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		body, _ := io.ReadAll(r.Body)
		its := readBulk(t, r.URL.Path, body)
		switch {
		case len(its) > 4:
			w.WriteHeader(http.StatusRequestEntityTooLarge)
		case its[0].ID == "id-0":
			_, resp := echoAll(its)
			io.WriteString(w, resp)
		default:
			w.WriteHeader(http.StatusTooManyRequests)
		}
	}))
	defer srv.Close()
	c := testClient()
	out := make([]Outcome, len(items))
	res, err := c.Send(context.Background(), srv.URL, b, items, out)
	var re *RequestError
	if !errors.As(err, &re) || re.Kind != KindThrottled {
		t.Fatalf("%v", err)
	}
	for k, o := range out {
		if k < 4 && (o.Status != 201 || o.Index != fmt.Sprintf("id-%d", k)) || k >= 4 && (o.Status != 429 || Classify(o) != Retry) {
			t.Fatalf("item %d: %+v", k, o)
		}
	}
	if res.Requests != 3 || requests.Load() != 3 || res.Counts[Done] != 4 || res.Counts[Retry] != 4 {
		t.Fatalf("result %+v, server requests %d", res, requests.Load())
	}
}

func TestSendTLSFailures(t *testing.T) {
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		_, resp := echoAll(readBulk(t, r.URL.Path, body))
		io.WriteString(w, resp)
	}))
	defer tlsSrv.Close()
	plain, _ := fakeNode(t, echoAll)
	b, items := testBatch(t, 2, 10)
	out := make([]Outcome, len(items))

	// A certificate the client does not trust.
	c := testClient()
	_, err := c.Send(context.Background(), tlsSrv.URL, b, items, out)
	var re *RequestError
	if !errors.As(err, &re) || re.Kind != KindTLS || !IsNodeDown(err) || out[0].ErrorType != ErrTLS || Classify(out[0]) != Retry {
		t.Fatalf("untrusted certificate: %v, %+v", err, out[0])
	}
	// https to a plain HTTP node.
	_, err = c.Send(context.Background(), strings.Replace(plain.URL, "http://", "https://", 1), b, items, out)
	if !errors.As(err, &re) || re.Kind != KindTLS {
		t.Fatalf("https to http: %v", err)
	}
	// With the server's certificate trusted, it works.
	c2 := Client{HTTP: tlsSrv.Client()}
	if _, err := c2.Send(context.Background(), tlsSrv.URL, b, items, out); err != nil || out[1] != (Outcome{Status: 201, Index: "id-1"}) {
		t.Fatal(err, out)
	}
}

// TestSendAppendedAndReIDed sends a Batch made of its own items, items
// appended from two other Batches (left in their arenas; also a range from
// the middle of one) and items given a
// new id by SetID: the server must receive every item, in order, with its
// source intact and its latest id.
func TestSendAppendedAndReIDed(t *testing.T) {
	own, _ := testBatch(t, 3, 40)
	p1, _ := testBatch(t, 4, 300)
	p2, _ := testBatch(t, 2, 10)
	sizes := own.Size() + p1.Size() + p2.Size()
	own.AppendItems(p1.Items(0, 4))
	own.AppendItems(p2.Items(0, 2))
	if own.Len() != 9 || own.Size() != sizes {
		t.Fatalf("after AppendItems: %d items, %d bytes; want 9, %d", own.Len(), own.Size(), sizes)
	}
	var part Batch
	part.AppendItems(p1.Items(1, 3))
	if part.Len() != 2 || part.Size() != len(p1.Bytes(1))+len(p1.Bytes(2)) ||
		!bytes.Equal(part.Bytes(0), p1.Bytes(1)) || !bytes.Equal(part.Bytes(1), p1.Bytes(2)) {
		t.Fatalf("AppendItems(p1.Items(1, 3)): %d items, %d bytes", part.Len(), part.Size())
	}
	before := own.Size()
	own.SetID(4, "renamed-4")
	own.SetID(8, "a-much-longer-id-for-the-last-item")
	own.SetID(0, "")
	if _, id, _ := own.Item(4); id != "renamed-4" {
		t.Fatalf("SetID: id %q", id)
	}
	sum := 0
	for i := int32(0); i < int32(own.Len()); i++ {
		sum += len(own.Bytes(i))
	}
	if own.Size() != sum || own.Size() == before {
		t.Fatalf("Size %d, items add up to %d (was %d)", own.Size(), sum, before)
	}
	var got []reqItem
	var mu sync.Mutex
	srv, _ := fakeNode(t, func(its []reqItem) (int, string) {
		mu.Lock()
		got = its
		mu.Unlock()
		return echoAll(its)
	})
	items := []int32{0, 1, 2, 3, 4, 5, 6, 7, 8}
	c := testClient()
	out := make([]Outcome, len(items))
	if _, err := c.Send(context.Background(), srv.URL+"/", own, items, out); err != nil {
		t.Fatal(err)
	}
	wantIDs := []string{"", "id-1", "id-2", "id-0", "renamed-4", "id-2", "id-3", "id-0", "a-much-longer-id-for-the-last-item"}
	wantK := []int{0, 1, 2, 0, 1, 2, 3, 0, 1}
	if len(got) != len(wantIDs) {
		t.Fatalf("server got %d items", len(got))
	}
	for k := range got {
		if got[k].ID != wantIDs[k] || !strings.Contains(got[k].Source, fmt.Sprintf(`"k":%d,`, wantK[k])) {
			t.Fatalf("item %d: %+v", k, got[k])
		}
	}
}

// TestSendIndexInURL: a request whose items all go to one index is sent to
// {base}/{index}/_bulk (a base path prefix kept) and its action lines leave
// "_index" out; items of several indices go to {base}/_bulk, each line
// naming its index. Every item lands where it was meant to either way.
func TestSendIndexInURL(t *testing.T) {
	b := new(Batch)
	a1 := add(t, b, "logs-a", "1", `{"n":1}`)
	a2 := add(t, b, "logs-a", "", `{"n":2}`)
	o1 := add(t, b, "logs-b", "3", `{"n":3}`)
	var mu sync.Mutex
	var paths []string
	var bodies [][]reqItem
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if r.ContentLength != int64(len(body)) {
			t.Errorf("Content-Length %d for %d bytes", r.ContentLength, len(body))
		}
		path := strings.TrimPrefix(r.URL.Path, "/prefix")
		its := readBulk(t, path, body)
		if path != "/_bulk" && bytes.Contains(body, []byte(`"_index"`)) {
			t.Errorf("index in the URL and in the lines: %s", body)
		}
		mu.Lock()
		paths = append(paths, r.URL.Path)
		bodies = append(bodies, its)
		mu.Unlock()
		var out []string
		for _, it := range its {
			out = append(out, itemJSON(it.Index, 201, "", ""))
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, response(out))
	}))
	defer srv.Close()
	c := testClient()
	for _, tc := range []struct {
		items []int32
		path  string
		want  []string // the index of each item as the server read it
	}{
		{[]int32{a1, a2}, "/prefix/logs-a/_bulk", []string{"logs-a", "logs-a"}},
		{[]int32{o1}, "/prefix/logs-b/_bulk", []string{"logs-b"}},
		{[]int32{a1, o1, a2}, "/prefix/_bulk", []string{"logs-a", "logs-b", "logs-a"}},
	} {
		mu.Lock()
		paths, bodies = nil, nil
		mu.Unlock()
		out := make([]Outcome, len(tc.items))
		res, err := c.Send(context.Background(), srv.URL+"/prefix", b, tc.items, out)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		if len(paths) != 1 || paths[0] != tc.path {
			t.Errorf("%v: paths %v, want %s", tc.items, paths, tc.path)
		}
		for k, it := range bodies[0] {
			if it.Index != tc.want[k] {
				t.Errorf("%v: item %d read as index %q, want %q", tc.items, k, it.Index, tc.want[k])
			}
			if out[k].Index != tc.want[k] || Classify(out[k]) != Done {
				t.Errorf("%v: outcome %d %+v", tc.items, k, out[k])
			}
		}
		mu.Unlock()
		if res.Counts[Done] != len(tc.items) {
			t.Errorf("%v: result %+v", tc.items, res)
		}
	}
}

// TestSendSetsServerTimeout: every bulk request carries timeout= with the
// time left before the client gives up (the request's own timeout or the
// caller's deadline, whichever is sooner), so the server does not keep
// waiting for shards after the client has gone.
func TestSendSetsServerTimeout(t *testing.T) {
	b, _ := testBatch(t, 4, 20)
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.URL.Query().Get("timeout"))
		mu.Unlock()
		_, resp := echoAll(readBulk(t, r.URL.Path, body))
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, resp)
	}))
	defer srv.Close()
	items := []int32{0, 1, 2, 3}
	out := make([]Outcome, len(items))
	parse := func(s string) time.Duration {
		t.Helper()
		d, err := time.ParseDuration(s)
		if err != nil || !strings.HasSuffix(s, "ms") {
			t.Fatalf("timeout=%q: not a millisecond time value", s)
		}
		return d
	}

	c := &Client{Timeout: 20 * time.Second}
	if _, err := c.Send(context.Background(), srv.URL, b, items, out); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := c.Send(ctx, srv.URL, b, items, out); err != nil {
		t.Fatal(err)
	}
	noLimit := &Client{}
	if _, err := noLimit.Send(context.Background(), srv.URL, b, items, out); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 3 {
		t.Fatalf("%d requests", len(got))
	}
	if d := parse(got[0]); d > 20*time.Second || d < 19*time.Second {
		t.Errorf("request timeout 20s: server timeout %v", d)
	}
	if d := parse(got[1]); d > 3*time.Second || d < 2*time.Second {
		t.Errorf("caller deadline in 3s: server timeout %v", d)
	}
	if got[2] != "" {
		t.Errorf("no deadline at all: timeout=%q sent", got[2])
	}
}
