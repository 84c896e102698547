package opensearchrouted

import (
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/opensearchrouted/opensearchrouted/internal/bulk"
)

// authLogEvery bounds how often a refusal of the exporter's credentials
// (HTTP 401 or 403 on _bulk) is logged: every call that meets one returns
// an error, but the log says it at most once per this interval.
const authLogEvery = 30 * time.Second

// refusedCredentials reports whether an item's outcome is a refusal of the
// exporter's credentials: 401 (authentication failed: wrong, rotated or
// missing password or token) or 403 (the user may not write there). Such
// items are kept for retry rather than dropped: the refusal ends when the
// credentials or the roles are fixed, and the collector's retry_on_failure
// bounds how long they wait.
func refusedCredentials(o bulk.Outcome) bool {
	return o.Status == 401 || o.Status == 403
}

// rateLimited lets one event through per interval.
type rateLimited struct {
	mu   sync.Mutex
	last time.Time
}

func (r *rateLimited) allow(now time.Time, every time.Duration) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.last.IsZero() && now.Sub(r.last) < every {
		return false
	}
	r.last = now
	return true
}

// logRefusedCredentials logs, rate-limited, that OpenSearch refused the
// exporter's credentials and that n records wait for retry.
func (e *osExporter) logRefusedCredentials(err error, n int) {
	if !e.authLog.allow(time.Now(), authLogEvery) {
		return
	}
	e.log.Error("OpenSearch refused the exporter's credentials; the records are kept and retried (retry_on_failure) until the credentials or roles are fixed",
		zap.Int("records", n), zap.Error(err))
}
