// Package tcpproxy is a tiny loopback TCP proxy for tests: one listening
// address in front of several backends (a load balancer, a Kubernetes
// Service, a NAT'ed cluster), and a trap, an address that accepts
// connections, counts them and closes them at once (a publish address that
// leads nowhere). SetDelay adds latency (mean ± jitter) to every chunk it
// forwards, in each direction, at run time: proxies in front of a real
// node's HTTP and transport ports make it a slow node (TestDelayedRealNode:
// bind the node on ports chosen first, cluster.NodeOptions HTTPPort and
// TransportPort, and publish the proxies', HTTPPublishPort and
// TransportPublishPort).
//
// Both listen on 127.0.0.1 only and refuse backends outside 127.0.0.0/8.
package tcpproxy

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// MaxConns bounds the connections a Proxy relays at once; more wait in the
// listen backlog.
const MaxConns = 512

// Proxy relays each accepted connection to the next backend, round-robin.
// While Refuse is set it closes each accepted connection at once instead
// (counted in Refused), like an address that leads nowhere.
type Proxy struct {
	ln   net.Listener
	next atomic.Uint64
	sem  chan struct{}

	Refuse  atomic.Bool
	Refused atomic.Int64

	// delayMean/delayJitter (ns): SetDelay.
	delayMean, delayJitter atomic.Int64
	// Delayed counts the chunks forwarded with a non-zero delay.
	Delayed atomic.Int64

	// Conns counts the connections accepted; PerBackend the ones relayed
	// to each backend (same order as the backends).
	Conns      atomic.Int64
	PerBackend []atomic.Int64

	mu       sync.Mutex
	backends []string
	open     map[net.Conn]struct{}
	closed   bool
	wg       sync.WaitGroup
}

// checkLoopback fails for an address outside 127.0.0.0/8.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("tcpproxy: %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() || ip.To4() == nil {
		return fmt.Errorf("tcpproxy: %q is not a 127.0.0.0/8 address", addr)
	}
	return nil
}

// New listens on 127.0.0.1 (a free port) in front of backends (host:port,
// loopback IPv4 only).
func New(backends ...string) (*Proxy, error) {
	if len(backends) == 0 {
		return nil, errors.New("tcpproxy: no backend")
	}
	for _, b := range backends {
		if err := checkLoopback(b); err != nil {
			return nil, err
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, backends: backends, sem: make(chan struct{}, MaxConns),
		PerBackend: make([]atomic.Int64, len(backends)), open: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL is "http://" + Addr.
func (p *Proxy) URL() string { return "http://" + p.Addr() }

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.Conns.Add(1)
		if p.Refuse.Load() {
			p.Refused.Add(1)
			c.Close()
			continue
		}
		p.sem <- struct{}{}
		if !p.track(c) {
			<-p.sem
			return
		}
		p.wg.Add(1)
		go func() {
			defer func() { <-p.sem; p.wg.Done() }()
			p.relay(c)
		}()
	}
}

// track registers c so that Close can end it; false once closed.
func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		c.Close()
		return false
	}
	p.open[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.open, c)
	p.mu.Unlock()
	c.Close()
}

// SetBackends replaces the backends (same count: PerBackend keeps its
// meaning) for the connections accepted from now on.
func (p *Proxy) SetBackends(backends ...string) error {
	if len(backends) != len(p.PerBackend) {
		return fmt.Errorf("tcpproxy: %d backends, the proxy has %d", len(backends), len(p.PerBackend))
	}
	for _, b := range backends {
		if err := checkLoopback(b); err != nil {
			return err
		}
	}
	p.mu.Lock()
	p.backends = backends
	p.mu.Unlock()
	return nil
}

func (p *Proxy) relay(c net.Conn) {
	defer p.untrack(c)
	p.mu.Lock()
	i := int((p.next.Add(1) - 1) % uint64(len(p.backends)))
	addr := p.backends[i]
	p.mu.Unlock()
	b, err := net.Dial("tcp", addr)
	if err != nil {
		return
	}
	if !p.track(b) {
		return
	}
	defer p.untrack(b)
	p.PerBackend[i].Add(1)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		p.forward(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(b, c)
	go pipe(c, b)
	<-done
	<-done
}

// SetDelay makes the proxy hold every chunk it reads, in each direction,
// for mean ± jitter (uniform) before writing it on, from now on (open
// connections included); zero mean and jitter remove the delay. It is a
// delay line, not a rate limit: chunks in flight are delayed at the same
// time, each written when its own delay has passed, in the order read (a
// chunk never overtakes the one before it). A chunk is what one read
// returns, at most 32 KiB.
func (p *Proxy) SetDelay(mean, jitter time.Duration) error {
	if mean < 0 || jitter < 0 || jitter > mean {
		return fmt.Errorf("tcpproxy: SetDelay: need 0 ≤ jitter ≤ mean, got mean %v jitter %v", mean, jitter)
	}
	p.delayMean.Store(int64(mean))
	p.delayJitter.Store(int64(jitter))
	return nil
}

// Delay returns the delay SetDelay set.
func (p *Proxy) Delay() (mean, jitter time.Duration) {
	return time.Duration(p.delayMean.Load()), time.Duration(p.delayJitter.Load())
}

// delay draws one chunk's delay.
func (p *Proxy) delay() time.Duration {
	mean, jit := p.delayMean.Load(), p.delayJitter.Load()
	if jit > 0 {
		mean += rand.Int64N(2*jit+1) - jit
	}
	return time.Duration(mean)
}

// chunk is a read waiting in the delay line until due.
type chunk struct {
	b   []byte
	due time.Time
}

const chunkSize = 32 << 10

// forward copies src to dst through the delay line until src ends or a
// write fails.
func (p *Proxy) forward(dst, src net.Conn) {
	line := make(chan chunk, 64)
	go func() {
		defer close(line)
		var last time.Time
		for {
			buf := make([]byte, chunkSize)
			n, err := src.Read(buf)
			if n > 0 {
				due := time.Time{}
				if d := p.delay(); d > 0 {
					p.Delayed.Add(1)
					due = time.Now().Add(d)
					if due.Before(last) {
						due = last // in order: never before the previous chunk
					}
					last = due
				}
				line <- chunk{buf[:n], due}
			}
			if err != nil {
				return
			}
		}
	}()
	failed := false
	for ch := range line {
		if failed {
			continue // drain; the reader ends when src is closed
		}
		if w := time.Until(ch.due); w > 0 {
			time.Sleep(w)
		}
		if _, err := dst.Write(ch.b); err != nil {
			failed = true
			src.Close()
		}
	}
}

// Close stops listening, ends every relayed connection and waits for the
// relays to finish.
func (p *Proxy) Close() error {
	err := p.ln.Close()
	p.mu.Lock()
	p.closed = true
	for c := range p.open {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

// Trap is an address that accepts TCP connections, counts them and closes
// them without reading: whatever is sent there is never answered.
type Trap struct {
	ln    net.Listener
	Conns atomic.Int64
	done  chan struct{}
}

// NewTrap listens on a free 127.0.0.1 port.
func NewTrap() (*Trap, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	t := &Trap{ln: ln, done: make(chan struct{})}
	go func() {
		defer close(t.done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			t.Conns.Add(1)
			c.Close()
		}
	}()
	return t, nil
}

// Addr is the trap's host:port.
func (t *Trap) Addr() string { return t.ln.Addr().String() }

// Port is the trap's port.
func (t *Trap) Port() int { return t.ln.Addr().(*net.TCPAddr).Port }

// Close stops the trap and waits for its goroutine.
func (t *Trap) Close() error {
	err := t.ln.Close()
	<-t.done
	return err
}
