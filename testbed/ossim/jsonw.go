package ossim

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"github.com/opensearchrouted/opensearchrouted/internal/jsonstr"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
)

// request is one HTTP request being served by a node.
type request struct {
	n    *Node
	w    http.ResponseWriter
	r    *http.Request
	q    url.Values
	body []byte
}

// reply writes a JSON body, applying filter_path when the request has one.
func (q *request) reply(status int, body []byte) {
	if fp := q.q.Get("filter_path"); fp != "" {
		body = applyFilterPath(body, fp)
	}
	h := q.w.Header()
	h.Set("Content-Type", "application/json; charset=UTF-8")
	if !q.n.c.opts.NoHTTPCompression && acceptsGzip(q.r.Header.Get("Accept-Encoding")) {
		// As OpenSearch does (http.compression, on by default): the answer
		// is gzip-compressed when the client accepts it.
		// BestSpeed from a pool: a new writer at the default level
		// allocates and clears half a megabyte per answer, which makes
		// every answer to a Go client (whose transport asks for gzip) cost
		// far more than serving it.
		var zb bytes.Buffer
		zw := gzipWriters.Get().(*gzip.Writer)
		zw.Reset(&zb)
		_, _ = zw.Write(body)
		_ = zw.Close()
		gzipWriters.Put(zw)
		body = zb.Bytes()
		h.Set("Content-Encoding", "gzip")
		h.Add("Vary", "Accept-Encoding")
	}
	h.Set("Content-Length", strconv.Itoa(len(body)))
	q.w.WriteHeader(status)
	if q.r.Method != http.MethodHead {
		_, _ = q.w.Write(body)
	}
}

var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed)
	return zw
}}

// acceptsGzip reports whether an Accept-Encoding value lists gzip (with a
// q-value other than 0).
func acceptsGzip(v string) bool {
	for _, part := range strings.Split(v, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(name), "gzip") && !strings.EqualFold(strings.TrimSpace(name), "x-gzip") {
			continue
		}
		q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}

// replyJSON marshals v (maps and structs) and replies.
func (q *request) replyJSON(status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		q.fail(500, "exception", "ossim: encoding response: "+err.Error())
		return
	}
	q.reply(status, b)
}

// fail replies with OpenSearch's error shape. extra are key, value pairs
// added to the error and its root cause (e.g. "index", "x").
func (q *request) fail(status int, typ, reason string, extra ...string) {
	q.reply(status, errorBody(status, typ, reason, extra...))
}

func errorBody(status int, typ, reason string, extra ...string) []byte {
	cause := appendCause(nil, typ, reason, extra...)
	b := []byte(`{"error":{"root_cause":[`)
	b = append(b, cause...)
	b = append(b, `],`...)
	b = append(b, cause[1:len(cause)-1]...)
	b = append(b, `},"status":`...)
	b = strconv.AppendInt(b, int64(status), 10)
	return append(b, '}')
}

func appendCause(b []byte, typ, reason string, extra ...string) []byte {
	b = append(b, `{"type":`...)
	b = appendStr(b, typ)
	b = append(b, `,"reason":`...)
	b = appendStr(b, reason)
	for i := 0; i+1 < len(extra); i += 2 {
		b = append(b, ',')
		b = appendStr(b, extra[i])
		b = append(b, ':')
		b = appendStr(b, extra[i+1])
	}
	return append(b, '}')
}

// appendStr appends s as a JSON string (invalid UTF-8 as U+FFFD).
func appendStr(b []byte, s string) []byte { return jsonstr.Append(b, s) }

// ---- filter_path ----

// applyFilterPath keeps only the parts of body that match one of the
// comma-separated paths (`*` globs a key, `**` any number of levels;
// arrays are transparent). A body that does not decode is returned as is.
func applyFilterPath(body []byte, fp string) []byte {
	var v any
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return body
	}
	var paths [][]string
	for _, p := range strings.Split(fp, ",") {
		if p = strings.TrimSpace(p); p != "" {
			paths = append(paths, strings.Split(p, "."))
		}
	}
	out, ok := filterValue(v, paths)
	if !ok {
		return []byte("{}")
	}
	b, err := json.Marshal(out)
	if err != nil {
		return body
	}
	return b
}

func filterValue(v any, paths [][]string) (any, bool) {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, val := range x {
			var rest [][]string
			full := false
			for _, p := range paths {
				for _, r := range matchSeg(k, p) {
					if len(r) == 0 {
						full = true
					}
					rest = append(rest, r)
				}
			}
			if full {
				out[k] = val
				continue
			}
			if len(rest) == 0 {
				continue
			}
			if fv, ok := filterValue(val, rest); ok {
				out[k] = fv
			}
		}
		return out, len(out) > 0
	case []any:
		var out []any
		for _, e := range x {
			if fv, ok := filterValue(e, paths); ok {
				out = append(out, fv)
			}
		}
		return out, len(out) > 0
	}
	return nil, false
}

// matchSeg returns the remainders of p after it consumes key k.
func matchSeg(k string, p []string) [][]string {
	if len(p) == 0 {
		return nil
	}
	if p[0] == "**" {
		out := [][]string{p}
		if len(p) > 1 {
			out = append(out, matchSeg(k, p[1:])...)
		} else {
			out = append(out, nil)
		}
		return out
	}
	if ok, _ := path.Match(p[0], k); ok {
		return [][]string{p[1:]}
	}
	return nil
}
