package tcpproxy

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestProxyRoundRobinAndTrap(t *testing.T) {
	var backends []string
	for _, name := range []string{"a", "b"} {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, name) }))
		t.Cleanup(s.Close)
		backends = append(backends, strings.TrimPrefix(s.URL, "http://"))
	}
	p, err := New(backends...)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	got := map[string]int{}
	for i := 0; i < 4; i++ {
		c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := c.Get(p.URL())
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		got[string(b)]++
	}
	if got["a"] != 2 || got["b"] != 2 || p.Conns.Load() != 4 || p.PerBackend[0].Load() != 2 {
		t.Fatalf("round robin: %v, %d conns", got, p.Conns.Load())
	}

	p.Refuse.Store(true)
	if _, err := http.Get(p.URL()); err == nil || p.Refused.Load() != 1 {
		t.Fatalf("refusing proxy answered (%v) or did not count (%d)", err, p.Refused.Load())
	}
	p.Refuse.Store(false)
	if err := p.SetBackends(backends[1], backends[1]); err != nil {
		t.Fatal(err)
	}
	if resp, err := http.Get(p.URL()); err != nil {
		t.Fatal(err)
	} else if b, _ := io.ReadAll(resp.Body); string(b) != "b" {
		t.Fatalf("after SetBackends: %q", b)
	}

	tr, err := NewTrap()
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if _, err := http.Get("http://" + tr.Addr()); err == nil {
		t.Fatal("the trap answered")
	}
	if tr.Conns.Load() != 1 {
		t.Fatalf("trap counted %d", tr.Conns.Load())
	}
}

func TestProxyRefusesNonLoopback(t *testing.T) {
	for _, b := range []string{"10.0.0.1:9200", "example.com:80", "[::1]:9200", "nonsense"} {
		if p, err := New(b); err == nil {
			p.Close()
			t.Errorf("New(%q) accepted", b)
		}
	}
}
