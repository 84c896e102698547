package routing

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"

	"go.uber.org/zap"
)

// ResurrectTimeout is how long a dead node waits before its next health
// check (seed 001):
//
//	health = min(5s × 2^(failures-1), 30s) × live/total
//	rate   = min(live × clientsPerServer / serverMaxNewConnsPerSec, 30s)
//	         with clientsPerServer = cores, serverMaxNewConnsPerSec = 4 × cores
//	         (8 and 32 for the default 8 cores)
//	timeout = max(health, rate, 500ms) + jitter × 0.5 × that, jitter ∈ [0, 1)
//
// Aggressive when everything is down (500 ms), conservative when the
// cluster is nearly healthy.
func ResurrectTimeout(failures, live, total, cores int, jitter float64) time.Duration {
	if failures < 1 {
		failures = 1
	}
	if cores <= 0 {
		cores = defaultProcessors
	}
	base := resurrectMax
	if failures <= 5 {
		base = min(resurrectInitial<<(failures-1), resurrectMax)
	}
	var health time.Duration
	if total > 0 {
		health = time.Duration(float64(base) * float64(live) / float64(total))
	}
	clientsPerServer, maxNewConnsPerSec := cores, 4*cores
	rate := min(time.Duration(float64(live*clientsPerServer)/float64(maxNewConnsPerSec)*float64(time.Second)), resurrectMax)
	t := max(health, rate, resurrectFloor)
	return t + time.Duration(jitter*resurrectJitter*float64(t))
}

// MarkDead records a connection-level failure or timeout of a request to
// n: the node stops receiving traffic until a health check passes, and a
// topology refresh is triggered. Marking a dead node again does nothing.
func (r *Router) MarkDead(n *Node, cause error) {
	if n == nil || n.dead.Swap(true) {
		return
	}
	r.log.Warn("OpenSearch node marked dead", zap.String("node", n.Name()), zap.String("url", n.URL()), zap.Error(cause))
	r.notify(n)
	r.scheduleProbe(n)
	r.Trigger(TriggerNodeFailure)
}

// MarkAlive records that a request to n succeeded: a dead node is back,
// its window in slow start again (Window.Restart) and its write latency
// judged afresh.
func (r *Router) MarkAlive(n *Node) {
	if n == nil || !n.dead.Load() {
		return
	}
	n.mu.Lock()
	n.failures = 0
	if n.timer != nil && n.timer.Stop() {
		r.wg.Done()
	}
	n.timer = nil
	n.mu.Unlock()
	n.window.Restart()
	r.writes.revive(n)
	if n.dead.Swap(false) {
		r.log.Info("OpenSearch node is back", zap.String("node", n.Name()))
		r.notify(n)
	}
}

// SetDegraded marks n degraded (on) or not, logging and notifying a
// change; it reports whether the mark changed.
func (r *Router) SetDegraded(n *Node, on bool) bool {
	if n == nil || n.degraded.Swap(on) == on {
		return false
	}
	if on {
		r.log.Warn("OpenSearch node degraded: its bulk requests are slow", zap.String("node", n.Name()))
	} else {
		r.log.Info("OpenSearch node no longer degraded", zap.String("node", n.Name()))
	}
	r.notify(n)
	return true
}

func (r *Router) notify(n *Node) {
	if r.opts.OnNodeState != nil {
		r.opts.OnNodeState(n, n.State())
	}
}

// liveTotal counts the alive and all nodes requests can go to.
func (r *Router) liveTotal() (live, total int) {
	for _, n := range r.Nodes() {
		total++
		if n.Alive() {
			live++
		}
	}
	return live, total
}

// scheduleProbe arms n's resurrection timer.
func (r *Router) scheduleProbe(n *Node) {
	live, total := r.liveTotal()
	n.mu.Lock()
	defer n.mu.Unlock()
	// Close sets closed before stopping timers under n.mu, so a timer armed
	// here is either seen by Close or never armed.
	if n.timer != nil || n.retired || r.closed.Load() {
		return
	}
	n.failures++
	d := ResurrectTimeout(n.failures, live, total, n.Info().Processors, r.jitter())
	r.wg.Add(1)
	n.timerGen++
	gen := n.timerGen
	n.timer = r.afterDur(d, func() {
		defer r.wg.Done()
		n.mu.Lock()
		// MarkAlive and MarkDead may have run since this timer fired and
		// armed a newer one: that one is n.timer now (Close must find it)
		// and will probe.
		own := n.timerGen == gen
		if own {
			n.timer = nil
		}
		n.mu.Unlock()
		if own {
			r.probe(n)
		}
	})
}

// probe health-checks a dead node with GET / and, once it answers, the
// readiness check (ready); both passing bring it back.
func (r *Router) probe(n *Node) {
	if r.ctx.Err() != nil || !n.dead.Load() {
		return
	}
	if _, err := r.ping(r.ctx, n); err == nil {
		if err = r.ready(r.ctx, n); err == nil {
			r.MarkAlive(n)
			return
		}
		r.log.Debug("OpenSearch node answers but is not ready", zap.String("node", n.Name()), zap.Error(err))
	}
	r.scheduleProbe(n)
}

// ping sends GET / to n and returns the round-trip time.
func (r *Router) ping(ctx context.Context, n *Node) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, r.opts.RequestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.URL()+"/", nil)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	resp, err := r.opts.Client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	d := time.Since(start)
	if resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		// 401/403 still prove the node is up; 5xx does not.
		return d, &HTTPError{Call: "health", Status: resp.StatusCode}
	}
	n.observeRTT(d)
	return d, nil
}

func (r *Router) statsLoop() {
	defer r.wg.Done()
	tick := time.NewTicker(r.opts.StatsInterval)
	defer tick.Stop()
	for {
		select {
		case <-r.ctx.Done():
			return
		case <-tick.C:
		}
		r.PollStats(r.ctx)
		r.sampleRTT(r.ctx)
	}
}

// sampleRTT pings every alive node once, concurrently.
func (r *Router) sampleRTT(ctx context.Context) {
	var wg sync.WaitGroup
	for _, n := range r.Nodes() {
		if !n.Alive() {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = r.ping(ctx, n)
		}()
	}
	wg.Wait()
}

// PollStats reads node stats once: a write.rejected counter that grew since
// the previous poll shrinks that node's window (the first poll only sets
// the baseline); heap ≥ 85 % or any circuit breaker estimate ≥ 90 % of its
// limit marks the node overloaded, and clears it otherwise.
func (r *Router) PollStats(ctx context.Context) error {
	t := r.topo.Load()
	if t == nil {
		return nil
	}
	var st nodeStatsResponse
	if err := r.get(ctx, r.endpoints(), "node_stats", pathNodeStats, &st); err != nil {
		outcome := "error"
		if isForbidden(err) {
			r.forbidden("node_stats", err)
			outcome = "forbidden"
		}
		if r.opts.OnRefresh != nil {
			r.opts.OnRefresh(TriggerNodeStats, outcome)
		}
		return err
	}
	for _, n := range t.Nodes {
		s, ok := st.Nodes[n.ID()]
		if !ok {
			continue
		}
		over := s.JVM.Mem.HeapUsedPercent != nil && *s.JVM.Mem.HeapUsedPercent >= heapOverloadPercent
		for _, b := range s.Breakers {
			if b.Limit > 0 && float64(b.Estimated)/float64(b.Limit) >= breakerOverload {
				over = true
			}
		}
		if n.overloaded.Swap(over) != over {
			r.notify(n)
		}
		if rej := s.ThreadPool.Write.Rejected; rej != nil {
			n.mu.Lock()
			grew := n.haveBase && *rej > n.lastRejects
			n.lastRejects, n.haveBase = *rej, true
			n.mu.Unlock()
			if grew {
				n.window.Shrink()
			}
		}
	}
	return nil
}
