package opensearchrouted

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/consumer/consumertest"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/opensearchrouted/opensearchrouted/receiver/opensearchbackfill"
	"github.com/opensearchrouted/opensearchrouted/testbed/cluster"
)

// The roles the README documents; the secured tests load these files.
const (
	exporterRoleFile = "../../docs/security/exporter-role.json"
	backfillRoleFile = "../../docs/security/backfill-role.json"
)

// secureRole is a security role's REST body.
type secureRole struct {
	Description      string   `json:"description,omitempty"`
	ClusterPerms     []string `json:"cluster_permissions"`
	IndexPermissions []struct {
		IndexPatterns  []string `json:"index_patterns"`
		AllowedActions []string `json:"allowed_actions"`
	} `json:"index_permissions"`
}

func readRole(t *testing.T, file string) (secureRole, []byte) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var r secureRole
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return r, b
}

// withoutMonitor is the exporter role without the discovery privileges
// (every cluster:monitor action, indices:monitor and data_stream/get).
func withoutMonitor(r secureRole) []byte {
	var cp []string
	for _, p := range r.ClusterPerms {
		if !strings.HasPrefix(p, "cluster:monitor/") {
			cp = append(cp, p)
		}
	}
	r.ClusterPerms = cp
	ips := r.IndexPermissions[:0]
	for _, ip := range r.IndexPermissions {
		var acts []string
		for _, a := range ip.AllowedActions {
			if !strings.HasPrefix(a, "indices:monitor/") && a != "indices:admin/data_stream/get" {
				acts = append(acts, a)
			}
		}
		if len(acts) > 0 {
			ip.AllowedActions = acts
			ips = append(ips, ip)
		}
	}
	r.IndexPermissions = ips
	b, _ := json.Marshal(r)
	return b
}

// adminCount refreshes and counts target as the cluster's admin.
func adminCount(t *testing.T, c *cluster.Cluster, target string) int {
	t.Helper()
	c.Do(0, "POST", "/"+target+"/_refresh", nil)
	code, body, err := c.Do(0, "GET", "/"+target+"/_count", nil)
	if err != nil || code != 200 {
		t.Fatalf("count %s: %d %s %v", target, code, body, err)
	}
	var n struct {
		Count int `json:"count"`
	}
	_ = json.Unmarshal(body, &n)
	return n.Count
}

// foreignCA writes a CA certificate that signed nothing of the cluster's.
func foreignCA(t *testing.T) string {
	_, _, file := selfSignedCA(t, "other CA")
	return file
}

// handedBack is the number of log records err hands back for retry
// (-1 when err is not a retryable logs error).
func handedBack(err error) (plog.Logs, int) {
	var le consumererror.Logs
	if err == nil || consumererror.IsPermanent(err) || !errors.As(err, &le) {
		return plog.Logs{}, -1
	}
	return le.Data(), le.Data().LogRecordCount()
}

// TestRealClusterSecured runs the exporter against a 2-node cluster with
// the security plugin (TLS on HTTP and transport, internal users) on the
// version SecureVersion names for the line under test:
//   - the README's exporter role over TLS + basic auth + gzip on the own
//     transport: 50,000 records exactly once, ≥ 99 % routed direct;
//   - without the monitor privileges: everything through the endpoints,
//     one warning naming the refused privilege, counted, nothing lost;
//   - a wrong password (401) and a user who may not write (403): a
//     retryable error naming the refusal, the records handed back and
//     stored exactly once after the password or the role is fixed;
//   - TLS: a foreign CA and a wrong server name fail with an error naming
//     the node and the reason; insecure_skip_verify works and warns once.
func TestRealClusterSecured(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Nodes: 2, Version: cluster.SecureVersion(), Security: &cluster.Security{}})
	sec := c.Security()
	exporterRole, exporterJSON := readRole(t, exporterRoleFile)
	_, backfillJSON := readRole(t, backfillRoleFile)
	c.PutRole("osr_exporter", exporterJSON)
	c.PutRole("osr_nomonitor", withoutMonitor(exporterRole))
	c.PutRole("osr_backfill", backfillJSON)
	const pw = "Tq7-Vendor-Kiwi-93x"
	c.PutUser("exporter", pw, "osr_exporter")
	c.PutUser("nomonitor", pw, "osr_nomonitor")
	c.PutUser("reader", pw, "osr_backfill")

	secured := func(user, password, dataset string) *Config {
		cfg := testConfig(c.Addrs())
		cfg.TLS.CAFile = sec.CAFile
		cfg.Username, cfg.Password = user, configopaque.String(password)
		cfg.Dataset = dataset
		return cfg
	}
	// The data stream templates, installed by the admin (the exporter role
	// has no template privilege).
	{
		cfg := secured(sec.AdminUser, sec.AdminPassword, "setup")
		cfg.InstallTemplates = true
		e, _ := startExporter(t, cfg, signalLogs)
		exportAll(t, e, 0, 10)
	}

	t.Run("minimal role, TLS, basic auth, gzip: exactly once, routed", func(t *testing.T) {
		cfg := secured("exporter", pw, "secure")
		cfg.Compression = "gzip"
		e, reader, logs := startObserved(t, cfg, signalLogs)
		if e.shared.bulkTr == nil {
			t.Fatal("bulk requests do not use the exporter's own transport")
		}
		target := "ss4o_logs-secure-namespace"
		exportAll(t, e, 0, 200) // creates the data stream
		waitRouted(t, e, target)
		before := sumMetric(t, reader, "otelcol.opensearchrouted.documents.routed", map[string]string{"path": "direct"})
		const n, per = 50_000, 5_000
		for k := 0; k < n/per; k++ {
			exportAll(t, e, 1000+k*per, per)
		}
		direct := sumMetric(t, reader, "otelcol.opensearchrouted.documents.routed", map[string]string{"path": "direct"}) - before
		if got := adminCount(t, c, target); got != n+200 {
			t.Fatalf("stored %d, want %d", got, n+200)
		}
		if direct < n*99/100 {
			t.Fatalf("%d of %d routed direct, want at least 99 %%", direct, n)
		}
		for _, l := range logs.All() {
			t.Errorf("unexpected log: %s %v", l.Message, l.ContextMap())
		}
		t.Logf("%d of %d direct", direct, n)
	})

	t.Run("backfill receiver with the backfill role", func(t *testing.T) {
		// The receiver reads the data stream the first subtest wrote.
		target := "ss4o_logs-secure-namespace"
		want := adminCount(t, c, target)
		rcfg := opensearchbackfill.NewFactory().CreateDefaultConfig().(*opensearchbackfill.Config)
		rcfg.Endpoints = c.Addrs()
		rcfg.Indices = []string{target}
		rcfg.TLS.CAFile = sec.CAFile
		rcfg.Headers = configopaque.MapList{{Name: "Authorization", Value: configopaque.String(basicAuth("reader", pw))}}
		sink := new(consumertest.LogsSink)
		r, err := opensearchbackfill.NewFactory().CreateLogs(context.Background(),
			receivertest.NewNopSettings(opensearchbackfill.NewFactory().Type()), rcfg, sink)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.Start(context.Background(), nopHost()); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(2 * time.Minute)
		for sink.LogRecordCount() < want && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
		}
		if err := r.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
		if got := sink.LogRecordCount(); got != want {
			t.Fatalf("the receiver read %d records, want %d", got, want)
		}
		// Each action of the role is needed: without it, its call is refused.
		calls := func(user string) map[string]int {
			out := map[string]int{}
			code, body := userDo(t, c, user, pw, "POST", "/"+target+"/_search/point_in_time?keep_alive=1m", "")
			out["indices:data/read/point_in_time/create"] = code
			var p struct {
				PitID string `json:"pit_id"`
			}
			_ = json.Unmarshal(body, &p)
			if p.PitID == "" { // the others need a PIT: take the admin's
				_, body, _ = c.Do(0, "POST", "/"+target+"/_search/point_in_time?keep_alive=1m", nil)
				_ = json.Unmarshal(body, &p)
			}
			code, body = userDo(t, c, user, pw, "POST", "/_search", `{"size":1,"pit":{"id":"`+p.PitID+`","keep_alive":"1m"}}`)
			out["indices:data/read/search"] = code
			if code != 200 && code != 403 {
				t.Logf("%s: search: HTTP %d %s", user, code, body)
			}
			out["indices:data/read/point_in_time/delete"], _ = userDo(t, c, user, pw, "DELETE", "/_search/point_in_time", `{"pit_id":["`+p.PitID+`"]}`)
			c.Do(0, "DELETE", "/_search/point_in_time/_all", nil)
			return out
		}
		for action, code := range calls("reader") {
			if code != 200 {
				t.Fatalf("with the backfill role, %s: HTTP %d", action, code)
			}
		}
		role, _ := readRole(t, backfillRoleFile)
		for _, drop := range role.IndexPermissions[0].AllowedActions {
			less := role
			less.IndexPermissions = slices.Clone(role.IndexPermissions)
			less.IndexPermissions[0].AllowedActions = slices.DeleteFunc(slices.Clone(role.IndexPermissions[0].AllowedActions),
				func(a string) bool { return a == drop })
			b, _ := json.Marshal(less)
			c.PutRole("osr_backfill_less", b)
			c.PutUser("lessreader", pw, "osr_backfill_less")
			if code := calls("lessreader")[drop]; code != 403 {
				t.Fatalf("without %s its call answered %d, want 403", drop, code)
			}
		}
	})

	t.Run("no monitor privileges: through the endpoints, nothing lost", func(t *testing.T) {
		cfg := secured("nomonitor", pw, "nomonitor")
		cfg.Routing.NodeStatsInterval = 100 * time.Millisecond
		e, reader, logs := startObserved(t, cfg, signalLogs)
		for k := 0; k < 4; k++ {
			exportAll(t, e, k*500, 500)
		}
		if got := adminCount(t, c, "ss4o_logs-nomonitor-namespace"); got != 2000 {
			t.Fatalf("stored %d, want 2000", got)
		}
		if u := sumMetric(t, reader, "otelcol.opensearchrouted.documents.routed", map[string]string{"reason": "no_topology"}); u != 2000 {
			t.Fatalf("%d documents counted no_topology, want 2000", u)
		}
		if f := sumMetric(t, reader, "otelcol.opensearchrouted.topology.refreshes", map[string]string{"outcome": "forbidden"}); f < 1 {
			t.Fatalf("forbidden refreshes counted %d", f)
		}
		warned := map[string]int{}
		for _, l := range logs.FilterMessageSnippet("refused a discovery call").All() {
			warned[l.ContextMap()["missing_privilege"].(string)]++
		}
		if len(warned) == 0 {
			t.Fatalf("no warning naming a refused privilege; logs: %v", logs.All())
		}
		for p, k := range warned {
			if k != 1 || !strings.Contains(p, "cluster:monitor/") && !strings.Contains(p, "indices:") {
				t.Fatalf("warnings by privilege: %v", warned)
			}
		}
		t.Logf("warnings by privilege: %v", warned)
	})

	t.Run("wrong password: kept for retry until rotated", func(t *testing.T) {
		c.PutUser("rotating", "Mq4-Lantern-Fig-27y", "osr_exporter")
		cfg := secured("rotating", "Zr8-Harbor-Plum-51w", "rotating")
		e, _, logs := startObserved(t, cfg, signalLogs)
		data, n := handedBack(e.pushLogs(context.Background(), makeLogs(0, 1000)))
		err := e.pushLogs(context.Background(), data)
		if _, m := handedBack(err); n != 1000 || m != 1000 || !strings.Contains(err.Error(), "HTTP 401") {
			t.Fatalf("with a wrong password: handed back %d then %d, error %v", n, m, err)
		}
		if k := len(logs.FilterMessageSnippet("refused the exporter's credentials").All()); k != 1 {
			t.Fatalf("%d error logs for two refused calls, want 1 (rate-limited)", k)
		}
		if strings.Contains(err.Error(), "Zr8-Harbor") {
			t.Fatal("the password is in the error")
		}
		c.PutUser("rotating", "Zr8-Harbor-Plum-51w", "osr_exporter")
		exportAllData(t, e, data)
		if got := adminCount(t, c, "ss4o_logs-rotating-namespace"); got != 1000 {
			t.Fatalf("stored %d after the rotation, want 1000", got)
		}
	})

	t.Run("user who may not write: kept for retry until granted", func(t *testing.T) {
		c.PutUser("grantme", pw, "osr_backfill")
		cfg := secured("grantme", pw, "granted")
		e, _, _ := startObserved(t, cfg, signalLogs)
		err := e.pushLogs(context.Background(), makeLogs(0, 1000))
		data, n := handedBack(err)
		if n != 1000 || !strings.Contains(err.Error(), "HTTP 403") {
			t.Fatalf("without write privileges: handed back %d, error %v", n, err)
		}
		c.PutUser("grantme", pw, "osr_exporter")
		exportAllData(t, e, data)
		if got := adminCount(t, c, "ss4o_logs-granted-namespace"); got != 1000 {
			t.Fatalf("stored %d after the grant, want 1000", got)
		}
	})

	t.Run("TLS verification", func(t *testing.T) {
		for _, tc := range []struct {
			name string
			set  func(*Config)
			want string
		}{
			{"foreign CA", func(cfg *Config) { cfg.TLS.CAFile = foreignCA(t) }, "certificate signed by unknown authority"},
			{"wrong name", func(cfg *Config) { cfg.TLS.ServerName = "elsewhere.example" }, "not elsewhere.example"},
		} {
			cfg := secured("exporter", pw, "tls")
			tc.set(cfg)
			cfg.Bulk.MaxAttempts = 2
			e, _ := startExporter(t, cfg, signalLogs)
			err := e.pushLogs(context.Background(), makeLogs(0, 10))
			if _, n := handedBack(err); n != 10 || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "127.0.0.1:") {
				t.Fatalf("%s: handed back %d, error %v", tc.name, n, err)
			}
			t.Logf("%s: %v", tc.name, err)
		}
		cfg := secured("exporter", pw, "tls")
		cfg.TLS.CAFile = ""
		cfg.TLS.InsecureSkipVerify = true
		e, _, logs := startObserved(t, cfg, signalLogs)
		exportAll(t, e, 0, 100)
		exportAll(t, e, 100, 100)
		if got := adminCount(t, c, "ss4o_logs-tls-namespace"); got != 200 {
			t.Fatalf("insecure_skip_verify: stored %d, want 200", got)
		}
		if k := len(logs.FilterMessageSnippet("insecure_skip_verify").All()); k != 1 {
			t.Fatalf("%d insecure_skip_verify warnings, want 1", k)
		}
	})
}

// userDo sends one request to node 0 as user over TLS (verified against
// the cluster's CA).
func userDo(t *testing.T, c *cluster.Cluster, user, password, method, path, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(method, c.Addr(0)+path, strings.NewReader(body))
	req.SetBasicAuth(user, password)
	req.Header.Set("Content-Type", "application/json")
	cl := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: c.ClientTLS()}}
	defer cl.CloseIdleConnections()
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// exportAllData resends ld as the collector's retry would until stored.
func exportAllData(t *testing.T, e *osExporter, ld plog.Logs) {
	t.Helper()
	err := e.pushLogs(context.Background(), ld)
	for tries := 0; err != nil; tries++ {
		data, n := handedBack(err)
		if n < 0 || tries > 50 {
			t.Fatalf("resend: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
		err = e.pushLogs(context.Background(), data)
	}
}
