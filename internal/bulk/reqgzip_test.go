package bulk

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/klauspost/compress/gzip"
)

// TestGzipRoundTripper: the body arrives compressed and whole, with
// Content-Encoding and the compressed length; GetBody gives the same
// compressed bytes; a request already encoded passes unchanged.
func TestGzipRoundTripper(t *testing.T) {
	plain := strings.Repeat(`{"create":{"_index":"logs"}}`+"\n"+`{"body":"a log line that repeats"}`+"\n", 500)
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		if int64(len(raw)) != r.ContentLength {
			t.Errorf("read %d bytes, Content-Length %d", len(raw), r.ContentLength)
		}
		body := raw
		if r.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(bytes.NewReader(raw))
			if err != nil {
				t.Error(err)
				return
			}
			body, _ = io.ReadAll(zr)
			if len(raw)*5 > len(body) {
				t.Errorf("compressed %d of %d bytes", len(raw), len(body))
			}
		}
		got = append(got, r.Header.Get("Content-Encoding")+":"+string(body))
	}))
	defer srv.Close()
	var signed atomic.Int64
	sign := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		rc, err := r.GetBody()
		if err != nil {
			return nil, err
		}
		n, _ := io.Copy(io.Discard, rc)
		rc.Close()
		signed.Store(n)
		return (&Transport{}).RoundTrip(r)
	})
	g := &GzipRoundTripper{Base: sign}
	for i := 0; i < 3; i++ {
		req, _ := http.NewRequest("POST", srv.URL+"/_bulk", strings.NewReader(plain))
		resp, err := g.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	req, _ := http.NewRequest("POST", srv.URL+"/_bulk", strings.NewReader("already"))
	req.Header.Set("Content-Encoding", "identity")
	resp, err := g.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if len(got) != 4 || got[0] != "gzip:"+plain || got[2] != got[0] || got[3] != "identity:already" {
		t.Fatalf("server saw %d requests: %.60q…", len(got), got)
	}
	if n := signed.Load(); n != int64(len("already")) {
		t.Fatalf("GetBody of the last request gave %d bytes", n)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// TestTransportTLSSessionReuse: sequential requests share one connection
// (one handshake), and a new connection to the same node resumes the TLS
// session instead of a full handshake.
func TestTransportTLSSessionReuse(t *testing.T) {
	var conns, resumed, full atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.TLS = &tls.Config{}
	srv.StartTLS()
	defer srv.Close()
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	tr := &Transport{TLSConfig: &tls.Config{RootCAs: pool, ServerName: "example.com",
		VerifyConnection: func(cs tls.ConnectionState) error {
			if cs.DidResume {
				resumed.Add(1)
			} else {
				full.Add(1)
			}
			return nil
		}}}
	defer tr.Close()
	send := func() {
		req, _ := http.NewRequest("POST", srv.URL+"/_bulk", strings.NewReader(`{"create":{}}`+"\n{}\n"))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	for i := 0; i < 20; i++ {
		send()
	}
	if conns.Load() != 1 || full.Load() != 1 || resumed.Load() != 0 {
		t.Fatalf("20 requests: %d connections, %d full and %d resumed handshakes; want 1, 1, 0", conns.Load(), full.Load(), resumed.Load())
	}
	tr.CloseIdleConnections()
	send()
	if conns.Load() != 2 || full.Load() != 1 || resumed.Load() != 1 {
		t.Fatalf("after a new connection: %d connections, %d full and %d resumed handshakes; want 2, 1, 1", conns.Load(), full.Load(), resumed.Load())
	}
}
