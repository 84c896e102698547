package bulk_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/opensearchrouted/opensearchrouted/internal/bulk"
)

// The exporter's use: encode every item once into a Batch, group item
// numbers per node (internal/routing says which), cut each node's list into
// sub-bulks, send them, and act on each item's class.
func ExampleClient_Send() {
	node := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		n := strings.Count(string(body), "\n") / 2
		items := make([]string, n)
		for i := range items {
			items[i] = `{"create":{"_index":".ds-logs-000001","status":201}}`
		}
		items[1] = `{"create":{"_index":".ds-logs-000001","status":409,"error":{"type":"version_conflict_engine_exception","reason":"exists"}}}`
		fmt.Fprintf(w, `{"errors":true,"items":[%s]}`, strings.Join(items, ","))
	}))
	defer node.Close()

	var b bulk.Batch
	var mine []int32 // the items routed to this node
	for i, msg := range []string{"a", "b", "c"} {
		buf := b.Begin("logs", fmt.Sprintf("id-%d", i))
		buf = append(buf, `{"message":"`+msg+`"}`...)
		n, err := b.Commit(buf)
		if err != nil {
			panic(err)
		}
		mine = append(mine, n)
	}

	var c bulk.Client
	out := make([]bulk.Outcome, len(mine))
	for _, sub := range bulk.Split(&b, mine, 5<<20, nil) {
		res, err := c.Send(context.Background(), node.URL, &b, sub, out[:len(sub)])
		if err != nil {
			fmt.Println("whole request failed:", err, "node down:", bulk.IsNodeDown(err))
		}
		for k, it := range sub {
			_, id, _ := b.Item(it)
			fmt.Println(id, out[k].Status, out[k].Index, bulk.Classify(out[k]))
		}
		fmt.Println("requests:", res.Requests, "done:", res.Counts[bulk.Done], "duplicates:", res.Counts[bulk.Duplicate])
	}
	// Output:
	// id-0 201 .ds-logs-000001 done
	// id-1 409 .ds-logs-000001 duplicate
	// id-2 201 .ds-logs-000001 done
	// requests: 1 done: 2 duplicates: 1
}
