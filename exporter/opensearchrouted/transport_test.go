package opensearchrouted

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configauth"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configmiddleware"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configoptional"

	"github.com/opensearchrouted/opensearchrouted/internal/bulk"
)

// TestBulkTransportChoice: the exporter's own transport by default; the
// collector's client when bulk.transport says so or a setting needs it,
// named in the reason.
func TestBulkTransportChoice(t *testing.T) {
	defer func(f func(*http.Request) (*url.URL, error)) { proxyFromEnvironment = f }(proxyFromEnvironment)
	noProxy := func(*http.Request) (*url.URL, error) { return nil, nil }
	proxyFromEnvironment = noProxy
	for _, tc := range []struct {
		name string
		set  func(*Config)
		want string
	}{
		{"default", func(*Config) {}, ""},
		{"http2 settings", func(c *Config) { c.ForceAttemptHTTP2, c.HTTP2ReadIdleTimeout = true, 1 }, ""},
		{"headers", func(c *Config) {
			c.Headers = configopaque.MapList{{Name: "X-Tenant", Value: "a"}}
		}, ""},
		{"bulk.transport", func(c *Config) { c.Bulk.Transport = TransportConfighttp }, "bulk.transport"},
		{"auth", func(c *Config) {
			c.Auth = configoptional.Some(configauth.Config{AuthenticatorID: component.MustNewID("bearertokenauth")})
		}, ""},
		{"gzip", func(c *Config) { c.Compression = "gzip" }, ""},
		{"zstd", func(c *Config) { c.Compression = "zstd" }, "compression (zstd)"},
		{"username", func(c *Config) { c.Username, c.Password = "u", "p" }, ""},
		{"proxy_url", func(c *Config) { c.ProxyURL = "http://proxy:3128" }, "proxy_url"},
		{"middlewares", func(c *Config) {
			c.Middlewares = []configmiddleware.Config{{ID: component.MustNewID("mw")}}
		}, "middlewares"},
		{"dialer_middleware", func(c *Config) {
			c.DialerMiddleware = configoptional.Some(configmiddleware.Config{ID: component.MustNewID("dm")})
		}, "dialer_middleware"},
		{"cookies", func(c *Config) { c.Cookies = configoptional.Some(confighttp.CookiesConfig{}) }, "cookies"},
		{"max_conns_per_host", func(c *Config) { c.MaxConnsPerHost = 4 }, "max_conns_per_host"},
		{"Host header", func(c *Config) {
			c.Headers = configopaque.MapList{{Name: "host", Value: "opensearch.internal"}}
		}, "headers (Host)"},
		{"Connection header", func(c *Config) {
			c.Headers = configopaque.MapList{{Name: "connection", Value: "close"}}
		}, "headers (Connection)"},
		{"Content-Type header", func(c *Config) {
			c.Headers = configopaque.MapList{{Name: "Content-Type", Value: "application/json"}}
		}, "headers (Content-Type)"},
		{"Authorization header", func(c *Config) {
			c.Headers = configopaque.MapList{{Name: "AUTHORIZATION", Value: "Bearer eDp5"}}
		}, ""},
		{"Content-Encoding header", func(c *Config) {
			c.Headers = configopaque.MapList{{Name: "content-encoding", Value: "br"}}
		}, "headers (Content-Encoding)"},
		{"environment proxy", func(*Config) {
			proxyFromEnvironment = func(r *http.Request) (*url.URL, error) {
				if r.URL.Scheme == "http" {
					return url.Parse("http://proxy:3128")
				}
				return nil, nil
			}
		}, "a proxy from the environment (HTTP_PROXY)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proxyFromEnvironment = noProxy
			cfg := testConfig([]string{"http://127.0.0.1:9200"})
			tc.set(cfg)
			if got := needsConfighttp(cfg); got != tc.want {
				t.Fatalf("needsConfighttp = %q, want %q", got, tc.want)
			}
			std := &http.Client{}
			c, tr, _, why, err := bulkHTTP(context.Background(), cfg, std, fakeAuthExtensions())
			if err != nil || why != tc.want {
				t.Fatalf("bulkHTTP: why %q, err %v", why, err)
			}
			if own := tr != nil; own != (tc.want == "") || (c == std) == own {
				t.Fatalf("own transport %v, collector's client %v, for reason %q", own, c == std, tc.want)
			}
			if tr != nil {
				var rt http.RoundTripper = c.Transport
				if g, ok := rt.(*bulk.GzipRoundTripper); ok != (cfg.Compression == "gzip") {
					t.Fatalf("gzip round tripper %v with compression %q", ok, cfg.Compression)
				} else if ok {
					rt = g.Base
				}
				if a, ok := rt.(*fakeAuthRT); ok != cfg.Auth.HasValue() {
					t.Fatalf("auth round tripper %v with auth %v", ok, cfg.Auth.HasValue())
				} else if ok {
					rt = a.base
				}
				if rt != http.RoundTripper(tr) || c.Timeout != cfg.Timeout {
					t.Fatalf("client %T, timeout %v", c.Transport, c.Timeout)
				}
			}
		})
	}
}

// TestBulkTransportEndToEnd: on either transport, a push stores its
// records, with the configured headers on every bulk request; on the
// exporter's own, over one kept connection per node.
func TestBulkTransportEndToEnd(t *testing.T) {
	for _, transport := range []string{TransportAuto, TransportConfighttp} {
		t.Run(transport, func(t *testing.T) {
			var mu sync.Mutex
			var bulks, docs int
			var tenants []string
			conns := map[string]bool{}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if !strings.HasSuffix(r.URL.Path, "/_bulk") {
					w.WriteHeader(403) // no discovery: every item goes unrouted
					return
				}
				body, _ := io.ReadAll(r.Body)
				n := strings.Count(string(body), "\n") / 2
				mu.Lock()
				bulks++
				docs += n
				tenants = append(tenants, r.Header.Get("X-Tenant"))
				conns[r.RemoteAddr] = true
				mu.Unlock()
				writeCreated(w, n)
			}))
			defer srv.Close()
			cfg := testConfig([]string{srv.URL})
			cfg.LogsIndex = "x"
			cfg.Bulk.Transport = transport
			cfg.Headers = configopaque.MapList{{Name: "X-Tenant", Value: "team-a"}}
			e, _ := startExporter(t, cfg, signalLogs)
			_, own := e.shared.client.HTTP.Transport.(*bulk.Transport)
			if own != (transport == TransportAuto) {
				t.Fatalf("bulk transport %T for %s", e.shared.client.HTTP.Transport, transport)
			}
			for k := 0; k < 5; k++ {
				if err := e.pushLogs(context.Background(), makeLogs(k*100, 100)); err != nil {
					t.Fatal(err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if docs != 500 || bulks < 5 {
				t.Fatalf("%d documents in %d bulks, want 500 in at least 5", docs, bulks)
			}
			for _, h := range tenants {
				if h != "team-a" {
					t.Fatalf("X-Tenant %q on a bulk request", h)
				}
			}
			if own && len(conns) != 1 {
				t.Fatalf("%d connections for sequential pushes to one node", len(conns))
			}
		})
	}
}
