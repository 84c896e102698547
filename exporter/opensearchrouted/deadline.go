package opensearchrouted

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/opensearchrouted/opensearchrouted/internal/bulk"
)

// defaultCallTimeout is bulk.call_timeout unless set: above the default
// request timeout (90s), so that one slow request is not cut, but far
// below the 4 attempts × 90s + backoff a call could otherwise hold one of
// the queue's consumers for.
const defaultCallTimeout = 2 * time.Minute

// errTypeCallDeadline is the error type of records still not stored when
// the call's deadline passed (in-flight requests are canceled, waiting
// sub-bulks are not sent): they go back to the collector as retryable.
const errTypeCallDeadline = "call_deadline_exceeded"

var errCallDeadline = errors.New("opensearchrouted: bulk.call_timeout passed")

// validateCallTimeout checks bulk.call_timeout against the request timeout.
func (c *Config) validateCallTimeout() error {
	switch {
	case c.Bulk.CallTimeout <= 0:
		return fmt.Errorf("bulk.call_timeout: must be positive (it bounds how long one export call holds a queue consumer), got %v", c.Bulk.CallTimeout)
	case c.Timeout > 0 && c.Bulk.CallTimeout < c.Timeout:
		return fmt.Errorf("bulk.call_timeout: %v is shorter than timeout (%v, one HTTP request): a call must be able to wait for at least one request", c.Bulk.CallTimeout, c.Timeout)
	}
	return nil
}

// callContext bounds one export call by bulk.call_timeout.
func (e *osExporter) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, e.cfg.Bulk.CallTimeout, errCallDeadline)
}

// markDeadline relabels, once the call's deadline has passed, the
// retryable items whose last answer is a cancellation (sent when the
// deadline canceled them, or never sent) as call_deadline_exceeded, so the
// error handed back with them says why. It returns how many.
func markDeadline(ctx context.Context, c *call) int {
	if !errors.Is(context.Cause(ctx), errCallDeadline) {
		return 0
	}
	n := 0
	for it, cls := range c.class {
		if cls == bulk.Retry && c.outcome(it).ErrorType == bulk.ErrCanceled {
			c.result[it] = bulk.Outcome{ErrorType: errTypeCallDeadline}
			n++
		}
	}
	return n
}
