package opensearchrouted

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configauth"
	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
	"go.opentelemetry.io/collector/exporter/exportertest"

	"github.com/opensearchrouted/opensearchrouted/exporter/opensearchrouted/internal/metadata"
)

// fakeAuth is an auth extension whose RoundTripper signs like sigv4: it
// reads the body through GetBody (leaving Body for the transport) and sets
// the body's hash and a bearer token.
type fakeAuth struct {
	component.StartFunc
	component.ShutdownFunc
}

func (fakeAuth) RoundTripper(base http.RoundTripper) (http.RoundTripper, error) {
	return &fakeAuthRT{base: base}, nil
}

type fakeAuthRT struct{ base http.RoundTripper }

func (a *fakeAuthRT) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	if req.Body != nil && req.Body != http.NoBody {
		if req.GetBody == nil {
			return nil, fmt.Errorf("fake auth: request without GetBody")
		}
		rc, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		h := sha256.New()
		n, _ := io.Copy(h, rc)
		rc.Close()
		if n != req.ContentLength {
			return nil, fmt.Errorf("fake auth: GetBody gave %d bytes, ContentLength %d", n, req.ContentLength)
		}
		r.Header.Set("X-Body-Sha256", hex.EncodeToString(h.Sum(nil)))
	}
	r.Header.Set("Authorization", "Bearer signed")
	return a.base.RoundTrip(r)
}

var fakeAuthID = component.MustNewID("bearertokenauth")

func fakeAuthExtensions() map[component.ID]component.Component {
	return map[component.ID]component.Component{fakeAuthID: fakeAuth{}}
}

type extHost struct {
	ext map[component.ID]component.Component
}

func (h extHost) GetExtensions() map[component.ID]component.Component { return h.ext }

// TestOwnTransportCredentials: with username/password, a bearer token
// header or an auth extension, and with gzip, bulk requests go through the
// exporter's own transport with the credentials on every request (discovery
// too), the auth extension sees the body as sent (compressed, hash checked
// by the server), and every record arrives.
func TestOwnTransportCredentials(t *testing.T) {
	for _, tc := range []struct {
		name      string
		set       func(*Config)
		wantAuth  string
		transport string
	}{
		{"basic", func(c *Config) { c.Username, c.Password = "exporter", "s3cret" }, basicAuth("exporter", "s3cret"), TransportAuto},
		{"basic confighttp", func(c *Config) {
			c.Username, c.Password = "exporter", "s3cret"
			c.Bulk.Transport = TransportConfighttp
		}, basicAuth("exporter", "s3cret"), TransportConfighttp},
		{"basic gzip", func(c *Config) { c.Username, c.Password, c.Compression = "exporter", "s3cret", "gzip" }, basicAuth("exporter", "s3cret"), TransportAuto},
		{"bearer header", func(c *Config) {
			c.Headers = configopaque.MapList{{Name: "Authorization", Value: "Bearer tok"}}
		}, "Bearer tok", TransportAuto},
		{"auth extension gzip", func(c *Config) {
			c.Auth = configoptional.Some(configauth.Config{AuthenticatorID: fakeAuthID})
			c.Compression = "gzip"
		}, "Bearer signed", TransportAuto},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var docs int
			var errs []string
			fail := func(f string, a ...any) {
				mu.Lock()
				errs = append(errs, fmt.Sprintf(f, a...))
				mu.Unlock()
			}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if got := r.Header.Get("Authorization"); got != tc.wantAuth {
					fail("%s %s: Authorization %q", r.Method, r.URL.Path, got)
				}
				if !strings.HasSuffix(r.URL.Path, "/_bulk") {
					w.WriteHeader(403)
					return
				}
				raw, _ := io.ReadAll(r.Body)
				if sum := r.Header.Get("X-Body-Sha256"); sum != "" {
					h := sha256.Sum256(raw)
					if sum != hex.EncodeToString(h[:]) {
						fail("signed body hash differs from the body sent")
					}
				}
				body := raw
				if r.Header.Get("Content-Encoding") == "gzip" {
					zr, err := gzip.NewReader(bytes.NewReader(raw))
					if err == nil {
						body, err = io.ReadAll(zr)
					}
					if err != nil {
						fail("gunzip: %v", err)
					}
				} else if strings.Contains(tc.name, "gzip") {
					fail("bulk without Content-Encoding: gzip")
				}
				n := bytes.Count(body, []byte("\n")) / 2
				mu.Lock()
				docs += n
				mu.Unlock()
				writeCreated(w, n)
			}))
			defer srv.Close()
			cfg := testConfig([]string{srv.URL})
			cfg.LogsIndex = "x"
			cfg.Bulk.Transport = tc.transport
			tc.set(cfg)
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			if why := needsConfighttp(cfg); (why == "") != (tc.transport == TransportAuto) {
				t.Fatalf("transport chosen for %q", why)
			}
			set := exportertest.NewNopSettings(metadata.Type)
			e, err := newExporter(cfg, set, signalLogs)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.start(context.Background(), extHost{fakeAuthExtensions()}); err != nil {
				t.Fatal(err)
			}
			defer e.shutdown(context.Background())
			for k := 0; k < 4; k++ {
				if err := e.pushLogs(context.Background(), makeLogs(k*500, 500)); err != nil {
					t.Fatal(err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if len(errs) > 0 {
				t.Fatalf("%d problems, first: %s", len(errs), errs[0])
			}
			if docs != 2000 {
				t.Fatalf("%d documents arrived, want 2000", docs)
			}
		})
	}
}

// TestCredentialsValidation: username/password exclude auth and an
// Authorization header, and a password needs a username.
func TestCredentialsValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  func(*Config)
		want string
	}{
		{"password alone", func(c *Config) { c.Password = "p" }, "username: required when password is set"},
		{"with auth", func(c *Config) {
			c.Username, c.Password = "u", "p"
			c.Auth = configoptional.Some(configauth.Config{AuthenticatorID: fakeAuthID})
		}, "username/password and auth are mutually exclusive"},
		{"with header", func(c *Config) {
			c.Username, c.Password = "u", "p"
			c.Headers = configopaque.MapList{{Name: "authorization", Value: "Bearer x"}}
		}, "username/password and headers (Authorization) are mutually exclusive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig([]string{"http://127.0.0.1:9200"})
			tc.set(cfg)
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate = %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "p\"") {
				t.Fatalf("error shows the password: %v", err)
			}
		})
	}
	cfg := testConfig([]string{"http://127.0.0.1:9200"})
	cfg.Username, cfg.Password = "u", "p"
	if err := cfg.Validate(); err != nil {
		t.Fatalf("username and password: %v", err)
	}
}

// TestRefusedCredentialsBound: records refused for the credentials stay with
// the collector's retry_on_failure. Fixed within max_elapsed_time, every
// record is stored once; still refused at the bound, the call fails with
// the refusal (the collector then drops the batch and counts it as failed).
func TestRefusedCredentialsBound(t *testing.T) {
	for _, fixedAfter := range []int{3, -1} {
		t.Run(fmt.Sprintf("fixed after %d refusals", fixedAfter), func(t *testing.T) {
			var mu sync.Mutex
			refused, docs := 0, 0
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if !strings.HasSuffix(r.URL.Path, "/_bulk") {
					w.WriteHeader(403)
					return
				}
				mu.Lock()
				defer mu.Unlock()
				if fixedAfter < 0 || refused < fixedAfter {
					refused++
					w.WriteHeader(401)
					fmt.Fprint(w, `{"error":{"type":"security_exception","reason":"unable to authenticate user"},"status":401}`)
					return
				}
				body, _ := io.ReadAll(r.Body)
				n := bytes.Count(body, []byte("\n")) / 2
				docs += n
				writeCreated(w, n)
			}))
			defer srv.Close()
			cfg := testConfig([]string{srv.URL})
			cfg.LogsIndex = "x"
			cfg.Username, cfg.Password = "exporter", "rotated"
			cfg.QueueConfig = configoptional.None[exporterhelper.QueueBatchConfig]()
			cfg.RetryConfig.InitialInterval = 20 * time.Millisecond
			cfg.RetryConfig.MaxInterval = 50 * time.Millisecond
			cfg.RetryConfig.MaxElapsedTime = 2 * time.Second
			f := NewFactory()
			exp, err := f.CreateLogs(context.Background(), exportertest.NewNopSettings(metadata.Type), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if err := exp.Start(context.Background(), nopHost()); err != nil {
				t.Fatal(err)
			}
			defer exp.Shutdown(context.Background())
			err = exp.ConsumeLogs(context.Background(), makeLogs(0, 300))
			mu.Lock()
			defer mu.Unlock()
			if fixedAfter > 0 {
				if err != nil || docs != 300 || refused != fixedAfter {
					t.Fatalf("fixed after %d refusals: err %v, stored %d, refused %d", fixedAfter, err, docs, refused)
				}
				return
			}
			if err == nil || consumererror.IsPermanent(err) || !strings.Contains(err.Error(), "HTTP 401") ||
				!strings.Contains(err.Error(), "no more retries left") || docs != 0 || refused < 5 {
				t.Fatalf("never fixed: err %v, stored %d, refused %d", err, docs, refused)
			}
		})
	}
}

// writeCreated writes a _bulk answer of n created items (index x).
func writeCreated(w io.Writer, n int) {
	items := strings.TrimSuffix(strings.Repeat(`{"create":{"_index":"x","status":201}},`, n), ",")
	fmt.Fprintf(w, `{"errors":false,"items":[%s]}`, items)
}
