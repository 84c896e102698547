package opensearchrouted

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/consumer/consumererror"
	"go.opentelemetry.io/collector/pdata/plog"
)

// faultyServer is a one-node _bulk endpoint with create semantics (an id
// is stored once; a second create of it is answered 409) that injects,
// at random, every failure the exporter must survive: per item 429,
// rejected_execution_exception, 503 and (for half the documents marked
// "bad", in each shape) 400 mapper_parsing_exception;
// per request 503, 413 above a body size, an answer with one item
// missing, an answer cut off with the connection, and an answer never
// sent after the items were stored (the client times out).
type faultyServer struct {
	mu       sync.Mutex
	rng      *rand.Rand
	docs     map[string]string // _id → source
	clash    []string          // ids created twice with different sources
	requests int

	maxBody int
	hang    time.Duration // how long an answer that is never sent keeps the request
}

const (
	pItem429 = 0.15
	pItem503 = 0.05
	pHang    = 0.05 // items stored, no answer
	pShort   = 0.05 // one item missing from the answer
	pCut     = 0.05 // half an answer, then the connection closes
	pWhole   = 0.05 // 503 for the whole request, nothing stored
)

func (s *faultyServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasSuffix(r.URL.Path, "/_bulk") {
		// Discovery: refuse it; the exporter writes unrouted.
		w.WriteHeader(http.StatusForbidden)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	if len(body) > s.maxBody {
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		return
	}
	s.mu.Lock()
	s.requests++
	if s.rng.Float64() < pWhole {
		s.mu.Unlock()
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"error":{"type":"unavailable","reason":"injected"},"status":503}`)
		return
	}
	var items []string
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var action map[string]struct {
			Index string `json:"_index"`
			ID    string `json:"_id"`
		}
		if err := json.Unmarshal(sc.Bytes(), &action); err != nil || !sc.Scan() {
			s.mu.Unlock()
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		src, index := sc.Text(), action["create"].Index
		if index == "" { // the request's /{index}/_bulk
			index = strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/"), "/_bulk")
		}
		key, canon := index+"/"+action["create"].ID, canonicalDoc(sc.Bytes())
		x := s.rng.Float64()
		_, stored := s.docs[key]
		switch {
		case x < pItem429:
			items = append(items, `{"create":{"_index":"x","status":429,"error":{"type":"rejected_execution_exception","reason":"queue full"}}}`)
		case x < pItem429+pItem503:
			items = append(items, `{"create":{"_index":"x","status":503,"error":{"type":"unavailable_shards_exception","reason":"injected"}}}`)
		case stored:
			if s.docs[key] != canon {
				s.clash = append(s.clash, key)
			}
			items = append(items, `{"create":{"_index":"x","status":409,"error":{"type":"version_conflict_engine_exception","reason":"exists"}}}`)
		case index == "x" && strings.Contains(src, "bad") && refusedShape(src):
			// As the server does, only a document not stored yet is refused
			// for its shape (the mapping only grows), and the same document
			// is refused every time.
			items = append(items, `{"create":{"_index":"x","status":400,"error":{"type":"mapper_parsing_exception","reason":"injected"}}}`)
		default:
			s.docs[key] = canon
			items = append(items, `{"create":{"_index":"x","status":201}}`)
		}
	}
	y := s.rng.Float64()
	s.mu.Unlock()
	answer := func(items []string) string {
		return `{"errors":true,"items":[` + strings.Join(items, ",") + `]}`
	}
	switch {
	case y < pHang:
		time.Sleep(s.hang)
	case y < pHang+pShort && len(items) > 1:
		fmt.Fprint(w, answer(items[:len(items)-1]))
	case y < pHang+pShort+pCut:
		a := answer(items)
		w.Header().Set("Content-Length", fmt.Sprint(len(a)))
		io.WriteString(w, a[:len(a)/2])
		if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
			c.Close()
		}
	default:
		fmt.Fprint(w, answer(items))
	}
}

// refusedShape is whether the faulty server refuses a "bad" document for
// its shape: about half of them, the same every time, in each shape.
func refusedShape(src string) bool {
	h := fnv.New32a()
	h.Write([]byte(src))
	return h.Sum32()%2 == 0
}

// canonicalDoc is a document's members as sorted JSON, those of the
// unmapped shape's string put back where they came from; a dead-letter
// document is its original document's canonical form, marked.
func canonicalDoc(src []byte) string {
	var m map[string]any
	if json.Unmarshal(src, &m) != nil {
		return "invalid: " + string(src)
	}
	if d, ok := m["document"].(string); ok {
		return "dead-letter: " + canonicalDoc([]byte(d))
	}
	if u, ok := m["unmapped"].(string); ok {
		var moved map[string]any
		if json.Unmarshal([]byte(u), &moved) != nil {
			return "invalid unmapped: " + string(src)
		}
		delete(m, "unmapped")
		for k, v := range moved {
			m[k] = v
		}
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// repeatedLogs is n records of `distinct` contents, each repeated exactly
// n/distinct times; contents k with k%17 == 0 are "bad" (the server may
// refuse them permanently).
func repeatedLogs(n, distinct int) plog.Logs {
	ld := plog.NewLogs()
	rl := ld.ResourceLogs().AppendEmpty()
	rl.Resource().Attributes().PutStr("service.name", "svc")
	sl := rl.ScopeLogs().AppendEmpty()
	for i := range n {
		k := i % distinct
		lr := sl.LogRecords().AppendEmpty()
		if k%17 == 0 {
			lr.Body().SetStr(fmt.Sprintf("bad record %d", k))
		} else {
			lr.Body().SetStr(fmt.Sprintf("record %d %s", k, strings.Repeat("p", 40)))
		}
		lr.Attributes().PutInt("k", int64(k))
	}
	return ld
}

// TestFaultsExactlyOnce resends what each call hands back, as the
// collector's retry does, until nothing is left, under every injected
// failure at once (several seeds; the calls are encoded in shares and send
// their sub-bulks concurrently, so interleavings differ too). Every good
// record must be stored exactly once, each repeat under its own id, and no
// id may ever carry two different documents.
func TestFaultsExactlyOnce(t *testing.T) {
	const n, distinct = 600, 150
	good := 0
	for i := range n {
		if (i%distinct)%17 != 0 {
			good++
		}
	}
	for seed := uint64(1); seed <= 6; seed++ {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			s := &faultyServer{rng: rand.New(rand.NewPCG(seed, 7)), docs: map[string]string{}, maxBody: 6000, hang: 150 * time.Millisecond}
			srv := httptest.NewServer(s)
			defer srv.Close()
			cfg := testConfig([]string{srv.URL})
			cfg.LogsIndex = "x"
			cfg.Timeout = 100 * time.Millisecond
			cfg.Bulk.MaxAttempts = 3
			cfg.Bulk.RetryBackoff = time.Millisecond
			e, _ := startExporter(t, cfg, signalLogs)

			data, calls := repeatedLogs(n, distinct), 0
			for ; calls < 100; calls++ {
				err := e.pushLogs(context.Background(), data)
				var le consumererror.Logs
				if err == nil || !errors.As(err, &le) {
					if err != nil && !consumererror.IsPermanent(err) {
						t.Fatalf("call %d: neither retryable nor permanent: %v", calls, err)
					}
					break
				}
				data = le.Data()
			}
			if calls == 100 {
				t.Fatal("still handing records back after 100 calls")
			}
			s.mu.Lock()
			defer s.mu.Unlock()
			if len(s.clash) > 0 {
				t.Fatalf("ids created again with a different document: %v", s.clash)
			}
			// Every record is stored once: in its index (as written or in
			// the unmapped shape), or, refused, in the dead-letter index.
			stored, bad, deadLettered := 0, 0, 0
			records := map[string]int{}
			for key, doc := range s.docs {
				switch {
				case strings.HasPrefix(key, "x/") && !strings.Contains(doc, "bad record"):
					stored++
				case strings.HasPrefix(key, "x/"):
					bad++
				case strings.HasPrefix(key, defaultDeadLetterLogs+"/") && strings.HasPrefix(doc, "dead-letter: "):
					deadLettered++
					doc = strings.TrimPrefix(doc, "dead-letter: ")
				default:
					t.Fatalf("unexpected document %s: %s", key, doc)
				}
				records[doc]++
			}
			if stored != good || bad+deadLettered != n-good {
				t.Fatalf("%d good records stored, want %d; %d bad ones stored and %d dead-lettered, want %d in all (%d calls, %d requests)",
					stored, good, bad, deadLettered, n-good, calls+1, s.requests)
			}
			for doc, k := range records {
				if k != n/distinct {
					t.Fatalf("record stored %d times, want %d: %s", k, n/distinct, doc)
				}
			}
			t.Logf("%d good records stored once each, %d bad ones stored and %d dead-lettered; %d calls, %d requests", stored, bad, deadLettered, calls+1, s.requests)
		})
	}
}
