package routing

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestWindowSlowStartAndAvoidance(t *testing.T) {
	w := NewWindow(16)
	w.ssthresh = 8
	round := func() int {
		c, _, _, _ := w.State()
		tks := make([]Ticket, c)
		for i := range tks {
			tk, ok := w.TryAcquire()
			if !ok {
				t.Fatalf("slot %d of %d not available", i, c)
			}
			tks[i] = tk
		}
		if _, ok := w.TryAcquire(); ok {
			t.Fatalf("window %d admitted one more", c)
		}
		for _, tk := range tks {
			w.Release(tk, Success)
		}
		c, _, _, _ = w.State()
		return c
	}
	var got []int
	for i := 0; i < 7; i++ {
		got = append(got, round())
	}
	// 1 → 2 → 4 → 8 (ssthresh) → 9 → 10 → 11 → 12.
	want := []int{2, 4, 8, 9, 10, 11, 12}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("cwnd per round %v, want %v", got, want)
		}
	}
	for i := 0; i < 10; i++ {
		round()
	}
	if c, _, ceil, _ := w.State(); c != 16 || ceil != 16 {
		t.Fatalf("cwnd %d must stop at the ceiling 16", c)
	}
}

func TestWindowHalvesOncePerFlight(t *testing.T) {
	w := NewWindow(64)
	w.cwnd, w.ssthresh = 16, 64
	var tks []Ticket
	for i := 0; i < 16; i++ {
		tk, _ := w.TryAcquire()
		tks = append(tks, tk)
	}
	// The whole flight is rejected: one halving, not sixteen.
	for _, tk := range tks {
		w.Release(tk, Rejected)
	}
	c, ss, _, inflight := w.State()
	if c != 8 || ss != 8 || inflight != 0 {
		t.Fatalf("after a rejected flight: cwnd %d ssthresh %d inflight %d", c, ss, inflight)
	}
	// A request admitted after the decrease can halve again.
	tk, _ := w.TryAcquire()
	w.Release(tk, Timeout)
	if c, _, _, _ := w.State(); c != 4 {
		t.Fatalf("timeout after decrease: cwnd %d", c)
	}
	// Failure neither grows nor shrinks.
	tk, _ = w.TryAcquire()
	w.Release(tk, Failure)
	if c, _, _, _ := w.State(); c != 4 {
		t.Fatalf("failure changed cwnd to %d", c)
	}
	for i := 0; i < 5; i++ {
		w.Shrink()
	}
	if c, ss, _, _ := w.State(); c != 1 || ss != 1 {
		t.Fatalf("never below 1: %d %d", c, ss)
	}
}

// TestWindowIsARealBound: many goroutines, never more in flight than cwnd
// while it only grows, never more than the ceiling when it also shrinks (a
// decrease cannot recall requests already sent; it stops admissions until
// enough of them return).
func TestWindowIsARealBound(t *testing.T) {
	t.Run("growing", func(t *testing.T) { testWindowBound(t, false) })
	t.Run("with rejections", func(t *testing.T) { testWindowBound(t, true) })
}

func testWindowBound(t *testing.T, reject bool) {
	w := NewWindow(4)
	var inFlight, peak atomic.Int32
	var wg sync.WaitGroup
	for g := 0; g < 32; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				tk, err := w.Acquire(context.Background())
				if err != nil {
					t.Error(err)
					return
				}
				n := inFlight.Add(1)
				c, _, ceil, _ := w.State()
				if reject {
					c = ceil
				}
				if int(n) > c {
					t.Errorf("%d in flight with cwnd %d", n, c)
				}
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				time.Sleep(50 * time.Microsecond)
				inFlight.Add(-1)
				o := Success
				if reject && i%17 == 0 {
					o = Rejected
				}
				w.Release(tk, o)
			}
		}()
	}
	wg.Wait()
	if peak.Load() > 4 || peak.Load() < 2 {
		t.Fatalf("peak in flight %d (ceiling 4)", peak.Load())
	}
	if _, _, _, inflight := w.State(); inflight != 0 {
		t.Fatalf("leaked %d slots", inflight)
	}
}

func TestWindowAcquireBlocksAndCancels(t *testing.T) {
	w := NewWindow(1)
	tk, _ := w.Acquire(context.Background())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := w.Acquire(ctx); err != context.DeadlineExceeded {
		t.Fatalf("a full window must block until the context ends: %v", err)
	}
	got := make(chan struct{})
	go func() {
		tk2, err := w.Acquire(context.Background())
		if err == nil {
			w.Release(tk2, Success)
		}
		close(got)
	}()
	select {
	case <-got:
		t.Fatal("acquired while full")
	case <-time.After(20 * time.Millisecond):
	}
	w.Release(tk, Success)
	select {
	case <-got:
	case <-time.After(2 * time.Second):
		t.Fatal("release did not wake the waiter")
	}
	if _, _, _, inflight := w.State(); inflight != 0 {
		t.Fatalf("inflight %d", inflight)
	}
}

func TestWindowCeilingChange(t *testing.T) {
	w := NewWindow(8)
	w.cwnd = 8
	w.SetCeiling(3)
	if c, ss, ceil, _ := w.State(); c != 3 || ss != 3 || ceil != 3 {
		t.Fatalf("%d %d %d", c, ss, ceil)
	}
}

// TestWaiterTicketHasGrantEpoch: a blocked Acquire is granted a slot by a
// release; a rejection from the same flight then halves the window. The
// granted request was admitted before that decrease, so its own rejection
// must not halve the window again (once per round), however late its
// goroutine runs.
func TestWaiterTicketHasGrantEpoch(t *testing.T) {
	w := NewWindow(8)
	for i := 0; i < 3; i++ { // slow start: cwnd 4
		tk, _ := w.Acquire(context.Background())
		w.Release(tk, Success)
	}
	var held []Ticket
	for i := 0; i < 4; i++ {
		tk, _ := w.Acquire(context.Background())
		held = append(held, tk)
	}
	got := make(chan Ticket)
	go func() { tk, _ := w.Acquire(context.Background()); got <- tk }()
	for {
		w.mu.Lock()
		n := len(w.waiters)
		w.mu.Unlock()
		if n == 1 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	w.Release(held[0], Success)  // grants the waiter
	w.Release(held[1], Rejected) // the flight's first rejection: halves
	tk := <-got
	w.Release(tk, Rejected)
	if d := w.Decreases(); d != 1 {
		t.Fatalf("one flight halved the window %d times", d)
	}
}
