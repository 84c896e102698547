package opensearchrouted

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configcompression"

	"github.com/opensearchrouted/opensearchrouted/internal/bulk"
)

// bulkHTTP returns the client that sends _bulk requests: the exporter's own
// transport (bulk.Transport) when bulk.transport is auto and the HTTP
// client settings need nothing only the collector's client does, else std
// (the collector's client). why names the setting that chose std; "" with
// the own transport, which also returns the headers setting (and
// username/password as an Authorization header) as header, for
// bulk.Client.Header (std applies it itself). On the own transport an auth
// extension's RoundTripper wraps it, and gzip compression wraps that (as
// confighttp orders them: a signing authenticator sees the body as sent).
func bulkHTTP(ctx context.Context, cfg *Config, std *http.Client, ext map[component.ID]component.Component) (c *http.Client, tr *bulk.Transport, header http.Header, why string, err error) {
	if why = needsConfighttp(cfg); why != "" {
		return std, nil, nil, why, nil
	}
	tlsCfg, err := cfg.TLS.LoadTLSConfig(ctx)
	if err != nil {
		return nil, nil, nil, "", err
	}
	tr = &bulk.Transport{TLSConfig: tlsCfg, DisableKeepAlives: !cfg.Keepalive.HasValue()}
	if ka := cfg.Keepalive.Get(); ka != nil {
		tr.IdleConnTimeout = ka.IdleConnTimeout
		tr.MaxIdleConnsPerHost = ka.MaxIdleConnsPerHost
		if tr.MaxIdleConnsPerHost == 0 {
			tr.MaxIdleConnsPerHost = http.DefaultMaxIdleConnsPerHost
		}
	}
	if len(cfg.Headers) > 0 || cfg.Username != "" {
		header = http.Header{}
		for _, p := range cfg.Headers {
			header.Set(p.Name, string(p.Value))
		}
		if cfg.Username != "" {
			header.Set("Authorization", basicAuth(cfg.Username, string(cfg.Password)))
		}
	}
	var rt http.RoundTripper = tr
	if a := cfg.Auth.Get(); a != nil {
		auth, err := a.GetHTTPClientAuthenticator(ctx, ext)
		if err != nil {
			return nil, nil, nil, "", fmt.Errorf("auth: %w", err)
		}
		if rt, err = auth.RoundTripper(rt); err != nil {
			return nil, nil, nil, "", fmt.Errorf("auth: %w", err)
		}
	}
	if cfg.Compression == configcompression.TypeGzip {
		rt = &bulk.GzipRoundTripper{Base: rt, Level: int(cfg.CompressionParams.Level)}
	}
	return &http.Client{Transport: rt, Timeout: cfg.Timeout}, tr, header, "", nil
}

// basicAuth is the Authorization header value of HTTP basic authentication.
func basicAuth(user, password string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+password))
}

// basicAuthTransport adds an Authorization header to requests without one
// (the discovery client with username/password).
type basicAuthTransport struct {
	base  http.RoundTripper
	value string
}

func (b *basicAuthTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Header.Get("Authorization") != "" {
		return b.base.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", b.value)
	return b.base.RoundTrip(r)
}

// needsConfighttp names the first setting that only the collector's HTTP
// client honours, or "". The HTTP/2 settings are not among them: OpenSearch
// speaks HTTP/1.1 (its default HTTP transport has no HTTP/2), which is what
// net/http uses with it too.
func needsConfighttp(cfg *Config) string {
	switch {
	case cfg.Bulk.Transport == TransportConfighttp:
		return "bulk.transport"
	case cfg.Compression.IsCompressed() && cfg.Compression != configcompression.TypeGzip:
		return "compression (" + string(cfg.Compression) + ")"
	case cfg.ProxyURL != "":
		return "proxy_url"
	case len(cfg.Middlewares) > 0:
		return "middlewares"
	case cfg.DialerMiddleware.HasValue():
		return "dialer_middleware"
	case cfg.Cookies.HasValue():
		return "cookies"
	case cfg.MaxConnsPerHost > 0:
		return "max_conns_per_host"
	}
	for _, p := range cfg.Headers {
		// The collector's client sets these over the request's own (a
		// Connection: close is honoured, a Content-Type replaces the
		// exporter's); the transport writes its own. An Authorization
		// header (a bearer token) is sent as it is by either.
		for _, h := range []string{"Host", "Connection", "Content-Type", "Content-Encoding"} {
			if strings.EqualFold(p.Name, h) {
				return "headers (" + h + ")"
			}
		}
	}
	for _, s := range cfg.seeds() {
		if u, err := url.Parse(s); err == nil && envProxy(u.Scheme) {
			return "a proxy from the environment (" + strings.ToUpper(u.Scheme) + "_PROXY)"
		}
	}
	return ""
}

// envProxy reports whether the environment names a proxy for scheme's
// requests to hosts that NO_PROXY does not list (net/http reads it once).
func envProxy(scheme string) bool {
	u, err := proxyFromEnvironment(&http.Request{URL: &url.URL{Scheme: scheme, Host: "opensearchrouted.invalid"}})
	return err == nil && u != nil
}

// proxyFromEnvironment is http.ProxyFromEnvironment (tests replace it).
var proxyFromEnvironment = http.ProxyFromEnvironment
