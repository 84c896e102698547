package routing

import (
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// A first discovery that fails logs one warning at Start, with the reason,
// before any document is sent; later failures do not repeat it.
func TestStartWarnsOnceWhenDiscoveryFails(t *testing.T) {
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	refusedURL := "http://" + closed.Addr().String()
	closed.Close()

	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer plain.Close()
	unavailable := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer unavailable.Close()
	hang := make(chan struct{})
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-hang:
		case <-r.Context().Done():
		}
	}))
	defer silent.Close()
	defer close(hang)
	untrusted := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	untrusted.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	untrusted.StartTLS()
	defer untrusted.Close()
	denied := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusForbidden)
	}))
	defer denied.Close()

	for _, c := range []struct {
		name, seed, reason, msg string
		timeout                 time.Duration
	}{
		{"refused", refusedURL, "refused", "discovery failed", 0},
		{"tls to a plain server", "https://" + strings.TrimPrefix(plain.URL, "http://"), "tls", "discovery failed", 0},
		{"untrusted certificate", untrusted.URL, "tls", "discovery failed", 0},
		{"unreachable", silent.URL, "unreachable", "discovery failed", 300 * time.Millisecond},
		{"server error", unavailable.URL, "HTTP 503", "discovery failed", 0},
		{"forbidden", denied.URL, "", "refused a discovery call", 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.WarnLevel)
			timeout := c.timeout
			if timeout == 0 {
				timeout = 5 * time.Second // a TLS handshake on a loaded machine can be slow
			}
			r, err := New(Options{Client: &http.Client{}, Seeds: []string{c.seed}, StatsInterval: -1,
				RequestTimeout: timeout, RefreshInterval: time.Hour, Logger: zap.New(core)})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			// Start's first discovery warns, before any document is sent.
			r.Start()
			deadline := time.Now().Add(10 * time.Second)
			for logs.Len() == 0 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if logs.Len() != 1 {
				t.Fatalf("%d warnings at start, want 1: %v", logs.Len(), logs.All())
			}
			e := logs.All()[0]
			if !strings.Contains(e.Message, c.msg) {
				t.Errorf("warning %q does not say %q", e.Message, c.msg)
			}
			if c.reason != "" {
				if got := e.ContextMap()["reason"]; got != c.reason {
					t.Errorf("reason %v, want %q (%v)", got, c.reason, e.ContextMap()["error"])
				}
			}
			for i := 0; i < 2; i++ {
				_ = r.Refresh(t.Context(), TriggerPeriodic)
			}
			if logs.Len() != 1 {
				t.Errorf("%d warnings after three failed discoveries, want 1", logs.Len())
			}
		})
	}
}
