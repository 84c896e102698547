package bulk

import (
	"bytes"
	"io"
	"testing"
)

// Update items are written with an update action; a request whose items
// share one index leaves "_index" out of their lines as of create lines.
func TestBeginUpdate(t *testing.T) {
	var b Batch
	buf := b.BeginUpdate("idx-000001", "a1")
	if _, err := b.Commit(append(buf, `{"doc":{"x":1}}`...)); err != nil {
		t.Fatal(err)
	}
	buf = b.Begin("idx-000001", "a2")
	if _, err := b.Commit(append(buf, `{"y":2}`...)); err != nil {
		t.Fatal(err)
	}
	want := `{"update":{"_index":"idx-000001","_id":"a1"}}` + "\n" + `{"doc":{"x":1}}` + "\n"
	if got := string(b.Bytes(0)); got != want {
		t.Fatalf("item\n%q\nwant\n%q", got, want)
	}
	st := newBody(&b, []int32{0, 1})
	if st.index != "idx-000001" {
		t.Fatalf("shared index %q", st.index)
	}
	r, err := st.getBody()
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(r)
	wantBody := `{"update":{"_id":"a1"}}` + "\n" + `{"doc":{"x":1}}` + "\n" + `{"create":{"_id":"a2"}}` + "\n" + `{"y":2}` + "\n"
	if !bytes.Equal(body, []byte(wantBody)) {
		t.Fatalf("body\n%q\nwant\n%q", body, wantBody)
	}
	if int64(len(body)) != st.size {
		t.Fatalf("size %d, body %d bytes", st.size, len(body))
	}
}
