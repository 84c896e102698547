package opensearchrouted

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// waitIdle waits until w has n parked workers.
func waitIdle(t *testing.T, w *workers, n int32) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for w.idle.Load() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d workers parked, want %d", w.idle.Load(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestWorkersReuseParked(t *testing.T) {
	w := newWorkers(4, 0)
	defer w.close()
	var wg sync.WaitGroup
	wg.Add(1)
	w.run(wg.Done)
	wg.Wait()
	waitIdle(t, w, 1)
	// The parked worker takes the next job: no new goroutine is counted.
	wg.Add(1)
	w.run(wg.Done)
	wg.Wait()
	waitIdle(t, w, 1)
}

func TestWorkersConcurrentAndCapped(t *testing.T) {
	w := newWorkers(2, 0)
	release := make(chan struct{})
	var started, done sync.WaitGroup
	const n = 6
	started.Add(n)
	done.Add(n)
	for i := 0; i < n; i++ {
		w.run(func() {
			started.Done()
			<-release
			done.Done()
		})
	}
	// Every job runs at once: none waits for another to finish.
	started.Wait()
	close(release)
	done.Wait()
	// Only maxIdle of the six park; the others end.
	waitIdle(t, w, 2)
	w.close()
	if got := w.idle.Load(); got != 0 {
		t.Fatalf("%d workers parked after close", got)
	}
}

func TestWorkersRunAfterClose(t *testing.T) {
	w := newWorkers(1, 0)
	w.close()
	ran := make(chan struct{})
	w.run(func() { close(ran) })
	select {
	case <-ran:
	case <-time.After(5 * time.Second):
		t.Fatal("a job given after close did not run")
	}
	var nilW *workers
	ran2 := make(chan struct{})
	nilW.run(func() { close(ran2) })
	<-ran2
	nilW.close()
}

// TestWorkersSpinTakesNextJob: a worker that has just finished a job
// takes the next one while it spins, without a new goroutine and without
// parking; with more than one call in progress it parks at once instead.
func TestWorkersSpinTakesNextJob(t *testing.T) {
	w := newWorkers(4, 300*time.Millisecond)
	var wg sync.WaitGroup
	wg.Add(1)
	w.run(wg.Done)
	wg.Wait()
	wg.Add(1)
	w.run(wg.Done)
	wg.Wait()
	if got := w.started.Load(); got != 1 {
		t.Fatalf("%d worker goroutines started, want 1 (the spinning one takes the second job)", got)
	}
	if got := w.idle.Load(); got != 0 {
		t.Fatalf("%d workers parked while one should be spinning", got)
	}
	start := time.Now()
	w.close()
	if d := time.Since(start); d > 2*time.Second {
		t.Fatalf("close took %v", d)
	}

	busy := newWorkers(4, time.Hour)
	defer busy.close()
	busy.enter()
	busy.enter()
	wg.Add(1)
	busy.run(wg.Done)
	wg.Wait()
	waitIdle(t, busy, 1) // parked, not spinning for an hour
	busy.leave()
	busy.leave()
}

// TestWorkersSpinNeverLosesAJob gives jobs at every moment of short spins,
// from several goroutines: every job runs exactly once.
func TestWorkersSpinNeverLosesAJob(t *testing.T) {
	w := newWorkers(2, 20*time.Microsecond)
	defer w.close()
	var ran atomic.Int64
	var wg sync.WaitGroup
	const givers, jobs = 4, 2000
	for g := 0; g < givers; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var done sync.WaitGroup
			for i := 0; i < jobs; i++ {
				done.Add(1)
				w.run(func() {
					ran.Add(1)
					done.Done()
				})
				if i%3 == 0 {
					done.Wait() // let the worker finish and spin
				}
				if i%7 == 0 {
					time.Sleep(time.Duration(i%40) * time.Microsecond)
				}
			}
			done.Wait()
		}()
	}
	finished := make(chan struct{})
	go func() {
		wg.Wait()
		close(finished)
	}()
	select {
	case <-finished:
	case <-time.After(30 * time.Second):
		t.Fatalf("jobs lost: %d of %d ran", ran.Load(), givers*jobs)
	}
	if got := ran.Load(); got != givers*jobs {
		t.Fatalf("%d jobs ran, want %d", got, givers*jobs)
	}
	w.close()
	w.spinMu.Lock()
	defer w.spinMu.Unlock()
	if len(w.ready) != 0 || w.spinning != 0 {
		t.Fatalf("after close: %d jobs waiting for a spinning worker, %d spinning", len(w.ready), w.spinning)
	}
}

// fakeClock is a workers clock the test moves by hand.
type fakeClock struct{ now atomic.Int64 }

func (c *fakeClock) read() time.Duration { return time.Duration(c.now.Load()) }
func (c *fakeClock) set(d time.Duration) { c.now.Store(int64(d)) }
func withClock(w *workers) *fakeClock    { c := &fakeClock{}; w.clock = c.read; return c }

// waitSpinning waits until n workers spin: each has recorded the end of
// its job (active) before it started to.
func waitSpinning(t *testing.T, w *workers, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		w.spinMu.Lock()
		got := w.spinning - len(w.ready)
		w.spinMu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d workers spinning, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// stillSpinning checks that w has n parked workers for a while: a worker
// whose spin is over parks within microseconds.
func stillSpinning(t *testing.T, w *workers, n int32, why string) {
	t.Helper()
	for end := time.Now().Add(50 * time.Millisecond); time.Now().Before(end); time.Sleep(time.Millisecond) {
		if got := w.idle.Load(); got != n {
			t.Fatalf("%d workers parked, want %d: %s", got, n, why)
		}
	}
}

// TestWorkersSpinRunsFromLastActivity: a spinning worker spins on until
// spin has passed since the last job ended, not since its own: the first of
// two workers to finish still takes a job given after its own spin would
// have run out, because the second finished later; once nothing has ended
// for spin, it parks.
func TestWorkersSpinRunsFromLastActivity(t *testing.T) {
	w := newWorkers(4, 100*time.Second)
	clock := withClock(w)
	defer w.close()
	first, second := make(chan struct{}), make(chan struct{})
	var done sync.WaitGroup
	done.Add(2)
	w.run(func() { <-first; done.Done() })
	w.run(func() { <-second; done.Done() })
	close(first) // ends at 0: this worker spins
	waitSpinning(t, w, 1)
	clock.set(60 * time.Second)
	close(second) // ends at 60 s: this one parks (one spinner at a time)
	done.Wait()
	waitIdle(t, w, 1)
	clock.set(120 * time.Second) // past 0 + spin, before 60 s + spin
	stillSpinning(t, w, 1, "the spinner stopped although a job ended less than spin ago")
	ran := make(chan struct{})
	w.run(func() { close(ran) })
	<-ran
	if got := w.started.Load(); got != 2 {
		t.Fatalf("%d worker goroutines started, want 2", got)
	}
	waitSpinning(t, w, 1) // the job ended at 120 s: it spins again
	stillSpinning(t, w, 1, "the spinner stopped although its job ended less than spin ago")
	clock.set(400 * time.Second)
	waitIdle(t, w, 2) // nothing ended for spin: the spinner parks too
}

// TestWorkersLeaveExtendsSpin: the end of a call counts as activity too.
func TestWorkersLeaveExtendsSpin(t *testing.T) {
	w := newWorkers(4, 100*time.Second)
	clock := withClock(w)
	defer w.close()
	w.enter()
	var done sync.WaitGroup
	done.Add(1)
	w.run(done.Done) // ends at 0
	done.Wait()
	waitSpinning(t, w, 1)
	clock.set(60 * time.Second)
	w.leave()
	clock.set(120 * time.Second)
	stillSpinning(t, w, 0, "the worker parked although a call ended less than spin ago")
	clock.set(161 * time.Second)
	waitIdle(t, w, 1)
}

func TestYieldFor(t *testing.T) {
	var n atomic.Int32
	go func() {
		time.Sleep(time.Millisecond)
		n.Store(1)
	}()
	if !yieldFor(10*time.Second, func() bool { return n.Load() == 1 }) {
		t.Fatal("yieldFor gave up although done became true")
	}
	start := time.Now()
	if yieldFor(20*time.Millisecond, func() bool { return false }) {
		t.Fatal("yieldFor reported done for a condition that never held")
	}
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Fatalf("yieldFor gave up after %v, before its 20ms", d)
	}
}
