package routing

import (
	"context"
	"sync"
)

// Outcome is what became of a request sent under a congestion window.
type Outcome uint8

const (
	// Success: the node accepted the request (item-level failures that are
	// not rejections, such as mapping errors, are still a success for the
	// window).
	Success Outcome = iota
	// Rejected: HTTP 429 or rejected_execution_exception at request or
	// item level. The window halves.
	Rejected
	// Timeout: the request timed out. The window halves.
	Timeout
	// Failure: any other failure (connection refused, 5xx). The window
	// neither grows nor shrinks; node health deals with it.
	Failure
)

// Window is an AIMD congestion window that bounds the number of requests in
// flight to one node's write thread pool. It is a real bound: Acquire blocks
// while inFlight ≥ cwnd.
//
// Growth: slow start from 1, +1 per success (doubling per round of cwnd
// requests) up to ssthresh; then +1 per round of cwnd successes. Never above
// the ceiling. Decrease: on Rejected or Timeout, ssthresh = max(cwnd/2, 1)
// and cwnd = ssthresh, at most once per round: a request acquired before the
// last decrease cannot cause another one (a burst of rejections from one
// flight halves once).
type Window struct {
	mu       sync.Mutex // guards every field below
	cwnd     int
	ssthresh int
	ceiling  int
	inFlight int
	acked    int    // successes counted towards the next +1 in congestion avoidance
	epoch    uint64 // bumped at every decrease
	waiters  []*waiter
}

// Ticket records the window epoch a request was admitted in.
type Ticket struct{ epoch uint64 }

// waiter is an Acquire blocked on a full window. The releaser that grants
// it a slot records the epoch of the grant, then closes ready.
type waiter struct {
	ready chan struct{}
	epoch uint64
}

// NewWindow returns a window in slow start with the given ceiling (≥ 1).
func NewWindow(ceiling int) *Window {
	if ceiling < 1 {
		ceiling = 1
	}
	return &Window{cwnd: 1, ssthresh: ceiling, ceiling: ceiling}
}

// Acquire waits until a request may be sent: inFlight < cwnd. It returns
// ctx.Err() if ctx ends first; then nothing is held.
func (w *Window) Acquire(ctx context.Context) (Ticket, error) {
	w.mu.Lock()
	if w.inFlight < w.cwnd && len(w.waiters) == 0 {
		w.inFlight++
		t := Ticket{w.epoch}
		w.mu.Unlock()
		return t, nil
	}
	wt := &waiter{ready: make(chan struct{})}
	w.waiters = append(w.waiters, wt)
	w.mu.Unlock()

	select {
	case <-wt.ready:
		// Granted: the releaser counted us in inFlight, in the epoch of the
		// grant (a decrease after it must not make this request's
		// rejection count as a new round's).
		return Ticket{wt.epoch}, nil
	case <-ctx.Done():
		w.mu.Lock()
		for i, c := range w.waiters {
			if c == wt {
				w.waiters = append(w.waiters[:i], w.waiters[i+1:]...)
				w.mu.Unlock()
				return Ticket{}, ctx.Err()
			}
		}
		// Granted concurrently with the cancellation: give the slot back.
		w.inFlight--
		w.wakeLocked()
		w.mu.Unlock()
		return Ticket{}, ctx.Err()
	}
}

// TryAcquire takes a slot if one is free now.
func (w *Window) TryAcquire() (Ticket, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.inFlight < w.cwnd && len(w.waiters) == 0 {
		w.inFlight++
		return Ticket{w.epoch}, true
	}
	return Ticket{}, false
}

// Release returns the slot taken by Acquire and adapts the window.
func (w *Window) Release(t Ticket, o Outcome) {
	w.mu.Lock()
	w.inFlight--
	switch o {
	case Success:
		w.growLocked()
	case Rejected, Timeout:
		if t.epoch == w.epoch {
			w.decreaseLocked()
		}
	}
	w.wakeLocked()
	w.mu.Unlock()
}

// Shrink halves the window now (a signal from outside a request, such as a
// growing write.rejected counter in node stats).
func (w *Window) Shrink() {
	w.mu.Lock()
	w.decreaseLocked()
	w.mu.Unlock()
}

// SetCeiling changes the ceiling (≥ 1), clamping cwnd and ssthresh.
func (w *Window) SetCeiling(c int) {
	if c < 1 {
		c = 1
	}
	w.mu.Lock()
	w.ceiling = c
	if w.cwnd > c {
		w.cwnd = c
	}
	if w.ssthresh > c {
		w.ssthresh = c
	}
	w.wakeLocked()
	w.mu.Unlock()
}

// State returns cwnd, ssthresh, ceiling and the requests in flight.
func (w *Window) State() (cwnd, ssthresh, ceiling, inFlight int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.cwnd, w.ssthresh, w.ceiling, w.inFlight
}

// Decreases counts the multiplicative decreases so far.
func (w *Window) Decreases() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.epoch
}

// Load returns (inFlight+1)/cwnd, the utilisation term of the node score.
func (w *Window) Load() float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return float64(w.inFlight+1+len(w.waiters)) / float64(w.cwnd)
}

// must hold mu
func (w *Window) growLocked() {
	if w.cwnd >= w.ceiling {
		return
	}
	if w.cwnd < w.ssthresh {
		w.cwnd++
		return
	}
	w.acked++
	if w.acked >= w.cwnd {
		w.acked = 0
		w.cwnd++
	}
}

// must hold mu
func (w *Window) decreaseLocked() {
	w.ssthresh = w.cwnd / 2
	if w.ssthresh < 1 {
		w.ssthresh = 1
	}
	w.cwnd = w.ssthresh
	w.acked = 0
	w.epoch++
}

// must hold mu; grants slots to waiters in arrival order.
func (w *Window) wakeLocked() {
	for len(w.waiters) > 0 && w.inFlight < w.cwnd {
		wt := w.waiters[0]
		w.waiters[0] = nil
		w.waiters = w.waiters[1:]
		w.inFlight++
		wt.epoch = w.epoch
		close(wt.ready)
	}
}
