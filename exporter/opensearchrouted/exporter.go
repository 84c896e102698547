package opensearchrouted

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/exporter"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/opensearchrouted/opensearchrouted/exporter/opensearchrouted/internal/metadata"
	"github.com/opensearchrouted/opensearchrouted/internal/bulk"
	"github.com/opensearchrouted/opensearchrouted/internal/routing"
)

type signal uint8

const (
	signalLogs signal = iota
	signalTraces
)

func (s signal) String() string {
	if s == signalTraces {
		return "traces"
	}
	return "logs"
}

// exporter is one signal's exporter. The router and bulk client are built
// in start, because auth extensions only exist then.
type osExporter struct {
	cfg    *Config
	set    exporter.Settings
	log    *zap.Logger
	signal signal

	shared *shared // set between start and shutdown
	router *routing.Router
	client *bulk.Client
	http   *http.Client
	tel    *telemetry

	calls   sync.Pool // *call
	targets targetCache
	workers *workers // run a call's encoding shares and sub-bulks
	authLog rateLimited
	// routingLog rate-limits the errors about refused routing values.
	routingLog routingLog
	otel       *otelState // traces in mapping.mode otel-v1, else nil

	steering *routing.Steering // nil: steering off (steer.go)
	steerTel steerTel
}

func newExporter(cfg *Config, set exporter.Settings, sig signal) (*osExporter, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	tb, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	e := &osExporter{cfg: cfg, set: set, log: set.Logger, signal: sig, workers: newWorkers(maxIdleWorkers, waitSpin)}
	e.tel = newTelemetry(tb, sig, set.ID.String())
	e.steerTel = newSteerTel(e.tel)
	e.targets.init(cfg, sig)
	if sig == signalTraces && cfg.otelV1() {
		e.otel = newOtelState(cfg)
	}
	return e, nil
}

func (e *osExporter) start(ctx context.Context, host component.Host) error {
	sh, err := acquireShared(ctx, e, host)
	if err != nil {
		return err
	}
	e.shared = sh
	e.router, e.client, e.http = sh.router, sh.client, sh.http
	e.steering = sh.steering
	if e.cfg.InstallTemplates {
		deadLetter := ""
		if e.cfg.DeadLetter.Enabled {
			deadLetter = e.deadLetterIndex()
		}
		install := func() error { return installTemplates(ctx, e.http, e.cfg.seeds(), e.signal, deadLetter) }
		if e.otel != nil {
			install = func() error { return e.installOtelV1(ctx, deadLetter) }
		}
		if err := install(); err != nil {
			releaseShared(e.cfg)
			e.shared = nil
			return err
		}
	}
	if e.otel != nil {
		e.startOtel()
	} else if e.cfg.otelV1() {
		e.log.Info("mapping.mode otel-v1 applies to spans: log records are written in the SS4O layout")
	}
	return nil
}

// maxIdleWorkers bounds the workers (encoding shares, sub-bulks) kept parked
// between calls.
const maxIdleWorkers = 64

func (e *osExporter) shutdown(ctx context.Context) error {
	if e.otel != nil && e.shared != nil {
		e.stopOtel(ctx) // its last pass sends through the router
	}
	e.workers.close()
	if e.shared == nil {
		return nil
	}
	e.shared = nil
	return releaseShared(e.cfg)
}

// shared is what the logs and traces exporters of one configured component
// have in common: the HTTP client, the router (topology, node health and
// the congestion windows) and the bulk client. Both signals write into the
// same nodes' write thread pools, so one window per node must bound both.
type shared struct {
	refs   int
	shared *shared // set between start and shutdown
	router *routing.Router
	client *bulk.Client
	http   *http.Client
	bulkTr *bulk.Transport // the exporter's own bulk transport, if used
	tel    *telemetry      // the first exporter's: observes the node gauges
	labels *nodeLabels     // the node label of each node (nodelabel.go)

	steering *routing.Steering // nil unless routing.steering.enabled
}

var (
	sharedMu sync.Mutex
	shareds  = map[*Config]*shared{} // by the component's config: one per component id
)

// acquireShared returns the component's shared state, building and
// starting it for the first exporter that starts.
func acquireShared(ctx context.Context, e *osExporter, host component.Host) (*shared, error) {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if sh, ok := shareds[e.cfg]; ok {
		sh.refs++
		return sh, nil
	}
	httpClient, err := e.cfg.ClientConfig.ToClient(ctx, host.GetExtensions(), e.set.TelemetrySettings)
	if err != nil {
		return nil, fmt.Errorf("opensearchrouted: building the HTTP client: %w", err)
	}
	if e.cfg.Username != "" {
		httpClient.Transport = &basicAuthTransport{base: httpClient.Transport, value: basicAuth(e.cfg.Username, string(e.cfg.Password))}
	}
	if e.cfg.TLS.InsecureSkipVerify {
		e.log.Warn("tls.insecure_skip_verify is set: node certificates are not verified (anyone between the collector and the cluster can read and change what is sent)")
	}
	statsInterval := e.cfg.Routing.NodeStatsInterval
	if statsInterval == 0 {
		statsInterval = -1
	}
	labels := &nodeLabels{}
	router, err := routing.New(routing.Options{
		Client:             httpClient,
		Seeds:              e.cfg.seeds(),
		RefreshInterval:    e.cfg.Routing.RefreshInterval,
		MinRefreshInterval: e.cfg.Routing.MinRefreshInterval,
		StatsInterval:      statsInterval,
		WindowCeiling:      e.cfg.Routing.WindowCeiling,
		Disabled:           !e.cfg.Routing.Enabled,
		Logger:             withoutSignal(e.log),
		OnRefresh: func(trigger, outcome string) {
			e.tel.refreshed(trigger, outcome)
			labels.settle()
		},
		Degraded: e.cfg.Routing.DegradedDetection.routing(),
	})
	if err != nil {
		return nil, err
	}
	labels.router = router
	if err := e.tel.observeNodes(router, labels); err != nil {
		router.Close()
		return nil, err
	}
	bulkClient, bulkTr, header, why, err := bulkHTTP(ctx, e.cfg, httpClient, host.GetExtensions())
	if err != nil {
		router.Close()
		return nil, fmt.Errorf("opensearchrouted: building the bulk transport: %w", err)
	}
	if why != "" {
		e.log.Info("bulk requests use the collector's HTTP client", zap.String("because", why))
	} else {
		e.log.Info("bulk requests use the exporter's HTTP/1.1 transport")
	}
	router.Start()
	sh := &shared{refs: 1, router: router, client: &bulk.Client{HTTP: bulkClient, Header: header}, http: httpClient, bulkTr: bulkTr, tel: e.tel, labels: labels}
	if e.cfg.Routing.Enabled && e.cfg.Routing.Steering.Enabled {
		sh.steering = routing.NewSteering(router)
	}
	shareds[e.cfg] = sh
	return sh, nil
}

// withoutSignal is l without the otelcol.signal attribute the collector
// adds to a component's logger: the router (node health, discovery) is
// shared by the logs and the traces exporter of one configuration, and its
// lines must not name the signal of whichever started first.
func withoutSignal(l *zap.Logger) *zap.Logger {
	type dropper interface {
		DropInjectedAttributes(attrs ...string) zapcore.Core
	}
	return l.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		if d, ok := c.(dropper); ok {
			return d.DropInjectedAttributes("otelcol.signal")
		}
		return c
	}))
}

// releaseShared drops one reference; the last one stops the router, its
// gauges and the idle connections.
func releaseShared(cfg *Config) error {
	sharedMu.Lock()
	defer sharedMu.Unlock()
	sh, ok := shareds[cfg]
	if !ok {
		return nil
	}
	if sh.refs--; sh.refs > 0 {
		return nil
	}
	delete(shareds, cfg)
	err := sh.tel.stop()
	sh.router.Close()
	sh.labels.settle() // records what is still held
	sh.http.CloseIdleConnections()
	if sh.bulkTr != nil {
		sh.bulkTr.Close()
	}
	return err
}

// telemetry records the exporter's own metrics with attribute sets built
// once (recording allocates nothing per document). Every set has the
// component id (exporter, as the exporterhelper's metrics name it), so that
// two configured instances of the exporter (opensearchrouted/a and
// opensearchrouted/b) report apart.
type telemetry struct {
	tb       *metadata.TelemetryBuilder
	signal   attribute.KeyValue
	exporter attribute.KeyValue
	reg      metric.Registration

	outcomes  [numOutcomes]metric.AddOption
	fallbacks [numFallbacks]metric.AddOption
	direct    metric.AddOption
	unrouted  [16]metric.AddOption // by routing.Reason
	groupOpts [numTGOutcomes]metric.AddOption
	edgeOpts  [numEdgeOutcomes]metric.AddOption

	mu    sync.Mutex
	nodes map[string]*nodeAttrs // by node name
}

type nodeAttrs struct {
	set     attribute.Set
	record  metric.RecordOption
	add     metric.AddOption
	byClass map[string]metric.AddOption // bulk request outcome → option
}

type docOutcome uint8

const (
	outIndexed docOutcome = iota
	outDuplicate
	outDeadLettered
	outRetried
	outFailed
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"indexed", "duplicate", "dead_lettered", "retried", "failed"}

func newTelemetry(tb *metadata.TelemetryBuilder, sig signal, exporterID string) *telemetry {
	t := &telemetry{tb: tb, signal: attribute.String("signal", sig.String()), exporter: attribute.String("exporter", exporterID), nodes: map[string]*nodeAttrs{}}
	for i := range t.outcomes {
		t.outcomes[i] = t.opt(attribute.String("outcome", outcomeNames[i]), t.signal)
	}
	for i := range t.fallbacks {
		t.fallbacks[i] = t.opt(attribute.String("fallback", fallbackNames[i]), t.signal)
	}
	t.direct = t.opt(attribute.String("path", "direct"), attribute.String("reason", routing.Routed.String()))
	for _, r := range routing.Reasons() {
		t.unrouted[r] = t.opt(attribute.String("path", "unrouted"), attribute.String("reason", r.String()))
	}
	for i, n := range tgOutcomeNames {
		t.groupOpts[i] = t.opt(attribute.String("outcome", n))
	}
	for i, n := range edgeOutcomeNames {
		t.edgeOpts[i] = t.opt(attribute.String("outcome", n))
	}
	return t
}

// set is kv with the exporter's id.
func (t *telemetry) set(kv ...attribute.KeyValue) attribute.Set {
	return attribute.NewSet(append(kv, t.exporter)...)
}

func (t *telemetry) opt(kv ...attribute.KeyValue) metric.MeasurementOption {
	return metric.WithAttributeSet(t.set(kv...))
}

func (t *telemetry) documents(ctx context.Context, o docOutcome, n int) {
	if n > 0 {
		t.tb.OtelcolOpensearchroutedDocuments.Add(ctx, int64(n), t.outcomes[o])
	}
}

func (t *telemetry) fallback(ctx context.Context, f fallback, n int) {
	if n > 0 {
		t.tb.OtelcolOpensearchroutedDocumentsFallback.Add(ctx, int64(n), t.fallbacks[f])
	}
}

func (t *telemetry) routed(ctx context.Context, reasons *[16]int) {
	for r, n := range reasons {
		if n == 0 {
			continue
		}
		opt := t.unrouted[r]
		if routing.Reason(r) == routing.Routed {
			opt = t.direct
		}
		t.tb.OtelcolOpensearchroutedDocumentsRouted.Add(ctx, int64(n), opt)
	}
}

func (t *telemetry) node(name string) *nodeAttrs {
	t.mu.Lock()
	defer t.mu.Unlock()
	na, ok := t.nodes[name]
	if !ok {
		set := t.set(attribute.String("node", name))
		na = &nodeAttrs{set: set, record: metric.WithAttributeSet(set), add: metric.WithAttributeSet(set), byClass: map[string]metric.AddOption{}}
		t.nodes[name] = na
	}
	return na
}

func (t *telemetry) bulkRequest(ctx context.Context, node string, outcome string, seconds float64, bytes int64) {
	na := t.node(node)
	t.mu.Lock()
	opt, ok := na.byClass[outcome]
	if !ok {
		opt = t.opt(attribute.String("node", node), attribute.String("outcome", outcome))
		na.byClass[outcome] = opt
	}
	t.mu.Unlock()
	t.tb.OtelcolOpensearchroutedBulkRequests.Add(ctx, 1, opt)
	t.tb.OtelcolOpensearchroutedBulkRequestDuration.Record(ctx, seconds, na.record)
	t.tb.OtelcolOpensearchroutedBulkRequestBytes.Add(ctx, bytes, na.add)
}

func (t *telemetry) refreshed(trigger, outcome string) {
	t.tb.OtelcolOpensearchroutedTopologyRefreshes.Add(context.Background(), 1,
		t.opt(attribute.String("trigger", trigger), attribute.String("outcome", outcome)))
}

// observeNodes reports every node's window, in-flight requests and state,
// labelled by labels.
func (t *telemetry) observeNodes(r *routing.Router, labels *nodeLabels) error {
	reg, err := t.tb.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		for _, n := range r.Nodes() {
			if !labels.reportGauges(n) {
				continue
			}
			cwnd, _, _, inFlight := n.Window().State()
			opt := metric.WithAttributeSet(t.node(labels.label(n)).set)
			o.ObserveInt64(t.tb.OtelcolOpensearchroutedNodeWindow, int64(cwnd), opt)
			o.ObserveInt64(t.tb.OtelcolOpensearchroutedNodeInflight, int64(inFlight), opt)
			o.ObserveInt64(t.tb.OtelcolOpensearchroutedNodeState, int64(n.State()), opt)
		}
		return nil
	})
	t.reg = reg
	return err
}

func (t *telemetry) stop() error {
	if t.reg == nil {
		return nil
	}
	err := t.reg.Unregister()
	t.reg = nil
	return err
}

var errNoItems = errors.New("no items")
