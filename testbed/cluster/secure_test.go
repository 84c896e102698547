package cluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// basicGet sends GET path to node i as user:password over TLS verified
// against the cluster's CA.
func basicDo(t *testing.T, c *Cluster, i int, method, path, user, password, body string) (int, string) {
	t.Helper()
	cl := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: c.ClientTLS()}}
	defer cl.CloseIdleConnections()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, _ := http.NewRequestWithContext(context.Background(), method, c.Addr(i)+path, r)
	if user != "" {
		req.SetBasicAuth(user, password)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/x-ndjson")
	}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatalf("%s %s as %q: %v", method, path, user, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestSecureCluster starts a 2-node cluster with the security plugin and
// checks TLS on HTTP (verified against the generated CA) and transport (the
// second node joins), and that users and roles are enforced.
func TestSecureCluster(t *testing.T) {
	closeShared()
	c := Start(t, Options{Nodes: 2, Version: SecureVersion(), Security: &Security{}})
	sec := c.Security()
	if sec == nil || !strings.HasPrefix(c.Addr(0), "https://") {
		t.Fatalf("not a secured cluster: %+v %s", sec, c.Addr(0))
	}
	t.Run("anonymous is refused", func(t *testing.T) {
		if code, body := basicDo(t, c, 0, "GET", "/", "", "", ""); code != http.StatusUnauthorized {
			t.Fatalf("anonymous GET / = %d %s, want 401", code, body)
		}
	})
	t.Run("admin over TLS", func(t *testing.T) {
		code, body := basicDo(t, c, 1, "GET", "/_cluster/health", sec.AdminUser, sec.AdminPassword, "")
		if code != http.StatusOK || !strings.Contains(body, `"number_of_nodes":2`) {
			t.Fatalf("admin health = %d %s", code, body)
		}
		if code, _ := basicDo(t, c, 1, "GET", "/", sec.AdminUser, "wrong-"+sec.AdminPassword, ""); code != http.StatusUnauthorized {
			t.Fatalf("wrong password = %d, want 401", code)
		}
	})
	t.Run("plain HTTP and an unknown CA are refused", func(t *testing.T) {
		resp, err := http.Get(strings.Replace(c.Addr(0), "https://", "http://", 1))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode < 400 {
				t.Fatalf("plain HTTP answered %d", resp.StatusCode)
			}
		}
		cl := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{}}}
		if _, err := cl.Get(c.Addr(0)); err == nil || !strings.Contains(err.Error(), "certificate") {
			t.Fatalf("system roots accepted the node certificate: %v", err)
		}
	})
}

// TestPKI: the generated node certificate verifies against the CA for
// 127.0.0.1 and the node names, for server and client use (transport TLS
// is both); the subjects are the DNs the node settings name.
func TestPKI(t *testing.T) {
	info, err := writePKI(t.TempDir(), 2, &Security{ExtraDNS: []string{"opensearch.test"}})
	if err != nil {
		t.Fatal(err)
	}
	load := func(f string) *x509.Certificate {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		blk, _ := pem.Decode(b)
		c, err := x509.ParseCertificate(blk.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	node := load(filepath.Join(info.Dir, "node.pem"))
	for _, name := range []string{"127.0.0.1", "localhost", "node-1", "opensearch.test"} {
		for _, use := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
			if _, err := node.Verify(x509.VerifyOptions{Roots: info.CAPool, DNSName: name, KeyUsages: []x509.ExtKeyUsage{use}}); err != nil {
				t.Errorf("node certificate for %s (%v): %v", name, use, err)
			}
		}
	}
	if _, err := node.Verify(x509.VerifyOptions{Roots: info.CAPool, DNSName: "node-2"}); err == nil {
		t.Error("node certificate verifies for a name it was not issued for")
	}
	admin := load(info.AdminCertFile)
	if node.Subject.String() != info.NodeDN || admin.Subject.String() != info.AdminDN {
		t.Fatalf("subjects %q, %q; settings name %q, %q", node.Subject, admin.Subject, info.NodeDN, info.AdminDN)
	}
	if _, err := tls.LoadX509KeyPair(info.AdminCertFile, info.AdminKeyFile); err != nil {
		t.Fatal(err)
	}
}
