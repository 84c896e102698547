package opensearchrouted

import (
	"sync"
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
	w := newWorkers(4)
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
	w := newWorkers(2)
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
	w := newWorkers(1)
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
