package opensearchbackfill

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/receiver/receivertest"

	"github.com/opensearchrouted/opensearchrouted/receiver/opensearchbackfill/internal/metadata"
)

// TestPITExpiresBetweenRateLimitedPages: max_documents_per_second makes
// each slice wait 400 s between pages of 20, longer than the 5 min
// keep-alive, so the PIT has expired at every next search. Each expiry
// costs one recreation, then a page is read: the read completes with every
// document delivered once (before, the fourth expiry spent the recreate
// budget and failed the slice). Time is virtual: the receiver's sleeps
// advance the clock by which the fake server expires PITs, as the real
// server does in real time.
func TestPITExpiresBetweenRateLimitedPages(t *testing.T) {
	const docs, keepAlive = 200, 5 * time.Minute
	var mu sync.Mutex
	var now time.Duration
	lastUse := map[string]time.Duration{}
	pits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/_search/point_in_time"):
			pits++
			id := fmt.Sprintf("pit-%d", pits)
			lastUse[id] = now
			fmt.Fprintf(w, `{"pit_id":%q,"_shards":{"total":1,"successful":1,"skipped":0,"failed":0},"creation_time":1}`, id)
		case r.Method == http.MethodDelete:
			io.WriteString(w, `{"pits":[{"successful":true,"pit_id":"x"}]}`)
		case r.Method == http.MethodPost && r.URL.Path == "/_search":
			var req struct {
				PIT         struct{ ID string }
				Size        int
				SearchAfter []json.RawMessage `json:"search_after"`
			}
			if err := json.Unmarshal(body, &req); err != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			if last, ok := lastUse[req.PIT.ID]; !ok || now-last > keepAlive {
				delete(lastUse, req.PIT.ID)
				w.WriteHeader(http.StatusNotFound)
				io.WriteString(w, `{"error":{"root_cause":[{"type":"search_context_missing_exception","reason":"No search context found for id [1]"}],`+
					`"type":"search_phase_execution_exception","reason":"all shards failed","failed_shards":[{"shard":-1,"index":null,`+
					`"reason":{"type":"search_context_missing_exception","reason":"No search context found for id [1]"}}]},"status":404}`)
				return
			}
			lastUse[req.PIT.ID] = now
			from := 0
			if len(req.SearchAfter) > 0 {
				var n int
				_ = json.Unmarshal(req.SearchAfter[0], &n)
				from = n + 1
			}
			var hits []string
			for i := from; i < docs && len(hits) < req.Size; i++ {
				hits = append(hits, hitJSON(fmt.Sprintf("d%04d", i), `{"n":1}`, i))
			}
			io.WriteString(w, page(okShards, hits...))
		default:
			w.WriteHeader(http.StatusForbidden)
		}
	}))
	defer srv.Close()

	cfg := testConfig([]string{srv.URL}, "events")
	cfg.Discovery.Enabled = false
	cfg.PageSize = 20
	cfg.MaxDocumentsPerSecond = 0.05 // 400 s per page of 20
	set := receivertest.NewNopSettings(metadata.Type)
	set.ID = component.NewID(metadata.Type)
	r, err := newReceiver(cfg, set)
	if err != nil {
		t.Fatal(err)
	}
	sink := newIDSink()
	r.logs = sink
	r.sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		now += d
		mu.Unlock()
		return ctx.Err()
	}
	if err := r.Start(context.Background(), &testHost{}); err != nil {
		t.Fatal(err)
	}
	defer r.Shutdown(context.Background())
	select {
	case <-r.done:
	case <-time.After(20 * time.Second):
		t.Fatal("the read did not end")
	}
	if errs := r.fatalErrors(); len(errs) > 0 {
		t.Fatalf("slice failed: %v", errs)
	}
	ids := make([]string, docs)
	for i := range ids {
		ids[i] = fmt.Sprintf("d%04d", i)
	}
	checkAllOnce(t, sink.snapshot(), ids, true)
	if st := r.Stats(); st.PITsRecreated < 5 {
		t.Errorf("%d recreations: the PIT did not expire between pages", st.PITsRecreated)
	}
}
