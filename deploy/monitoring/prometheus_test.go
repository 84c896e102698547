package monitoring

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/plog/plogotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/opensearchrouted/opensearchrouted/testbed/demo"
	"github.com/opensearchrouted/opensearchrouted/testbed/ossim"
)

// forDivisor is how much the real-Prometheus test shortens every alert's
// for: (ScaleFor): a minute of the shipped rules is half a second there.
const forDivisor = 120

// rateInterval is what the test puts for Grafana's $__rate_interval: four
// scrape intervals of 1s, as Grafana computes it.
const rateInterval = "4s"

// testCollectorOverrides are what the test changes in the demo's collector
// configuration (testbed/demo/collector.yaml: OTLP in, the exporter out to
// three endpoints, the internal telemetry on a Prometheus endpoint), merged
// over it by the collector (a second --config): a fourth endpoint, node
// stats every second, a degraded node back in service 2s after it is fast
// again, the collector's retry after 1s, small batches, a queue counted in
// items; and a second exporter, opensearchrouted/otelv1, with the same
// settings (a YAML merge key), writing the same spans in mapping.mode
// otel-v1 (trace groups, service map) through its own traces pipeline.
const testCollectorOverrides = `
exporters:
  opensearchrouted: &overrides
    endpoints:
      - ${env:OSR_OPENSEARCH_ENDPOINT}
      - ${env:OSR_OPENSEARCH_ENDPOINT_1}
      - ${env:OSR_OPENSEARCH_ENDPOINT_2}
      - ${env:OSR_OPENSEARCH_ENDPOINT_3}
    timeout: 5s
    routing:
      node_stats_interval: 1s
      degraded_detection:
        base_ejection_time: 2s
    bulk:
      max_bytes: 262144
    retry_on_failure:
      enabled: true
      initial_interval: 1s
      max_interval: 2s
      max_elapsed_time: 10m
    sending_queue:
      num_consumers: 4
      queue_size: 100000
      sizer: items
      batch:
        flush_timeout: 100ms
        min_size: 500
        max_size: 1000
  opensearchrouted/otelv1:
    <<: *overrides
    mapping:
      mode: otel-v1
    install_templates: true

service:
  pipelines:
    traces/otelv1:
      receivers: [otlp]
      processors: [memory_limiter]
      exporters: [opensearchrouted/otelv1]
`

// expect is what one panel query must return at some moment of a phase:
// at least n series whose labels include match and whose value passes ok
// (nil: any value, NaN included).
type expect struct {
	panel, ref string
	match      map[string]string
	n          int
	ok         func(float64) bool
	what       string
}

func positive(v float64) bool { return v > 0 }
func finite(v float64) bool   { return !math.IsNaN(v) && !math.IsInf(v, 0) && v > 0 }
func equals(x float64) func(float64) bool {
	return func(v float64) bool { return v == x }
}

// TestDashboardAndAlertsAgainstPrometheus runs the collector (built and
// configured as the demo builds and configures it, with
// testCollectorOverrides) with the exporter against a 4-node emulated cluster,
// and a real Prometheus (the prometheus binary on PATH) scraping the
// collector's internal telemetry every second and evaluating the shipped
// alert rules every second, their for: divided by forDivisor (ScaleFor;
// thresholds and ranges as shipped). It drives the phases below and checks
// through Prometheus' HTTP API that every panel query of the dashboard
// returns data in the phase where it should (the expectations below), that
// each alert fires in the phase it is for, that none fires while the
// cluster is healthy, and that the node, discovery and failure alerts fire
// in no phase before their own:
//
//   - healthy: after a warm-up of small requests until documents go
//     direct, logs and traces of two spans (a frontend root and its
//     checkout child: trace groups inline, a service-map edge; some
//     roots with an all-zero span id, which get a content id instead) at
//     about 2,400 records/s;
//   - throttled: every node refuses every bulk with 429
//     (RejectNextBulks), until the retried share alert fires;
//   - node degraded: the bulk requests to a node (not its other requests,
//     nor its replica writes) take 60ms more, until the exporter marks it
//     degraded, steers content-id logs away from its shards and the
//     degraded node alert fires; then it is fast again until it is back
//     in service and the alert resolved;
//   - node down: a node holding a primary of the logs data stream stops
//     (StopNode; the cluster, as while fault detection runs, still shows
//     its shards), until the unrouted share alert fires; it restarts;
//   - node unreachable: the collector's connections to another node are
//     reset while the cluster keeps it, until the dead node alert fires;
//   - discovery forbidden: the nodes answer node stats polls with 403;
//   - refused: a log record dated after 2262 (date_nanos refuses it in both
//     shapes: dead-lettered), one larger than the nodes'
//     http.max_content_length (refused alone, its dead-letter document
//     too: failed), and one dated an hour ahead (stored; at risk for
//     steering).
//
// Every panel query must have been checked in some phase.
func TestDashboardAndAlertsAgainstPrometheus(t *testing.T) {
	promBin := prometheusBinary(t, "prometheus")
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()

	root, err := demo.FindRoot()
	if err != nil {
		t.Fatal(err)
	}
	var buildLog bytes.Buffer
	bin, err := demo.EnsureCollector(ctx, root, &buildLog)
	if err != nil {
		t.Fatalf("building the collector: %v\n%s", err, buildLog.String())
	}
	t.Logf("collector built in %v", time.Since(start).Round(time.Millisecond))

	// Four shards per index, so that every node holds primaries, one
	// replica: a node holds copies of half of an index's shards, so that
	// steering has the other half to go to. A stopped node stays listed
	// for longer than the test.
	sim := ossim.StartT(t, ossim.Options{Nodes: 4, DefaultShards: 4, DetectionDelay: 10 * time.Minute, PrimaryWait: 300 * time.Millisecond,
		MaxContentLength: 1 << 20, NoHopLatency: true})
	proxies := make([]*nodeProxy, sim.Len())
	endpoints := make([]string, sim.Len())
	for i := range proxies {
		proxies[i] = startNodeProxy(t, sim.Addr(i))
		if err := sim.SetPublishAddress(i, proxies[i].addr); err != nil {
			t.Fatal(err)
		}
		endpoints[i] = "http://" + proxies[i].addr
	}

	dir := t.TempDir()
	ports := freePorts(t, 4)
	otlpAddr, metricsPort, healthPort, promPort := hostPort(ports[0]), ports[1], ports[2], ports[3]
	overrides := filepath.Join(dir, "overrides.yaml")
	writeFile(t, overrides, testCollectorOverrides)
	col := startProcess(t, dir, "collector", bin,
		[]string{"--config", filepath.Join(root, "testbed", "demo", "collector.yaml"), "--config", overrides},
		"OSR_OTLP_GRPC="+otlpAddr, "OSR_OPENSEARCH_ENDPOINT="+endpoints[0], "OSR_OPENSEARCH_ENDPOINT_1="+endpoints[1],
		"OSR_OPENSEARCH_ENDPOINT_2="+endpoints[2], "OSR_OPENSEARCH_ENDPOINT_3="+endpoints[3], "OSR_ROUTING=true", "OSR_DATASET=default",
		"OSR_METRICS_PORT="+strconv.Itoa(metricsPort), "OSR_HEALTH_PORT="+strconv.Itoa(healthPort))

	rules, err := ScaleFor(forDivisor)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "rules.yaml"), string(rules))
	writeFile(t, filepath.Join(dir, "prometheus.yml"), fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 900ms
  evaluation_interval: 1s
rule_files: [rules.yaml]
scrape_configs:
  - job_name: otelcol
    static_configs:
      - targets: ['127.0.0.1:%d']
`, metricsPort))
	pr := startProcess(t, dir, "prometheus", promBin, []string{
		"--config.file=" + filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path=" + filepath.Join(dir, "data"),
		"--web.listen-address=127.0.0.1:" + strconv.Itoa(promPort),
		"--log.level=warn",
	})
	prom := &promAPI{base: "http://127.0.0.1:" + strconv.Itoa(promPort)}
	waitUntil(t, ctx, 60*time.Second, "Prometheus ready and the four nodes of both exporters scraped", func() (bool, string) {
		if exited := col.exited() + pr.exited(); exited != "" {
			t.Fatalf("%s before the test began", exited)
		}
		s, err := prom.query(ctx, "otelcol_opensearchrouted_node_state")
		if err != nil {
			return false, err.Error()
		}
		return len(s) == 2*sim.Len(), fmt.Sprintf("node_state series %v", s)
	})
	t.Logf("collector and Prometheus up at %v", time.Since(start).Round(time.Millisecond))

	// Warm up: small requests until documents go direct, so that the first
	// documents of each data stream (unrouted: unknown_index until the
	// refresh that finds it) are few beside the load's.
	load := newLoader(t, otlpAddr)
	warm := 0
	waitUntil(t, ctx, 30*time.Second, "documents routed direct after the warm-up", func() (bool, string) {
		now := time.Now()
		if err := load.sendLogs(ctx, loadLogs(now, -1-warm, 10)); err != nil {
			return false, err.Error()
		}
		if err := load.sendSpans(ctx, loadSpans(now, -1-warm, 10)); err != nil {
			return false, err.Error()
		}
		warm++
		s, err := prom.query(ctx, `otelcol_opensearchrouted_documents_routed{path="direct"}`)
		return err == nil && len(s) > 0, fmt.Sprintf("%v %v", s, err)
	})
	load.start()

	queries, err := PanelQueries()
	if err != nil {
		t.Fatal(err)
	}
	byPanel := map[string]PanelQuery{}
	for _, q := range queries {
		byPanel[q.Panel+"/"+q.RefID] = q
	}
	checked := map[string]bool{}
	ph := &phases{t: t, ctx: ctx, prom: prom, panels: byPanel, checked: checked, start: start}
	nodes := sim.Len()

	// Healthy: every panel shows the healthy cluster; no alert fires for
	// the longest for: (15m shipped, 8s here) and 3s more.
	shipped, err := AlertRules()
	if err != nil {
		t.Fatal(err)
	}
	var longest time.Duration
	for _, r := range shipped {
		longest = max(longest, r.For/forDivisor)
	}
	ph.run("healthy", longest+3*time.Second, longest+20*time.Second, []expect{
		{panel: "Documents by outcome", ref: "A", match: map[string]string{"outcome": "indexed", "signal": "logs"}, n: 1, ok: positive},
		{panel: "Documents by outcome", ref: "A", match: map[string]string{"outcome": "indexed", "signal": "traces"}, n: 1, ok: positive},
		{panel: "Direct vs unrouted share", ref: "A", match: map[string]string{"path": "direct"}, n: 1, ok: func(v float64) bool { return v > 0.9 }},
		{panel: "Fallback documents", ref: "A", match: map[string]string{"fallback": "invalid_span_id", "signal": "traces"}, n: 1, ok: positive},
		{panel: "Sending queue", ref: "A", match: map[string]string{"exporter": "opensearchrouted", "data_type": "logs"}, n: 1},
		{panel: "Sending queue", ref: "B", match: map[string]string{"exporter": "opensearchrouted", "data_type": "logs"}, n: 1, ok: equals(100000)},
		{panel: "Node state", ref: "A", n: nodes, ok: equals(0)},
		{panel: "Congestion window per node", ref: "A", n: nodes, ok: positive},
		{panel: "Requests in flight per node", ref: "A", n: nodes},
		{panel: "Bulk requests by outcome", ref: "A", match: map[string]string{"outcome": "ok"}, n: nodes, ok: positive},
		{panel: "Bulk request latency p50 / p99", ref: "A", n: nodes, ok: finite},
		{panel: "Bulk request latency p50 / p99", ref: "B", n: nodes, ok: finite},
		{panel: "Bytes sent per node", ref: "A", n: nodes, ok: positive},
		{panel: "Topology refreshes by trigger and outcome", ref: "A", match: map[string]string{"outcome": "ok"}, n: 1},
		{panel: "Trace groups by outcome", ref: "A", match: map[string]string{"outcome": "inline"}, n: 1, ok: positive},
		{panel: "Service map edges by outcome", ref: "A", match: map[string]string{"outcome": "indexed"}, n: 1},
	}, nil, allAlerts)

	// Throttled: every bulk refused with 429.
	for i := range sim.Len() {
		must(t, sim.RejectNextBulks(i, 1<<30))
	}
	ph.run("throttled", 0, 40*time.Second, []expect{
		{panel: "Bulk requests by outcome", ref: "A", match: map[string]string{"outcome": "throttled"}, n: 1, ok: positive},
		{panel: "Documents by outcome", ref: "A", match: map[string]string{"outcome": "retried"}, n: 1, ok: positive},
	}, []string{"OpenSearchRoutedRecordsRetried"}, []string{"OpenSearchRoutedNodeDead", "OpenSearchRoutedNodeDegraded", "OpenSearchRoutedDiscoveryForbidden", "OpenSearchRoutedRecordsFailing"})
	for i := range sim.Len() {
		must(t, sim.RejectNextBulks(i, 0))
	}

	// Node degraded: the node's bulk requests are slow where the exporter
	// meets it (its HTTP path), its replica writes are not.
	slow := primaryNode(t, sim, "ss4o_logs-default-namespace")
	slowName := sim.Node(slow).Name()
	proxies[slow].bulkDelay.Store(int64(60 * time.Millisecond))
	ph.run("node degraded", 0, 60*time.Second, []expect{
		{panel: "Node state", ref: "A", match: map[string]string{"node": slowName}, n: 1, ok: equals(3)},
		{panel: "Steered documents and records at risk", ref: "A", match: map[string]string{"signal": "logs"}, n: 1, ok: positive},
	}, []string{"OpenSearchRoutedNodeDegraded"}, []string{"OpenSearchRoutedNodeDead", "OpenSearchRoutedDiscoveryForbidden", "OpenSearchRoutedRecordsFailing", "OpenSearchRoutedUnroutedShareHigh"})
	proxies[slow].bulkDelay.Store(0)
	waitNodes(t, ctx, prom, byPanel, nodes, "the slow node back in service and the degraded node alert resolved", "OpenSearchRoutedNodeDegraded")

	// Node down: a node holding a primary of the logs data stream stops.
	// It leaves the node list at once (nodes info no longer hears from it;
	// the exporter stops tracking it) while the cluster still shows its
	// shards, as while fault detection runs: their documents go unrouted
	// and are refused 503 until it is back.
	down := primaryNode(t, sim, "ss4o_logs-default-namespace")
	downName := sim.Node(down).Name()
	must(t, sim.StopNode(down))
	ph.run("node down", 0, 150*time.Second, []expect{
		{panel: "Bulk requests by outcome", ref: "A", match: map[string]string{"node": downName, "outcome": "node_down"}, n: 1},
		{panel: "Direct vs unrouted share", ref: "A", match: map[string]string{"path": "unrouted"}, n: 1, ok: positive},
		{panel: "Unrouted documents by reason", ref: "A", match: map[string]string{"reason": "shard_unassigned"}, n: 1, ok: positive},
		{panel: "Topology refreshes by trigger and outcome", ref: "A", match: map[string]string{"trigger": "node_failure"}, n: 1},
	}, []string{"OpenSearchRoutedUnroutedShareHigh"}, []string{"OpenSearchRoutedNodeDegraded", "OpenSearchRoutedDiscoveryForbidden", "OpenSearchRoutedRecordsFailing"})
	must(t, sim.RestartNode(down))
	waitNodes(t, ctx, prom, byPanel, nodes, "the stopped node back", "")

	// Node unreachable: the collector cannot reach a node that the cluster
	// keeps (a network cut between them): the exporter holds it dead.
	cut := (down + 1) % sim.Len()
	cutName := sim.Node(cut).Name()
	proxies[cut].cut.Store(true)
	ph.run("node unreachable", 0, 40*time.Second, []expect{
		{panel: "Node state", ref: "A", match: map[string]string{"node": cutName}, n: 1, ok: equals(2)},
		{panel: "Bulk requests by outcome", ref: "A", match: map[string]string{"node": cutName, "outcome": "node_down"}, n: 1},
		{panel: "Unrouted documents by reason", ref: "A", match: map[string]string{"reason": "node_unhealthy"}, n: 1, ok: positive},
	}, []string{"OpenSearchRoutedNodeDead"}, []string{"OpenSearchRoutedNodeDegraded", "OpenSearchRoutedDiscoveryForbidden", "OpenSearchRoutedRecordsFailing"})
	proxies[cut].cut.Store(false)
	waitNodes(t, ctx, prom, byPanel, nodes, "the unreachable node alive again and the dead node alert resolved", "OpenSearchRoutedNodeDead")

	// Discovery forbidden: node stats polls answered 403.
	for _, p := range proxies {
		p.forbidStats.Store(true)
	}
	ph.run("discovery forbidden", 0, 30*time.Second, []expect{
		{panel: "Topology refreshes by trigger and outcome", ref: "A", match: map[string]string{"trigger": "node_stats", "outcome": "forbidden"}, n: 1, ok: positive},
	}, []string{"OpenSearchRoutedDiscoveryForbidden"}, []string{"OpenSearchRoutedNodeDead", "OpenSearchRoutedNodeDegraded", "OpenSearchRoutedRecordsFailing"})
	for _, p := range proxies {
		p.forbidStats.Store(false)
	}

	// Refused records: one dead-lettered, one failed; and one dated an
	// hour ahead (stored, at risk for steering).
	for _, ld := range []plog.Logs{refusedLogs(), futureLogs()} {
		if err := load.sendLogs(ctx, ld); err != nil {
			t.Fatalf("sending the refused and future-dated records: %v", err)
		}
	}
	ph.run("refused", 0, 30*time.Second, []expect{
		{panel: "Dead-lettered and failed documents", ref: "A", match: map[string]string{"outcome": "dead_lettered", "signal": "logs"}, n: 1, ok: equals(1)},
		{panel: "Dead-lettered and failed documents", ref: "A", match: map[string]string{"outcome": "failed", "signal": "logs"}, n: 1, ok: equals(1)},
		{panel: "Steered documents and records at risk", ref: "B", match: map[string]string{"risk": "future_dated", "signal": "logs"}, n: 1},
	}, []string{"OpenSearchRoutedRecordsFailing"}, []string{"OpenSearchRoutedNodeDead", "OpenSearchRoutedNodeDegraded"})

	for _, q := range queries {
		if !checked[q.Panel+"/"+q.RefID] {
			t.Errorf("panel %q query %s is checked in no phase", q.Panel, q.RefID)
		}
	}
	load.stop()
	t.Logf("load: %d requests accepted, %d refused by the collector; test took %v", load.ok.Load(), load.failed.Load(), time.Since(start).Round(time.Millisecond))
}

var allAlerts = []string{
	"OpenSearchRoutedRecordsFailing", "OpenSearchRoutedRecordsRetried", "OpenSearchRoutedNodeDead",
	"OpenSearchRoutedNodeDegraded", "OpenSearchRoutedUnroutedShareHigh", "OpenSearchRoutedDiscoveryForbidden",
}

// phases runs the test's phases against Prometheus.
type phases struct {
	t       *testing.T
	ctx     context.Context
	prom    *promAPI
	panels  map[string]PanelQuery
	checked map[string]bool
	start   time.Time
}

// run polls Prometheus every 250ms for at least minDur and until every
// expectation has been met and every alert of fire is firing (at most
// maxDur, then it fails naming what is missing); an alert of never firing
// at any poll fails the test.
func (p *phases) run(name string, minDur, maxDur time.Duration, exps []expect, fire, never []string) {
	t := p.t
	t.Helper()
	began := time.Now()
	met := make([]bool, len(exps))
	fired := map[string]time.Duration{}
	for _, e := range exps {
		if _, ok := p.panels[e.panel+"/"+e.ref]; !ok {
			t.Fatalf("phase %s: the dashboard has no panel %q query %s", name, e.panel, e.ref)
		}
	}
	var last []string
	for {
		last = last[:0]
		for i, e := range exps {
			if met[i] {
				continue
			}
			q := p.panels[e.panel+"/"+e.ref]
			s, err := p.prom.query(p.ctx, Expand(q.Expr, rateInterval))
			if err != nil {
				t.Fatalf("phase %s: panel %q %s: %v", name, e.panel, e.ref, err)
			}
			if n := countMatching(s, e); n >= e.n {
				met[i] = true
				p.checked[e.panel+"/"+e.ref] = true
			} else {
				last = append(last, fmt.Sprintf("panel %q %s: %d of %d series with %v (got %v)", e.panel, e.ref, n, e.n, e.match, s))
			}
		}
		firing, err := p.prom.firing(p.ctx)
		if err != nil {
			t.Fatalf("phase %s: alerts: %v", name, err)
		}
		for _, a := range never {
			if firing[a] {
				t.Fatalf("phase %s: alert %s fires (%v after the phase began): it is not for this phase", name, a, time.Since(began).Round(time.Millisecond))
			}
		}
		for _, a := range fire {
			if _, ok := fired[a]; !ok && firing[a] {
				fired[a] = time.Since(began)
			}
		}
		var missing []string
		for _, a := range fire {
			if _, ok := fired[a]; !ok {
				missing = append(missing, "alert "+a)
			}
		}
		elapsed := time.Since(began)
		if len(last) == 0 && len(missing) == 0 && elapsed >= minDur {
			t.Logf("phase %s: every expectation met, alerts fired after %v; phase took %v (test at %v)", name, fired, elapsed.Round(time.Millisecond), time.Since(p.start).Round(time.Second))
			return
		}
		if elapsed > maxDur {
			t.Fatalf("phase %s: not met within %v:\n%s\n%s\nfiring: %v", name, maxDur, strings.Join(last, "\n"), strings.Join(missing, "\n"), keys(firing))
		}
		select {
		case <-p.ctx.Done():
			t.Fatalf("phase %s: %v", name, p.ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// waitNodes waits until the node state panel shows n alive nodes (and,
// unless resolved is "", that alert no longer fires).
func waitNodes(t *testing.T, ctx context.Context, prom *promAPI, panels map[string]PanelQuery, n int, what, resolved string) {
	t.Helper()
	waitUntil(t, ctx, 40*time.Second, what, func() (bool, string) {
		s, err := prom.query(ctx, Expand(panels["Node state/A"].Expr, rateInterval))
		if err != nil {
			return false, err.Error()
		}
		firing, err := prom.firing(ctx)
		if err != nil {
			return false, err.Error()
		}
		alive := len(s) == n
		for _, x := range s {
			alive = alive && x.value == 0
		}
		return alive && !firing[resolved], fmt.Sprintf("states %v, firing %v", s, keys(firing))
	})
}

func countMatching(s []promSample, e expect) int {
	n := 0
	for _, x := range s {
		ok := true
		for k, v := range e.match {
			ok = ok && x.labels[k] == v
		}
		if ok && (e.ok == nil || e.ok(x.value)) {
			n++
		}
	}
	return n
}

// promAPI queries Prometheus' HTTP API.
type promAPI struct{ base string }

type promSample struct {
	labels map[string]string
	value  float64
}

func (s promSample) String() string { return fmt.Sprintf("%v=%g", s.labels, s.value) }

var apiClient = &http.Client{Timeout: 10 * time.Second}

func (p *promAPI) get(ctx context.Context, path string, q url.Values, out any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path+"?"+q.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := apiClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var env struct {
		Status string          `json:"status"`
		Error  string          `json:"error"`
		Data   json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &env); err != nil {
		return fmt.Errorf("%s: HTTP %d: %.200s", path, resp.StatusCode, body)
	}
	if env.Status != "success" {
		return fmt.Errorf("%s: %s (HTTP %d)", path, env.Error, resp.StatusCode)
	}
	return json.Unmarshal(env.Data, out)
}

// query runs an instant query; it must return a vector.
func (p *promAPI) query(ctx context.Context, expr string) ([]promSample, error) {
	var d struct {
		ResultType string `json:"resultType"`
		Result     []struct {
			Metric map[string]string `json:"metric"`
			Value  [2]any            `json:"value"`
		} `json:"result"`
	}
	if err := p.get(ctx, "/api/v1/query", url.Values{"query": {expr}}, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", expr, err)
	}
	if d.ResultType != "vector" {
		return nil, fmt.Errorf("%s: a %s, not a vector", expr, d.ResultType)
	}
	out := make([]promSample, 0, len(d.Result))
	for _, r := range d.Result {
		s, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: value %v: %w", expr, r.Value[1], err)
		}
		out = append(out, promSample{labels: r.Metric, value: v})
	}
	return out, nil
}

// firing returns the alerts firing now (by name).
func (p *promAPI) firing(ctx context.Context) (map[string]bool, error) {
	var d struct {
		Alerts []struct {
			Labels map[string]string `json:"labels"`
			State  string            `json:"state"`
		} `json:"alerts"`
	}
	if err := p.get(ctx, "/api/v1/alerts", nil, &d); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, a := range d.Alerts {
		if a.State == "firing" {
			out[a.Labels["alertname"]] = true
		}
	}
	return out, nil
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// nodeProxy forwards a node's HTTP port (the node publishes the proxy's
// address, so the exporter sends everything through it; the nodes' own
// hops do not pass it); with bulkDelay it holds each bulk request that
// long before forwarding it; with forbidStats it answers node stats requests
// 403, as the security plugin does for a user without
// cluster:monitor/nodes/stats; with cut it resets every connection, a
// network cut between the collector and the node. When the node does not
// answer (stopped), the proxy resets the client's connection, as a stopped
// node's port would refuse it.
type nodeProxy struct {
	addr        string
	forbidStats atomic.Bool
	cut         atomic.Bool  // close every connection without an answer
	bulkDelay   atomic.Int64 // ns each bulk request waits before it is forwarded
}

func startNodeProxy(t *testing.T, target string) *nodeProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &nodeProxy{addr: ln.Addr().String()}
	tr := &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second}
	rp := &httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(u); r.Out.Host = r.In.Host },
		Transport: tr,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			if hj, ok := w.(http.Hijacker); ok {
				if c, _, err := hj.Hijack(); err == nil {
					_ = c.(*net.TCPConn).SetLinger(0)
					_ = c.Close()
					return
				}
			}
			http.Error(w, err.Error(), http.StatusBadGateway)
		},
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p.cut.Load() {
			rp.ErrorHandler(w, r, nil)
			return
		}
		if p.forbidStats.Load() && strings.HasPrefix(r.URL.Path, "/_nodes/") && strings.Contains(r.URL.Path, "stats") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, `{"error":{"root_cause":[{"type":"security_exception","reason":"no permissions for [cluster:monitor/nodes/stats] and User [name=collector]"}],"type":"security_exception","reason":"no permissions for [cluster:monitor/nodes/stats] and User [name=collector]"},"status":403}`)
			return
		}
		if d := time.Duration(p.bulkDelay.Load()); d > 0 && strings.HasSuffix(r.URL.Path, "/_bulk") {
			time.Sleep(d)
		}
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		_ = srv.Close()
		tr.CloseIdleConnections()
	})
	return p
}

// primaryNode returns a node holding a primary of the write index of data
// stream ds (the emulator's _cat/shards).
func primaryNode(t *testing.T, sim *ossim.Cluster, ds string) int {
	t.Helper()
	resp, err := apiClient.Get(sim.Addr(0) + "/_cat/shards/" + ds + "?format=json&h=index,prirep,node")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rows []struct{ Index, Prirep, Node string }
	if err := json.NewDecoder(resp.Body).Decode(&rows); err != nil {
		t.Fatalf("_cat/shards/%s: %v", ds, err)
	}
	for _, r := range rows {
		if r.Prirep == "p" {
			for i := range sim.Len() {
				if sim.Node(i).Name() == r.Node {
					return i
				}
			}
		}
	}
	t.Fatalf("_cat/shards/%s: no primary among %v", ds, rows)
	return -1
}

// loader sends logs and spans to the collector over OTLP gRPC until
// stopped: every 50ms 100 log records and 20 spans (2 with an all-zero
// span id). A request the collector refuses (its queue full while the
// cluster refuses everything) is counted, not resent.
type loader struct {
	conn       *grpc.ClientConn
	logs       plogotlp.GRPCClient
	traces     ptraceotlp.GRPCClient
	ok, failed atomic.Int64
	ctx        context.Context
	cancel     context.CancelFunc
	wg         sync.WaitGroup
}

func newLoader(t *testing.T, addr string) *loader {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &loader{conn: conn, logs: plogotlp.NewGRPCClient(conn), traces: ptraceotlp.NewGRPCClient(conn), ctx: ctx, cancel: cancel}
	t.Cleanup(l.stop)
	return l
}

// start begins sending the load.
func (l *loader) start() {
	l.wg.Go(func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for seq := 0; ; seq++ {
			select {
			case <-l.ctx.Done():
				return
			case <-tick.C:
			}
			now := time.Now()
			for _, err := range []error{l.sendLogs(l.ctx, loadLogs(now, seq, 100)), l.sendSpans(l.ctx, loadSpans(now, seq, 20))} {
				if err != nil {
					l.failed.Add(1)
				} else {
					l.ok.Add(1)
				}
			}
		}
	})
}

func (l *loader) stop() {
	l.cancel()
	l.wg.Wait()
	_ = l.conn.Close()
}

func (l *loader) sendLogs(ctx context.Context, ld plog.Logs) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := l.logs.Export(cctx, plogotlp.NewExportRequestFromLogs(ld))
	return err
}

func (l *loader) sendSpans(ctx context.Context, td ptrace.Traces) error {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	_, err := l.traces.Export(cctx, ptraceotlp.NewExportRequestFromTraces(td))
	return err
}

func loadLogs(now time.Time, seq, n int) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "checkout")
	recs := rl.ScopeLogs().AppendEmpty().LogRecords()
	for i := range n {
		lr := recs.AppendEmpty()
		lr.SetTimestamp(pcommon.NewTimestampFromTime(now.Add(time.Duration(i) * time.Microsecond)))
		lr.SetSeverityNumber(plog.SeverityNumberInfo)
		lr.Body().SetStr(fmt.Sprintf("request %d.%d answered 200", seq, i))
		lr.Attributes().PutInt("seq", int64(seq*n+i))
	}
	return ld
}

// loadSpans makes n spans of one moment: two roots with an all-zero span
// id (which get a content id), then traces of two spans, a root of
// service frontend and its child of service checkout (their trace group
// is the root's name; their pair is an edge of the service map).
func loadSpans(now time.Time, seq, n int) ptrace.Traces {
	td := ptrace.NewTraces()
	resource := func(service string) ptrace.SpanSlice {
		rs := td.ResourceSpans().AppendEmpty()
		rs.Resource().Attributes().PutStr("service.name", service)
		return rs.ScopeSpans().AppendEmpty().Spans()
	}
	roots, children := resource("frontend"), resource("checkout")
	span := func(spans ptrace.SpanSlice, k int, kind ptrace.SpanKind, name string) ptrace.Span {
		sp := spans.AppendEmpty()
		sp.SetKind(kind)
		sp.SetName(name)
		sp.SetStartTimestamp(pcommon.NewTimestampFromTime(now))
		sp.SetEndTimestamp(pcommon.NewTimestampFromTime(now.Add(time.Millisecond)))
		if k >= 0 {
			var sid [8]byte
			binary.BigEndian.PutUint64(sid[:], uint64(seq*n+k)+1)
			sp.SetSpanID(sid)
		}
		return sp
	}
	traceID := func(k int) pcommon.TraceID {
		var tid [16]byte
		binary.BigEndian.PutUint64(tid[:8], uint64(now.UnixNano()))
		binary.BigEndian.PutUint64(tid[8:], uint64(seq*n+k)+1)
		return tid
	}
	for k := range min(n, 2) {
		span(roots, -1, ptrace.SpanKindServer, "GET /cart").SetTraceID(traceID(k))
	}
	for k := 2; k+1 < n; k += 2 {
		root := span(roots, k, ptrace.SpanKindServer, "GET /cart")
		root.SetTraceID(traceID(k))
		child := span(children, k+1, ptrace.SpanKindServer, "cart.lookup")
		child.SetTraceID(traceID(k))
		child.SetParentSpanID(root.SpanID())
	}
	return td
}

// futureLogs is one record dated an hour after now: its id is at risk
// for steering (another attempt, after some node is marked degraded or no
// longer, could choose another).
func futureLogs() plog.Logs {
	ld := plog.NewLogs()
	lr := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.SetTimestamp(pcommon.NewTimestampFromTime(time.Now().Add(time.Hour)))
	lr.Body().SetStr("dated an hour ahead")
	return ld
}

// refusedLogs are two records the cluster refuses for good: one dated
// 2300-01-01 (after date_nanos' range, in either shape; its dead-letter
// document is accepted) and one of 1.5 MiB (over the nodes'
// http.max_content_length on its own, and so is its dead-letter document).
func refusedLogs() plog.Logs {
	ld := plog.NewLogs()
	recs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	late := recs.AppendEmpty()
	late.SetTimestamp(pcommon.NewTimestampFromTime(time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)))
	late.Body().SetStr("dated 2300")
	late.Attributes().PutStr("k", "v")
	big := recs.AppendEmpty()
	big.SetTimestamp(pcommon.NewTimestampFromTime(time.Now()))
	big.Body().SetStr(strings.Repeat("x", 3<<19))
	return ld
}

// process is a process the test started.
type process struct {
	name string
	done chan struct{}
}

// exited is "<name> exited" once the process has, else "".
func (p *process) exited() string {
	select {
	case <-p.done:
		return p.name + " exited"
	default:
		return ""
	}
}

// startProcess starts a process of the test with its output in dir/name.log
// and stops it in t.Cleanup (SIGTERM, then SIGKILL after 10s).
func startProcess(t *testing.T, dir, name, bin string, args []string, env ...string) *process {
	t.Helper()
	logPath := filepath.Join(dir, name+".log")
	logf, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		t.Fatalf("starting %s: %v", name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
		logf.Close()
		if t.Failed() {
			if b, err := os.ReadFile(logPath); err == nil {
				t.Logf("%s log (last 4000 bytes):\n%s", name, tail(string(b), 4000))
			}
		}
	})
	return &process{name: name, done: done}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

func waitUntil(t *testing.T, ctx context.Context, limit time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		ok, state := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("not within %v: %s (last: %s)", limit, what, state)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: %v", what, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var lns []net.Listener
	var out []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		out = append(out, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		ln.Close()
	}
	return out
}

func hostPort(p int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p)) }

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
