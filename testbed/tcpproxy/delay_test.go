package tcpproxy

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

// roundTrip sends one request of size bytes through the proxy on client's
// (kept-alive) connection and returns how long the answer took.
func roundTrip(t *testing.T, client *http.Client, url string, size int) time.Duration {
	t.Helper()
	start := time.Now()
	resp, err := client.Post(url, "application/octet-stream", bytes.NewReader(make([]byte, size)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != strconv.Itoa(size) {
		t.Fatalf("backend read %q bytes, sent %d", b, size)
	}
	return time.Since(start)
}

func TestSetDelayDelaysEachDirection(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		io.WriteString(w, strconv.FormatInt(n, 10))
	}))
	t.Cleanup(s.Close)
	p, err := New(strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	client := &http.Client{Timeout: 10 * time.Second}

	base := roundTrip(t, client, p.URL(), 10) // opens the connection, undelayed
	const mean, jitter = 40 * time.Millisecond, 10 * time.Millisecond
	if err := p.SetDelay(mean, jitter); err != nil {
		t.Fatal(err)
	}
	// Set at run time: the already open connection is delayed too. A small
	// request is one chunk each way: 2 × (30…50ms).
	var worst time.Duration
	for i := 0; i < 5; i++ {
		d := roundTrip(t, client, p.URL(), 10)
		if d < 2*(mean-jitter) {
			t.Errorf("round trip %d took %v, want ≥ %v (delayed both ways)", i, d, 2*(mean-jitter))
		}
		worst = max(worst, d)
	}
	if limit := 2*(mean+jitter) + 250*time.Millisecond; worst > limit {
		t.Errorf("slowest delayed round trip %v, want ≤ %v", worst, limit)
	}
	// A delay line, not a rate limit: 4 MiB is over a hundred chunks, all
	// in flight at once, so it takes about one delay each way, not one per chunk.
	chunksBefore := p.Delayed.Load()
	if d := roundTrip(t, client, p.URL(), 4<<20); d > 2*(mean+jitter)+500*time.Millisecond {
		t.Errorf("4 MiB round trip took %v: chunks delayed one after another", d)
	}
	if n := p.Delayed.Load() - chunksBefore; n < 4<<20/chunkSize {
		t.Errorf("%d chunks delayed for 4 MiB, want ≥ %d", n, 4<<20/chunkSize)
	}
	if m, j := p.Delay(); m != mean || j != jitter {
		t.Errorf("Delay() = %v, %v", m, j)
	}

	if err := p.SetDelay(0, 0); err != nil {
		t.Fatal(err)
	}
	before := p.Delayed.Load()
	roundTrip(t, client, p.URL(), 10)
	if p.Delayed.Load() != before {
		t.Error("chunks delayed after SetDelay(0, 0)")
	}
	t.Logf("undelayed round trip %v, delayed ≤ %v", base, worst)

	for _, bad := range [][2]time.Duration{{-time.Millisecond, 0}, {time.Millisecond, 2 * time.Millisecond}, {time.Millisecond, -1}} {
		if err := p.SetDelay(bad[0], bad[1]); err == nil {
			t.Errorf("SetDelay(%v, %v) accepted", bad[0], bad[1])
		}
	}
}
