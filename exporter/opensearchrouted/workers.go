package opensearchrouted

import (
	"sync"
	"sync/atomic"
)

// workers runs a round's sub-bulk jobs on goroutines that outlive the
// round. A fresh goroutine starts on a small stack and grows it, copying,
// on its way down the HTTP client's calls, every time; a parked worker has
// grown its stack already. Concurrency is not bounded: a job that finds no
// parked worker gets a new goroutine, which parks after its job unless
// maxIdle workers are parked already.
type workers struct {
	handoff chan func() // to a parked worker
	stop    chan struct{}
	idle    atomic.Int32
	maxIdle int32
	wg      sync.WaitGroup

	mu      sync.Mutex
	stopped bool
}

func newWorkers(maxIdle int) *workers {
	return &workers{handoff: make(chan func()), stop: make(chan struct{}), maxIdle: int32(maxIdle)}
}

// run runs f on a parked worker or, when none is parked, on a new
// goroutine. A nil *workers runs f on a new goroutine.
func (w *workers) run(f func()) {
	if w == nil {
		go f()
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
	go w.loop(f)
}

func (w *workers) loop(f func()) {
	defer w.wg.Done()
	for {
		f()
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
