package main

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestRunPrintsNodesServesAndStops(t *testing.T) {
	var out, errb syncBuf
	stop := make(chan struct{})
	done := make(chan int, 1)
	go func() { done <- run([]string{"--nodes", "2", "--port", "0", "--zones", "a,b"}, &out, &errb, stop) }()
	var lines []string
	deadline := time.Now().Add(10 * time.Second)
	for len(lines) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no node lines: %q %q", out.String(), errb.String())
		}
		time.Sleep(10 * time.Millisecond)
		lines = nil
		for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
			if l != "" {
				lines = append(lines, l)
			}
		}
	}
	for i, l := range lines {
		f := strings.Fields(l)
		if len(f) != 3 || f[0] != "node-"+string(rune('0'+i)) || !strings.HasPrefix(f[1], "http://127.0.0.1:") || f[2] != "zone="+[]string{"a", "b"}[i] {
			t.Fatalf("line %q", l)
		}
		resp, err := http.Get(f[1] + "/")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), `"number":"2.19.6"`) {
			t.Errorf("GET / on %s: %s", f[0], b)
		}
	}
	close(stop)
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit code %d: %s", code, errb.String())
		}
	case <-time.After(15 * time.Second):
		t.Fatal("run did not return after stop")
	}
	url := strings.Fields(lines[0])[1]
	if _, err := http.Get(url + "/"); err == nil {
		t.Error("node still answers after stop")
	}
}

func TestRunRejectsBadFlags(t *testing.T) {
	var out, errb syncBuf
	if code := run([]string{"--nodes", "-2", "--port", "0"}, &out, &errb, nil); code != 1 || !strings.Contains(errb.String(), "Nodes") {
		t.Errorf("negative nodes: code %d, %q", code, errb.String())
	}
	if code := run([]string{"--bogus"}, &out, &errb, nil); code != 2 {
		t.Errorf("unknown flag: code %d", code)
	}
	if code := run([]string{"--port", "0", "extra"}, &out, &errb, nil); code != 2 {
		t.Errorf("extra argument: code %d", code)
	}
	var help syncBuf
	if code := run([]string{"-help"}, &out, &help, nil); code != 0 || !strings.Contains(help.String(), "-nodes") {
		t.Errorf("-help: code %d, %q", code, help.String())
	}
}
