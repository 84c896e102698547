package cluster

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// DefaultVersionName is the OpenSearch release used when neither
// Options.Version nor $OSR_OPENSEARCH_VERSION names one. It runs on Java 17.
const DefaultVersionName = "2.19.6"

// DefaultVersion returns $OSR_OPENSEARCH_VERSION, or DefaultVersionName.
func DefaultVersion() string {
	if v := os.Getenv("OSR_OPENSEARCH_VERSION"); v != "" {
		return v
	}
	return DefaultVersionName
}

// Options configure a cluster. The zero value is a 3-node 2.19.6 cluster with
// 512m heaps and server-default thread pools.
type Options struct {
	// Nodes is the number of nodes (default 3). One node: single-node discovery.
	Nodes int
	// Version is the OpenSearch release (default DefaultVersion()). 3.x needs a
	// Java 21+ JDK: JavaHome, $JAVA_HOME, or the machine's newer Temurin JDK.
	Version string
	// Heap is each JVM's -Xms/-Xmx, e.g. "512m" (default) or "1g".
	// Direct memory is capped at half of it.
	Heap string
	// WriteThreads and WriteQueueSize set thread_pool.write.size and
	// .queue_size on every node (0 = server default) unless PerNode overrides.
	WriteThreads, WriteQueueSize int
	// Zones: node i gets node.attr.zone = Zones[i % len(Zones)] (none if empty).
	Zones []string
	// ZoneAwareness also sets cluster.routing.allocation.awareness.attributes=zone.
	ZoneAwareness bool
	// PerNode[i] overrides settings of node i (entries past Nodes are an error).
	PerNode []NodeOptions
	// Settings are extra node settings applied to every node (key → value;
	// a value "[a,b]" is a list, "[]" the empty one, as for node.roles).
	Settings map[string]string
	// ClusterName is cluster.name (default "osr-test").
	ClusterName string
	// JavaHome selects the JDK (default $JAVA_HOME; for 3.x, the newer JDK).
	JavaHome string
	// Dir holds the node directories (home, data, node.log). Empty: a new
	// temporary directory, removed by Close. A given Dir is kept.
	Dir string
	// Detached nodes outlive the calling process (for tools such as
	// `make opensearch-up`): no parent-death check, a session of their own,
	// and a cluster.json in Dir for StopDir. Tests never set it.
	Detached bool
	// StartTimeout bounds the start of all nodes until green health
	// (default 3m; the wait for the machine lock is bounded by the context).
	StartTimeout time.Duration
	// Logf receives progress lines (default: none).
	Logf func(format string, args ...any)
	// JVMArgs are extra JVM flags for every node, after the harness's own
	// (later flags win: e.g. -XX:TieredStopAtLevel=4 restores the C2 JIT,
	// which the harness turns off to start faster on 2 cores).
	JVMArgs []string
	// Security, when set, runs the security plugin: TLS on HTTP and
	// transport, internal users (see Security, SecureVersions).
	Security *Security
	// Painless loads the lang-painless module (scripts in queries,
	// aggregations and updates), fetched with Maven once per version.
	Painless bool
}

// NodeOptions override Options for one node. Zero values keep the cluster-wide
// setting.
type NodeOptions struct {
	WriteThreads, WriteQueueSize int
	Zone                         string
	// HTTPPublishPort / TransportPublishPort set http.publish_port and
	// transport.publish_port: the port other nodes and clients are told to
	// use (e.g. a delaying proxy in front of this node). Addr still returns
	// the node's own bound port.
	HTTPPublishPort, TransportPublishPort int
	// HTTPPort / TransportPort are the ports the node binds (0: a free
	// port, see FreePorts). Known before Start, they let a test put a
	// proxy in front of a node whose publish ports lead to it: the cluster
	// forms through it.
	HTTPPort, TransportPort int
	Settings                map[string]string
}

// Cluster is a running set of real OpenSearch nodes on 127.0.0.1, one JVM
// process (and process group) per node.
type Cluster struct {
	opts    Options
	version string
	l       *launcher
	dir     string
	ownDir  bool
	lock    *os.File
	holder  Holder // what the machine lock's file says about this cluster
	client  *http.Client
	tb      testing.TB // when set, method errors also fail the test
	sec     *SecurityInfo

	mu     sync.Mutex // guards nodes[i].proc and closed
	nodes  []*node
	closed bool
}

type node struct {
	name          string
	home          string
	logPath       string
	httpPort      int
	transportPort int
	proc          *process // nil when not running
}

type process struct {
	cmd   *exec.Cmd
	stdin *os.File // write end of the child's stdin; closing it makes the launcher exit
	done  chan struct{}
	err   error // valid after done is closed
}

// Start starts a cluster for a test: it fails the test on any error
// (including a missing JDK) and registers Close as cleanup. Methods of the
// returned cluster also fail the test on error; call them from the test's
// goroutine.
func Start(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if opts.Logf == nil {
		opts.Logf = t.Logf
	}
	ctx := context.Background()
	if d, ok := t.(interface{ Deadline() (time.Time, bool) }); ok {
		if dl, ok := d.Deadline(); ok {
			var cancel context.CancelFunc
			ctx, cancel = context.WithDeadline(ctx, dl.Add(-10*time.Second))
			defer cancel()
		}
	}
	c, err := StartProcess(ctx, opts)
	if err != nil {
		t.Fatalf("real OpenSearch cluster: %v", err)
	}
	c.opts.Logf = func(string, ...any) {} // t.Logf must not outlive the test
	c.tb = t
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("closing cluster: %v", err)
		}
	})
	return c
}

// StartProcess starts a cluster outside a test: builds (or reuses) the
// launcher, takes the machine-wide lock (waiting while another real cluster
// runs, until ctx ends), starts the nodes and waits for green health with
// every node joined. The caller must Close it (unless Options.Detached, where
// StopDir(opts.Dir) stops it later).
func StartProcess(ctx context.Context, opts Options) (*Cluster, error) {
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if os.Getenv("OSR_REALCLUSTER") == "off" {
		return nil, errors.New("cluster: real OpenSearch clusters are off (OSR_REALCLUSTER=off, as make test-fast sets) " +
			"and this needs one: a test that starts a cluster belongs in REAL_CLUSTER_TESTS in the Makefile")
	}
	version := opts.Version
	if version == "" {
		version = DefaultVersion()
	}
	logf := opts.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	l, err := buildLauncher(ctx, version, opts.JavaHome, logf)
	if err != nil {
		return nil, err
	}
	if opts.Security != nil {
		dir, err := securityPluginDir(ctx, version, logf)
		if err != nil {
			return nil, err
		}
		sl := *l
		sl.classpath += string(os.PathListSeparator) + filepath.Join(dir, "*")
		l = &sl
	}
	if opts.Painless {
		dir, err := painlessDir(ctx, version, filepath.Join(l.dir, "lib"), logf)
		if err != nil {
			return nil, err
		}
		pl := *l
		pl.classpath += string(os.PathListSeparator) + filepath.Join(dir, "*")
		l = &pl
	}
	c := &Cluster{opts: opts, version: version, l: l, client: &http.Client{Timeout: 60 * time.Second}}
	c.opts.Logf = logf
	c.holder = Holder{What: fmt.Sprintf("%d-node OpenSearch %s", opts.nodes(), version), Detached: opts.Detached}
	if opts.Detached {
		c.holder.Dir, _ = filepath.Abs(opts.Dir)
	}
	lock, err := lockFile(ctx, MachineLockPath(), c.holder, logf)
	if err != nil {
		return nil, fmt.Errorf("cluster: only one real cluster runs at a time: %w", err)
	}
	c.lock = lock
	removeStaleDirs()
	// Ports are checked free before the nodes bind them; another process
	// may take one in between: then start again once on new ports.
	for attempt := 1; ; attempt++ {
		err := c.start(ctx)
		if err == nil {
			return c, nil
		}
		if attempt == 1 && strings.Contains(err.Error(), "Address already in use") {
			logf("cluster: a port was taken while starting; retrying on new ports: %v", firstLine(err.Error()))
			c.abort()
			continue
		}
		c.Close()
		return nil, err
	}
}

// abort kills the nodes of a failed start and forgets them.
func (c *Cluster) abort() {
	for i := range c.nodes {
		_ = c.terminate(i, 0)
	}
	c.nodes = nil
	if c.ownDir {
		os.RemoveAll(c.dir)
	}
	c.dir, c.ownDir = "", false
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// removeStaleDirs deletes the temporary directories of clusters whose test
// process died without cleanup (a go test timeout). Call only while holding
// the machine lock: then no other cluster's nodes are alive, as each node
// holds the lock too.
func removeStaleDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "osr-cluster-*"))
	for _, d := range dirs {
		os.RemoveAll(d)
	}
}

func (o Options) nodes() int {
	if o.Nodes == 0 {
		return 3
	}
	return o.Nodes
}

func (o Options) validate() error {
	n := o.nodes()
	switch {
	case n < 1 || n > 9:
		return fmt.Errorf("cluster: Options.Nodes = %d: want 1..9", o.Nodes)
	case len(o.PerNode) > n:
		return fmt.Errorf("cluster: Options.PerNode has %d entries for %d nodes", len(o.PerNode), n)
	case o.WriteThreads < 0 || o.WriteQueueSize < 0:
		return fmt.Errorf("cluster: Options.WriteThreads/WriteQueueSize must be >= 0 (got %d/%d)", o.WriteThreads, o.WriteQueueSize)
	case o.Detached && o.Dir == "":
		return errors.New("cluster: Options.Detached needs Options.Dir (where cluster.json is written)")
	}
	if _, err := heapBytes(o.heap()); err != nil {
		return err
	}
	for k := range o.Settings {
		if k == "" || strings.ContainsAny(k, "= ") {
			return fmt.Errorf("cluster: Options.Settings has a bad key %q", k)
		}
	}
	for i, p := range o.PerNode {
		if p.WriteThreads < 0 || p.WriteQueueSize < 0 || p.HTTPPublishPort < 0 || p.HTTPPublishPort > 65535 ||
			p.TransportPublishPort < 0 || p.TransportPublishPort > 65535 ||
			p.HTTPPort < 0 || p.HTTPPort > 65535 || p.TransportPort < 0 || p.TransportPort > 65535 {
			return fmt.Errorf("cluster: Options.PerNode[%d] has a negative or out-of-range value: %+v", i, p)
		}
	}
	return nil
}

func (o Options) heap() string {
	if o.Heap == "" {
		return "512m"
	}
	return o.Heap
}

// heapBytes parses a JVM size such as 512m or 1g.
func heapBytes(s string) (int64, error) {
	if len(s) < 2 {
		return 0, fmt.Errorf("cluster: Options.Heap %q: want a JVM size such as 512m or 1g", s)
	}
	mult := int64(1)
	switch s[len(s)-1] {
	case 'k', 'K':
		mult = 1 << 10
	case 'm', 'M':
		mult = 1 << 20
	case 'g', 'G':
		mult = 1 << 30
	default:
		return 0, fmt.Errorf("cluster: Options.Heap %q: want a JVM size such as 512m or 1g", s)
	}
	n, err := strconv.ParseInt(s[:len(s)-1], 10, 64)
	if err != nil || n <= 0 || n*mult < 128<<20 {
		return 0, fmt.Errorf("cluster: Options.Heap %q: want a JVM size of at least 128m such as 512m or 1g", s)
	}
	return n * mult, nil
}

func (c *Cluster) start(ctx context.Context) error {
	n := c.opts.nodes()
	if c.opts.Dir == "" {
		d, err := os.MkdirTemp("", "osr-cluster-")
		if err != nil {
			return fmt.Errorf("cluster: temp dir: %w", err)
		}
		c.dir, c.ownDir = d, true
	} else {
		c.dir = c.opts.Dir
		if err := os.MkdirAll(c.dir, 0o755); err != nil {
			return fmt.Errorf("cluster: Options.Dir: %w", err)
		}
	}
	ports, err := pickPorts(2 * n)
	if err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		name := fmt.Sprintf("node-%d", i)
		home := filepath.Join(c.dir, name)
		nd := &node{
			name:          name,
			home:          home,
			logPath:       filepath.Join(home, "node.log"),
			httpPort:      ports[2*i],
			transportPort: ports[2*i+1],
		}
		if i < len(c.opts.PerNode) {
			if p := c.opts.PerNode[i].HTTPPort; p > 0 {
				nd.httpPort = p
			}
			if p := c.opts.PerNode[i].TransportPort; p > 0 {
				nd.transportPort = p
			}
		}
		c.nodes = append(c.nodes, nd)
	}
	if c.opts.Security != nil {
		if err := c.prepareSecurity(); err != nil {
			return err
		}
	}
	timeout := c.opts.StartTimeout
	if timeout == 0 {
		timeout = 3 * time.Minute
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	began := time.Now()
	c.opts.Logf("cluster: starting %d OpenSearch %s nodes in %s", n, c.version, c.dir)
	offsets := make([]int64, n)
	for i := range c.nodes {
		off, err := c.spawn(i)
		if err != nil {
			return err
		}
		offsets[i] = off
	}
	for i := range c.nodes {
		if err := c.waitReady(ctx, i, offsets[i]); err != nil {
			return err
		}
	}
	if err := c.waitHealth(ctx, "green", n); err != nil {
		return err
	}
	if c.sec != nil {
		if err := c.waitSecurityReady(ctx); err != nil {
			return err
		}
	}
	c.opts.Logf("cluster: %d nodes green after %s: %s", n, time.Since(began).Round(100*time.Millisecond), strings.Join(c.Addrs(), " "))
	if c.opts.Detached {
		return c.writeState()
	}
	return nil
}

// pickPorts is freePorts; tests replace it to provoke a port clash.
var pickPorts = freePorts

// FreePorts returns n distinct ports of 127.0.0.1 that are free now, from
// the range Start picks node ports in (for NodeOptions.HTTPPort and
// TransportPort).
func FreePorts(n int) ([]int, error) { return freePorts(n) }

// freePorts picks distinct ports below the kernel's ephemeral range that can
// be bound on 127.0.0.1 right now.
func freePorts(n int) ([]int, error) {
	seen := map[int]bool{}
	var out []int
	for tries := 0; len(out) < n && tries < 2000; tries++ {
		p := 20000 + rand.IntN(12000)
		if seen[p] {
			continue
		}
		seen[p] = true
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			continue
		}
		ln.Close()
		out = append(out, p)
	}
	if len(out) < n {
		return nil, fmt.Errorf("cluster: could not find %d free ports on 127.0.0.1", n)
	}
	return out, nil
}

func (c *Cluster) jvmArgs(home string) ([]string, error) {
	heap := c.opts.heap()
	hb, err := heapBytes(heap)
	if err != nil {
		return nil, err
	}
	tmp := filepath.Join(home, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, err
	}
	args := []string{
		"-Xms" + heap, "-Xmx" + heap,
		"-XX:MaxDirectMemorySize=" + strconv.FormatInt(hb/2, 10),
		"-XX:+UseSerialGC",
		"-XX:TieredStopAtLevel=1", // C1 only: far less JIT work on 2 shared cores
		"-XX:+ExitOnOutOfMemoryError",
		"-Xss1m",
		"-Djava.io.tmpdir=" + tmp,
		"-Dfile.encoding=UTF-8",
		"-Djava.awt.headless=true",
		"-Dlog4j2.disable.jmx=true",
		"-Dlog4j.shutdownHookEnabled=false",
	}
	if !isMajor3OrLater(c.version) {
		args = append(args, "-Djava.locale.providers=SPI,COMPAT")
	}
	if c.opts.Security != nil {
		args = append(args, "-Dsecurity.default_init.dir="+filepath.Join(home, "config", "opensearch-security"))
	}
	return append(args, c.opts.JVMArgs...), nil
}

func (c *Cluster) nodeArgs(i int) []string {
	o := c.opts
	nd := c.nodes[i]
	var po NodeOptions
	if i < len(o.PerNode) {
		po = o.PerNode[i]
	}
	args := []string{
		"--name=" + nd.name,
		"--cluster-name=" + firstNonEmpty(o.ClusterName, "osr-test"),
		"--home=" + nd.home,
		"--http-port=" + strconv.Itoa(nd.httpPort),
		"--transport-port=" + strconv.Itoa(nd.transportPort),
		"--watch-parent=" + strconv.FormatBool(!o.Detached),
	}
	if o.Security != nil {
		args = append(args, "--plugin="+SecurityPluginClass)
	}
	if o.Painless {
		args = append(args, "--plugin="+painlessPluginClass(c.version))
	}
	if len(c.nodes) > 1 {
		var seeds, names []string
		for _, m := range c.nodes {
			seeds = append(seeds, "127.0.0.1:"+strconv.Itoa(m.transportPort))
			names = append(names, m.name)
		}
		args = append(args, "--seed-hosts="+strings.Join(seeds, ","), "--initial-managers="+strings.Join(names, ","))
	}
	zone := po.Zone
	if zone == "" && len(o.Zones) > 0 {
		zone = o.Zones[i%len(o.Zones)]
	}
	if zone != "" {
		args = append(args, "--zone="+zone)
	}
	if o.ZoneAwareness {
		args = append(args, "--awareness=zone")
	}
	wt, wq := o.WriteThreads, o.WriteQueueSize
	if po.WriteThreads > 0 {
		wt = po.WriteThreads
	}
	if po.WriteQueueSize > 0 {
		wq = po.WriteQueueSize
	}
	args = append(args, "--write-threads="+strconv.Itoa(wt), "--write-queue="+strconv.Itoa(wq))
	if po.HTTPPublishPort > 0 {
		args = append(args, "--http-publish-port="+strconv.Itoa(po.HTTPPublishPort))
	}
	if po.TransportPublishPort > 0 {
		args = append(args, "--transport-publish-port="+strconv.Itoa(po.TransportPublishPort))
	}
	for _, m := range []map[string]string{o.Settings, po.Settings} {
		for k, v := range m {
			args = append(args, "--setting="+k+"="+v)
		}
	}
	return args
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// spawn starts node i's process and returns the log offset its output starts at.
func (c *Cluster) spawn(i int) (int64, error) {
	nd := c.nodes[i]
	if err := os.MkdirAll(nd.home, 0o755); err != nil {
		return 0, fmt.Errorf("cluster: node dir: %w", err)
	}
	jvm, err := c.jvmArgs(nd.home)
	if err != nil {
		return 0, err
	}
	logf, err := os.OpenFile(nd.logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return 0, fmt.Errorf("cluster: node log: %w", err)
	}
	defer logf.Close()
	off, _ := logf.Seek(0, io.SeekEnd)
	args := append(jvm, "-cp", c.l.classpath, launcherMain)
	args = append(args, c.nodeArgs(i)...)
	cmd := exec.Command(c.l.java, args...)
	cmd.Dir = nd.home
	cmd.Env = os.Environ()
	if c.l.javaHome != "" {
		cmd.Env = append(cmd.Env, "JAVA_HOME="+c.l.javaHome)
	}
	cmd.Stdout = logf
	cmd.Stderr = logf
	// The lock's file description is inherited: the machine lock stays held
	// while any node of this cluster lives.
	cmd.ExtraFiles = []*os.File{c.lock}
	p := &process{cmd: cmd, done: make(chan struct{})}
	var stdinR *os.File
	if c.opts.Detached {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	} else {
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		r, w, err := os.Pipe()
		if err != nil {
			return 0, fmt.Errorf("cluster: stdin pipe: %w", err)
		}
		cmd.Stdin = r
		stdinR, p.stdin = r, w
	}
	err = cmd.Start()
	if stdinR != nil {
		stdinR.Close()
	}
	if err != nil {
		if p.stdin != nil {
			p.stdin.Close()
		}
		return 0, fmt.Errorf("cluster: starting %s: %w", nd.name, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	c.mu.Lock()
	nd.proc = p
	c.holder.Nodes = c.holder.Nodes[:0]
	for _, n := range c.nodes {
		if n.proc != nil {
			c.holder.Nodes = append(c.holder.Nodes, n.proc.cmd.Process.Pid)
		}
	}
	h := c.holder
	c.mu.Unlock()
	// The nodes keep the lock after this process exits: the record names them.
	h.PID, h.Program, h.Since = os.Getpid(), filepath.Base(os.Args[0]), time.Now().UTC().Format(time.RFC3339)
	writeHolder(c.lock, h)
	return off, nil
}

// waitReady waits for the launcher's OSR-READY line in the node log.
func (c *Cluster) waitReady(ctx context.Context, i int, off int64) error {
	nd := c.nodes[i]
	c.mu.Lock()
	p := nd.proc
	c.mu.Unlock()
	if p == nil {
		return fmt.Errorf("cluster: %s is not running", nd.name)
	}
	for {
		b, _ := os.ReadFile(nd.logPath)
		if int64(len(b)) > off {
			out := b[off:]
			if bytes.Contains(out, []byte("\nOSR-READY ")) || bytes.HasPrefix(out, []byte("OSR-READY ")) {
				return nil
			}
			if j := bytes.Index(out, []byte("OSR-FAILED")); j >= 0 {
				line, _, _ := bytes.Cut(out[j:], []byte("\n"))
				return fmt.Errorf("cluster: %s failed to start: %s\n%s", nd.name, line, c.logTail(i))
			}
		}
		select {
		case <-p.done:
			return fmt.Errorf("cluster: %s exited before it was ready (%v)\n%s", nd.name, p.err, c.logTail(i))
		case <-ctx.Done():
			return fmt.Errorf("cluster: %s not ready: %w\n%s", nd.name, ctx.Err(), c.logTail(i))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func (c *Cluster) logTail(i int) string {
	b, err := os.ReadFile(c.nodes[i].logPath)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	return "--- " + c.nodes[i].logPath + " (tail) ---\n" + tail(string(b), 3000)
}

// Health is the part of GET /_cluster/health the harness looks at.
type Health struct {
	Status              string `json:"status"`
	NumberOfNodes       int    `json:"number_of_nodes"`
	InitializingShards  int    `json:"initializing_shards"`
	RelocatingShards    int    `json:"relocating_shards"`
	UnassignedShards    int    `json:"unassigned_shards"`
	ActivePrimaryShards int    `json:"active_primary_shards"`
	TimedOut            bool   `json:"timed_out"`
}

// WaitHealth waits until the cluster reports at least status ("green" or
// "yellow") with every node of the cluster joined and no initializing
// shards, asking any running node.
func (c *Cluster) WaitHealth(ctx context.Context, status string) error {
	return c.check(c.waitHealth(ctx, status, len(c.nodes)))
}

func (c *Cluster) waitHealth(ctx context.Context, status string, nodes int) error {
	var last string
	for {
		for i := range c.nodes {
			if !c.running(i) {
				continue
			}
			path := fmt.Sprintf("/_cluster/health?wait_for_status=%s&wait_for_nodes=%d&wait_for_no_initializing_shards=true&timeout=2s", status, nodes)
			rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			code, body, err := c.do(rctx, i, http.MethodGet, path, nil)
			cancel()
			if err != nil {
				last = err.Error()
				continue
			}
			var h Health
			if err := json.Unmarshal(body, &h); err != nil {
				last = fmt.Sprintf("HTTP %d: %s", code, tail(string(body), 300))
				continue
			}
			if code == http.StatusOK && !h.TimedOut && h.NumberOfNodes == nodes {
				return nil
			}
			last = fmt.Sprintf("%s from %s", strings.TrimSpace(string(body)), c.nodes[i].name)
			break
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: waiting for %s health with %d nodes: %w; last answer: %s", status, nodes, ctx.Err(), last)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// do sends one request to node i and returns the status and body.
func (c *Cluster) do(ctx context.Context, i int, method, path string, body []byte) (int, []byte, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.Addr(i)+path, r)
	if err != nil {
		return 0, nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

func (c *Cluster) running(i int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.nodes[i].proc
	if p == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// check fails the test (when started by Start) and returns err.
func (c *Cluster) check(err error) error {
	if err != nil && c.tb != nil {
		c.tb.Helper()
		c.tb.Fatalf("%v", err)
	}
	return err
}

func (c *Cluster) index(i int) error {
	if i < 0 || i >= len(c.nodes) {
		return fmt.Errorf("cluster: node %d out of range [0, %d)", i, len(c.nodes))
	}
	return nil
}

// Version is the OpenSearch release the cluster runs.
func (c *Cluster) Version() string { return c.version }

// Len is the number of nodes (running or not).
func (c *Cluster) Len() int { return len(c.nodes) }

// Dir is the directory holding the node directories.
func (c *Cluster) Dir() string { return c.dir }

// Addr is node i's HTTP base URL, http://127.0.0.1:port (https:// on a
// secured cluster; its bound port, even when a publish port is set). It
// panics if i is out of range.
func (c *Cluster) Addr(i int) string {
	scheme := "http://"
	if c.opts.Security != nil {
		scheme = "https://"
	}
	return scheme + "127.0.0.1:" + strconv.Itoa(c.nodes[i].httpPort)
}

// Addrs are the HTTP base URLs of all nodes, in node order.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.nodes))
	for i := range c.nodes {
		out[i] = c.Addr(i)
	}
	return out
}

// TransportAddr is node i's transport address, 127.0.0.1:port.
func (c *Cluster) TransportAddr(i int) string {
	return "127.0.0.1:" + strconv.Itoa(c.nodes[i].transportPort)
}

// NodeName is node i's node.name (node-0, node-1, …), as in _cat/nodes.
func (c *Cluster) NodeName(i int) string { return c.nodes[i].name }

// LogPath is node i's log file (stdout and stderr of its JVM, all restarts).
func (c *Cluster) LogPath(i int) string { return c.nodes[i].logPath }

// PID is node i's JVM process id, or 0 when the node is not running.
func (c *Cluster) PID(i int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.nodes[i].proc; p != nil {
		return p.cmd.Process.Pid
	}
	return 0
}

// Kill crashes node i: SIGKILL to its process group, then waits for the exit.
func (c *Cluster) Kill(i int) error {
	if err := c.index(i); err != nil {
		return c.check(err)
	}
	return c.check(c.terminate(i, 0))
}

// Stop stops node i gracefully (SIGTERM; SIGKILL after 30 s).
func (c *Cluster) Stop(i int) error {
	if err := c.index(i); err != nil {
		return c.check(err)
	}
	return c.check(c.terminate(i, 30*time.Second))
}

// terminate signals node i's group (SIGTERM with grace > 0, else SIGKILL) and
// waits until the process has exited. A node that is not running is no error.
func (c *Cluster) terminate(i int, grace time.Duration) error {
	c.mu.Lock()
	nd := c.nodes[i]
	p := nd.proc
	nd.proc = nil
	c.mu.Unlock()
	if p == nil {
		return nil
	}
	defer func() {
		if p.stdin != nil {
			p.stdin.Close()
		}
	}()
	pid := p.cmd.Process.Pid
	if grace > 0 {
		_ = syscall.Kill(-pid, syscall.SIGTERM)
		select {
		case <-p.done:
			return nil
		case <-time.After(grace):
		}
	}
	_ = syscall.Kill(-pid, syscall.SIGKILL)
	select {
	case <-p.done:
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("cluster: %s (pid %d) did not exit after SIGKILL", nd.name, pid)
	}
}

// Restart starts node i again with the same ports and data directory
// (stopping it gracefully first if it runs) and waits until it has rejoined:
// every node in the cluster, no initializing shards, status yellow or better.
func (c *Cluster) Restart(i int) error {
	if err := c.index(i); err != nil {
		return c.check(err)
	}
	return c.check(c.restart(i))
}

func (c *Cluster) restart(i int) error {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return errors.New("cluster: Restart after Close")
	}
	if err := c.terminate(i, 30*time.Second); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	off, err := c.spawn(i)
	if err != nil {
		return err
	}
	if err := c.waitReady(ctx, i, off); err != nil {
		return err
	}
	return c.waitHealth(ctx, "yellow", len(c.nodes))
}

// Close kills every node (SIGKILL to each process group), releases the
// machine lock and removes the cluster's directory if Start created it.
// It is safe to call more than once.
func (c *Cluster) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()
	var errs []error
	for i := range c.nodes {
		if err := c.terminate(i, 0); err != nil {
			errs = append(errs, err)
		}
	}
	if c.lock != nil {
		c.lock.Close()
	}
	if c.ownDir && len(errs) == 0 {
		if err := os.RemoveAll(c.dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
