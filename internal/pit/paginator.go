package pit

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Hit is one search hit. Source and Sort share the response body of their
// page (no copy per hit): keeping one keeps that body alive.
type Hit struct {
	Index   string
	ID      string
	Routing string // _routing, when the document has one
	// Version, SeqNo and PrimaryTerm are -1 when the server omitted them.
	Version     int64
	SeqNo       int64
	PrimaryTerm int64
	Source      json.RawMessage // nil when _source is disabled or filtered out
	Sort        []json.RawMessage
	// OutOfOrder is set when this (index, _id) was emitted before, from an
	// earlier PIT, with a different version.
	OutOfOrder bool
}

// Page is the result of one search.
type Page struct {
	Hits  []Hit
	PITID string
	// PriorPITID is set on the first page read from a recreated PIT: the
	// id of the PIT it replaced.
	PriorPITID string
	// Cursor is the sort values of the last hit the search returned
	// (skipped duplicates included): the search_after of the next page.
	Cursor []json.RawMessage
	// ShardFailures are the non-context shard failures of this response.
	ShardFailures []ShardFailure
	Deduplicated  int // hits dropped as already emitted
	OutOfOrder    int // hits with OutOfOrder set
}

// SnapshotBreakEvent describes one PIT recreation.
type SnapshotBreakEvent struct {
	OldPITID     string
	NewPITID     string
	Cursor       []json.RawMessage // reading resumes after it (nil: from the start)
	FailedShards []ShardFailure    // the lost contexts, when the server listed them
	Cause        error
	Attempt      int // 1-based, counted over the Paginator's life
}

// Paginator reads a PIT page by page. Create it with Open; release it with
// Close.
type Paginator struct {
	cfg  *config
	ctr  *Counters
	win  *window // nil: emit-all
	busy atomic.Bool

	mu       sync.Mutex // guards the fields up to failedAt
	pitID    string
	ownPIT   bool              // we opened pitID and delete it on Close
	cursor   []json.RawMessage // after the last emitted hit or page
	closed   bool
	failedAt map[string]time.Time // node URL → last failure

	// Owned by the iterating goroutine (busy).
	fetchCursor []json.RawMessage // search_after of the next search
	recreates   int               // recreate attempts since the last page read
	priorPIT    string            // set by a recreate until the next page is emitted
	broke       bool
	done        bool
	fatal       error
	pending     []Hit             // hits of the current page not yet yielded (Hits)
	pendingErr  error             // the shard failure error of the pending hits
	pendingCur  []json.RawMessage // cursor once the pending hits are yielded
}

// Open validates opts and opens the PIT (unless opts.ExistingPITID is set).
// The PIT creation is retried MaxRetries times on transport errors, 429,
// 5xx and partial creation.
func Open(ctx context.Context, opts Options) (*Paginator, error) {
	cfg, err := opts.validate()
	if err != nil {
		return nil, err
	}
	p := &Paginator{
		cfg:         cfg,
		ctr:         cfg.Counters,
		failedAt:    make(map[string]time.Time),
		fetchCursor: slices.Clone(cfg.SearchAfter),
		cursor:      slices.Clone(cfg.SearchAfter),
	}
	switch {
	case cfg.Dedup != nil:
		p.win = cfg.Dedup.w
	case cfg.DedupWindow > 0:
		p.win = newWindow(cfg.DedupWindow)
	}
	if cfg.ExistingPITID != "" {
		p.pitID = cfg.ExistingPITID
		return p, nil
	}
	id, _, err := p.openRetrying(ctx)
	if err != nil {
		return nil, err
	}
	p.pitID, p.ownPIT = id, true
	return p, nil
}

// PITID returns the id of the PIT in use.
func (p *Paginator) PITID() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.pitID
}

// Cursor returns the sort values of the last hit emitted (Hits) or of the
// last hit of the last page emitted (Pages); nil before the first. Pass it
// as Options.SearchAfter to resume after it.
func (p *Paginator) Cursor() []json.RawMessage {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cursor == nil {
		return nil
	}
	out := make([]json.RawMessage, len(p.cursor))
	for i, v := range p.cursor {
		out[i] = bytes.Clone(v) // never pins a response body
	}
	return out
}

// Stats returns the counters (shared ones if Options.Counters was set).
func (p *Paginator) Stats() Stats { return p.ctr.Snapshot() }

// Close deletes the PIT if the Paginator opened it (retried MaxRetries
// times). It may run while another goroutine iterates (to stop it): the
// iteration then ends with ErrClosed, and a PIT it was recreating at that
// moment is deleted too. Calling it again does nothing.
func (p *Paginator) Close(ctx context.Context) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	id, own := p.pitID, p.ownPIT
	p.mu.Unlock()
	if !own || id == "" {
		return nil
	}
	return p.deletePIT(ctx, id, p.cfg.MaxRetries)
}

func (p *Paginator) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// Pages iterates over the remaining pages. See the package doc for the
// errors that come with a valid page. With dedup enabled, hits already
// emitted are dropped from pages read after a recreate. A page is yielded
// when it has hits or carries an error.
func (p *Paginator) Pages(ctx context.Context) iter.Seq2[Page, error] {
	return func(yield func(Page, error) bool) {
		if !p.busy.CompareAndSwap(false, true) {
			yield(Page{}, ErrBusy)
			return
		}
		defer p.busy.Store(false)
		for len(p.pending) > 0 { // left over by a Hits loop that stopped early
			hits, perr, cur := p.pending, p.pendingErr, p.pendingCur
			p.pending, p.pendingErr, p.pendingCur = nil, nil, nil
			pg := Page{Hits: hits, PITID: p.PITID(), Cursor: cur}
			p.setCursor(pg.Cursor)
			p.ctr.HitsEmitted.Add(int64(len(hits)))
			if !yield(pg, perr) {
				return
			}
		}
		if p.pendingCur != nil { // a Hits loop stopped right after a page's last hit
			p.setCursor(p.pendingCur)
			p.pendingCur, p.pendingErr = nil, nil
		}
		for {
			pg, err := p.nextPage(ctx)
			if err != nil {
				yield(Page{}, err)
				return
			}
			if pg == nil {
				return
			}
			p.setCursor(pg.Cursor)
			perr := pageErr(pg)
			if len(pg.Hits) == 0 && perr == nil {
				continue
			}
			p.ctr.PagesEmitted.Add(1)
			p.ctr.HitsEmitted.Add(int64(len(pg.Hits)))
			if !yield(*pg, perr) {
				return
			}
		}
	}
}

// Hits iterates over the remaining hits. A hit comes with ErrHitOutOfOrder
// when it reappeared with another version, and with a *ShardFailureError
// when its page had non-context shard failures; a page with shard failures
// and no hits yields one zero Hit with that error. Snapshot breaks are
// reported through OnSnapshotBreak and Stats, not on hits. Breaking out of
// the loop keeps the rest of the page for the next iteration.
func (p *Paginator) Hits(ctx context.Context) iter.Seq2[Hit, error] {
	return func(yield func(Hit, error) bool) {
		if !p.busy.CompareAndSwap(false, true) {
			yield(Hit{}, ErrBusy)
			return
		}
		defer p.busy.Store(false)
		for {
			for len(p.pending) > 0 {
				h := p.pending[0]
				p.pending = p.pending[1:]
				p.setCursor(h.Sort)
				err := p.pendingErr
				if h.OutOfOrder {
					err = joinErr(err, ErrHitOutOfOrder)
				}
				p.ctr.HitsEmitted.Add(1)
				if !yield(h, err) {
					return
				}
			}
			if p.pendingCur != nil {
				p.setCursor(p.pendingCur)
				p.pendingCur, p.pendingErr = nil, nil
			}
			pg, err := p.nextPage(ctx)
			if err != nil {
				yield(Hit{}, err)
				return
			}
			if pg == nil {
				return
			}
			var serr error
			if len(pg.ShardFailures) > 0 {
				serr = &ShardFailureError{Failures: pg.ShardFailures}
			}
			if len(pg.Hits) > 0 || serr != nil {
				p.ctr.PagesEmitted.Add(1)
			}
			if len(pg.Hits) == 0 {
				p.setCursor(pg.Cursor)
				if serr != nil && !yield(Hit{}, serr) {
					return
				}
				continue
			}
			// The page's cursor (past skipped trailing duplicates too) is
			// set once its last hit has been yielded.
			p.pending, p.pendingErr, p.pendingCur = pg.Hits, serr, pg.Cursor
		}
	}
}

func pageErr(pg *Page) error {
	var err error
	if pg.PriorPITID != "" {
		err = ErrSnapshotBreak
	}
	if len(pg.ShardFailures) > 0 {
		err = joinErr(err, &ShardFailureError{Failures: pg.ShardFailures})
	}
	if pg.OutOfOrder > 0 {
		err = joinErr(err, ErrHitOutOfOrder)
	}
	return err
}

func joinErr(a, b error) error {
	if a == nil {
		return b
	}
	return errors.Join(a, b)
}

func (p *Paginator) setCursor(c []json.RawMessage) {
	p.mu.Lock()
	p.cursor = c
	p.mu.Unlock()
}

// nextPage fetches and dedups the next page. nil, nil means the end.
func (p *Paginator) nextPage(ctx context.Context) (*Page, error) {
	switch {
	case p.isClosed():
		return nil, ErrClosed
	case p.fatal != nil:
		return nil, p.fatal
	case p.done:
		return nil, nil
	}
	pg, err := p.fetch(ctx)
	if err != nil {
		if ctx.Err() == nil || !errors.Is(err, ctx.Err()) {
			p.fatal = err // a cancelled iteration may be resumed
		}
		return nil, err
	}
	return pg, nil
}

// fetch runs one search, recovering from context loss and transient
// failures, and returns the processed page.
func (p *Paginator) fetch(ctx context.Context) (*Page, error) {
	retries := 0
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if p.isClosed() {
			return nil, ErrClosed
		}
		pitID := p.PITID()
		status, data, node, err := p.do(ctx, "search", http.MethodPost, "/_search", p.searchBody(pitID, false))
		var (
			out     outcome
			cause   error
			lost    []ShardFailure
			resp    *searchResponse
			noProbe bool
		)
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if errors.Is(err, ErrNoNode) {
				return nil, err
			}
			out, cause = outTransient, err
		case status/100 != 2:
			var he *HTTPError
			var failed []ShardFailure
			out, he, failed = classifyError("search", node, status, data)
			cause = he
			p.countFailures(failed)
			if out == outLost {
				lost = failed
			}
			noProbe = status == http.StatusTooManyRequests
		default:
			if resp, err = decodeSearch(data); err != nil {
				return nil, fmt.Errorf("pit: search on %s: undecodable response: %w", redact(node), err)
			}
			var other []ShardFailure
			lost, other = splitFailures(resp.Shards.Failures)
			// The server groups identical shard failures into one entry, so
			// failed may exceed the entries; only a count with no entry at
			// all is an unknown cause.
			if resp.Shards.Failed > 0 && len(resp.Shards.Failures) == 0 {
				other = append(other, ShardFailure{Type: "unknown", Reason: strconv.Itoa(resp.Shards.Failed) + " failed shard(s) not listed"})
			}
			p.countFailures(lost)
			p.countFailures(other)
			switch {
			case len(lost) > 0:
				out = outLost
				cause = fmt.Errorf("pit: search on %s: %d shard(s) lost their search context", redact(node), len(lost))
			case resp.TimedOut:
				out, noProbe = outTransient, true
				cause = fmt.Errorf("pit: search on %s timed out on the server (partial results discarded)", redact(node))
			case len(other) > 0 && p.cfg.StrictShards:
				// The page is discarded and asked for again: emitting its
				// hits would move the cursor past the failed shards' range.
				if retries >= p.cfg.MaxRetries {
					return nil, &PersistentShardFailureError{Failures: other, Attempts: retries + 1}
				}
				out, noProbe = outTransient, true
				cause = &ShardFailureError{Failures: other}
			case len(other) > 0 && len(resp.Hits.Hits) == 0 && retries < p.cfg.MaxRetries:
				// No hit, so the cursor would not move past the failed
				// shards: giving the page up would drop the rest of their
				// documents, not one page's range. The same search asks
				// for the same range again, and the failure may pass (a
				// circuit breaker); after MaxRetries the page is emitted
				// with ErrShardFailure and the read ends, as documented.
				out, noProbe = outTransient, true
				cause = &ShardFailureError{Failures: other}
			default:
				pg, err := p.process(resp, other)
				if err == nil {
					p.recreates = 0 // progress: the budget bounds recreations in a row
				}
				return pg, err
			}
		}
		switch out {
		case outLost:
			p.ctr.ContextLosses.Add(1)
			if err := p.recreate(ctx, cause, lost); err != nil {
				return nil, err
			}
			retries = 0
		case outTransient:
			if retries >= p.cfg.MaxRetries {
				return nil, fmt.Errorf("pit: giving up after %d retries: %w", retries, cause)
			}
			if !noProbe {
				pout, pfailed, perr := p.probe(ctx, pitID)
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				if pout == outLost {
					p.ctr.ContextLosses.Add(1)
					if err := p.recreate(ctx, errors.Join(cause, perr), pfailed); err != nil {
						return nil, err
					}
					retries = 0
					continue
				}
			}
			p.ctr.Retries.Add(1)
			if err := p.cfg.Sleep(ctx, p.cfg.Backoff(retries)); err != nil {
				return nil, err
			}
			retries++
		default:
			return nil, cause
		}
	}
}

// process turns a successful response into a page: converts and dedups
// hits and advances the fetch cursor.
func (p *Paginator) process(resp *searchResponse, failures []ShardFailure) (*Page, error) {
	if resp.PITID != "" {
		p.mu.Lock()
		p.pitID = resp.PITID // the server may hand out a new id: always use the newest
		p.mu.Unlock()
	}
	raw := resp.Hits.Hits
	pg := &Page{PITID: p.PITID(), ShardFailures: failures}
	if p.broke {
		pg.PriorPITID, p.priorPIT, p.broke = p.priorPIT, "", false
	}
	if len(raw) > 0 {
		last := raw[len(raw)-1].Sort
		if len(last) == 0 {
			return nil, errors.New("pit: a hit came without sort values; the sort cannot be resumed")
		}
		// A deep copy: hit values point into the response body, which the
		// cursor must not keep alive (callers store it as a checkpoint).
		cur := make([]json.RawMessage, len(last))
		for i, v := range last {
			cur[i] = bytes.Clone(v)
		}
		p.fetchCursor = cur
	}
	pg.Cursor = p.fetchCursor
	if len(raw) == 0 || (len(raw) < p.cfg.PageSize && len(failures) == 0) {
		p.done = true
	}
	pg.Hits = make([]Hit, 0, len(raw))
	for i := range raw {
		h := &raw[i]
		hit := Hit{
			Index: h.Index, ID: h.ID, Routing: h.Routing,
			Version: h.Version.value(), SeqNo: h.SeqNo.value(), PrimaryTerm: h.PrimaryTerm.value(),
			Source: h.Source, Sort: h.Sort,
		}
		if p.win != nil {
			ts := int64(math.MinInt64)
			if len(h.Sort) > 0 {
				if v, ok := timeKey(h.Sort[0]); ok {
					ts = v
				}
			}
			before := p.win.overflows
			res := p.win.observe(h.Index, h.ID, hit.Version, ts)
			if p.win.overflows != before {
				p.ctr.DedupOverflows.Add(1)
			}
			switch res {
			case dedupDuplicate:
				pg.Deduplicated++
				p.ctr.HitsDeduped.Add(1)
				continue
			case dedupChanged:
				hit.OutOfOrder = true
				pg.OutOfOrder++
				p.ctr.HitsOutOfOrder.Add(1)
			}
		}
		pg.Hits = append(pg.Hits, hit)
	}
	return pg, nil
}

func (p *Paginator) countFailures(fs []ShardFailure) {
	for _, f := range fs {
		p.ctr.addShardFailure(f.Type)
	}
}

// probe asks with a size:0 search whether the PIT's contexts survive.
// It returns outOK (alive), outLost, or outTransient (unknown).
func (p *Paginator) probe(ctx context.Context, pitID string) (outcome, []ShardFailure, error) {
	p.ctr.Probes.Add(1)
	status, data, node, err := p.do(ctx, "probe", http.MethodPost, "/_search", p.searchBody(pitID, true))
	if err != nil {
		return outTransient, nil, err
	}
	if status/100 != 2 {
		out, he, failed := classifyError("probe", node, status, data)
		p.countFailures(failed)
		if out == outLost {
			return outLost, failed, he
		}
		return outTransient, nil, he
	}
	resp, err := decodeSearch(data)
	if err != nil {
		return outTransient, nil, fmt.Errorf("pit: probe on %s: undecodable response: %w", redact(node), err)
	}
	lost, _ := splitFailures(resp.Shards.Failures)
	if len(lost) > 0 {
		p.countFailures(lost)
		return outLost, lost, fmt.Errorf("pit: probe on %s: %d shard(s) lost their search context", redact(node), len(lost))
	}
	return outOK, nil, nil
}

// recreate opens a new PIT after context loss, within the budget.
func (p *Paginator) recreate(ctx context.Context, cause error, failed []ShardFailure) error {
	old := p.PITID()
	if !p.cfg.recreate {
		return &ContextLostError{PITID: old, Failures: failed, Cause: cause}
	}
	last := cause
	for {
		if p.recreates >= p.cfg.MaxRecreateAttempts {
			return fmt.Errorf("%w (%d): %w", ErrRecreateExhausted, p.recreates,
				&ContextLostError{PITID: old, Failures: failed, Cause: last})
		}
		attempt := p.recreates
		p.recreates++
		if err := p.cfg.Sleep(ctx, p.cfg.Backoff(attempt)); err != nil {
			return err
		}
		if p.isClosed() {
			return ErrClosed
		}
		id, out, err := p.openRetrying(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			p.ctr.RecreateFails.Add(1)
			if out == outFatal {
				return fmt.Errorf("pit: recreating the PIT: %w", err)
			}
			last = errors.Join(cause, err)
			continue
		}
		p.mu.Lock()
		if p.closed { // Close ran meanwhile and deleted the old PIT
			p.mu.Unlock()
			_ = p.deletePIT(context.WithoutCancel(ctx), id, 0)
			return ErrClosed
		}
		wasOwn := p.ownPIT
		p.pitID, p.ownPIT = id, true
		p.mu.Unlock()
		if wasOwn {
			// Frees the contexts that survived; a failure is counted and the
			// rest expires with its keep-alive.
			_ = p.deletePIT(ctx, old, 0)
		}
		p.ctr.PITsRecreated.Add(1)
		p.priorPIT, p.broke = old, true
		if cb := p.cfg.OnSnapshotBreak; cb != nil {
			cb(SnapshotBreakEvent{
				OldPITID: old, NewPITID: id, Cursor: slices.Clone(p.fetchCursor),
				FailedShards: failed, Cause: cause, Attempt: attempt + 1,
			})
		}
		return nil
	}
}

// openRetrying creates a PIT, retrying transient failures.
func (p *Paginator) openRetrying(ctx context.Context) (string, outcome, error) {
	for attempt := 0; ; attempt++ {
		id, out, err := p.openOnce(ctx)
		if err == nil {
			return id, outOK, nil
		}
		if out != outTransient || attempt >= p.cfg.MaxRetries || ctx.Err() != nil {
			return "", out, err
		}
		p.ctr.Retries.Add(1)
		if serr := p.cfg.Sleep(ctx, p.cfg.Backoff(attempt)); serr != nil {
			return "", outFatal, serr
		}
	}
}

func (p *Paginator) openOnce(ctx context.Context) (string, outcome, error) {
	path := "/" + p.cfg.indexPath + "/_search/point_in_time?keep_alive=" + p.cfg.keepAlive
	if p.cfg.Routing != "" {
		path += "&routing=" + url.QueryEscape(p.cfg.Routing)
	}
	if p.cfg.Preference != nil {
		if pref := p.cfg.Preference(); pref != "" {
			path += "&preference=" + url.QueryEscape(pref)
		}
	}
	status, data, node, err := p.do(ctx, "open", http.MethodPost, path, nil)
	if err != nil {
		if errors.Is(err, ErrNoNode) {
			return "", outFatal, err
		}
		return "", outTransient, err
	}
	if status/100 != 2 {
		out, he, _ := classifyError("open", node, status, data)
		if out == outLost {
			out = outTransient
		}
		return "", out, he
	}
	var cr createResponse
	if err := json.Unmarshal(data, &cr); err != nil || cr.PITID == "" {
		return "", outFatal, fmt.Errorf("pit: open on %s: response has no pit_id", redact(node))
	}
	p.ctr.PITsOpened.Add(1)
	if cr.Shards.Failed > 0 {
		_ = p.deletePIT(ctx, cr.PITID, 0)
		return "", outTransient, &PartialPITError{Total: cr.Shards.Total, Failed: cr.Shards.Failed}
	}
	return cr.PITID, outOK, nil
}

// deletePIT deletes a PIT, trying up to retries more times. A PIT the
// server no longer knows counts as closed.
func (p *Paginator) deletePIT(ctx context.Context, id string, retries int) error {
	body, _ := json.Marshal(struct {
		IDs []string `json:"pit_id"`
	}{[]string{id}})
	for attempt := 0; ; attempt++ {
		status, data, node, err := p.do(ctx, "delete", http.MethodDelete, "/_search/point_in_time", body)
		retriable := true
		if err == nil {
			switch {
			case status == http.StatusNotFound:
				p.ctr.PITsClosed.Add(1)
				return nil
			case status/100 == 2:
				var dr struct {
					Pits []struct {
						Successful bool `json:"successful"`
					} `json:"pits"`
				}
				if err := json.Unmarshal(data, &dr); err != nil || len(dr.Pits) == 0 {
					err = fmt.Errorf("pit: delete on %s: unexpected answer (no pits)", redact(node))
					p.ctr.PITCloseErrors.Add(1)
					return err
				}
				// successful:false: some contexts were already gone (lost
				// with their node) or unreachable; the server freed what it
				// reached and the rest expires with the keep-alive.
				for _, x := range dr.Pits {
					if !x.Successful {
						p.ctr.PITDeletesUnconfirmed.Add(1)
						break
					}
				}
				p.ctr.PITsClosed.Add(1)
				return nil
			default:
				_, he, _ := classifyError("delete", node, status, data)
				err = he
				retriable = status == http.StatusTooManyRequests || status >= 500
			}
		}
		if !retriable || attempt >= retries || ctx.Err() != nil || errors.Is(err, ErrNoNode) {
			p.ctr.PITCloseErrors.Add(1)
			return err
		}
		if serr := p.cfg.Sleep(ctx, p.cfg.Backoff(attempt)); serr != nil {
			p.ctr.PITCloseErrors.Add(1)
			return err
		}
	}
}

// searchBody encodes a PIT search. A probe asks for no hits.
func (p *Paginator) searchBody(pitID string, probe bool) []byte {
	var b bytes.Buffer
	b.WriteString(`{"pit":{"id":`)
	id, _ := json.Marshal(pitID)
	b.Write(id)
	b.WriteString(`,"keep_alive":"`)
	b.WriteString(p.cfg.keepAlive)
	b.WriteString(`"},"track_total_hits":false,"size":`)
	if probe {
		b.WriteString(`0}`)
		return b.Bytes()
	}
	b.WriteString(strconv.Itoa(p.cfg.PageSize))
	b.WriteString(`,"query":`)
	b.Write(p.cfg.query)
	b.WriteString(`,"sort":`)
	b.Write(p.cfg.sort)
	b.WriteString(`,"version":true,"seq_no_primary_term":true`)
	if p.cfg.source != nil {
		b.WriteString(`,"_source":`)
		b.Write(p.cfg.source)
	}
	if s := p.cfg.Slice; s != nil && s.Max > 1 { // the server rejects max 1: it is the whole
		fmt.Fprintf(&b, `,"slice":{"id":%d,"max":%d}`, s.ID, s.Max)
	}
	if len(p.fetchCursor) > 0 {
		b.WriteString(`,"search_after":[`)
		for i, v := range p.fetchCursor {
			if i > 0 {
				b.WriteByte(',')
			}
			b.Write(v)
		}
		b.WriteByte(']')
	}
	b.WriteByte('}')
	return b.Bytes()
}

// do sends one request to a node chosen by the selector, skipping nodes
// that failed within NodeCooldown when another one is offered.
func (p *Paginator) do(ctx context.Context, op, method, path string, body []byte) (int, []byte, string, error) {
	now := p.cfg.Now()
	p.mu.Lock()
	var recent map[string]bool
	for u, t := range p.failedAt {
		if now.Sub(t) < p.cfg.NodeCooldown {
			if recent == nil {
				recent = make(map[string]bool, len(p.failedAt))
			}
			recent[u] = true
		}
	}
	p.mu.Unlock()
	node, ok := p.cfg.Selector.ReadNode(p.cfg.Indices, func(u string) bool { return recent[u] })
	if !ok && recent != nil {
		node, ok = p.cfg.Selector.ReadNode(p.cfg.Indices, func(string) bool { return false })
	}
	if !ok {
		return 0, nil, "", fmt.Errorf("%w for %s", ErrNoNode, op)
	}
	rctx := ctx
	if p.cfg.RequestTimeout > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(ctx, p.cfg.RequestTimeout)
		defer cancel()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(rctx, method, node+path, rd)
	if err != nil {
		return 0, nil, node, fmt.Errorf("pit: %s: bad request URL for node %s: %w", op, redact(node), err)
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	start := time.Now()
	resp, err := p.cfg.Client.Do(req)
	var data []byte
	if err == nil {
		data, err = io.ReadAll(resp.Body)
		resp.Body.Close()
	}
	if err == nil && op == "search" && resp.StatusCode/100 == 2 {
		if lo, ok := p.cfg.Selector.(LatencyObserver); ok {
			lo.ObserveLatency(node, time.Since(start))
		}
	}
	if err != nil {
		if ctx.Err() != nil {
			return 0, nil, node, ctx.Err()
		}
		terr := &TransportError{Op: op, Node: redact(node), Err: err}
		p.nodeResult(node, terr)
		return 0, nil, node, terr
	}
	if resp.StatusCode >= 500 {
		p.nodeResult(node, fmt.Errorf("HTTP %d", resp.StatusCode))
	} else {
		p.nodeResult(node, nil)
	}
	return resp.StatusCode, data, node, nil
}

func (p *Paginator) nodeResult(node string, err error) {
	p.mu.Lock()
	if err != nil {
		p.failedAt[node] = p.cfg.Now()
	} else {
		delete(p.failedAt, node)
	}
	p.mu.Unlock()
	if o, ok := p.cfg.Selector.(FailureObserver); ok {
		o.ObserveRead(node, err)
	}
}
