package bulk

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/opensearchrouted/opensearchrouted/internal/httpio"
)

// filterPath keeps only what Send reads: the errors flag; per item the
// index, the status, the error's type and reason and its first caused_by's
// type and reason; a whole-request error's type and reason.
const filterPath = "errors,items.*._index,items.*.status,items.*.error.type,items.*.error.reason,items.*.error.caused_by.type,items.*.error.caused_by.reason,error.type,error.reason"

// DefaultMaxResponseBytes bounds a response body when Client.MaxResponseBytes
// is 0.
const DefaultMaxResponseBytes = 128 << 20

// maxErrorBody bounds how much of a non-2xx response is read.
const maxErrorBody = 64 << 10

var ndjson = []string{"application/x-ndjson"}

// Client sends sub-bulks. Its zero value works (http.DefaultClient, no
// timeout of its own). Set the fields before the first Send and do not
// change them afterwards. Send is safe for concurrent use.
type Client struct {
	// HTTP sends the requests; nil means http.DefaultClient. Authentication,
	// TLS, compression and proxies are its Transport's business (confighttp's
	// client). Send calls HTTP.Transport.RoundTrip itself (http.Client's
	// per-request header copying for redirects costs allocations we do not
	// need): HTTP.Timeout is honoured (as the request's own timeout), a
	// redirect is not followed (a 3xx is KindRejected) and HTTP.Jar is not
	// used. User info in baseURL becomes a basic Authorization header.
	HTTP *http.Client
	// Timeout bounds each HTTP request (one attempt at one sub-bulk, or one
	// half after a 413); the shorter of Timeout and HTTP.Timeout applies.
	// 0: none of its own, only the caller's context and HTTP.Timeout. When it expires the node is taken to be down
	// (KindNodeDown, ErrTimeout), unlike the caller's own context ending
	// (KindCanceled).
	Timeout time.Duration
	// Header is added to every request (read-only once sending has begun).
	// Content-Type is always application/x-ndjson.
	Header http.Header
	// MaxResponseBytes bounds a response body; 0 means
	// DefaultMaxResponseBytes. A larger response is a KindBadResponse error.
	MaxResponseBytes int64

	urlMu sync.Mutex
	urls  map[string]*target // baseURL → where to send (read-only)
	names interner           // index names and error types
}

// Result tells what one Send did.
type Result struct {
	// Requests is the number of HTTP requests sent: 1, more after 413 splits.
	Requests int
	// Bytes is the request body bytes sent, over all requests.
	Bytes int64
	// Status is the HTTP status of the last response, 0 if none came.
	Status int
	// Counts holds the number of items per Class (Counts[Retry], ...).
	Counts [NumClasses]int
}

// NumClasses is the number of item classes.
const NumClasses = int(numClasses)

// Kind says how a whole request failed.
type Kind uint8

const (
	// KindNodeDown: connection refused, reset or closed, or the request's own
	// timeout (Client.Timeout, HTTP.Timeout) expired. Mark the node dead,
	// refresh the topology, re-locate and resend its items. The items may
	// have been written (a timeout): resending creates with the same ids
	// gives 409s, counted as duplicates.
	KindNodeDown Kind = iota + 1
	// KindTLS: TLS handshake or certificate failure. The node cannot be used
	// until the configuration is fixed; its items can go elsewhere.
	KindTLS
	// KindThrottled: HTTP 429 for the whole request. Shrink the node's
	// window, retry all items after a backoff.
	KindThrottled
	// KindServer: HTTP 5xx, or 408 (a proxy or server that timed out
	// waiting for the request: it was not processed), for the whole
	// request. Retry all items.
	KindServer
	// KindBadResponse: a 2xx response that cannot be read: malformed,
	// truncated, too large, or with another item count than sent. Retry all
	// items.
	KindBadResponse
	// KindAuth: HTTP 401 or 403. Permanent: the credentials are missing,
	// wrong or lack the privilege to write.
	KindAuth
	// KindRejected: any other non-2xx status (400, 404, 3xx, ...).
	// Permanent.
	KindRejected
	// KindCanceled: the caller's context ended. The items may have been
	// written; retry them later.
	KindCanceled
	// KindBlocked: a cluster-wide block refused the whole request: any 4xx
	// with cluster_block_exception. 2.19.6 and 3.9.0 answer 403 "blocked
	// by: [FORBIDDEN/6/cluster read-only (api)];" for cluster.blocks.read_only
	// and "[FORBIDDEN/13/cluster read-only / allow delete (api)]" for
	// cluster.blocks.read_only_allow_delete. A temporary state: retry all
	// items after a backoff (the items carry the status and type, which
	// Classify takes as Retry).
	KindBlocked
)

func (k Kind) String() string {
	switch k {
	case KindNodeDown:
		return "node_down"
	case KindTLS:
		return "tls"
	case KindThrottled:
		return "throttled"
	case KindServer:
		return "server_error"
	case KindBadResponse:
		return "bad_response"
	case KindAuth:
		return "auth"
	case KindRejected:
		return "rejected"
	case KindCanceled:
		return "canceled"
	case KindBlocked:
		return "blocked"
	}
	return "unknown"
}

// RequestError is a whole-request failure. Its message names the node (host
// and port only), the status and the server's error type and reason (cut by
// SafeReason); never credentials or document contents.
type RequestError struct {
	Kind   Kind
	Node   string // host:port of the node
	Status int    // HTTP status, 0 if no response
	Type   string // the server's error.type, if it sent one
	Reason string // the server's error.reason, cut by SafeReason
	Err    error  // the underlying error, if any
}

func (e *RequestError) Error() string {
	var sb strings.Builder
	sb.WriteString("bulk to ")
	sb.WriteString(e.Node)
	sb.WriteString(": ")
	switch e.Kind {
	case KindAuth:
		if e.Status == http.StatusUnauthorized {
			sb.WriteString("HTTP 401: authentication failed: the server rejected the exporter's credentials (missing or wrong username/password, token or certificate)")
		} else {
			sb.WriteString("HTTP 403: permission denied: the exporter's credentials are not allowed to write with _bulk (indices:data/write/bulk*) to these indices")
		}
	case KindNodeDown, KindTLS, KindCanceled:
		sb.WriteString(e.Kind.String())
	default:
		if e.Status != 0 {
			fmt.Fprintf(&sb, "HTTP %d (%s)", e.Status, e.Kind)
		} else {
			sb.WriteString(e.Kind.String())
		}
	}
	if e.Type != "" {
		sb.WriteString(": ")
		sb.WriteString(e.Type)
	}
	if e.Reason != "" {
		sb.WriteString(": ")
		sb.WriteString(e.Reason)
	}
	if e.Err != nil {
		sb.WriteString(": ")
		sb.WriteString(e.Err.Error())
	}
	return sb.String()
}

func (e *RequestError) Unwrap() error { return e.Err }

// Retryable reports whether the items may succeed if sent again (later, or
// to another node).
func (e *RequestError) Retryable() bool {
	return e.Kind != KindAuth && e.Kind != KindRejected
}

// IsNodeDown reports whether err is a whole-request failure that means the
// node cannot be used now (KindNodeDown or KindTLS): the caller marks it
// dead and re-routes its items.
func IsNodeDown(err error) bool {
	var re *RequestError
	return errors.As(err, &re) && (re.Kind == KindNodeDown || re.Kind == KindTLS)
}

// IsValidationFailure reports whether err is a whole-request 400
// action_request_validation_exception: the server checked every item before
// running any and refused the request for one or more of them (on 2.19.6
// and 3.9.0, an _id over 512 bytes: "Validation Failed: 1: id [...] is too
// long, must be no longer than 512 bytes but was: 600;", one numbered entry
// per bad item). Nothing of the request was written, the good items
// included: sending the items in parts isolates the bad ones.
func IsValidationFailure(err error) bool {
	var re *RequestError
	return errors.As(err, &re) && re.Status == http.StatusBadRequest && re.Type == errValidation
}

// errValidation is the type of a whole-request validation failure.
const errValidation = "action_request_validation_exception"

// IsRetryable reports whether err is a whole-request failure after which the
// items may be sent again.
func IsRetryable(err error) bool {
	var re *RequestError
	return errors.As(err, &re) && re.Retryable()
}

// Send posts items (item numbers of b, in order) as one _bulk request to
// the node at baseURL ("http://host:port", maybe with a path prefix) and
// writes item items[k]'s outcome to out[k]. out must have at least
// len(items) elements.
//
// Every item gets an outcome, whatever happens:
//   - per-item results of the server, classified by Classify;
//   - a whole-request failure: the error is a *RequestError and each item
//     that got no per-item result carries the failure: Status 0 and one of
//     the Err* types (Retry), or the HTTP status (429, 5xx and a
//     cluster_block_exception: Retry; 401, 403 and other 4xx: Permanent)
//     with the server's error type and reason;
//   - 413 (request too large): Send splits the items in halves and sends
//     each half on its own, recursively; an item refused with 413 on its own
//     gets Status 413, ErrTooLarge (Permanent). After a 413 split, a failure
//     of one part stops the rest: the parts already answered keep their
//     outcomes, the others carry the failure.
//
// When every item goes to the same index, the request goes to
// {baseURL}/{index}/_bulk and each action line is sent without its
// "_index" field, which the server then takes from the URL: fewer bytes to
// send and for the server to parse (about 40 per item for an SS4O data
// stream name).
//
// The body is read straight from b's arena (nothing is copied on this
// side); b must not change until Send returns. Send returns only once the
// HTTP machinery can no longer read b.
func (c *Client) Send(ctx context.Context, baseURL string, b *Batch, items []int32, out []Outcome) (Result, error) {
	var res Result
	if len(out) < len(items) {
		return res, fmt.Errorf("bulk: %d outcomes for %d items", len(out), len(items))
	}
	if len(items) == 0 {
		return res, nil
	}
	out = out[:len(items)]
	tg, err := c.target(baseURL)
	var reqErr *RequestError
	if err != nil {
		reqErr = &RequestError{Kind: KindNodeDown, Node: "invalid URL", Err: err}
		fill(out, Outcome{ErrorType: ErrConnection, ErrorReason: err.Error()})
	} else {
		reqErr = c.send(ctx, tg, b, items, out, &res)
	}
	for i := range out {
		res.Counts[Classify(out[i])]++
	}
	if reqErr != nil {
		return res, reqErr
	}
	return res, nil
}

func fill(out []Outcome, o Outcome) {
	for i := range out {
		out[i] = o
	}
}

// send sends items, splitting on 413 and on a whole-request validation
// failure.
func (c *Client) send(ctx context.Context, tg *target, b *Batch, items []int32, out []Outcome, res *Result) *RequestError {
	status, err := c.once(ctx, tg, b, items, out, res)
	split := status == http.StatusRequestEntityTooLarge && err == nil
	if err != nil && IsValidationFailure(err) {
		// Nothing of the request was written: send it in halves until each
		// refused item is alone, so that one bad item does not take its
		// neighbours with it. An item refused alone keeps the refusal as
		// its outcome (once filled it).
		if len(items) == 1 {
			return nil
		}
		split = true
	}
	if !split {
		return err
	}
	if len(items) == 1 {
		out[0] = Outcome{Status: http.StatusRequestEntityTooLarge, ErrorType: ErrTooLarge,
			ErrorReason: fmt.Sprintf("a %d-byte item alone exceeds the node's http.max_content_length", b.size(items[0]))}
		return nil
	}
	half := len(items) / 2
	if err := c.send(ctx, tg, b, items[:half], out[:half], res); err != nil {
		fill(out[half:], outcomeOf(err))
		return err
	}
	return c.send(ctx, tg, b, items[half:], out[half:], res)
}

// outcomeOf is the outcome carried by items that a whole-request failure
// left without a per-item answer.
func outcomeOf(e *RequestError) Outcome {
	o := Outcome{Status: e.Status, ErrorType: e.Type, ErrorReason: e.Reason}
	switch e.Kind {
	case KindNodeDown:
		o.Status, o.ErrorType = 0, ErrConnection
		if isTimeout(e.Err) {
			o.ErrorType = ErrTimeout
		}
	case KindTLS:
		o.Status, o.ErrorType = 0, ErrTLS
	case KindCanceled:
		o.Status, o.ErrorType = 0, ErrCanceled
	case KindBadResponse:
		o.Status, o.ErrorType = 0, ErrBadResponse
	}
	if o.ErrorReason == "" && e.Err != nil {
		o.ErrorReason = e.Err.Error()
	}
	return o
}

// once sends one request. It returns 413 without an error (the caller
// splits) and fills out on every other path.
func (c *Client) once(ctx context.Context, tg *target, b *Batch, items []int32, out []Outcome, res *Result) (int, *RequestError) {
	node := tg.node
	fail := func(e *RequestError) (int, *RequestError) {
		fill(out, outcomeOf(e))
		return e.Status, e
	}
	hc := c.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	rt := hc.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	timeout := c.Timeout
	if hc.Timeout > 0 && (timeout <= 0 || hc.Timeout < timeout) {
		timeout = hc.Timeout
	}
	rctx := ctx
	if timeout > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	st := newBody(b, items)
	defer st.detach() // after this, nothing reads b for this request
	header := make(http.Header, len(c.Header)+2)
	for k, v := range c.Header {
		header[k] = v
	}
	header["Content-Type"] = ndjson
	if tg.auth != nil {
		header["Authorization"] = tg.auth
	}
	u := tg.url
	if st.index != "" {
		u = tg.indexURL(st.index)
	}
	if dl, ok := rctx.Deadline(); ok {
		u = withServerTimeout(u, time.Until(dl))
	}
	req := (&http.Request{
		Method:        http.MethodPost,
		URL:           u,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        header,
		Body:          &st.root,
		GetBody:       st.getBody,
		ContentLength: st.size,
		Host:          u.Host,
	}).WithContext(rctx)
	res.Requests++
	res.Bytes += st.size

	resp, err := rt.RoundTrip(req)
	if err != nil {
		return fail(transportError(ctx, rctx, timeout, node, err))
	}
	if err := httpio.DecodeBody(resp); err != nil {
		resp.Body.Close()
		return fail(&RequestError{Kind: KindBadResponse, Node: node, Status: resp.StatusCode, Err: err})
	}
	defer resp.Body.Close()
	res.Status = resp.StatusCode
	code := resp.StatusCode

	if code < 200 || code > 299 {
		if code == http.StatusRequestEntityTooLarge {
			_, _ = io.CopyN(io.Discard, resp.Body, maxErrorBody)
			return code, nil
		}
		typ, reason := readErrorBody(resp.Body)
		e := &RequestError{Node: node, Status: code, Type: typ, Reason: SafeReason(reason)}
		switch {
		case typ == errClusterBlock && code >= 400 && code < 500:
			e.Kind = KindBlocked
		case code == http.StatusTooManyRequests:
			e.Kind = KindThrottled
		case code >= 500 || code == http.StatusRequestTimeout:
			e.Kind = KindServer
		case code == http.StatusUnauthorized || code == http.StatusForbidden:
			e.Kind = KindAuth
		default:
			e.Kind = KindRejected
		}
		fill(out, Outcome{Status: code, ErrorType: e.Type, ErrorReason: reason})
		return code, e
	}

	limit := c.MaxResponseBytes
	if limit <= 0 {
		limit = DefaultMaxResponseBytes
	}
	bufp := getBuf()
	defer putBuf(bufp)
	body, err := readBody(resp.Body, resp.ContentLength, limit, (*bufp)[:0])
	*bufp = body[:0]
	if err != nil {
		if errors.Is(err, errTooLarge) {
			return fail(&RequestError{Kind: KindBadResponse, Node: node, Status: code, Err: err})
		}
		e := transportError(ctx, rctx, timeout, node, err)
		if e.Kind == KindNodeDown && !isTimeout(err) && !isConnDown(err) {
			e.Kind = KindBadResponse // cut short, but the node answered
		}
		e.Status = code
		return fail(e)
	}
	p := getParser(&c.names)
	n, _, err := p.parseResponse(body, out)
	putParser(p)
	if err != nil {
		return fail(&RequestError{Kind: KindBadResponse, Node: node, Status: code, Err: err})
	}
	if n != len(items) {
		return fail(&RequestError{Kind: KindBadResponse, Node: node, Status: code,
			Err: fmt.Errorf("bulk response has %d items for %d sent", n, len(items))})
	}
	return code, nil
}

// transportError classifies a failure to get (or read) a response.
func transportError(ctx, rctx context.Context, timeout time.Duration, node string, err error) *RequestError {
	e := &RequestError{Kind: KindNodeDown, Node: node, Err: err}
	switch {
	case ctx.Err() != nil:
		e.Kind = KindCanceled
		e.Err = fmt.Errorf("%w (%v)", ctx.Err(), err)
	case rctx.Err() != nil:
		e.Err = fmt.Errorf("request timeout %v expired: %w", timeout, errTimeout)
	case isTLS(err):
		e.Kind = KindTLS
	}
	return e
}

var (
	errTimeout  = timeoutError{}
	errTooLarge = errors.New("response body too large")
	errDetached = errors.New("bulk: request body used after Send returned")
)

type timeoutError struct{}

func (timeoutError) Error() string { return "timeout" }
func (timeoutError) Timeout() bool { return true }

func isTimeout(err error) bool {
	var ne interface{ Timeout() bool }
	return err != nil && errors.As(err, &ne) && ne.Timeout()
}

// isConnDown reports errors of a connection that broke (reset, closed by
// the peer), as opposed to a response that was merely cut short.
func isConnDown(err error) bool {
	var oe *net.OpError
	return errors.As(err, &oe)
}

func isTLS(err error) bool { return httpio.IsTLS(err) }

// target is where Send posts for one baseURL (shared, read-only).
type target struct {
	url  *url.URL // {baseURL}/_bulk?filter_path=..., without user info
	node string   // host:port
	auth []string // basic Authorization from baseURL's user info, or nil

	mu      sync.Mutex
	indexed map[string]*url.URL // index → {baseURL}/{index}/_bulk?filter_path=...
}

// maxIndexURLs bounds the per-index URLs a target keeps.
const maxIndexURLs = 1024

// indexURL returns the _bulk URL of tg for requests whose items all go to
// index: {baseURL}/{index}/_bulk, with the same query.
func (tg *target) indexURL(index string) *url.URL {
	tg.mu.Lock()
	defer tg.mu.Unlock()
	if u, ok := tg.indexed[index]; ok {
		return u
	}
	u := *tg.url
	u.Path = strings.TrimSuffix(u.Path, "/_bulk") + "/" + index + "/_bulk"
	u.RawPath = ""
	if tg.indexed == nil || len(tg.indexed) >= maxIndexURLs {
		tg.indexed = map[string]*url.URL{}
	}
	tg.indexed[index] = &u
	return &u
}

// target returns baseURL's parsed target, cached.
func (c *Client) target(baseURL string) (*target, error) {
	c.urlMu.Lock()
	tg, ok := c.urls[baseURL]
	c.urlMu.Unlock()
	if ok {
		return tg, nil
	}
	u, err := url.Parse(strings.TrimRight(baseURL, "/") + "/_bulk")
	if err != nil {
		return nil, errors.New("invalid node URL") // no echo: it may hold a password
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("invalid node URL: want http(s)://host:port, got scheme %q host %q", u.Scheme, u.Host)
	}
	tg = &target{url: u, node: u.Host}
	if u.User != nil {
		pw, _ := u.User.Password()
		r := http.Request{Header: http.Header{}}
		r.SetBasicAuth(u.User.Username(), pw)
		tg.auth = r.Header["Authorization"]
		u.User = nil
	}
	u.RawQuery = "filter_path=" + filterPath
	u.Fragment = ""
	c.urlMu.Lock()
	if c.urls == nil || len(c.urls) >= 1024 {
		c.urls = make(map[string]*target)
	}
	c.urls[baseURL] = tg
	c.urlMu.Unlock()
	return tg, nil
}

// readBody reads r to its end into buf (grown as needed), at most limit
// bytes.
func readBody(r io.Reader, contentLength, limit int64, buf []byte) ([]byte, error) {
	if contentLength > limit {
		return buf, errTooLarge
	}
	if contentLength >= 0 && int64(cap(buf)) < contentLength+1 {
		buf = make([]byte, 0, contentLength+1) // +1: see EOF without growing
	}
	for {
		if len(buf) == cap(buf) {
			if int64(len(buf)) >= limit+1 {
				return buf, errTooLarge
			}
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if int64(len(buf)) > limit {
			return buf, errTooLarge
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// readErrorBody reads the error type and reason from a non-2xx response:
// {"error":{"root_cause":[{"type":..,"reason":..}],"type":..,"reason":..},"status":N}
// or {"error":"text"}. The body is read up to maxErrorBody; one cut short
// (a validation failure quotes every bad id, twice) still gives what came
// before the cut, the first root cause standing in for what is missing.
// Not the hot path: encoding/json is fine here.
func readErrorBody(r io.Reader) (typ, reason string) {
	data, _ := io.ReadAll(io.LimitReader(r, maxErrorBody))
	d := json.NewDecoder(bytes.NewReader(data))
	tok := func() json.Token {
		t, err := d.Token()
		if err != nil {
			return nil
		}
		return t
	}
	if tok() != json.Delim('{') {
		return "", ""
	}
	var rootType, rootReason string
	for {
		k, ok := tok().(string)
		if !ok {
			break
		}
		if k != "error" {
			if skipValue(d) != nil {
				break
			}
			continue
		}
		switch t := tok().(type) {
		case string:
			return "", t
		case json.Delim:
			if t != '{' {
				return "", ""
			}
		default:
			return "", ""
		}
		for {
			ek, ok := tok().(string)
			if !ok {
				break
			}
			switch ek {
			case "type", "reason":
				v, ok := tok().(string)
				if !ok {
					return firstOf(typ, rootType), firstOf(reason, rootReason)
				}
				if ek == "type" {
					typ = v
				} else {
					reason = v
				}
			case "root_cause":
				rootType, rootReason = readRootCause(d)
			default:
				if skipValue(d) != nil {
					return firstOf(typ, rootType), firstOf(reason, rootReason)
				}
			}
		}
		break
	}
	return firstOf(typ, rootType), firstOf(reason, rootReason)
}

// readRootCause reads the type and reason of the first element of a
// root_cause array, as far as the body goes.
func readRootCause(d *json.Decoder) (typ, reason string) {
	if t, err := d.Token(); err != nil || t != json.Delim('[') {
		return "", ""
	}
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return "", ""
	}
	for d.More() {
		k, err := d.Token()
		if err != nil {
			return typ, reason
		}
		switch k {
		case "type", "reason":
			t, err := d.Token()
			v, ok := t.(string)
			if err != nil || !ok {
				return typ, reason
			}
			if k == "type" {
				typ = v
			} else {
				reason = v
			}
		default:
			if skipValue(d) != nil {
				return typ, reason
			}
		}
	}
	d.Token() // '}'
	for d.More() {
		if skipValue(d) != nil {
			return typ, reason
		}
	}
	d.Token() // ']'
	return typ, reason
}

// skipValue reads one value from d.
func skipValue(d *json.Decoder) error {
	var v json.RawMessage
	return d.Decode(&v)
}

func firstOf(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

func putBuf(b *[]byte) {
	if cap(*b) <= 16<<20 {
		bufPool.Put(b)
	}
}

var parserPool = sync.Pool{New: func() any { return new(parser) }}

func getParser(in *interner) *parser {
	p := parserPool.Get().(*parser)
	p.in = in
	return p
}

func putParser(p *parser) {
	p.in = nil
	parserPool.Put(p)
}

// bodyState is one request's body: the items' bytes read in order straight
// from the arena, never copied on this side.
//
// Lifetime: the HTTP transport may read or close a request body after Do
// returns (e.g. when the server answered before reading it all). detach,
// called before Send returns, makes every later Read fail, so that the
// Batch may be reset once Send has returned. All readers of one request
// (the first, and those GetBody makes for a transport retry) share mu; a
// Read holds it while it copies from the arena. A bodyState is never reused:
// a late Read or Close from the transport can only reach its own request.
type bodyState struct {
	mu       sync.Mutex
	detached bool
	b        *Batch
	items    []int32
	size     int64
	root     body

	// index, when every item goes to it: the request is sent to
	// /{index}/_bulk and each action line is read without its "_index"
	// field (elide bytes from actionHead on, and the comma after them when
	// an "_id" follows), which the server takes from the URL.
	index string
	elide int
}

// Every action line the Batch writes (appendAction) begins with actionHead,
// then indexKey and the index as a JSON string.
const (
	actionHead = `{"create":{`
	indexKey   = `"_index":`
)

type body struct {
	st  *bodyState
	k   int // next item to read
	off int // bytes of item k already read
}

func newBody(b *Batch, items []int32) *bodyState {
	var size int64
	for _, it := range items {
		size += int64(b.size(it))
	}
	st := &bodyState{b: b, items: items, size: size}
	st.root.st = st
	if index, elide, saved := sharedIndex(b, items); elide > 0 {
		st.index, st.elide, st.size = index, elide, size-saved
	}
	return st
}

// sharedIndex returns the index every item goes to, the length of the
// "_index" field in their action lines, and the bytes leaving it out saves
// over all items; elide is 0 when the items do not share one index (then
// nothing is left out). It reads only the item table, not the items' bytes:
// a Batch writes every action line as actionHead, indexKey and the index as
// a JSON string (appendHead), followed by ',' exactly when the item has an
// _id (CommitID refuses an empty one) or a routing value.
func sharedIndex(b *Batch, items []int32) (index string, elide int, saved int64) {
	if len(items) == 0 {
		return "", 0, 0
	}
	index = b.items[items[0]].index
	if index == "" {
		return "", 0, 0
	}
	withID := 0
	for _, it := range items {
		e := &b.items[it]
		if e.index != index {
			return "", 0, 0
		}
		if e.id != "" || e.routing != "" {
			withID++
		}
	}
	var buf [128]byte
	elide = len(appendJSONString(append(buf[:0], indexKey...), index))
	return index, elide, int64(elide)*int64(len(items)) + int64(withID)
}

// detach ends the body's use of the Batch.
func (st *bodyState) detach() {
	st.mu.Lock()
	st.detached = true
	st.b, st.items = nil, nil
	st.mu.Unlock()
}

func (st *bodyState) getBody() (io.ReadCloser, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.detached {
		return nil, errDetached
	}
	return &body{st: st}, nil
}

func (r *body) Read(p []byte) (int, error) {
	st := r.st
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.detached {
		return 0, errDetached
	}
	n := 0
	for n < len(p) && r.k < len(st.items) {
		head, rest := st.parts(r.k)
		var c int
		if r.off < len(head) {
			c = copy(p[n:], head[r.off:])
		} else {
			c = copy(p[n:], rest[r.off-len(head):])
		}
		n += c
		r.off += c
		if r.off == len(head)+len(rest) {
			r.k++
			r.off = 0
		}
	}
	if r.k == len(st.items) {
		return n, io.EOF
	}
	return n, nil
}

// parts returns item k of the body as it is sent, in two pieces: with the
// index elided, the action line up to its "_index" field and what follows
// that field (and its comma, when "_id" follows); else the whole item and
// nil.
func (st *bodyState) parts(k int) (head, rest []byte) {
	data := st.b.items[st.items[k]].data
	if st.elide == 0 {
		return data, nil
	}
	off := len(actionHead) + st.elide
	if data[off] == ',' {
		off++
	}
	return data[:len(actionHead)], data[off:]
}

// writeTo writes head and then the rest of the body to w, through buf:
// the items' bytes are copied from the arena into it, under the body's
// lock, and each time it is full it is written (a larger body in pieces of
// cap(buf)). size is the body's length, checked.
func (r *body) writeTo(w io.Writer, head, buf []byte, size int64) error {
	st := r.st
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.detached {
		return errDetached
	}
	p := append(buf[:0], head...)
	n := int64(0)
	add := func(b []byte) error {
		n += int64(len(b))
		for len(b) > 0 {
			if len(p) == cap(p) {
				if _, err := w.Write(p); err != nil {
					return err
				}
				p = p[:0]
			}
			c := min(cap(p)-len(p), len(b))
			p = append(p, b[:c]...)
			b = b[c:]
		}
		return nil
	}
	for ; r.k < len(st.items); r.k++ {
		head, rest := st.parts(r.k)
		if err := add(head[r.off:]); err != nil {
			return err
		}
		r.off = 0
		if err := add(rest); err != nil {
			return err
		}
	}
	if n != size {
		return fmt.Errorf("bulk: body has %d bytes, ContentLength %d", n, size)
	}
	_, err := w.Write(p)
	return err
}

func (r *body) Close() error { return nil }
