package httpio

import (
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"io"
	"net/http"
	"strings"
	"testing"
)

func encoded(t *testing.T, enc string, body []byte) *http.Response {
	t.Helper()
	var b bytes.Buffer
	switch enc {
	case "gzip":
		w := gzip.NewWriter(&b)
		w.Write(body)
		w.Close()
	case "deflate":
		w := zlib.NewWriter(&b)
		w.Write(body)
		w.Close()
	default:
		b.Write(body)
	}
	h := http.Header{}
	h.Set("Content-Encoding", enc)
	return &http.Response{Header: h, Body: io.NopCloser(&b), ContentLength: int64(b.Len())}
}

func TestDecodeBody(t *testing.T) {
	want := `{"took":1,"errors":false,"items":[]}`
	for _, enc := range []string{"gzip", "deflate", "identity", ""} {
		for range 2 { // the second gzip reader comes from the pool
			resp := encoded(t, enc, []byte(want))
			if err := DecodeBody(resp); err != nil {
				t.Fatalf("%s: %v", enc, err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || string(got) != want {
				t.Fatalf("%s: %q %v", enc, got, err)
			}
			if enc == "gzip" && (resp.Header.Get("Content-Encoding") != "" || resp.ContentLength != -1) {
				t.Fatalf("headers left: %v %d", resp.Header, resp.ContentLength)
			}
		}
	}
	// Cut short: an error, not a silently short body.
	resp := encoded(t, "gzip", []byte(strings.Repeat(want, 50)))
	full, _ := io.ReadAll(resp.Body)
	resp = encoded(t, "", full[:len(full)/2])
	resp.Header.Set("Content-Encoding", "gzip")
	DecodeBody(resp)
	if _, err := io.ReadAll(resp.Body); err == nil {
		t.Fatal("a truncated gzip answer read without error")
	}
	// An encoding it cannot decode is named.
	if err := DecodeBody(encoded(t, "br", []byte(want))); err == nil || !strings.Contains(err.Error(), `"br"`) {
		t.Fatalf("br: %v", err)
	}
}
