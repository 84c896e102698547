package bulk

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Transport is a plain HTTP/1.1 client transport for the exporter's _bulk
// requests, an http.RoundTripper. Each request is written and its answer
// read on the calling goroutine over a kept-alive connection, the request
// line, headers and body in one write. net/http's Transport passes each
// request through two goroutines of its connection, writes the headers
// and the body separately, and allocates a 32 KiB copy buffer per request;
// on two cores that costs about a sixth of a push's time (BENCHMARKS.md).
//
// It does only what _bulk needs: no proxies, no HTTP/2, no compression, no
// redirects, no 100-continue; a request's body must have a known
// ContentLength. http and https (TLSConfig) URLs are served.
//
// Before a kept-alive connection is used again, it is looked at without
// reading (on Unix): one the server closed, or sent anything on while it
// was idle (a 408 as it closes it, stray bytes), is closed instead, so
// that nothing is taken as the next request's answer. A request that still
// fails on a kept-alive connection before any of the answer was read (the
// server closed it just then), or whose first answer there is a 408, is
// sent once more on a new connection, when req.GetBody can give its body
// again; once the server has begun to answer, never. Set the fields before
// the first request.
type Transport struct {
	// TLSConfig for https URLs; nil: crypto/tls defaults. ServerName is
	// set from the URL's host when empty.
	TLSConfig *tls.Config
	// DialTimeout bounds connecting (with the TLS handshake); 0: 30s.
	DialTimeout time.Duration
	// MaxIdleConnsPerHost kept for reuse; 0: 32, < 0: none.
	MaxIdleConnsPerHost int
	// IdleConnTimeout: a connection idle for longer is not used again, and
	// is closed by a later request (to any host; there is no timer).
	// 0: never.
	IdleConnTimeout time.Duration
	// DisableKeepAlives: one connection per request.
	DisableKeepAlives bool

	mu     sync.Mutex
	idle   map[string][]*wireConn // by scheme://host:port, most recent last
	swept  time.Time              // when idle was last rid of expired connections
	closed bool

	// dials counts connections made (tests).
	dials int

	sessionsOnce sync.Once
	sessions     tls.ClientSessionCache
}

// sessionCache is the TLS session cache of connections whose TLSConfig has
// none: a new connection to a node resumes an earlier session (an
// abbreviated handshake, no certificate chain sent or verified again).
func (t *Transport) sessionCache() tls.ClientSessionCache {
	t.sessionsOnce.Do(func() { t.sessions = tls.NewLRUClientSessionCache(256) })
	return t.sessions
}

// wireConn is one connection of a Transport.
type wireConn struct {
	t    *Transport
	key  string
	conn net.Conn
	br   *bufio.Reader
	used time.Time // when it went idle
	head []byte    // request line and headers being written
}

const defaultIdlePerHost = 32

// aLongTimeAgo is a deadline in the past: it makes blocked reads and
// writes of a connection return at once.
var aLongTimeAgo = time.Unix(1, 0)

var errTransportClosed = errors.New("bulk: transport closed")

// RoundTrip sends req and returns its response, whose Body must be read
// and closed (the connection is reused only once the body was read to its
// end). The response's body reads end when req's context does.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	if err := validRequest(req); err != nil {
		closeBody(req)
		return nil, err
	}
	u := req.URL
	ctx := req.Context()
	addr := canonicalHost(u.Scheme, u.Host)
	key := u.Scheme + "://" + addr
	for attempt := 0; ; attempt++ {
		wc, reused, err := t.get(ctx, key, u.Scheme, addr, attempt == 0)
		if err != nil {
			closeBody(req)
			return nil, err
		}
		resp, fresh, err := wc.roundTrip(req, reused)
		if err == nil {
			return resp, nil
		}
		wc.close()
		if !reused || !fresh || attempt > 0 || ctx.Err() != nil || isTimeout(err) {
			closeBody(req)
			return nil, err
		}
		// The kept connection was closed by the server while idle: once
		// more, on a new one (the other idle ones may be as stale, after a
		// restart of the node).
		if req.Body != nil && req.Body != http.NoBody {
			if req.GetBody == nil {
				return nil, err
			}
			body, gerr := req.GetBody()
			if gerr != nil {
				return nil, err
			}
			r2 := *req
			r2.Body = body
			req = &r2
		}
	}
}

// errIdle408 is the error of a request answered 408 on a kept connection
// when it cannot be sent again.
var errIdle408 = errors.New("bulk: transport: 408 Request Timeout on a kept connection (closed by the server while idle)")

// validRequest refuses what the transport cannot send, or could only send
// as a malformed request, before a connection is taken for it.
func validRequest(req *http.Request) error {
	u := req.URL
	if u == nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return errors.New("bulk: transport: want an http(s)://host URL")
	}
	hasBody := req.Body != nil && req.Body != http.NoBody
	switch {
	case hasBody && req.ContentLength <= 0:
		return errors.New("bulk: transport: a request body needs its ContentLength")
	case !hasBody && req.ContentLength != 0:
		return fmt.Errorf("bulk: transport: ContentLength %d without a body", req.ContentLength)
	case req.Method != "" && !validToken(req.Method):
		return fmt.Errorf("bulk: transport: invalid method %q", req.Method)
	case strings.ContainsAny(req.Host, " \r\n\x00"), strings.ContainsAny(u.Host, " \r\n\x00"):
		return errors.New("bulk: transport: invalid Host")
	case strings.IndexFunc(u.RequestURI(), func(r rune) bool { return r <= ' ' || r == 0x7f }) >= 0:
		return errors.New("bulk: transport: a space or control character in the request URI")
	}
	for k, vs := range req.Header {
		if !validToken(k) {
			return fmt.Errorf("bulk: transport: invalid header name %q", k)
		}
		for _, v := range vs {
			// Field values: visible characters, spaces and tabs (RFC 9110).
			if strings.IndexFunc(v, func(r rune) bool { return (r < ' ' && r != '\t') || r == 0x7f }) >= 0 {
				return fmt.Errorf("bulk: transport: invalid value of header %q", k)
			}
		}
	}
	return nil
}

// validToken reports whether s is an HTTP token (a method or header name).
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c >= 0x7f || strings.IndexByte("\"(),/:;<=>?@[\\]{}", c) >= 0 {
			return false
		}
	}
	return true
}

func closeBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

// canonicalHost adds the scheme's default port to a host without one.
func canonicalHost(scheme, host string) string {
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	if scheme == "https" {
		return net.JoinHostPort(strings.Trim(host, "[]"), "443")
	}
	return net.JoinHostPort(strings.Trim(host, "[]"), "80")
}

// get returns an idle connection to key (if idle), or a new one to addr
// (host:port).
func (t *Transport) get(ctx context.Context, key, scheme, addr string, idle bool) (*wireConn, bool, error) {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil, false, errTransportClosed
	}
	now := time.Now()
	expired := t.expireLocked(now)
	for list := t.idle[key]; idle && len(list) > 0; list = t.idle[key] {
		wc := list[len(list)-1]
		list[len(list)-1] = nil
		t.idle[key] = list[:len(list)-1]
		if t.IdleConnTimeout > 0 && now.Sub(wc.used) > t.IdleConnTimeout {
			expired = append(expired, wc)
			continue
		}
		t.mu.Unlock()
		closeAll(expired)
		expired = expired[:0]
		// Anything the server sent while the connection was idle (a 408
		// as it closed it, stray bytes) would be read as this request's
		// answer: such a connection is closed, not used.
		if peerSpoke(wc.conn) {
			wc.conn.Close()
			t.mu.Lock()
			if t.closed {
				t.mu.Unlock()
				return nil, false, errTransportClosed
			}
			continue
		}
		return wc, true, nil
	}
	t.dials++
	t.mu.Unlock()
	closeAll(expired)
	wc, err := t.dial(ctx, key, scheme, addr)
	return wc, false, err
}

func (t *Transport) dial(ctx context.Context, key, scheme, addr string) (*wireConn, error) {
	timeout := t.DialTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	dctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	d := net.Dialer{KeepAlive: 30 * time.Second}
	conn, err := d.DialContext(dctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	wc := &wireConn{t: t, key: key, conn: conn}
	if scheme == "https" {
		cfg := t.TLSConfig.Clone()
		if cfg == nil {
			cfg = &tls.Config{}
		}
		if cfg.ServerName == "" {
			cfg.ServerName, _, _ = net.SplitHostPort(addr) // canonicalHost's: has a port
		}
		cfg.NextProtos = nil // HTTP/1.1 only
		if cfg.ClientSessionCache == nil {
			cfg.ClientSessionCache = t.sessionCache()
		}
		tc := tls.Client(conn, cfg)
		if err := tc.HandshakeContext(dctx); err != nil {
			conn.Close()
			return nil, fmt.Errorf("TLS handshake with %s: %w", addr, err)
		}
		wc.conn = tc
	}
	wc.br = bufio.NewReaderSize(wc.conn, 32<<10)
	return wc, nil
}

// expireLocked takes out of idle, at most once per IdleConnTimeout, the
// connections idle for longer than that (of every host: a node that left
// the cluster is never asked for again), for the caller to close.
func (t *Transport) expireLocked(now time.Time) []*wireConn {
	if t.IdleConnTimeout <= 0 || now.Sub(t.swept) < t.IdleConnTimeout/2 {
		return nil
	}
	t.swept = now
	var expired []*wireConn
	for key, list := range t.idle {
		k := 0 // oldest first
		for k < len(list) && now.Sub(list[k].used) > t.IdleConnTimeout {
			k++
		}
		if k == 0 {
			continue
		}
		expired = append(expired, list[:k]...)
		if k == len(list) {
			delete(t.idle, key)
			continue
		}
		n := copy(list, list[k:])
		clear(list[n:])
		t.idle[key] = list[:n]
	}
	return expired
}

func closeAll(conns []*wireConn) {
	for _, wc := range conns {
		wc.close()
	}
}

// put keeps wc for reuse, or closes it.
func (t *Transport) put(wc *wireConn) {
	max := t.MaxIdleConnsPerHost
	if max == 0 {
		max = defaultIdlePerHost
	}
	if wc.br.Buffered() > 0 { // bytes past the answer: nobody asked for them
		wc.conn.Close()
		return
	}
	t.mu.Lock()
	if t.closed || t.DisableKeepAlives || max < 0 || len(t.idle[wc.key]) >= max {
		t.mu.Unlock()
		wc.conn.Close()
		return
	}
	if t.idle == nil {
		t.idle = map[string][]*wireConn{}
	}
	wc.used = time.Now()
	t.idle[wc.key] = append(t.idle[wc.key], wc)
	t.mu.Unlock()
}

// CloseIdleConnections closes the connections kept for reuse.
func (t *Transport) CloseIdleConnections() {
	t.mu.Lock()
	idle := t.idle
	t.idle = nil
	t.mu.Unlock()
	for _, list := range idle {
		for _, wc := range list {
			wc.conn.Close()
		}
	}
}

// Close closes the idle connections and makes later requests fail.
func (t *Transport) Close() {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	t.CloseIdleConnections()
}

func (wc *wireConn) close() { wc.conn.Close() }

// roundTrip writes req and reads the head of its response. fresh tells,
// with an error, whether it looks like the connection had been closed by
// the server before this request (it broke, or ended, before any answer
// came, or the first answer on a kept connection, reused, is a 408): then
// the transport may send the request again on a new one.
func (wc *wireConn) roundTrip(req *http.Request, reused bool) (resp *http.Response, fresh bool, err error) {
	ctx := req.Context()
	if d, ok := ctx.Deadline(); ok {
		_ = wc.conn.SetDeadline(d)
	}
	stop := context.AfterFunc(ctx, func() { _ = wc.conn.SetDeadline(aLongTimeAgo) })
	// fail ends the round trip with err; fresh: nothing of an answer was
	// read and err says the connection was closed (see RoundTrip).
	fail := func(err error, answered bool) (*http.Response, bool, error) {
		stop()
		fresh := !answered && (errors.Is(err, io.EOF) || isConnDown(err))
		if ctxExpired(ctx, err) {
			err = fmt.Errorf("%w (%v)", ctx.Err(), err)
		}
		return nil, fresh, err
	}
	closeReq := req.Close || wc.t.DisableKeepAlives
	wc.writeHead(req, closeReq)
	werr := wc.writeBody(req)
	if werr != nil && ctx.Err() == nil {
		// The server may have answered before reading the whole body (a
		// 413 or 401) and closed: read that answer if it came.
		d := time.Now().Add(100 * time.Millisecond)
		if cd, ok := ctx.Deadline(); ok && cd.Before(d) {
			d = cd
		}
		_ = wc.conn.SetReadDeadline(d)
	}
	// Nothing at all to read (io.EOF, a reset) is a connection the server
	// had closed; http.ReadResponse would call it an unexpected EOF, as it
	// does an answer cut short, which must not be sent again.
	if _, err := wc.br.Peek(1); err != nil {
		if werr != nil {
			return fail(werr, false)
		}
		return fail(err, false)
	}
	// From here on the server has begun to answer: whatever fails, the
	// request may have been processed, and is not sent again.
	for {
		resp, err = http.ReadResponse(wc.br, req)
		if err != nil {
			if werr != nil {
				return fail(werr, true)
			}
			return fail(err, true)
		}
		if resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			continue // an interim answer: the final one follows
		}
		break
	}
	if reused && resp.StatusCode == http.StatusRequestTimeout {
		// The first answer on a kept connection is a 408: the server sent
		// it as it closed the idle connection, before this request came
		// (peerSpoke misses one that arrives just after its look). The
		// request was not processed: as for a connection found closed.
		stop()
		wc.close() // before the body, whose Close would read what is left
		_ = resp.Body.Close()
		return nil, true, errIdle408
	}
	if werr != nil || resp.StatusCode == http.StatusSwitchingProtocols {
		// The request was not all sent, or the connection is no longer
		// HTTP/1.1: never reuse it.
		resp.Close = true
	}
	resp.Body = &wireBody{ctx: ctx, wc: wc, rc: resp.Body, stop: stop, reuse: !resp.Close && !closeReq,
		eof: resp.Body == http.NoBody}
	return resp, false, nil
}

// writeHead formats the request line and headers into wc.head (validRequest
// has checked them).
func (wc *wireConn) writeHead(req *http.Request, closeReq bool) {
	method := req.Method
	if method == "" {
		method = http.MethodGet
	}
	host := req.Host
	if host == "" {
		host = req.URL.Host
	}
	h := append(wc.head[:0], method...)
	h = append(h, ' ')
	h = append(h, req.URL.RequestURI()...)
	h = append(h, " HTTP/1.1\r\nHost: "...)
	h = append(h, host...)
	h = append(h, "\r\n"...)
	for k, vs := range req.Header {
		switch http.CanonicalHeaderKey(k) {
		case "Host", "Content-Length", "Connection", "Transfer-Encoding":
			continue // written here, from the request's fields
		}
		for _, v := range vs {
			h = append(h, k...)
			h = append(h, ": "...)
			h = append(h, v...)
			h = append(h, "\r\n"...)
		}
	}
	if req.ContentLength > 0 {
		h = append(h, "Content-Length: "...)
		h = strconv.AppendInt(h, req.ContentLength, 10)
		h = append(h, "\r\n"...)
	}
	if closeReq {
		h = append(h, "Connection: close\r\n"...)
	}
	wc.head = append(h, "\r\n"...)
}

// writeBody writes the head and the body through a pooled buffer, a
// sub-bulk of up to its size in one write with the head. A body Send made
// is copied into it straight from the Batch's arena. (net/http copies the
// body too, through a 32 KiB buffer it allocates per request; one writev of
// the arena's slices, one per item, costs the kernel more than the copy.)
func (wc *wireConn) writeBody(req *http.Request) error {
	if req.Body == nil || req.Body == http.NoBody {
		_, err := wc.conn.Write(wc.head)
		return err
	}
	defer req.Body.Close()
	bufp := writePool.Get().(*[]byte)
	defer writePool.Put(bufp)
	if b, ok := req.Body.(*body); ok {
		return b.writeTo(wc.conn, wc.head, *bufp, req.ContentLength)
	}
	p := append((*bufp)[:0], wc.head...)
	for left := req.ContentLength; left > 0; {
		if len(p) == cap(p) {
			if _, err := wc.conn.Write(p); err != nil {
				return err
			}
			p = p[:0]
		}
		k, err := req.Body.Read(p[len(p):min(int64(cap(p)), int64(len(p))+left)])
		p = p[:len(p)+k]
		left -= int64(k)
		if err == io.EOF && left > 0 {
			return fmt.Errorf("bulk: transport: body has %d bytes, ContentLength %d", req.ContentLength-left, req.ContentLength)
		}
		if err != nil && err != io.EOF {
			return err
		}
	}
	_, err := wc.conn.Write(p)
	return err
}

// writePool holds the buffers request bodies are written through: a
// sub-bulk of up to this size goes in one write, a larger one in pieces of
// it. A buffer is held only while its request is being written.
var writePool = sync.Pool{New: func() any { b := make([]byte, 0, 256<<10); return &b }}

// wireBody is a response body: once read to its end and closed, its
// connection is kept for the next request.
type wireBody struct {
	ctx    context.Context
	wc     *wireConn
	rc     io.ReadCloser
	stop   func() bool
	reuse  bool
	eof    bool
	closed bool
}

func (b *wireBody) Read(p []byte) (int, error) {
	if b.closed {
		return 0, errors.New("bulk: read of a closed response body")
	}
	n, err := b.rc.Read(p)
	if err == io.EOF {
		b.eof = true
	} else if err != nil && ctxExpired(b.ctx, err) {
		err = fmt.Errorf("%w (%v)", b.ctx.Err(), err)
	}
	return n, err
}

// ctxExpired reports whether ctx has ended, after err. The connection's
// deadline is the context's: its timeout can be seen a moment before the
// context's own timer has fired, and then this waits for that moment, so
// that the caller sees its context ended (and not a slow node).
func ctxExpired(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return true
	}
	if d, ok := ctx.Deadline(); ok && isTimeout(err) && !time.Now().Before(d) {
		<-ctx.Done()
		return true
	}
	return false
}

func (b *wireBody) Close() error {
	if b.closed {
		return nil
	}
	b.closed = true
	if !b.eof {
		// Not read to its end: the connection cannot be reused (closing it
		// first makes the body's own Close, which drains, return at once).
		b.wc.close()
		b.stop()
		_ = b.rc.Close()
		return nil
	}
	_ = b.rc.Close()
	if !b.stop() || !b.reuse {
		b.wc.close() // the context ended meanwhile, or the server said close
		return nil
	}
	if err := b.wc.conn.SetDeadline(time.Time{}); err != nil {
		b.wc.close()
		return nil
	}
	b.wc.t.put(b.wc)
	return nil
}
