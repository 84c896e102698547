package opensearchrouted

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/opensearchrouted/opensearchrouted/internal/bulk"
)

// bulkHTTP returns the client that sends _bulk requests: the exporter's own
// transport (bulk.Transport) when bulk.transport is auto and the HTTP
// client settings need nothing only the collector's client does, else std
// (the collector's client). why names the setting that chose std; "" with
// the own transport, which also returns the headers setting as header, for
// bulk.Client.Header (std applies it itself).
func bulkHTTP(ctx context.Context, cfg *Config, std *http.Client) (c *http.Client, tr *bulk.Transport, header http.Header, why string, err error) {
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
	if len(cfg.Headers) > 0 {
		header = http.Header{}
		for _, p := range cfg.Headers {
			header.Set(p.Name, string(p.Value))
		}
	}
	return &http.Client{Transport: tr, Timeout: cfg.Timeout}, tr, header, "", nil
}

// needsConfighttp names the first setting that only the collector's HTTP
// client honours, or "". The HTTP/2 settings are not among them: OpenSearch
// speaks HTTP/1.1 (its default HTTP transport has no HTTP/2), which is what
// net/http uses with it too.
func needsConfighttp(cfg *Config) string {
	switch {
	case cfg.Bulk.Transport == TransportConfighttp:
		return "bulk.transport"
	case cfg.Auth.HasValue():
		return "auth"
	case cfg.Compression.IsCompressed():
		return "compression"
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
		// Connection: close is honoured, a Content-Type or Authorization
		// replaces the exporter's); the transport writes its own.
		for _, h := range []string{"Host", "Connection", "Content-Type", "Authorization"} {
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
