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
