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
// A worker that finishes a job may first yield, taking any job given
// meanwhile, and park only once spin has passed since the last job or call
// ended (a later one extends the spin): one worker at a time, and only
// while at most one call is in progress (enter, leave). A call hands out
// work in bursts (its encoding shares, then its sub-bulks, then the next
// call's shares), and a parked goroutine's core may go idle: waking an idle
// virtual CPU takes around 100 µs, longer than the gaps between the bursts.
// The spin runs from the last activity, not from its own start: the first
// worker to finish a call's sub-bulks would otherwise stop spinning before
// the call's slowest sub-bulk returns, and the next call's encoding share
// would wait for a parked worker's core to wake. With more calls in
// progress their own work keeps the cores busy.
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

	clock    func() time.Duration // monotonic; tests replace it
	lastDone atomic.Int64         // clock() when a job or a call last ended

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
		w.active()
		w.calls.Add(-1)
	}
}

// alone reports whether at most one export call is in progress: only then
// do its goroutines yield instead of blocking (spinFor, and the caller's
// waits). With more, the calls' own work keeps the cores busy and a
// yielding goroutine would only take turns from it.
func (w *workers) alone() bool { return w != nil && w.calls.Load() <= 1 }

// busy reports whether more than one export call is in progress.
func (w *workers) busy() bool { return w != nil && w.calls.Load() > 1 }

// active records that a job or a call has just ended: a spinning worker
// spins on for spin from now.
func (w *workers) active() { w.lastDone.Store(int64(w.clock())) }

// newWorkers keeps up to maxIdle workers parked; a worker spins until spin
// has passed since the last job or call ended (0: never) before it parks.
func newWorkers(maxIdle int, spin time.Duration) *workers {
	epoch := time.Now()
	return &workers{handoff: make(chan func()), stop: make(chan struct{}), maxIdle: int32(maxIdle), spin: spin,
		clock: func() time.Duration { return time.Since(epoch) }}
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

// spinFor yields until w.spin has passed since the last activity (see
// active) and returns a job given meanwhile, or nil.
func (w *workers) spinFor() func() {
	if w.spin <= 0 {
		return nil
	}
	if !w.alone() {
		return nil // other calls keep the cores busy
	}
	w.spinMu.Lock()
	if w.spinning > 0 {
		w.spinMu.Unlock()
		return nil // one spinning worker keeps a core awake
	}
	w.spinning++
	w.spinMu.Unlock()
	for int64(w.clock())-w.lastDone.Load() < int64(w.spin) {
		if w.readyN.Load() > 0 {
			if f := w.take(false); f != nil {
				return f
			}
		}
		runtime.Gosched()
	}
	return w.take(true)
}

func (w *workers) loop(f func()) {
	defer w.wg.Done()
	for {
		f()
		w.active()
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

// yieldFor yields the processor until done reports true or d has passed,
// and says whether done did.
func yieldFor(d time.Duration, done func() bool) bool {
	for start := time.Now(); !done(); runtime.Gosched() {
		if time.Since(start) >= d {
			return false
		}
	}
	return true
}
