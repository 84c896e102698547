package cluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// SecurityPluginClass is the security plugin's plugin class.
const SecurityPluginClass = "org.opensearch.security.OpenSearchSecurityPlugin"

// Security turns on the OpenSearch security plugin (Options.Security): TLS on
// HTTP and transport with certificates generated for the cluster, the
// internal user database, and an admin user. The plugin is the Maven Central
// artifact org.opensearch.plugin:opensearch-security:<server version>.0
// (a zip; not every server release has one: see SecureVersions).
type Security struct {
	// AdminPassword is the password of the user "admin" (all_access).
	// Empty: a random one (Cluster.Security().AdminPassword tells it).
	AdminPassword string
	// ExtraDNS and ExtraIPs are added to the node certificate's subject
	// alternative names (it always has localhost, node-0…node-N and 127.0.0.1).
	ExtraDNS []string
	ExtraIPs []net.IP
}

// SecurityInfo is what a client of a secured cluster needs.
type SecurityInfo struct {
	// Dir holds the PEM files below.
	Dir string
	// CAFile is the CA certificate (PEM) that signed every node certificate.
	CAFile string
	// AdminCertFile and AdminKeyFile are the admin client certificate
	// (plugins.security.authcz.admin_dn) and its key.
	AdminCertFile, AdminKeyFile string
	// NodeDN and AdminDN are the subjects of the node and admin certificates.
	NodeDN, AdminDN string
	// AdminUser / AdminPassword: an internal user mapped to all_access.
	AdminUser, AdminPassword string
	// CAPool trusts CAFile.
	CAPool *x509.CertPool
}

// SecureVersions are, per release line, the newest server versions whose
// security plugin Maven Central serves (2.19.6.0 and 3.9.0.0 are not
// published there; 2.19.4.0 and 3.4.0.0 are).
var SecureVersions = map[string]string{"2": "2.19.4", "3": "3.4.0"}

// SecureVersion returns $OSR_SECURE_VERSION, else the SecureVersions entry
// of the major line of DefaultVersion().
func SecureVersion() string {
	if v := os.Getenv("OSR_SECURE_VERSION"); v != "" {
		return v
	}
	major, _, _ := strings.Cut(DefaultVersion(), ".")
	if v, ok := SecureVersions[major]; ok {
		return v
	}
	return SecureVersions["2"]
}

// securityLayout names the layout of the cached plugin directory (a change
// fetches again).
const securityLayout = "2"

const (
	nodeDN  = "CN=node,OU=test,O=opensearchrouted"
	adminDN = "CN=admin,OU=test,O=opensearchrouted"
)

func dnName(cn string) pkix.Name {
	return pkix.Name{CommonName: cn, OrganizationalUnit: []string{"test"}, Organization: []string{"opensearchrouted"}}
}

// pki generates a CA, one node certificate (server and client use, for HTTP
// and transport) and an admin client certificate into dir.
func writePKI(dir string, nodes int, s *Security) (*SecurityInfo, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	now := time.Now().Add(-time.Hour)
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               dnName("opensearchrouted test CA"),
		NotBefore:             now,
		NotAfter:              now.Add(30 * 24 * time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, _ := x509.ParseCertificate(caDER)
	dns := []string{"localhost"}
	for i := 0; i < nodes; i++ {
		dns = append(dns, fmt.Sprintf("node-%d", i))
	}
	dns = append(dns, s.ExtraDNS...)
	ips := append([]net.IP{net.IPv4(127, 0, 0, 1)}, s.ExtraIPs...)
	leaf := func(cn string, server bool) ([]byte, []byte, error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		t := &x509.Certificate{
			SerialNumber: serial(),
			Subject:      dnName(cn),
			NotBefore:    now,
			NotAfter:     now.Add(30 * 24 * time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
		}
		if server {
			t.ExtKeyUsage = append(t.ExtKeyUsage, x509.ExtKeyUsageServerAuth)
			t.DNSNames, t.IPAddresses = dns, ips
		}
		der, err := x509.CreateCertificate(rand.Reader, t, ca, &key.PublicKey, caKey)
		if err != nil {
			return nil, nil, err
		}
		k, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return nil, nil, err
		}
		return pemBlock("CERTIFICATE", der), pemBlock("PRIVATE KEY", k), nil
	}
	nodeCert, nodeKey, err := leaf("node", true)
	if err != nil {
		return nil, err
	}
	adminCert, adminKey, err := leaf("admin", false)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{
		"root-ca.pem": pemBlock("CERTIFICATE", caDER), "node.pem": nodeCert, "node-key.pem": nodeKey,
		"admin.pem": adminCert, "admin-key.pem": adminKey,
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			return nil, err
		}
	}
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	pw := s.AdminPassword
	if pw == "" {
		pw = randomPassword()
	}
	return &SecurityInfo{
		Dir: dir, CAFile: filepath.Join(dir, "root-ca.pem"),
		AdminCertFile: filepath.Join(dir, "admin.pem"), AdminKeyFile: filepath.Join(dir, "admin-key.pem"),
		NodeDN: nodeDN, AdminDN: adminDN, AdminUser: "admin", AdminPassword: pw, CAPool: pool,
	}, nil
}

func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 120))
	return n
}

func pemBlock(typ string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

// randomPassword is strong enough for the plugin's password rules
// (length, zxcvbn score): 20 random hex digits around fixed classes.
func randomPassword() string {
	b := make([]byte, 10)
	_, _ = rand.Read(b)
	return "Osr-" + hex.EncodeToString(b) + "-Pw9"
}

// securityYAML is each node's config/opensearch.yml with a secured cluster:
// PEM certificates (paths relative to the config directory), HTTP TLS, and
// the first start initialising the security index from
// config/opensearch-security/ (the plugin's own default-init mechanism).
func securityYAML() string {
	return `plugins.security.ssl.transport.pemcert_filepath: node.pem
plugins.security.ssl.transport.pemkey_filepath: node-key.pem
plugins.security.ssl.transport.pemtrustedcas_filepath: root-ca.pem
plugins.security.ssl.transport.enforce_hostname_verification: true
plugins.security.ssl.http.enabled: true
plugins.security.ssl.http.pemcert_filepath: node.pem
plugins.security.ssl.http.pemkey_filepath: node-key.pem
plugins.security.ssl.http.pemtrustedcas_filepath: root-ca.pem
plugins.security.ssl.http.clientauth_mode: OPTIONAL
plugins.security.allow_default_init_securityindex: true
plugins.security.authcz.admin_dn:
  - "` + adminDN + `"
plugins.security.nodes_dn:
  - "` + nodeDN + `"
plugins.security.restapi.roles_enabled: ["all_access"]
plugins.security.check_snapshot_restore_write_privileges: true
`
}

// securityConfig are the files of config/opensearch-security/: HTTP basic
// authentication against the internal user database, no users (they are
// created through the REST API once the index exists), the plugin's static
// roles only.
var securityConfig = map[string]string{
	"config.yml": `_meta: {type: "config", config_version: 2}
config:
  dynamic:
    http:
      anonymous_auth_enabled: false
    authc:
      basic_internal_auth_domain:
        http_enabled: true
        transport_enabled: true
        order: 0
        http_authenticator: {type: basic, challenge: true}
        authentication_backend: {type: intern}
`,
	"internal_users.yml": "_meta: {type: \"internalusers\", config_version: 2}\n",
	"roles.yml":          "_meta: {type: \"roles\", config_version: 2}\n",
	"roles_mapping.yml":  "_meta: {type: \"rolesmapping\", config_version: 2}\n",
	"action_groups.yml":  "_meta: {type: \"actiongroups\", config_version: 2}\n",
	"tenants.yml":        "_meta: {type: \"tenants\", config_version: 2}\n",
	"nodes_dn.yml":       "_meta: {type: \"nodesdn\", config_version: 2}\n",
	"allowlist.yml":      "_meta: {type: \"allowlist\", config_version: 2}\nconfig: {enabled: false}\n",
}

// writeNodeSecurity writes node home's config directory: the PEM files,
// opensearch.yml and opensearch-security/.
func writeNodeSecurity(home string, info *SecurityInfo) error {
	conf := filepath.Join(home, "config")
	sec := filepath.Join(conf, "opensearch-security")
	if err := os.MkdirAll(sec, 0o755); err != nil {
		return err
	}
	for _, f := range []string{"root-ca.pem", "node.pem", "node-key.pem"} {
		b, err := os.ReadFile(filepath.Join(info.Dir, f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(conf, f), b, 0o600); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(conf, "opensearch.yml"), []byte(securityYAML()), 0o644); err != nil {
		return err
	}
	for name, body := range securityConfig {
		if err := os.WriteFile(filepath.Join(sec, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// securityPluginDir unpacks the security plugin's jars for a server version
// into the cache (once; guarded by the build lock) with Maven.
func securityPluginDir(ctx context.Context, version string, logf func(string, ...any)) (string, error) {
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return "", errors.New("cluster: mvn not found on PATH: the security plugin is fetched with Maven (apt-get install maven)")
	}
	return cachedDir(ctx, "security-"+version+".0-"+securityLayout, "opensearch-security "+version+".0", logf, func(tmp string) error {
		steps := [][]string{{"unpack",
			"-Dartifact=org.opensearch.plugin:opensearch-security:" + version + ".0:zip",
			"-Dmdep.unpack.includes=*.jar,plugin-descriptor.properties"}}
		if isMajor3OrLater(version) {
			// 3.x's plugin extends the rule-framework module, which brings
			// commons-collections4 in a distribution; the classpath needs it.
			steps = append(steps, []string{"copy", "-Dartifact=org.apache.commons:commons-collections4:4.4"})
		}
		for _, st := range steps {
			args := append([]string{"-B", "-q", "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:" + st[0], "-DoutputDirectory=" + tmp}, st[1:]...)
			if out, err := runMaven(ctx, mvn, filepath.Dir(tmp), args...); err != nil {
				return fmt.Errorf("cluster: fetching the security plugin %s.0 (%s) with Maven failed "+
					"(not every server release has a plugin on Maven Central; SecureVersions lists ones that do): %w\n%s",
					version, st[1], err, out)
			}
		}
		return nil
	})
}

// FetchSecurityPlugin fetches (once; cached) the security plugin for a
// server version, as a secured cluster's start does.
func FetchSecurityPlugin(ctx context.Context, version string) (dir string, err error) {
	return securityPluginDir(ctx, version, nil)
}

// Security describes a secured cluster (nil when Options.Security is nil).
func (c *Cluster) Security() *SecurityInfo { return c.sec }

// ClientTLS is a TLS configuration trusting the cluster's CA (no client
// certificate); nil for a cluster without security.
func (c *Cluster) ClientTLS() *tls.Config {
	if c.sec == nil {
		return nil
	}
	return &tls.Config{RootCAs: c.sec.CAPool, MinVersion: tls.VersionTLS12}
}

// adminClient speaks HTTPS with the admin certificate: the plugin's super
// admin, allowed everything including the security REST API.
func (c *Cluster) adminClient() (*http.Client, error) {
	cert, err := tls.LoadX509KeyPair(c.sec.AdminCertFile, c.sec.AdminKeyFile)
	if err != nil {
		return nil, err
	}
	cfg := c.ClientTLS()
	cfg.Certificates = []tls.Certificate{cert}
	return &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}, nil
}

// waitSecurityReady waits until the security index is initialised, then
// creates the admin user.
func (c *Cluster) waitSecurityReady(ctx context.Context) error {
	var last string
	for {
		code, body, err := c.do(ctx, 0, http.MethodGet, "/_plugins/_security/api/internalusers", nil)
		if err == nil && code == http.StatusOK {
			break
		}
		if err != nil {
			last = err.Error()
		} else {
			last = fmt.Sprintf("HTTP %d %s", code, tail(string(body), 300))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: security index not initialised: %w; last answer: %s\n%s", ctx.Err(), last, c.logTail(0))
		case <-time.After(300 * time.Millisecond):
		}
	}
	return c.putUser(c.sec.AdminUser, c.sec.AdminPassword, []string{"all_access"})
}

// PutRole creates or replaces a security role from its REST API body
// (PUT _plugins/_security/api/roles/<name>: cluster_permissions,
// index_permissions, …), as the admin certificate.
func (c *Cluster) PutRole(name string, body []byte) error {
	return c.check(c.securityPut("roles/"+name, body))
}

// PutUser creates or replaces an internal user with a password, mapped to
// the given roles, as the admin certificate.
func (c *Cluster) PutUser(name, password string, roles ...string) error {
	return c.check(c.putUser(name, password, roles))
}

func (c *Cluster) putUser(name, password string, roles []string) error {
	if roles == nil {
		roles = []string{}
	}
	b, _ := json.Marshal(map[string]any{"password": password, "opendistro_security_roles": roles})
	return c.securityPut("internalusers/"+name, b)
}

func (c *Cluster) securityPut(path string, body []byte) error {
	if c.sec == nil {
		return errors.New("cluster: not a secured cluster (Options.Security is nil)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code, resp, err := c.do(ctx, 0, http.MethodPut, "/_plugins/_security/api/"+path, body)
	if err != nil {
		return fmt.Errorf("cluster: PUT security %s: %w", path, err)
	}
	if code != http.StatusOK && code != http.StatusCreated {
		return fmt.Errorf("cluster: PUT security %s: HTTP %d: %s", path, code, tail(string(resp), 500))
	}
	return nil
}

// prepareSecurity generates the cluster's certificates and writes each
// node's security configuration; the harness then speaks HTTPS as admin.
func (c *Cluster) prepareSecurity() error {
	info, err := writePKI(filepath.Join(c.dir, "pki"), len(c.nodes), c.opts.Security)
	if err != nil {
		return fmt.Errorf("cluster: generating certificates: %w", err)
	}
	for _, nd := range c.nodes {
		if err := writeNodeSecurity(nd.home, info); err != nil {
			return fmt.Errorf("cluster: %s security config: %w", nd.name, err)
		}
	}
	c.sec = info
	c.client, err = c.adminClient()
	return err
}

// Do sends one request to node i as the harness does (on a secured cluster
// with the admin certificate) and returns the status and body.
func (c *Cluster) Do(i int, method, path string, body []byte) (int, []byte, error) {
	if err := c.index(i); err != nil {
		return 0, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	return c.do(ctx, i, method, path, body)
}
