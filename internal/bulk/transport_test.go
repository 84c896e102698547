package bulk

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Transport's own behaviour: connection reuse, resends, response framing,
// contexts, early answers, TLS, invalid requests and concurrency. (Send over
// Transport is covered by TestClientSuiteOnTransport.)

// closeAtEnd closes tr when the test ends.
func closeAtEnd(t *testing.T, tr *Transport) *Transport {
	t.Cleanup(tr.Close)
	return tr
}

// dialsOf is the number of connections tr has made.
func dialsOf(tr *Transport) int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.dials
}

// idleOf is the number of connections to rawURL's host that tr keeps for
// reuse.
func idleOf(t *testing.T, tr *Transport, rawURL string) int {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return len(tr.idle[u.Scheme+"://"+canonicalHost(u.Scheme, u.Host)])
}

// newPost is a POST of body to url as http.NewRequest makes it: a
// bytes.Reader body, its ContentLength and GetBody.
func newPost(t testing.TB, ctx context.Context, url, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// roundTrip sends req through rt and returns the response, its body read
// to its end and closed.
func roundTrip(rt http.RoundTripper, req *http.Request) (*http.Response, string, error) {
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return nil, "", err
	}
	b, err := io.ReadAll(resp.Body)
	if cerr := resp.Body.Close(); err == nil {
		err = cerr
	}
	return resp, string(b), err
}

// mustDo is roundTrip that fails the test on an error.
func mustDo(t *testing.T, rt http.RoundTripper, req *http.Request) (int, string) {
	t.Helper()
	resp, body, err := roundTrip(rt, req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	return resp.StatusCode, body
}

// wait waits for ch, failing the test after 5s.
func wait(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(5 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// closedConns returns an httptest server, not started, with handler, and a
// channel that gets a value each time one of its connections is closed.
func closedConns(handler http.HandlerFunc) (*httptest.Server, chan struct{}) {
	closed := make(chan struct{}, 64)
	srv := httptest.NewUnstartedServer(handler)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			closed <- struct{}{}
		}
	}
	return srv, closed
}

// trackedBody is a request body that records its Close.
type trackedBody struct {
	io.Reader
	closed atomic.Bool
}

func (b *trackedBody) Close() error { b.closed.Store(true); return nil }

// rawServer is a TCP server whose answers its serve function writes byte
// by byte, for what net/http's server would not send. serve gets the
// connection's number (0 for the first accepted) and a reader on it; the
// connection is closed when serve returns. At the end of the test the
// listener and every connection are closed (which ends serve's reads) and
// the serve calls are waited for.
type rawServer struct {
	URL      string
	accepted atomic.Int32

	mu     sync.Mutex
	conns  map[net.Conn]bool
	closed bool
	wg     sync.WaitGroup
}

func newRawServer(t *testing.T, serve func(n int, c net.Conn, br *bufio.Reader)) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{URL: "http://" + ln.Addr().String(), conns: map[net.Conn]bool{}}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n := int(s.accepted.Add(1)) - 1
			s.mu.Lock()
			if s.closed {
				s.mu.Unlock()
				c.Close()
				return
			}
			s.conns[c] = true
			s.wg.Add(1)
			s.mu.Unlock()
			go func() {
				defer s.wg.Done()
				defer func() {
					s.mu.Lock()
					delete(s.conns, c)
					s.mu.Unlock()
					c.Close()
				}()
				serve(n, c, bufio.NewReader(c))
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		s.closed = true
		for c := range s.conns {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return s
}

// readRawRequest reads one request and its whole body.
func readRawRequest(br *bufio.Reader) (*http.Request, string, error) {
	req, err := http.ReadRequest(br)
	if err != nil {
		return nil, "", err
	}
	b, err := io.ReadAll(req.Body)
	return req, string(b), err
}

// rawResponse is an answer with the given header lines and a
// Content-Length body.
func rawResponse(status int, body string, header ...string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "HTTP/1.1 %d %s\r\n", status, http.StatusText(status))
	for _, h := range header {
		sb.WriteString(h + "\r\n")
	}
	fmt.Fprintf(&sb, "Content-Length: %d\r\n\r\n%s", len(body), body)
	return sb.String()
}

// serveAll writes answer's bytes for each request read from c, until the
// client closes c.
func serveAll(c net.Conn, br *bufio.Reader, answer func(req *http.Request, body string) string) {
	for {
		req, body, err := readRawRequest(br)
		if err != nil {
			return
		}
		if _, err := io.WriteString(c, answer(req, body)); err != nil {
			return
		}
	}
}

// echoAnswer answers 200 with the request's body.
func echoAnswer(_ *http.Request, body string) string { return rawResponse(http.StatusOK, body) }

func TestTransportKeepAlive(t *testing.T) {
	type seen struct {
		URI, Host, ContentLength string
		TransferEncoding         []string
		Custom                   string
		Multi                    []string
		Body                     string
	}
	var mu sync.Mutex
	var got []seen
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, seen{r.RequestURI, r.Host, r.Header.Get("Content-Length"), r.TransferEncoding,
			r.Header.Get("X-Custom"), r.Header.Values("X-Multi"), string(body)})
		mu.Unlock()
		io.WriteString(w, "ok:"+string(body))
	}))
	t.Cleanup(srv.Close)
	tr := closeAtEnd(t, &Transport{})

	var want []seen
	for i := range 20 {
		body := fmt.Sprintf("request %d;", i) + strings.Repeat("x", i*997)
		req := newPost(t, context.Background(), srv.URL+"/idx/_bulk?refresh=false", body)
		req.Header.Set("X-Custom", "value "+strconv.Itoa(i))
		req.Header["X-Multi"] = []string{"a", "b"}
		host := srv.Listener.Addr().String()
		if i%2 == 1 {
			host = "node-" + strconv.Itoa(i) + ".example:9200"
			req.Host = host
		}
		want = append(want, seen{"/idx/_bulk?refresh=false", host, strconv.Itoa(len(body)), nil,
			"value " + strconv.Itoa(i), []string{"a", "b"}, body})
		if status, resp := mustDo(t, tr, req); status != http.StatusOK || resp != "ok:"+body {
			t.Fatalf("request %d: %d %.40q", i, status, resp)
		}
	}
	if d := dialsOf(tr); d != 1 {
		t.Errorf("%d dials for 20 sequential requests, want 1", d)
	}
	if n := idleOf(t, tr, srv.URL); n != 1 {
		t.Errorf("%d idle connections, want 1", n)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != len(want) {
		t.Fatalf("the server saw %d requests, want %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("request %d: the server saw\n%+.80v\nwant\n%+.80v", i, got[i], want[i])
		}
	}
}

func TestTransportNoReuse(t *testing.T) {
	var askedClose atomic.Int32 // requests with Connection: close
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.Close && r.Header.Get("Connection") == "close" {
			askedClose.Add(1)
		}
		if r.URL.Query().Has("close") {
			w.Header().Set("Connection", "close")
		}
		io.WriteString(w, "hello")
	}))
	t.Cleanup(srv.Close)
	const n = 3
	cases := []struct {
		name       string
		set        func(*Transport)
		query      string
		prep       func(*http.Request)
		leaveBody  bool // close the response body unread
		wantDials  int
		wantAsked  int32
		wantIdleAt int
	}{
		{name: "kept (control)", wantDials: 1, wantIdleAt: 1},
		{name: "body closed unread", leaveBody: true, wantDials: n},
		{name: "server says close", query: "?close", wantDials: n},
		{name: "req.Close", prep: func(r *http.Request) { r.Close = true }, wantDials: n, wantAsked: n},
		{name: "DisableKeepAlives", set: func(tr *Transport) { tr.DisableKeepAlives = true }, wantDials: n, wantAsked: n},
		{name: "MaxIdleConnsPerHost < 0", set: func(tr *Transport) { tr.MaxIdleConnsPerHost = -1 }, wantDials: n},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			askedClose.Store(0)
			tr := closeAtEnd(t, &Transport{})
			if tc.set != nil {
				tc.set(tr)
			}
			for i := range n {
				req := newPost(t, context.Background(), srv.URL+tc.query, "body "+strconv.Itoa(i))
				if tc.prep != nil {
					tc.prep(req)
				}
				resp, err := tr.RoundTrip(req)
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				if !tc.leaveBody {
					if b, err := io.ReadAll(resp.Body); err != nil || string(b) != "hello" {
						t.Fatalf("request %d: body %q, %v", i, b, err)
					}
				}
				resp.Body.Close()
			}
			if d := dialsOf(tr); d != tc.wantDials {
				t.Errorf("%d dials for %d requests, want %d", d, n, tc.wantDials)
			}
			if a := askedClose.Load(); a != tc.wantAsked {
				t.Errorf("%d requests had Connection: close, want %d", a, tc.wantAsked)
			}
			if i := idleOf(t, tr, srv.URL); i != tc.wantIdleAt {
				t.Errorf("%d idle connections, want %d", i, tc.wantIdleAt)
			}
		})
	}
}

// TestTransportResendsOnClosedIdleConn: the server closed a kept connection
// while it was idle; the next request goes once more, on a new connection.
func TestTransportResendsOnClosedIdleConn(t *testing.T) {
	var mu sync.Mutex
	var seen []string // connection number: body
	closed0 := make(chan struct{})
	srv := newRawServer(t, func(n int, c net.Conn, br *bufio.Reader) {
		answer := func(_ *http.Request, body string) string {
			mu.Lock()
			seen = append(seen, fmt.Sprintf("%d:%s", n, body))
			mu.Unlock()
			return rawResponse(http.StatusOK, "ok "+body)
		}
		if n > 0 {
			serveAll(c, br, answer)
			return
		}
		if req, body, err := readRawRequest(br); err == nil {
			io.WriteString(c, answer(req, body)) // keep-alive: no Connection: close
		}
		c.Close()
		close(closed0)
	})
	tr := closeAtEnd(t, &Transport{})
	if _, body := mustDo(t, tr, newPost(t, context.Background(), srv.URL, "first")); body != "ok first" {
		t.Fatalf("first: %q", body)
	}
	wait(t, closed0, "the server to close the first connection")
	second := strings.Repeat("second ", 1000)
	if _, body := mustDo(t, tr, newPost(t, context.Background(), srv.URL, second)); body != "ok "+second {
		t.Fatalf("second: %.40q", body)
	}
	if d, a := dialsOf(tr), srv.accepted.Load(); d != 2 || a != 2 {
		t.Errorf("%d dials, %d connections accepted; want 2 and 2", d, a)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"0:first", "1:" + second}; !reflect.DeepEqual(seen, want) {
		t.Errorf("the server saw %.60q, want %.60q", seen, want)
	}
}

// TestTransportResendsOnlyOnce: a server that takes requests and closes
// without answering gets a request at most twice, when the first try was
// on a kept connection (and its body can be had again), else once.
func TestTransportResendsOnlyOnce(t *testing.T) {
	cases := []struct {
		name      string
		kept      bool // a first request answered on connection 0
		noGetBody bool
		wantSends int32 // connections that got the request, one each
	}{
		{name: "on a kept connection", kept: true, wantSends: 2},
		{name: "on a new connection", wantSends: 1},
		{name: "on a kept connection, no GetBody", kept: true, noGetBody: true, wantSends: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var sends atomic.Int32
			srv := newRawServer(t, func(n int, c net.Conn, br *bufio.Reader) {
				if n == 0 && tc.kept {
					_, body, err := readRawRequest(br)
					if err != nil {
						return
					}
					io.WriteString(c, echoAnswer(nil, body))
				}
				if _, _, err := readRawRequest(br); err == nil {
					sends.Add(1)
				}
				// returns: the connection is closed without an answer
			})
			tr := closeAtEnd(t, &Transport{})
			if tc.kept {
				mustDo(t, tr, newPost(t, context.Background(), srv.URL, "answered"))
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // ends endless resends
			defer cancel()
			req := newPost(t, ctx, srv.URL, "never answered")
			if tc.noGetBody {
				req.GetBody = nil
			}
			resp, _, err := roundTrip(tr, req)
			if err == nil {
				t.Fatalf("no error; status %d", resp.StatusCode)
			}
			s, a, d := sends.Load(), srv.accepted.Load(), dialsOf(tr)
			if s != tc.wantSends || a != tc.wantSends || int32(d) != tc.wantSends {
				t.Errorf("sent %d times, %d connections accepted, %d dials; want %d each", s, a, d, tc.wantSends)
			}
		})
	}
}

// TestTransportResendDialsNewConn: when the server has closed every kept
// connection (it restarted, say), the one resend must go on a new
// connection (as the Transport's doc says), not on another closed one.
func TestTransportResendDialsNewConn(t *testing.T) {
	ctx := t.Context()
	var arrived atomic.Int32
	both := make(chan struct{})
	closed := make(chan struct{}, 2)
	srv := newRawServer(t, func(n int, c net.Conn, br *bufio.Reader) {
		if n >= 2 {
			serveAll(c, br, echoAnswer)
			return
		}
		// Connections 0 and 1: both requests are answered once both came
		// (so that both connections are kept), then closed.
		_, body, err := readRawRequest(br)
		if err != nil {
			return
		}
		if arrived.Add(1) == 2 {
			close(both)
		}
		select {
		case <-both:
		case <-ctx.Done():
			return
		}
		io.WriteString(c, echoAnswer(nil, body))
		c.Close()
		closed <- struct{}{}
	})
	tr := closeAtEnd(t, &Transport{})
	reqs := []*http.Request{newPost(t, ctx, srv.URL, "a"), newPost(t, ctx, srv.URL, "b")}
	errs := make(chan error, len(reqs))
	var wg sync.WaitGroup
	for _, req := range reqs {
		wg.Go(func() {
			_, _, err := roundTrip(tr, req)
			errs <- err
		})
	}
	wg.Wait()
	for range reqs {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	wait(t, closed, "the server to close a connection")
	wait(t, closed, "the server to close a connection")
	if i, d := idleOf(t, tr, srv.URL), dialsOf(tr); i != 2 || d != 2 {
		t.Fatalf("setup: %d idle connections, %d dials; want 2 and 2", i, d)
	}

	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	resp, body, err := roundTrip(tr, newPost(t, rctx, srv.URL, "third"))
	if err != nil {
		t.Fatalf("both kept connections closed by the server: %v (dials %d, connections accepted %d)",
			err, dialsOf(tr), srv.accepted.Load())
	}
	if resp.StatusCode != http.StatusOK || body != "third" {
		t.Fatalf("%d %q", resp.StatusCode, body)
	}
	if d := dialsOf(tr); d != 3 {
		t.Errorf("%d dials, want 3", d)
	}
}

func TestTransportChunkedResponse(t *testing.T) {
	srv := newRawServer(t, func(n int, c net.Conn, br *bufio.Reader) {
		serveAll(c, br, func(_ *http.Request, body string) string {
			return "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTrailer: X-Trailer\r\n\r\n" +
				"6\r\nchunk \r\n" + fmt.Sprintf("%x;ext=1\r\n%s\r\n", len(body), body) +
				"0\r\nX-Trailer: end of " + body + "\r\n\r\n"
		})
	})
	tr := closeAtEnd(t, &Transport{})
	for i := range 3 {
		body := "body " + strconv.Itoa(i) + strings.Repeat(".", i*5000)
		resp, got, err := roundTrip(tr, newPost(t, context.Background(), srv.URL, body))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if got != "chunk "+body || resp.ContentLength != -1 || !reflect.DeepEqual(resp.TransferEncoding, []string{"chunked"}) {
			t.Fatalf("request %d: body %.40q, ContentLength %d, TransferEncoding %q", i, got, resp.ContentLength, resp.TransferEncoding)
		}
		if tr := resp.Trailer.Get("X-Trailer"); tr != "end of "+body {
			t.Fatalf("request %d: trailer %.40q", i, tr)
		}
	}
	if d, a := dialsOf(tr), srv.accepted.Load(); d != 1 || a != 1 {
		t.Errorf("%d dials, %d connections accepted; want 1 and 1", d, a)
	}
}

func TestTransportSkipsInterimResponses(t *testing.T) {
	srv := newRawServer(t, func(n int, c net.Conn, br *bufio.Reader) {
		serveAll(c, br, func(_ *http.Request, body string) string {
			return "HTTP/1.1 100 Continue\r\n\r\n" +
				"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n" +
				rawResponse(http.StatusCreated, "created "+body)
		})
	})
	tr := closeAtEnd(t, &Transport{})
	for i := range 2 {
		body := "item " + strconv.Itoa(i)
		if status, got := mustDo(t, tr, newPost(t, context.Background(), srv.URL, body)); status != http.StatusCreated || got != "created "+body {
			t.Fatalf("request %d: %d %q", i, status, got)
		}
	}
	if d, a := dialsOf(tr), srv.accepted.Load(); d != 1 || a != 1 {
		t.Errorf("%d dials, %d connections accepted; want 1 and 1", d, a)
	}
}

// TestTransportContextEnds: the server takes the request and does not
// answer (or stops in the middle of the body); the request's context ends.
func TestTransportContextEnds(t *testing.T) {
	for _, inBody := range []bool{false, true} {
		for _, deadline := range []bool{false, true} {
			name := map[bool]string{false: "head", true: "body"}[inBody] + "/" +
				map[bool]string{false: "cancel", true: "deadline"}[deadline]
			t.Run(name, func(t *testing.T) { testContextEnds(t, inBody, deadline) })
		}
	}
}

func testContextEnds(t *testing.T, inBody, deadline bool) {
	served := make(chan struct{}, 1)
	srv := newRawServer(t, func(n int, c net.Conn, br *bufio.Reader) {
		if n > 0 {
			serveAll(c, br, echoAnswer)
			return
		}
		if _, _, err := readRawRequest(br); err != nil {
			return
		}
		if inBody {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789")
		}
		served <- struct{}{}
		io.Copy(io.Discard, br) // no more answer, until the client closes
	})
	tr := closeAtEnd(t, &Transport{})

	ctx, cancel := context.WithCancel(context.Background())
	want := context.Canceled
	if deadline {
		ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
		want = context.DeadlineExceeded
	}
	defer cancel()
	req := newPost(t, ctx, srv.URL, "stalled")
	type result struct {
		err     error
		gotHead bool
		at      time.Time
	}
	done := make(chan result, 1)
	gotHead := make(chan struct{})
	go func() {
		var r result
		resp, err := tr.RoundTrip(req)
		if err == nil {
			r.gotHead = true
			close(gotHead)
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		r.err, r.at = err, time.Now()
		done <- r
	}()
	var ended time.Time
	if deadline {
		ended, _ = ctx.Deadline()
	} else {
		if inBody {
			wait(t, gotHead, "the response head")
		} else {
			wait(t, served, "the server to get the request")
		}
		ended = time.Now()
		cancel()
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(time.Until(ended) + 5*time.Second):
		t.Fatal("no return 5s after the context ended")
	}
	if r.gotHead != inBody {
		t.Errorf("got the response head: %v, want %v", r.gotHead, inBody)
	}
	if !errors.Is(r.err, want) {
		t.Errorf("error %v, want one that is %v", r.err, want)
	}
	if late := r.at.Sub(ended); late > 500*time.Millisecond {
		t.Errorf("returned %v after the context ended", late)
	}
	// The connection is not used again: the next request is answered on a
	// new one.
	nctx, ncancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer ncancel()
	if _, body := mustDo(t, tr, newPost(t, nctx, srv.URL, "next")); body != "next" {
		t.Fatalf("next: %q", body)
	}
	if d, a := dialsOf(tr), srv.accepted.Load(); d != 2 || a != 2 {
		t.Errorf("%d dials, %d connections accepted; want 2 and 2", d, a)
	}
}

// TestTransportEarlyAnswer: the server answers 413 after the request's
// head and closes without reading the (large) body: RoundTrip returns that
// answer, not the write's error.
func TestTransportEarlyAnswer(t *testing.T) {
	srv := newRawServer(t, func(n int, c net.Conn, br *bufio.Reader) {
		if _, err := http.ReadRequest(br); err != nil {
			return
		}
		io.WriteString(c, rawResponse(http.StatusRequestEntityTooLarge, "too large", "Connection: close"))
		// returns: closed with the body unread
	})
	tr := closeAtEnd(t, &Transport{})
	big := bytes.Repeat([]byte("x"), 8<<20)
	const n = 5
	for i := range n {
		req, err := http.NewRequest(http.MethodPost, srv.URL, bytes.NewReader(big))
		if err != nil {
			t.Fatal(err)
		}
		resp, body, err := roundTrip(tr, req)
		if err != nil {
			t.Fatalf("try %d: %v", i, err)
		}
		if resp.StatusCode != http.StatusRequestEntityTooLarge || body != "too large" {
			t.Fatalf("try %d: %d %q", i, resp.StatusCode, body)
		}
	}
	if d, a := dialsOf(tr), srv.accepted.Load(); d != n || a != n {
		t.Errorf("%d dials, %d connections accepted; want %d and %d", d, a, n, n)
	}
}

func TestTransportTLS(t *testing.T) {
	var handled atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handled.Add(1)
		body, _ := io.ReadAll(r.Body)
		if r.TLS == nil || r.ProtoMajor != 1 {
			http.Error(w, "want HTTP/1 over TLS", http.StatusBadRequest)
			return
		}
		w.Write(body)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake
	srv.StartTLS()
	t.Cleanup(srv.Close)

	cfg := &tls.Config{RootCAs: srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs}
	tr := closeAtEnd(t, &Transport{TLSConfig: cfg})
	for i := range 3 {
		body := "tls " + strconv.Itoa(i)
		if status, got := mustDo(t, tr, newPost(t, context.Background(), srv.URL, body)); status != http.StatusOK || got != body {
			t.Fatalf("request %d: %d %q", i, status, got)
		}
	}
	if d := dialsOf(tr); d != 1 {
		t.Errorf("%d dials for 3 requests, want 1", d)
	}
	if cfg.ServerName != "" || cfg.NextProtos != nil {
		t.Errorf("TLSConfig changed: ServerName %q, NextProtos %q", cfg.ServerName, cfg.NextProtos)
	}

	untrusting := closeAtEnd(t, &Transport{})
	resp, _, err := roundTrip(untrusting, newPost(t, context.Background(), srv.URL, "x"))
	if err == nil {
		t.Fatalf("no TLSConfig: no error, status %d", resp.StatusCode)
	}
	if !isTLS(err) {
		t.Errorf("no TLSConfig: %v (%T) is not a TLS error", err, err)
	}
	if h := handled.Load(); h != 3 {
		t.Errorf("the server handled %d requests, want 3", h)
	}
}

// TestTransportRefusesInvalidRequests: requests that cannot be sent right
// fail at once, with nothing sent, and their bodies are closed.
func TestTransportRefusesInvalidRequests(t *testing.T) {
	cases := []struct {
		name string
		prep func(r *http.Request, host string)
	}{
		{"header value with CRLF", func(r *http.Request, _ string) { r.Header.Set("X-Bad", "a\r\nX-Injected: 1") }},
		{"header name with space", func(r *http.Request, _ string) { r.Header["Bad Name"] = []string{"x"} }},
		{"body shorter than ContentLength", func(r *http.Request, _ string) { r.ContentLength = 100 }},
		{"body with ContentLength 0", func(r *http.Request, _ string) { r.ContentLength = 0 }},
		{"body with ContentLength -1", func(r *http.Request, _ string) { r.ContentLength = -1 }},
		{"ftp URL", func(r *http.Request, _ string) { r.URL.Scheme = "ftp" }},
		{"URL without host", func(r *http.Request, _ string) { r.URL.Host = "" }},
		{"ContentLength without body", func(r *http.Request, _ string) { r.Body = nil }},
		{"Host with CRLF", func(r *http.Request, host string) { r.Host = host + "\r\nX-Injected: 1" }},
		{"URL host with CRLF", func(r *http.Request, host string) { r.URL.Host = host + "\r\nX-Injected: 1" }},
		{"raw query with CRLF", func(r *http.Request, _ string) { r.URL.RawQuery = "a=b HTTP/1.1\r\nX-Injected: yes\r\nX-Pad:" }},
		{"opaque URL with a space", func(r *http.Request, _ string) { r.URL.Opaque = "/x y" }},
		{"header value with a control character", func(r *http.Request, _ string) { r.Header.Set("X-Bad", "a\x01b") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var handled atomic.Int32
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				handled.Add(1)
				io.Copy(io.Discard, r.Body)
			}))
			t.Cleanup(srv.Close)
			tr := closeAtEnd(t, &Transport{})
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			body := &trackedBody{Reader: strings.NewReader("payload")}
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/x", body)
			if err != nil {
				t.Fatal(err)
			}
			req.ContentLength = int64(len("payload"))
			tc.prep(req, srv.Listener.Addr().String())
			resp, err := tr.RoundTrip(req)
			if err == nil {
				resp.Body.Close()
				t.Fatalf("sent; status %d", resp.StatusCode)
			}
			if errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("failed only when the context ended: %v", err)
			}
			if req.Body != nil && !body.closed.Load() {
				t.Error("the request body was not closed")
			}
			if h := handled.Load(); h != 0 {
				t.Errorf("the server got %d requests", h)
			}
		})
	}
}

func TestTransportClose(t *testing.T) {
	var handled atomic.Int32
	srv, closed := closedConns(func(w http.ResponseWriter, r *http.Request) {
		handled.Add(1)
		io.Copy(io.Discard, r.Body)
	})
	srv.Start()
	t.Cleanup(srv.Close)
	tr := &Transport{}
	mustDo(t, tr, newPost(t, context.Background(), srv.URL, "x"))
	if i := idleOf(t, tr, srv.URL); i != 1 {
		t.Fatalf("%d idle connections before Close, want 1", i)
	}
	tr.Close()
	wait(t, closed, "the server to see the idle connection closed")
	if i := idleOf(t, tr, srv.URL); i != 0 {
		t.Errorf("%d idle connections after Close", i)
	}
	body := &trackedBody{Reader: strings.NewReader("y")}
	req, err := http.NewRequest(http.MethodPost, srv.URL, body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = 1
	if resp, err := tr.RoundTrip(req); !errors.Is(err, errTransportClosed) {
		if err == nil {
			resp.Body.Close()
		}
		t.Fatalf("RoundTrip after Close: %v", err)
	}
	if !body.closed.Load() {
		t.Error("the request body was not closed")
	}
	if d, h := dialsOf(tr), handled.Load(); d != 1 || h != 1 {
		t.Errorf("%d dials, %d requests handled; want 1 and 1", d, h)
	}
	tr.Close() // twice: harmless
}

func TestTransportIdleConnTimeout(t *testing.T) {
	srv, closed := closedConns(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
	})
	srv.Start()
	t.Cleanup(srv.Close)
	const timeout = 50 * time.Millisecond
	tr := closeAtEnd(t, &Transport{IdleConnTimeout: timeout})
	mustDo(t, tr, newPost(t, context.Background(), srv.URL, "1"))
	mustDo(t, tr, newPost(t, context.Background(), srv.URL, "2"))
	if d := dialsOf(tr); d != 1 {
		t.Fatalf("%d dials for 2 requests in a row, want 1", d)
	}
	time.Sleep(timeout + 10*time.Millisecond)
	mustDo(t, tr, newPost(t, context.Background(), srv.URL, "3"))
	if d := dialsOf(tr); d != 2 {
		t.Errorf("%d dials after %v idle, want 2", d, timeout+10*time.Millisecond)
	}
	wait(t, closed, "the server to see the timed-out connection closed")
	if i := idleOf(t, tr, srv.URL); i != 1 {
		t.Errorf("%d idle connections, want 1", i)
	}
}

// TestTransportIdleConnTimeoutOtherHosts: a connection to a host that is
// not asked for again (a node that left) is closed once expired, by a
// request to another host.
func TestTransportIdleConnTimeoutOtherHosts(t *testing.T) {
	gone, goneClosed := closedConns(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
	})
	gone.Start()
	t.Cleanup(gone.Close)
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
	}))
	t.Cleanup(other.Close)
	const timeout = 50 * time.Millisecond
	tr := closeAtEnd(t, &Transport{IdleConnTimeout: timeout})
	mustDo(t, tr, newPost(t, context.Background(), gone.URL, "1"))
	time.Sleep(timeout + 10*time.Millisecond)
	mustDo(t, tr, newPost(t, context.Background(), other.URL, "2"))
	wait(t, goneClosed, "the expired connection to the other host closed")
	if i := idleOf(t, tr, gone.URL); i != 0 {
		t.Errorf("%d idle connections to the host left, want 0", i)
	}
}

func TestTransportMaxIdleConnsPerHost(t *testing.T) {
	const n = 3
	ctx := t.Context()
	var arrived atomic.Int32
	all := make(chan struct{})
	srv, closed := closedConns(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if arrived.Add(1) == n {
			close(all)
		}
		select { // all n at once: n connections
		case <-all:
		case <-r.Context().Done():
			return
		case <-ctx.Done():
			return
		}
		w.Write(body)
	})
	srv.Start()
	t.Cleanup(srv.Close)
	tr := closeAtEnd(t, &Transport{MaxIdleConnsPerHost: 1})
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		req := newPost(t, ctx, srv.URL, "body "+strconv.Itoa(i))
		wg.Go(func() {
			_, body, err := roundTrip(tr, req)
			if err == nil && body != "body "+strconv.Itoa(i) {
				err = fmt.Errorf("request %d: body %q", i, body)
			}
			errs <- err
		})
	}
	wg.Wait()
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if d := dialsOf(tr); d != n {
		t.Errorf("%d dials, want %d", d, n)
	}
	if i := idleOf(t, tr, srv.URL); i != 1 {
		t.Errorf("%d idle connections, want 1", i)
	}
	for range n - 1 {
		wait(t, closed, "the server to see the extra connections closed")
	}
}

func TestTransportConcurrent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil || int64(len(body)) != r.ContentLength {
			http.Error(w, fmt.Sprintf("body of %d bytes, Content-Length %d, %v", len(body), r.ContentLength, err), http.StatusBadRequest)
			return
		}
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	tr := closeAtEnd(t, &Transport{})
	const workers, each = 8, 30
	errs := make(chan error, workers*each)
	var wg sync.WaitGroup
	for g := range workers {
		wg.Go(func() {
			for i := range each {
				body := fmt.Sprintf("%d-%d:", g, i) + strings.Repeat(string(rune('a'+g)), (g*each+i)*37%5000)
				req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
				if err != nil {
					errs <- err
					return
				}
				resp, got, err := roundTrip(tr, req)
				switch {
				case err != nil:
					errs <- fmt.Errorf("%d-%d: %v", g, i, err)
				case resp.StatusCode != http.StatusOK || got != body:
					errs <- fmt.Errorf("%d-%d: %d %.60q", g, i, resp.StatusCode, got)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if d := dialsOf(tr); d < 1 || d > workers {
		t.Errorf("%d dials for %d goroutines", d, workers)
	}
}

// firstConnServer is a raw server whose first connection first serves
// and whose later ones echo every request.
func firstConnServer(t *testing.T, first func(c net.Conn, br *bufio.Reader)) *rawServer {
	return newRawServer(t, func(n int, c net.Conn, br *bufio.Reader) {
		if n > 0 {
			serveAll(c, br, echoAnswer)
			return
		}
		first(c, br)
	})
}

// mustEcho sends body through tr and fails the test unless the answer is
// 200 with body.
func mustEcho(t *testing.T, tr *Transport, url, body string) {
	t.Helper()
	if code, got := mustDo(t, tr, newPost(t, context.Background(), url, body)); code != 200 || got != body {
		t.Fatalf("%q answered %d %q; want 200 %q", body, code, got, body)
	}
}

// TestTransportIdleConnSpoke: what a server sends on a kept connection
// while it is idle is never taken as the next request's answer (net/http
// does the same). Cases: a 408 as it closes the connection (RFC 9110
// allows it; proxies do it), read as a 408 for the next request, whose
// items the exporter then counted as refused for good; stray bytes after
// an answer, in the same write or later.
func TestTransportIdleConnSpoke(t *testing.T) {
	for _, tc := range []struct {
		name string
		// after writes, on connection 0, what follows the first answer
		// (immediately with it when same, else after 30 ms).
		after string
		same  bool
		close bool // then close connection 0
	}{
		{"408 as it closes", rawResponse(http.StatusRequestTimeout, "", "Connection: close"), false, true},
		{"stray answer later", rawResponse(http.StatusOK, "stale"), false, false},
		{"stray answer in the same write", rawResponse(http.StatusOK, "stale"), true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := firstConnServer(t, func(c net.Conn, br *bufio.Reader) {
				_, body, err := readRawRequest(br)
				if err != nil {
					return
				}
				first := echoAnswer(nil, body)
				if tc.same {
					io.WriteString(c, first+tc.after)
				} else {
					io.WriteString(c, first)
					time.Sleep(30 * time.Millisecond)
					io.WriteString(c, tc.after)
				}
				if tc.close {
					return
				}
				serveAll(c, br, echoAnswer) // connection 0 stays open
			})
			tr := closeAtEnd(t, &Transport{})
			mustEcho(t, tr, srv.URL, "first")
			time.Sleep(100 * time.Millisecond)
			mustEcho(t, tr, srv.URL, "second")
			if d := dialsOf(tr); d != 2 {
				t.Errorf("%d dials; want 2 (connection 0 not reused)", d)
			}
		})
	}
}

// TestTransportIdle408AfterLook: a 408 that arrives just after the look
// at the idle connection (here: written once the next request is read) is
// taken as that connection's closing, not as the request's answer: the
// request goes once more on a new connection.
func TestTransportIdle408AfterLook(t *testing.T) {
	srv := firstConnServer(t, func(c net.Conn, br *bufio.Reader) {
		if _, body, err := readRawRequest(br); err == nil {
			io.WriteString(c, echoAnswer(nil, body))
		}
		if _, _, err := readRawRequest(br); err == nil {
			io.WriteString(c, rawResponse(http.StatusRequestTimeout, "", "Connection: close"))
		}
	})
	tr := closeAtEnd(t, &Transport{})
	mustEcho(t, tr, srv.URL, "first")
	mustEcho(t, tr, srv.URL, "second")
	// On a new connection a 408 is the answer.
	srv408 := newRawServer(t, func(n int, c net.Conn, br *bufio.Reader) {
		if _, _, err := readRawRequest(br); err == nil {
			io.WriteString(c, rawResponse(http.StatusRequestTimeout, "", "Connection: close"))
		}
	})
	if code, _ := mustDo(t, tr, newPost(t, context.Background(), srv408.URL, "x")); code != http.StatusRequestTimeout {
		t.Fatalf("a 408 on a new connection: %d", code)
	}
}

// TestTransportNoResendOnceAnswered: a connection that breaks after the
// server began to answer (here an interim 100, then a reset) fails the
// request; it is not sent again, since the server may have processed it.
func TestTransportNoResendOnceAnswered(t *testing.T) {
	var sends atomic.Int32
	srv := newRawServer(t, func(n int, c net.Conn, br *bufio.Reader) {
		if n == 0 {
			if _, body, err := readRawRequest(br); err == nil {
				io.WriteString(c, echoAnswer(nil, body))
			}
		}
		if _, _, err := readRawRequest(br); err == nil {
			sends.Add(1)
			io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\n")
			time.Sleep(20 * time.Millisecond)
			c.(*net.TCPConn).SetLinger(0) // a reset
		}
	})
	tr := closeAtEnd(t, &Transport{})
	mustDo(t, tr, newPost(t, context.Background(), srv.URL, "first"))
	if resp, _, err := roundTrip(tr, newPost(t, context.Background(), srv.URL, "second")); err == nil {
		t.Fatalf("no error; status %d", resp.StatusCode)
	}
	if s := sends.Load(); s != 1 {
		t.Fatalf("the server got the request %d times; want 1", s)
	}
}

// TestTransportSwitchingProtocolsNotReused: after a 101 the connection
// speaks something else; it is not put back for the next request.
func TestTransportSwitchingProtocolsNotReused(t *testing.T) {
	srv := firstConnServer(t, func(c net.Conn, br *bufio.Reader) {
		if _, _, err := readRawRequest(br); err == nil {
			io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: foo\r\nConnection: Upgrade\r\n\r\nFOO-PROTOCOL-BYTES")
		}
		time.Sleep(time.Second)
	})
	tr := closeAtEnd(t, &Transport{})
	if code, _ := mustDo(t, tr, newPost(t, context.Background(), srv.URL, "first")); code != http.StatusSwitchingProtocols {
		t.Fatalf("first: %d", code)
	}
	mustEcho(t, tr, srv.URL, "second")
}
