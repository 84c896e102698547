package opensearchbackfill

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"go.opentelemetry.io/collector/component/componentstatus"
	"go.opentelemetry.io/collector/config/configretry"
	"go.uber.org/zap"

	"github.com/opensearchrouted/opensearchrouted/internal/pit"
)

// permanentError marks a read error no retry can fix.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

// permanentRead tells the read errors that are configuration errors: a
// bad option, a query or sort the server refuses (400), refused
// credentials or privileges (401, 403), a missing index (404
// index_not_found_exception), a cursor follow_lag cannot move back. Every
// other error (transport, 429, 5xx, lost points in time, retries spent
// inside the paginator, a shard that keeps failing in follow mode) is
// transient.
func permanentRead(err error) bool {
	var pe *permanentError
	if errors.As(err, &pe) {
		return true
	}
	var ce *pit.ConfigError
	if errors.As(err, &ce) {
		return true
	}
	var he *pit.HTTPError
	if errors.As(err, &he) {
		switch {
		case he.Status == http.StatusBadRequest, he.Status == http.StatusUnauthorized, he.Status == http.StatusForbidden:
			return true
		case he.Status == http.StatusNotFound && he.Type == "index_not_found_exception":
			return true
		}
	}
	return false
}

// readRetry is a slice's retry state for failed reads.
type readRetry struct {
	bo      *backoff
	since   time.Time // first failure since the last page read; zero: none
	retries int
}

func (r *backfillReceiver) newReadBackoff() *backoff {
	rr := r.cfg.ReadRetry
	return newBackoff(configretry.BackOffConfig{
		InitialInterval: rr.InitialInterval, MaxInterval: rr.MaxInterval,
		Multiplier: 2, RandomizationFactor: 0.5,
	})
}

// retryRead decides what a failed read becomes. It returns false when the
// slice must stop (ctx ended, the error is permanent, or once mode ran out
// of read_retry.max_elapsed_time; the failure is then reported), true
// after waiting before the next attempt (a recoverable status reported).
func (r *backfillReceiver) retryRead(ctx context.Context, s *slice, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	if permanentRead(err) || (r.cfg.Mode == ModeOnce && persistentShardFailure(err)) {
		r.fail(ctx, s, r.whatWasRead(s, err))
		r.closePIT(ctx, s)
		return false
	}
	rt := &s.retry
	now := time.Now()
	if rt.since.IsZero() {
		rt.since = now
		rt.bo = r.newReadBackoff()
		if r.recovering.Add(1) == 1 {
			componentstatus.ReportStatus(r.host, componentstatus.NewRecoverableErrorEvent(err))
		}
	}
	if r.cfg.Mode == ModeOnce && now.Sub(rt.since) >= r.cfg.ReadRetry.MaxElapsedTime {
		r.closePIT(ctx, s)
		r.fail(ctx, s, r.whatWasRead(s, fmt.Errorf("reads kept failing for %v (read_retry.max_elapsed_time %v, %d attempts): %w",
			now.Sub(rt.since).Round(time.Second), r.cfg.ReadRetry.MaxElapsedTime, rt.retries+1, err)))
		return false
	}
	wait, _ := rt.bo.next()
	rt.retries++
	r.readRetries.Add(1)
	r.log.Warn("Reading failed; retrying from the slice's checkpoint",
		zap.Int("slice", s.id), zap.Int("attempt", rt.retries), zap.Duration("wait", wait),
		zap.Duration("failing_for", now.Sub(rt.since).Round(time.Millisecond)), zap.Error(err))
	r.closePIT(ctx, s)
	return r.sleep(ctx, wait) == nil
}

// readOK ends a slice's failure streak: when no slice is retrying any
// more, the component is reported OK.
func (r *backfillReceiver) readOK(s *slice) {
	if s.retry.since.IsZero() {
		return
	}
	r.log.Info("Reading again after failures", zap.Int("slice", s.id), zap.Int("attempts", s.retry.retries),
		zap.Duration("failed_for", time.Since(s.retry.since).Round(time.Millisecond)))
	s.retry = readRetry{}
	if r.recovering.Add(-1) == 0 {
		componentstatus.ReportStatus(r.host, componentstatus.NewEvent(componentstatus.StatusOK))
	}
}

// whatWasRead completes a slice's final error with what it delivered.
func (r *backfillReceiver) whatWasRead(s *slice, err error) error {
	where := "from the start"
	if s.cursor != nil {
		where = "after the checkpointed cursor"
	}
	return fmt.Errorf("%w; this slice delivered %d documents before it stopped (the read resumes %s), all slices %d",
		err, s.delivered, where, r.delivered.Load())
}

// persistentShardFailure tells a shard that kept failing through the
// paginator's retries (once mode: a hole, never a completion).
func persistentShardFailure(err error) bool {
	var sf *pit.PersistentShardFailureError
	return errors.As(err, &sf)
}

// closePIT deletes the slice's point in time, if open (a failure is
// counted by the paginator; the PIT expires with its keep-alive).
func (r *backfillReceiver) closePIT(ctx context.Context, s *slice) {
	if s.pag != nil {
		_ = s.pag.Close(ctx)
		s.pag = nil
	}
}
