package demo

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Backend is the cluster a run writes to.
type Backend interface {
	// Describe is one line for the report's title.
	Describe() string
	// Seed is the URL of the node the demo reads counts through.
	Seed() string
	// Seeds are the URLs the collector's exporter is configured with (every
	// node): with routing off it spreads its requests over them.
	Seeds() []string
	// Counts returns every node's cumulative server-side counters.
	Counts(ctx context.Context) ([]NodeCounts, error)
	Close() error
}

// Options configure the runs.
type Options struct {
	Collector string // path of otelcol-opensearchrouted
	Config    string // collector configuration (testbed/demo/collector.yaml)
	Load      Load   // Endpoint is set from OTLPAddr
	// OTLPAddr, MetricsPort and HealthPort are the collector's OTLP gRPC
	// address, Prometheus port and health_check port (all on 127.0.0.1).
	OTLPAddr    string
	MetricsPort int
	HealthPort  int
	// StoreTimeout bounds the wait for every accepted record to be stored
	// (default 60s).
	StoreTimeout time.Duration
	// LogDir receives one collector log per run (default: a temporary dir).
	LogDir string
	// Progress receives progress lines (default: discarded).
	Progress io.Writer
}

// RunOnce starts the collector against b with routing on or off and the
// given dataset, sends the load, waits until it is stored, reads the
// collector's metrics and the cluster's counters, and stops the collector.
// The collector is stopped on every path, ctx cancellation included.
func RunOnce(ctx context.Context, b Backend, o Options, routing bool, dataset string) (Run, error) {
	run := Run{Label: "routing off (round-robin)", Routing: routing}
	if routing {
		run.Label = "routing on"
	}
	progress := o.Progress
	if progress == nil {
		progress = io.Discard
	}
	if o.StoreTimeout <= 0 {
		o.StoreTimeout = 60 * time.Second
	}
	for _, a := range []string{o.OTLPAddr, hostPort(o.MetricsPort), hostPort(o.HealthPort)} {
		if err := checkFree(a); err != nil {
			return run, err
		}
	}
	before, err := b.Counts(ctx)
	if err != nil {
		return run, err
	}

	col, err := startCollector(ctx, o, b.Seeds(), routing, dataset)
	if err != nil {
		return run, err
	}
	defer col.stop()
	fmt.Fprintf(progress, "%s: collector pid %d started (log %s)\n", run.Label, col.cmd.Process.Pid, col.logPath)
	if err := col.waitHealthy(ctx, o.HealthPort, 60*time.Second); err != nil {
		return run, err
	}

	load := o.Load
	load.Endpoint = o.OTLPAddr
	logsIdx, spansIdx := "ss4o_logs-"+dataset+"-namespace", "ss4o_traces-"+dataset+"-namespace"

	// Warm-up: the first records create the data streams, which the
	// exporter cannot route until a topology refresh has seen them. Send
	// small batches until one is routed entirely (bounded), so that the
	// measured load shows the steady state, not the first second.
	warm, err := warmUp(ctx, o, load, routing, logsIdx, spansIdx, b.Seed())
	run.LogsSent, run.SpansSent = warm.Logs, warm.Spans
	if errors.Is(err, errNotRouted) {
		// Go on: the report shows why documents are unrouted.
		fmt.Fprintf(progress, "%s: warm-up: %v; measuring anyway\n", run.Label, err)
	} else if err != nil {
		return run, fmt.Errorf("warm-up: %w (collector log: %s)", err, col.logPath)
	}
	if before, err = b.Counts(ctx); err != nil {
		return run, err
	}
	load.From = int(max(warm.Logs, warm.Spans))
	start := time.Now()
	sent, err := SendLoad(ctx, load)
	run.LogsSent += sent.Logs
	run.SpansSent += sent.Spans
	run.Measured = sent.Logs + sent.Spans
	if err != nil {
		return run, fmt.Errorf("%w (collector log: %s)", err, col.logPath)
	}
	fmt.Fprintf(progress, "%s: sent %d logs and %d spans, waiting until they are stored\n", run.Label, sent.Logs, sent.Spans)

	deadline := time.Now().Add(o.StoreTimeout)
	for {
		run.LogsStored, err = countDocs(ctx, b.Seed(), logsIdx)
		if err == nil {
			run.SpansStored, err = countDocs(ctx, b.Seed(), spansIdx)
		}
		if err == nil && run.LogsStored >= run.LogsSent && run.SpansStored >= run.SpansSent {
			break
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("stored %d of %d logs and %d of %d spans", run.LogsStored, run.LogsSent, run.SpansStored, run.SpansSent)
			}
			// Report what was found: the caller prints the run.
			fmt.Fprintf(progress, "%s: gave up waiting after %v: %v (collector log: %s)\n", run.Label, o.StoreTimeout, err, col.logPath)
			break
		}
		select {
		case <-ctx.Done():
			return run, ctx.Err()
		case <-time.After(storePoll):
		}
	}
	run.Elapsed = time.Since(start)

	// The exporter records a call's counts when the call returns, after its
	// documents are stored: wait until every record sent is counted.
	m, err := waitCounted(ctx, o.MetricsPort, run.Sent(), 10*time.Second)
	if err != nil {
		return run, fmt.Errorf("reading the collector's metrics: %w", err)
	}
	run.FromMetrics(m)
	if err := col.stop(); err != nil {
		fmt.Fprintf(progress, "%s: collector stop: %v\n", run.Label, err)
	}
	// Shutdown drains the queue: count again, so a late duplicate shows.
	if n, err := countDocs(ctx, b.Seed(), logsIdx); err == nil {
		run.LogsStored = n
	}
	if n, err := countDocs(ctx, b.Seed(), spansIdx); err == nil {
		run.SpansStored = n
	}
	after, err := b.Counts(ctx)
	if err != nil {
		return run, err
	}
	run.Nodes = Diff(before, after)
	return run, nil
}

// warmUp sends batches of 100 logs and 100 spans until the exporter
// reports a whole batch routed straight to the primaries' nodes; with
// routing off, one batch. Batches go 250ms apart at first, then every 2s,
// for at most 45s (longer than the exporter's default 30s periodic
// topology refresh). It waits until the warm-up records are stored.
func warmUp(ctx context.Context, o Options, load Load, routing bool, logsIdx, spansIdx, seed string) (Sent, error) {
	var total Sent
	const n = 100
	deadline := time.Now().Add(45 * time.Second)
	for i := 0; ; i++ {
		m0, err := scrape(ctx, o.MetricsPort)
		if err != nil {
			return total, err
		}
		l := load
		l.Logs, l.Spans, l.Batch, l.From = n, n, n, i*n
		s, err := SendLoad(ctx, l)
		total.Logs += s.Logs
		total.Spans += s.Spans
		if err != nil {
			return total, err
		}
		if err := waitStored(ctx, seed, logsIdx, spansIdx, total, 30*time.Second); err != nil {
			return total, err
		}
		if !routing {
			return total, nil
		}
		m1, err := scrape(ctx, o.MetricsPort)
		if err != nil {
			return total, err
		}
		direct := map[string]string{"path": "direct"}
		const routed = "otelcol_opensearchrouted_documents_routed"
		if m1.Sum(routed, direct)-m0.Sum(routed, direct) >= 2*n {
			return total, nil
		}
		if time.Now().After(deadline) {
			return total, errNotRouted
		}
		pause := 250 * time.Millisecond
		if i >= 8 {
			pause = 2 * time.Second
		}
		select {
		case <-ctx.Done():
			return total, ctx.Err()
		case <-time.After(pause):
		}
	}
}

// waitStored waits until both indices hold at least want documents.
func waitStored(ctx context.Context, seed, logsIdx, spansIdx string, want Sent, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		l, err := countDocs(ctx, seed, logsIdx)
		s, err2 := countDocs(ctx, seed, spansIdx)
		if err == nil && err2 == nil && l >= want.Logs && s >= want.Spans {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("stored %d of %d logs and %d of %d spans after %v (%v)", l, want.Logs, s, want.Spans, limit, errors.Join(err, err2))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func hostPort(p int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p)) }

// checkFree fails with a clear message when addr is already taken.
func checkFree(addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("demo: %s is in use (%v): stop what listens there, or pick other ports (osrdemo -help; make demo DEMO_FLAGS=-free-ports)", addr, err)
	}
	return l.Close()
}

// CheckFree fails naming the first of addrs that is already taken.
func CheckFree(addrs ...string) error {
	for _, a := range addrs {
		if err := checkFree(a); err != nil {
			return err
		}
	}
	return nil
}

// FreePort returns a free port on 127.0.0.1.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

type collector struct {
	cmd     *exec.Cmd
	logPath string
	logFile *os.File
	done    chan struct{}
	err     error
	stopped bool
}

func startCollector(ctx context.Context, o Options, seeds []string, routing bool, dataset string) (*collector, error) {
	dir := o.LogDir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "osrdemo-"); err != nil {
			return nil, err
		}
	}
	mode := "routing-off"
	if routing {
		mode = "routing-on"
	}
	logPath := filepath.Join(dir, "collector-"+mode+".log")
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(o.Collector, "--config", o.Config)
	cmd.Env = append(os.Environ(),
		"OSR_OPENSEARCH_ENDPOINT="+seeds[0],
		"OSR_OPENSEARCH_ENDPOINT_1="+seeds[1%len(seeds)],
		"OSR_OPENSEARCH_ENDPOINT_2="+seeds[2%len(seeds)],
		"OSR_ROUTING="+strconv.FormatBool(routing),
		"OSR_DATASET="+dataset,
		"OSR_OTLP_GRPC="+o.OTLPAddr,
		"OSR_METRICS_PORT="+strconv.Itoa(o.MetricsPort),
		"OSR_HEALTH_PORT="+strconv.Itoa(o.HealthPort),
	)
	cmd.Stdout, cmd.Stderr = lf, lf
	// Its own process group (Ctrl-C in the terminal reaches only us; we
	// stop it), and killed by the kernel if we die first.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("demo: starting %s: %w", o.Collector, err)
	}
	c := &collector{cmd: cmd, logPath: logPath, logFile: lf, done: make(chan struct{})}
	go func() { c.err = cmd.Wait(); close(c.done) }()
	return c, nil
}

// stop sends SIGTERM to the collector's process group, waits up to 20s
// for the graceful shutdown (which drains the sending queue), then kills
// the group. Idempotent.
func (c *collector) stop() error {
	if c.stopped {
		return nil
	}
	c.stopped = true
	defer c.logFile.Close()
	pgid := c.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-c.done:
		return nil
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-c.done
		return fmt.Errorf("collector did not stop within 20s after SIGTERM; killed (log: %s)", c.logPath)
	}
}

// waitHealthy polls the health_check extension until it answers 200.
func (c *collector) waitHealthy(ctx context.Context, port int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	url := "http://" + hostPort(port) + "/"
	for {
		select {
		case <-c.done:
			return fmt.Errorf("demo: the collector exited at start (%v): %s", c.err, c.logTail())
		default:
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("demo: the collector was not healthy within %v: %s", limit, c.logTail())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *collector) logTail() string {
	data, _ := os.ReadFile(c.logPath)
	if len(data) > 2000 {
		data = data[len(data)-2000:]
	}
	return fmt.Sprintf("log %s:\n%s", c.logPath, bytes.TrimSpace(data))
}

func scrape(ctx context.Context, port int) (Metrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+hostPort(port)+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /metrics: HTTP %d", resp.StatusCode)
	}
	return ParseMetrics(resp.Body)
}

// waitCounted scrapes the collector's metrics until the exporter has
// counted want records both by route (documents_routed) and by final outcome
// (documents: indexed, duplicate or failed), or limit passes; it returns the
// last scrape either way.
func waitCounted(ctx context.Context, port int, want int64, limit time.Duration) (Metrics, error) {
	deadline := time.Now().Add(limit)
	for {
		m, err := scrape(ctx, port)
		if err != nil {
			return nil, err
		}
		if counted(m) >= want || time.Now().After(deadline) {
			return m, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(storePoll):
		}
	}
}

// counted is the fewer of the records counted by route and by final outcome.
func counted(m Metrics) int64 {
	routed := int64(m.Sum("otelcol_opensearchrouted_documents_routed", nil))
	var final int64
	for _, o := range []string{"indexed", "duplicate", "failed"} {
		final += int64(m.Sum("otelcol_opensearchrouted_documents", map[string]string{"outcome": o}))
	}
	return min(routed, final)
}

// countDocs refreshes index and returns its document count (0 if it does
// not exist yet).
func countDocs(ctx context.Context, seed, index string) (int64, error) {
	base := strings.TrimSuffix(seed, "/") + "/" + index
	if _, _, err := httpDo(ctx, http.MethodPost, base+"/_refresh"); err != nil {
		return 0, err
	}
	st, body, err := httpDo(ctx, http.MethodGet, base+"/_count")
	if err != nil {
		return 0, err
	}
	if st == http.StatusNotFound {
		return 0, nil
	}
	if st != http.StatusOK {
		return 0, fmt.Errorf("GET %s/_count: HTTP %d: %.200s", index, st, body)
	}
	var c struct {
		Count int64 `json:"count"`
	}
	if err := json.Unmarshal(body, &c); err != nil {
		return 0, fmt.Errorf("GET %s/_count: %w", index, err)
	}
	return c.Count, nil
}

var httpClient = &http.Client{Timeout: 30 * time.Second}

// storePoll is how often a run counts the stored documents while it waits:
// its wall time is known to within this, so it must be small against a
// run of about a second (at 200ms, the polling alone moved the wall times
// of the two runs by ±20 % and routing sometimes looked slower).
const storePoll = 25 * time.Millisecond

func httpDo(ctx context.Context, method, url string) (int, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return 0, nil, err
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, body, err
}

var errNotRouted = errors.New("the exporter did not route a whole warm-up batch within 45s")

// errNoNodes is returned when a stats answer lists no node.
var errNoNodes = errors.New("demo: the cluster's stats list no node")
