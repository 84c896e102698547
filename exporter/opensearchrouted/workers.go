package opensearchrouted

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// workers runs a call's concurrent work (encoding shares, a round's
// sub-bulks) on goroutines that outlive it. A fresh goroutine starts on a
// small stack and grows it, copying, on its way down the HTTP client's
// calls, every time; a parked worker has grown its stack already.
// Concurrency is not bounded: a job that finds no free worker gets a new
// goroutine, which parks after its job unless maxIdle workers are parked
// already.
//
// A worker that finishes a job may first yield for up to spin, taking any
// job given meanwhile, and park only then: one worker at a time, and only
// while at most one call is in progress (enter, leave). A call hands out
// work in bursts (its encoding shares, then its sub-bulks, then the next
// call's shares), and a parked goroutine's core may go idle: waking an idle
// virtual CPU takes around 100 µs, longer than the gaps between the bursts.
// With more calls in progress their own work keeps the cores busy.
type workers struct {
	handoff chan func() // to a parked worker
	stop    chan struct{}
	idle    atomic.Int32 // parked workers
	maxIdle int32
	spin    time.Duration
	wg      sync.WaitGroup

	spinMu   sync.Mutex
	spinning int          // spinning workers not yet given a job
	ready    []func()     // jobs given to spinning workers, not taken yet
	readyN   atomic.Int32 // len(ready), for the spinning workers to poll

	calls atomic.Int32 // export calls in progress (enter, leave)

	mu      sync.Mutex
	stopped bool
	started atomic.Int32 // worker goroutines started (tests)
}

// enter and leave bracket an export call: workers spin only while at most
// one call is in progress; with more, the calls' own work keeps the cores
// busy, and a spinning worker would only take turns from it.
func (w *workers) enter() {
	if w != nil {
		w.calls.Add(1)
	}
}

func (w *workers) leave() {
	if w != nil {
		w.calls.Add(-1)
	}
}

// newWorkers keeps up to maxIdle workers parked; a worker spins for up to
// spin (0: never) before it parks.
func newWorkers(maxIdle int, spin time.Duration) *workers {
	return &workers{handoff: make(chan func()), stop: make(chan struct{}), maxIdle: int32(maxIdle), spin: spin}
}

// run runs f on a spinning or parked worker or, when none is free, on a
// new goroutine. A nil *workers runs f on a new goroutine.
func (w *workers) run(f func()) {
	if w == nil {
		go f()
		return
	}
	if w.give(f) {
		return
	}
	select {
	case w.handoff <- f:
		return
	default:
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped {
		// After close (no call should be running then): still run f, on a
		// goroutine of its own that does not park.
		go f()
		return
	}
	w.wg.Add(1)
	w.started.Add(1)
	go w.loop(f)
}

// give queues f for a spinning worker that has no job yet, if there is one.
func (w *workers) give(f func()) bool {
	w.spinMu.Lock()
	defer w.spinMu.Unlock()
	if w.spinning <= len(w.ready) {
		return false
	}
	w.ready = append(w.ready, f)
	w.readyN.Store(int32(len(w.ready)))
	return true
}

// take ends a worker's spin with a ready job, if there is one; last: the
// spin is over, so the worker stops counting as spinning either way.
func (w *workers) take(last bool) func() {
	w.spinMu.Lock()
	defer w.spinMu.Unlock()
	if n := len(w.ready); n > 0 {
		f := w.ready[n-1]
		w.ready[n-1] = nil
		w.ready = w.ready[:n-1]
		w.readyN.Store(int32(n - 1))
		w.spinning--
		return f
	}
	if last {
		w.spinning--
	}
	return nil
}

// spinFor yields for up to w.spin and returns a job given meanwhile, or
// nil.
func (w *workers) spinFor() func() {
	if w.spin <= 0 {
		return nil
	}
	if w.calls.Load() > 1 {
		return nil // other calls keep the cores busy
	}
	w.spinMu.Lock()
	if w.spinning > 0 {
		w.spinMu.Unlock()
		return nil // one spinning worker keeps a core awake
	}
	w.spinning++
	w.spinMu.Unlock()
	for start := time.Now(); time.Since(start) < w.spin; runtime.Gosched() {
		if w.readyN.Load() > 0 {
			if f := w.take(false); f != nil {
				return f
			}
		}
	}
	return w.take(true)
}

func (w *workers) loop(f func()) {
	defer w.wg.Done()
	for {
		f()
		if g := w.spinFor(); g != nil {
			f = g
			continue
		}
		if w.idle.Add(1) > w.maxIdle {
			w.idle.Add(-1)
			return
		}
		select {
		case f = <-w.handoff:
			w.idle.Add(-1)
		case <-w.stop:
			w.idle.Add(-1)
			return
		}
	}
}

// close ends the parked workers and waits for every worker to end.
func (w *workers) close() {
	if w == nil {
		return
	}
	w.mu.Lock()
	if !w.stopped {
		w.stopped = true
		close(w.stop)
	}
	w.mu.Unlock()
	w.wg.Wait()
}
