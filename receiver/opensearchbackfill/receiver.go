package opensearchbackfill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/extension/xextension/storage"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/receiver"
	"go.opentelemetry.io/collector/receiver/receiverhelper"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/zap"

	"github.com/opensearchrouted/opensearchrouted/internal/pit"
	"github.com/opensearchrouted/opensearchrouted/internal/routing"
	"github.com/opensearchrouted/opensearchrouted/receiver/opensearchbackfill/internal/metadata"
)

const (
	obsTransport = "http"
	obsFormat    = "opensearch"

	// StateAttribute is the component status attribute set to
	// StateCompleted when a once-mode backfill has read every slice.
	StateAttribute = "opensearchbackfill.state"
	StateCompleted = "completed"
)

// backfillReceiver reads indices with one paginator per slice, hands every
// page to the pipeline, and checkpoints each slice's cursor after the
// pipeline accepted the page.
type backfillReceiver struct {
	cfg    *Config
	set    receiver.Settings
	log    *zap.Logger
	logs   consumer.Logs   // set when cfg.Signal is logs
	traces consumer.Traces // set when cfg.Signal is traces
	obs    *receiverhelper.ObsReport
	tel    *metadata.TelemetryBuilder
	ctr    pit.Counters // shared by the slices' paginators
	// id is the receiver's component id, an attribute of every metric
	// (receiver, as the receiverhelper's own metrics name it), so that
	// two instances in one collector report apart.
	id attribute.KeyValue

	// Set by Start.
	host    component.Host
	client  *http.Client
	router  *routing.Router
	sel     pit.NodeSelector
	rsel    *readSelector
	store   storage.Client
	limiter *limiter
	reg     metric.Registration
	slices  []*slice
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	done    chan struct{} // closed when every slice goroutine returned and completion was reported

	mu   sync.Mutex // guards errs
	errs []error    // fatal errors of slices

	delivered   atomic.Int64 // documents accepted by the pipeline
	recovering  atomic.Int32 // slices retrying failed reads
	readRetries atomic.Int64 // failed reads retried

	// Test hooks.
	sleep func(ctx context.Context, d time.Duration) error
}

// slice is one parallel part of the read. Its fields are owned by its
// goroutine (and by Start and Shutdown, before and after it runs).
type slice struct {
	id, max int
	key     string
	pag     *pit.Paginator    // open paginator, nil between reads
	cursor  []json.RawMessage // after the last page the pipeline accepted
	done    bool              // read to the end (once mode)
	conv    converter
	dedup   *pit.DedupWindow // follow mode with a lag: kept across polls
	// overflows is the dedup overflow count last warned about.
	overflows int64
	retry     readRetry
	delivered int64 // documents this slice delivered
}

func newReceiver(cfg *Config, set receiver.Settings) (*backfillReceiver, error) {
	obs, err := receiverhelper.NewObsReport(receiverhelper.ObsReportSettings{
		ReceiverID:             set.ID,
		Transport:              obsTransport,
		ReceiverCreateSettings: set,
	})
	if err != nil {
		return nil, err
	}
	tel, err := metadata.NewTelemetryBuilder(set.TelemetrySettings)
	if err != nil {
		return nil, err
	}
	return &backfillReceiver{
		cfg:   cfg,
		set:   set,
		log:   set.Logger,
		obs:   obs,
		tel:   tel,
		id:    attribute.String("receiver", set.ID.String()),
		done:  make(chan struct{}),
		sleep: sleepCtx,
	}, nil
}

// Start builds the HTTP client, starts discovery, opens the storage client
// and reads the checkpoints, and opens a point in time per unfinished slice
// (so that an unknown index or a rejected query fails here, clearly), then
// reads in the background.
func (r *backfillReceiver) Start(ctx context.Context, host component.Host) (err error) {
	r.host = host
	cleanup := func() {
		for _, s := range r.slices {
			if s != nil && s.pag != nil {
				_ = s.pag.Close(ctx)
				s.pag = nil
			}
		}
		if r.router != nil {
			r.router.Close()
			r.router = nil
		}
		if r.store != nil {
			_ = r.store.Close(ctx)
			r.store = nil
		}
		if r.reg != nil {
			_ = r.reg.Unregister()
			r.reg = nil
		}
		if r.client != nil {
			r.client.CloseIdleConnections()
		}
	}
	defer func() {
		if err != nil {
			cleanup()
		}
	}()
	r.client, err = r.cfg.ClientConfig.ToClient(ctx, host.GetExtensions(), r.set.TelemetrySettings)
	if err != nil {
		return fmt.Errorf("opensearchbackfill: building the HTTP client: %w", err)
	}
	seeds := r.cfg.seeds()
	if r.cfg.Discovery.Enabled {
		r.router, err = routing.New(routing.Options{
			Client:          r.client,
			Seeds:           seeds,
			RefreshInterval: r.cfg.Discovery.RefreshInterval,
			Logger:          r.log,
		})
		if err != nil {
			return fmt.Errorf("opensearchbackfill: endpoints: %w", err)
		}
		r.router.Start()
	}
	var out *routing.Outliers
	if r.router != nil {
		out = r.cfg.OutlierDetection.detector()
	}
	sel := newReadSelector(r.router, seeds, out)
	sel.want(r.cfg.Indices)
	r.sel = sel
	r.rsel = sel
	if r.cfg.MaxDocumentsPerSecond > 0 {
		r.limiter = &limiter{rate: r.cfg.MaxDocumentsPerSecond}
	}
	if r.cfg.Storage != nil {
		if r.store, err = r.storageClient(ctx, host); err != nil {
			return err
		}
	}
	r.reg, err = r.tel.RegisterCallback(r.observe)
	if err != nil {
		return err
	}

	if r.following() {
		if err := r.checkRefreshInterval(ctx); err != nil {
			return fmt.Errorf("opensearchbackfill: %w", err)
		}
	}
	n := r.cfg.Slices
	r.slices = make([]*slice, n)
	for i := range n {
		s := &slice{id: i, max: n, key: fmt.Sprintf("slice_%d_of_%d", i, n)}
		s.conv.otelV1 = r.cfg.Mapping.Mode == MappingOtelV1
		if r.following() {
			s.dedup = pit.NewDedupWindow(r.cfg.DedupWindow, r.cfg.MaxDedupWindow)
			s.dedup.Keep(math.MinInt64) // everything, until the first page gives a cursor
		}
		r.slices[i] = s
		if err := r.loadCheckpoint(ctx, s); err != nil {
			return err
		}
		if s.done && r.cfg.Mode == ModeOnce {
			continue
		}
		if s.pag, err = r.open(ctx, s); err != nil {
			if permanentRead(err) {
				return fmt.Errorf("opensearchbackfill: opening a point in time on %v (slice %d of %d): %w", r.cfg.Indices, i, n, err)
			}
			// The cluster may come back: the slice retries in the
			// background (read_retry).
			r.log.Warn("Opening a point in time failed; the slice retries in the background",
				zap.Int("slice", i), zap.Error(err))
			s.pag = nil
		}
	}

	rctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	for _, s := range r.slices {
		if s.done && r.cfg.Mode == ModeOnce {
			continue
		}
		r.wg.Add(1)
		go r.run(rctx, s)
	}
	go func() {
		r.wg.Wait()
		// done closes after the completion is reported: whoever waits on
		// done sees the report too.
		defer close(r.done)
		if rctx.Err() == nil && r.cfg.Mode == ModeOnce && len(r.fatalErrors()) == 0 {
			attrs := pcommon.NewMap()
			attrs.PutStr(StateAttribute, StateCompleted)
			attrs.PutInt("opensearchbackfill.documents", r.delivered.Load())
			componentstatus.ReportStatus(host, componentstatus.NewEvent(componentstatus.StatusOK, componentstatus.WithAttributes(attrs)))
			r.log.Info("Backfill completed: every slice was read to its end",
				zap.Int64("documents", r.delivered.Load()), zap.Int("slices", n))
		}
	}()
	return nil
}

// Shutdown stops the reads, deletes the open points in time and closes the
// storage client. The checkpoints stay: a restart resumes from them.
func (r *backfillReceiver) Shutdown(ctx context.Context) error {
	if r.cancel == nil {
		return nil // never started, Start failed and cleaned up, or already shut down
	}
	r.cancel()
	r.cancel = nil
	r.wg.Wait()
	var errs []error
	for _, s := range r.slices {
		if s.pag != nil {
			if err := s.pag.Close(ctx); err != nil {
				errs = append(errs, err)
			}
			s.pag = nil
		}
	}
	if r.reg != nil {
		_ = r.reg.Unregister()
		r.reg = nil
	}
	if r.router != nil {
		r.router.Close()
		r.router = nil
	}
	if r.store != nil {
		if err := r.store.Close(ctx); err != nil {
			errs = append(errs, err)
		}
		r.store = nil
	}
	if r.client != nil {
		r.client.CloseIdleConnections()
	}
	return errors.Join(errs...)
}

func (r *backfillReceiver) storageClient(ctx context.Context, host component.Host) (storage.Client, error) {
	ext, ok := host.GetExtensions()[*r.cfg.Storage]
	if !ok {
		return nil, fmt.Errorf("opensearchbackfill: storage: extension %q not found (add it to service.extensions)", r.cfg.Storage)
	}
	se, ok := ext.(storage.Extension)
	if !ok {
		return nil, fmt.Errorf("opensearchbackfill: storage: extension %q is not a storage extension", r.cfg.Storage)
	}
	c, err := se.GetClient(ctx, component.KindReceiver, r.set.ID, r.cfg.Signal)
	if err != nil {
		return nil, fmt.Errorf("opensearchbackfill: storage: %w", err)
	}
	return c, nil
}

// open opens the paginator of a slice, after its cursor.
func (r *backfillReceiver) open(ctx context.Context, s *slice) (*pit.Paginator, error) {
	o, err := r.cfg.pitOptions()
	if err != nil {
		return nil, err
	}
	o.Client = r.client
	o.Selector = r.sel
	o.Counters = &r.ctr
	o.SearchAfter = s.cursor
	if s.dedup != nil {
		o.Dedup = s.dedup
		if o.SearchAfter, err = rewind(s.cursor, r.cfg.FollowLag); err != nil {
			return nil, &permanentError{err}
		}
	}
	o.Sleep = r.sleep
	o.StrictShards = true
	if o.Preference == nil && r.rsel != nil {
		o.Preference = r.rsel.preference
	}
	if s.max > 1 {
		o.Slice = &pit.Slice{ID: s.id, Max: s.max}
	}
	id := s.id
	o.OnSnapshotBreak = func(ev pit.SnapshotBreakEvent) {
		r.log.Info("Point in time recreated after its search contexts were lost; reading resumes from the last cursor on a newer snapshot",
			zap.Int("slice", id), zap.Int("attempt", ev.Attempt), zap.Int("lost_shards", len(ev.FailedShards)), zap.Error(ev.Cause))
	}
	return pit.Open(ctx, o)
}

// run reads one slice until its end (once), or until ctx ends (follow).
// A failed read is retried from the slice's cursor (retryRead).
func (r *backfillReceiver) run(ctx context.Context, s *slice) {
	defer r.wg.Done()
	for {
		if s.pag == nil {
			p, err := r.open(ctx, s)
			if err != nil {
				if r.retryRead(ctx, s, fmt.Errorf("opening a point in time: %w", err)) {
					continue
				}
				return
			}
			s.pag = p
		}
		var readErr error
		for pg, err := range s.pag.Pages(ctx) {
			if err != nil && pit.IsFatal(err) {
				readErr = err
				break
			}
			if err != nil {
				r.pageProblem(s, err)
			}
			r.readOK(s)
			if len(pg.Hits) > 0 {
				if err := r.deliver(ctx, s, pg.Hits); err != nil {
					r.fail(ctx, s, err)
					return
				}
			}
			s.cursor = pg.Cursor
			r.keepOverlap(s)
			r.saveCheckpoint(ctx, s)
		}
		if ctx.Err() != nil {
			return
		}
		if readErr != nil {
			if r.retryRead(ctx, s, readErr) {
				continue
			}
			return
		}
		r.readOK(s)
		if err := s.pag.Close(ctx); err != nil {
			r.log.Warn("Deleting a point in time failed; it expires with its keep-alive", zap.Int("slice", s.id), zap.Error(err))
		}
		s.pag = nil
		if r.cfg.Mode == ModeOnce {
			s.done = true
			r.saveCheckpoint(ctx, s)
			return
		}
		if r.sleep(ctx, r.cfg.PollInterval) != nil {
			return
		}
	}
}

// following tells whether reads re-read an overlap of follow_lag.
func (r *backfillReceiver) following() bool {
	return r.cfg.Mode == ModeFollow && r.cfg.FollowLag > 0
}

// keepOverlap tells the slice's dedup window which documents the next
// rewind can read again, and warns when the window had to forget some of
// them (max_dedup_window reached).
func (r *backfillReceiver) keepOverlap(s *slice) {
	if s.dedup == nil {
		return
	}
	s.dedup.Keep(floorOf(s.cursor, r.cfg.FollowLag))
	if n := s.dedup.Overflows(); n > s.overflows {
		r.log.Warn("The dedup window reached max_dedup_window while holding documents of the last follow_lag: those forgotten are emitted again if read again; raise max_dedup_window or lower follow_lag",
			zap.Int("slice", s.id), zap.Int64("forgotten", n-s.overflows), zap.Int64("forgotten_total", n),
			zap.Int("max_dedup_window", r.cfg.MaxDedupWindow), zap.Duration("follow_lag", r.cfg.FollowLag))
		s.overflows = n
	}
}

// fail records a slice's fatal error and reports it. A cancelled context
// (shutdown) is not a failure.
func (r *backfillReceiver) fail(ctx context.Context, s *slice, err error) {
	if ctx.Err() != nil {
		return
	}
	err = fmt.Errorf("opensearchbackfill: slice %d of %d stopped (its checkpoint stays after the last page delivered): %w", s.id, s.max, err)
	r.mu.Lock()
	r.errs = append(r.errs, err)
	r.mu.Unlock()
	r.log.Error("Backfill slice failed", zap.Error(err))
	componentstatus.ReportStatus(r.host, componentstatus.NewPermanentErrorEvent(err))
}

func (r *backfillReceiver) fatalErrors() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]error(nil), r.errs...)
}

// pageProblem logs the non-fatal errors that come with a page. They are
// counted by the paginator (Stats, and the receiver's metrics).
func (r *backfillReceiver) pageProblem(s *slice, err error) {
	var sf *pit.ShardFailureError
	if errors.As(err, &sf) {
		r.log.Warn("Shards failed for a reason other than context loss; their documents in this range are not read",
			zap.Int("slice", s.id), zap.Error(sf))
	}
	if errors.Is(err, pit.ErrHitOutOfOrder) {
		r.log.Debug("Documents changed between two points in time were emitted again", zap.Int("slice", s.id))
	}
}

// deliver hands the hits to the pipeline, retrying refusals; it returns only
// when the pipeline accepted them, refused them permanently (counted and
// logged, the page is not retried), or retries ran out.
func (r *backfillReceiver) deliver(ctx context.Context, s *slice, hits []pit.Hit) error {
	if err := r.limiter.wait(ctx, len(hits), r.sleep); err != nil {
		return err
	}
	bo := newBackoff(r.cfg.RetryOnFailure)
	for first := true; ; first = false {
		n, err := r.consume(ctx, s, hits, first)
		if err == nil {
			r.delivered.Add(int64(n))
			s.delivered += int64(n)
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if consumererror.IsPermanent(err) {
			r.tel.OtelcolOpensearchbackfillDocumentsSkipped.Add(ctx, int64(n), r.attrs(attribute.String("reason", "permanent")))
			r.log.Error("The pipeline refused a page permanently; its documents are not delivered",
				zap.Int("slice", s.id), zap.Int("documents", n), zap.Error(err))
			return nil
		}
		wait, ok := bo.next()
		if !r.cfg.RetryOnFailure.Enabled || !ok {
			return fmt.Errorf("the pipeline refused a page of %d documents: %w", n, err)
		}
		r.tel.OtelcolOpensearchbackfillConsumerRetries.Add(ctx, 1, r.attrs())
		r.log.Debug("The pipeline refused a page; retrying it", zap.Int("slice", s.id), zap.Duration("wait", wait), zap.Error(err))
		if err := r.sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// consume converts the hits (anew on every attempt: a refused pdata is not
// reused) and calls the next consumer. n is the number of items offered.
// Documents that cannot be delivered (not spans, with signal traces) are
// counted and logged on the first attempt only.
func (r *backfillReceiver) consume(ctx context.Context, s *slice, hits []pit.Hit, first bool) (int, error) {
	if r.logs != nil {
		ld := s.conv.toLogs(hits)
		n := ld.LogRecordCount()
		octx := r.obs.StartLogsOp(ctx)
		err := r.logs.ConsumeLogs(octx, ld)
		r.obs.EndLogsOp(octx, obsFormat, n, err)
		return n, err
	}
	td, skip := s.conv.toTraces(hits)
	if len(skip) > 0 && first {
		r.tel.OtelcolOpensearchbackfillDocumentsSkipped.Add(ctx, int64(len(skip)), r.attrs(attribute.String("reason", "foreign")))
		r.log.Warn("Documents that are not spans of the SS4O layout were skipped (signal is traces)",
			zap.Int("slice", s.id), zap.Int("count", len(skip)),
			zap.String("first_index", skip[0].Index), zap.String("first_id", skip[0].ID), zap.Error(skip[0].Err))
	}
	n := td.SpanCount()
	if n == 0 {
		return 0, nil
	}
	octx := r.obs.StartTracesOp(ctx)
	err := r.traces.ConsumeTraces(octx, td)
	r.obs.EndTracesOp(octx, obsFormat, n, err)
	return n, err
}

// observe reports the paginator counters.
func (r *backfillReceiver) observe(_ context.Context, o metric.Observer) error {
	st := r.ctr.Snapshot()
	t := r.tel
	id := r.attrs()
	o.ObserveInt64(t.OtelcolOpensearchbackfillPitsOpened, st.PITsOpened, id)
	o.ObserveInt64(t.OtelcolOpensearchbackfillPitsRecreated, st.PITsRecreated, id)
	o.ObserveInt64(t.OtelcolOpensearchbackfillPitsClosed, st.PITsClosed, id)
	o.ObserveInt64(t.OtelcolOpensearchbackfillHits, st.HitsEmitted, id)
	o.ObserveInt64(t.OtelcolOpensearchbackfillHitsDeduplicated, st.HitsDeduped, id)
	o.ObserveInt64(t.OtelcolOpensearchbackfillHitsOutOfOrder, st.HitsOutOfOrder, id)
	o.ObserveInt64(t.OtelcolOpensearchbackfillPages, st.PagesEmitted, id)
	o.ObserveInt64(t.OtelcolOpensearchbackfillSearchRetries, st.Retries, id)
	for reason, v := range st.ShardFailures {
		o.ObserveInt64(t.OtelcolOpensearchbackfillShardFailures, v, r.attrs(attribute.String("reason", reason)))
	}
	return nil
}

// attrs is a measurement's attributes: kv and the receiver's id.
func (r *backfillReceiver) attrs(kv ...attribute.KeyValue) metric.MeasurementOption {
	return metric.WithAttributes(append(kv, r.id)...)
}

// Stats returns the paginator counters of every slice together.
func (r *backfillReceiver) Stats() pit.Stats { return r.ctr.Snapshot() }

// backoff is the retry schedule of refused pages: exponential with
// randomisation, capped, bounded in total by MaxElapsedTime (0: never).
type backoff struct {
	cfg      backoffCfg
	interval time.Duration
	elapsed  time.Duration
}

type backoffCfg struct {
	initial, max, maxElapsed time.Duration
	mult, rnd                float64
}

func newBackoff(c configretry.BackOffConfig) *backoff {
	bc := backoffCfg{initial: c.InitialInterval, max: c.MaxInterval, maxElapsed: c.MaxElapsedTime,
		mult: c.Multiplier, rnd: c.RandomizationFactor}
	return &backoff{cfg: bc, interval: bc.initial}
}

func (b *backoff) next() (time.Duration, bool) {
	d := b.interval
	if b.cfg.rnd > 0 {
		delta := b.cfg.rnd * float64(d)
		d = time.Duration(float64(d) - delta + rand.Float64()*2*delta)
	}
	if b.cfg.maxElapsed > 0 && b.elapsed+d > b.cfg.maxElapsed {
		return 0, false
	}
	b.elapsed += d
	b.interval = min(time.Duration(float64(b.interval)*max(b.cfg.mult, 1)), b.cfg.max)
	return d, true
}

// limiter spaces deliveries so that, all slices together, no more than rate
// documents per second are handed to the pipeline. Nil: unlimited.
type limiter struct {
	mu   sync.Mutex
	rate float64
	next time.Time // when the next delivery may start; guarded by mu
	now  func() time.Time
}

// wait blocks until n documents may be delivered.
func (l *limiter) wait(ctx context.Context, n int, sleep func(context.Context, time.Duration) error) error {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	now := time.Now()
	if l.now != nil {
		now = l.now()
	}
	start := now
	if l.next.After(start) {
		start = l.next
	}
	l.next = start.Add(time.Duration(float64(n) / l.rate * float64(time.Second)))
	l.mu.Unlock()
	return sleep(ctx, start.Sub(now))
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
