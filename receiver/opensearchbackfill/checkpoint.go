package opensearchbackfill

import (
	"context"
	"encoding/json"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.uber.org/zap"
)

// checkpoint is what the storage extension keeps per slice, under the key
// slice_<id>_of_<slices>. The cursor is the sort values of the last hit of
// the last page the pipeline accepted: a restart re-emits at most the page
// that was being delivered.
type checkpoint struct {
	Version     int               `json:"v"`
	Fingerprint string            `json:"fp"`
	Cursor      []json.RawMessage `json:"cursor,omitempty"`
	Done        bool              `json:"done,omitempty"`
}

const checkpointVersion = 1

// loadCheckpoint restores a slice's cursor. A checkpoint of another read
// (indices, query, sort, slices or signal changed) is ignored with a
// warning: the read starts over.
func (r *backfillReceiver) loadCheckpoint(ctx context.Context, s *slice) error {
	if r.store == nil {
		return nil
	}
	b, err := r.store.Get(ctx, s.key)
	if err != nil {
		return fmt.Errorf("opensearchbackfill: storage: reading checkpoint %s: %w", s.key, err)
	}
	if b == nil {
		return nil
	}
	var cp checkpoint
	if err := json.Unmarshal(b, &cp); err != nil || cp.Version != checkpointVersion {
		r.log.Warn("Ignoring an unreadable checkpoint; the slice starts over", zap.String("key", s.key))
		return nil
	}
	if cp.Fingerprint != r.cfg.fingerprint() {
		r.log.Warn("Ignoring a checkpoint taken for another read (indices, query, sort, slices or signal changed); the slice starts over",
			zap.String("key", s.key))
		return nil
	}
	s.cursor, s.done = cp.Cursor, cp.Done
	r.log.Info("Resuming a slice from its checkpoint", zap.String("key", s.key), zap.Bool("done", cp.Done))
	return nil
}

// saveCheckpoint writes a slice's cursor. A failure is counted and logged:
// the read goes on, and a restart would re-emit from the previous one.
func (r *backfillReceiver) saveCheckpoint(ctx context.Context, s *slice) {
	if r.store == nil {
		return
	}
	b, _ := json.Marshal(checkpoint{Version: checkpointVersion, Fingerprint: r.cfg.fingerprint(), Cursor: s.cursor, Done: s.done})
	outcome := "ok"
	if err := r.store.Set(ctx, s.key, b); err != nil {
		outcome = "error"
		if ctx.Err() == nil {
			r.log.Warn("Writing a checkpoint failed; a restart would re-read from the previous one", zap.String("key", s.key), zap.Error(err))
		}
	}
	r.tel.OtelcolOpensearchbackfillCheckpoints.Add(context.WithoutCancel(ctx), 1, r.attrs(attribute.String("outcome", outcome)))
}
