package pit

import (
	"maps"
	"sync"
	"sync/atomic"
)

// Counters count what Paginators did. Safe for concurrent use; one value
// may be shared by several Paginators (the slices of one read).
type Counters struct {
	PITsOpened     atomic.Int64 // PITs created (first and recreated)
	PITsClosed     atomic.Int64 // PITs deleted, or found already gone, by us
	PITCloseErrors atomic.Int64 // PIT deletions that failed (the PIT expires with its keep-alive)
	// PITDeletesUnconfirmed counts deletions answered successful:false
	// (counted as closed too): some contexts were already lost with their
	// node, or unreachable and left to expire with the keep-alive.
	PITDeletesUnconfirmed atomic.Int64
	PITsRecreated         atomic.Int64 // successful recreations after context loss
	RecreateFails         atomic.Int64 // recreate attempts that failed to open a PIT
	HitsEmitted           atomic.Int64
	PagesEmitted          atomic.Int64
	HitsDeduped           atomic.Int64 // hits skipped as already emitted
	HitsOutOfOrder        atomic.Int64 // hits emitted again with a different version
	Retries               atomic.Int64 // requests retried after transport errors, 429 or 5xx
	Probes                atomic.Int64 // size:0 probes sent to learn if a PIT survived
	ContextLosses         atomic.Int64 // responses classified as context loss
	// DedupOverflows counts entries a dedup window evicted while still
	// needed (its limit was reached): if read again, emitted again.
	DedupOverflows atomic.Int64

	mu            sync.Mutex
	shardFailures map[string]int64 // by reason.type; guarded by mu
}

// Stats is a snapshot of Counters.
type Stats struct {
	PITsOpened, PITsClosed, PITCloseErrors int64
	PITDeletesUnconfirmed                  int64
	PITsRecreated, RecreateFails           int64
	HitsEmitted, PagesEmitted              int64
	HitsDeduped, HitsOutOfOrder            int64
	Retries, Probes, ContextLosses         int64
	DedupOverflows                         int64
	// ShardFailures counts failed shards by reason.type, context loss
	// included (search_context_missing_exception).
	ShardFailures map[string]int64
}

// OpenPITs is PITsOpened - PITsClosed - PITCloseErrors: the PITs still
// holding server resources as far as we know.
func (s Stats) OpenPITs() int64 { return s.PITsOpened - s.PITsClosed - s.PITCloseErrors }

func (c *Counters) addShardFailure(reason string) {
	if reason == "" {
		reason = "unknown"
	}
	c.mu.Lock()
	if c.shardFailures == nil {
		c.shardFailures = make(map[string]int64)
	}
	c.shardFailures[reason]++
	c.mu.Unlock()
}

// Snapshot returns the current values.
func (c *Counters) Snapshot() Stats {
	c.mu.Lock()
	sf := maps.Clone(c.shardFailures)
	c.mu.Unlock()
	if sf == nil {
		sf = map[string]int64{}
	}
	return Stats{
		PITsOpened:            c.PITsOpened.Load(),
		PITsClosed:            c.PITsClosed.Load(),
		PITCloseErrors:        c.PITCloseErrors.Load(),
		PITDeletesUnconfirmed: c.PITDeletesUnconfirmed.Load(),
		PITsRecreated:         c.PITsRecreated.Load(),
		RecreateFails:         c.RecreateFails.Load(),
		HitsEmitted:           c.HitsEmitted.Load(),
		PagesEmitted:          c.PagesEmitted.Load(),
		HitsDeduped:           c.HitsDeduped.Load(),
		HitsOutOfOrder:        c.HitsOutOfOrder.Load(),
		Retries:               c.Retries.Load(),
		Probes:                c.Probes.Load(),
		ContextLosses:         c.ContextLosses.Load(),
		DedupOverflows:        c.DedupOverflows.Load(),
		ShardFailures:         sf,
	}
}
