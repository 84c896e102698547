package bulk

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The Client tests run on net/http's client, and once more, in a child
// process of this test binary, on this package's Transport
// (TestClientSuiteOnTransport): BULK_TEST_TRANSPORT=wire.
var suiteOnWire = os.Getenv("BULK_TEST_TRANSPORT") == "wire"

// suiteTransport is the child's Transport, shared by its tests as a
// collector shares one between calls.
var suiteTransport = &Transport{}

// testClient is the Client the tests send with.
func testClient() *Client {
	return &Client{HTTP: &http.Client{Transport: suiteRoundTripper()}}
}

// suiteRoundTripper is the RoundTripper of this run's tests.
func suiteRoundTripper() http.RoundTripper {
	if suiteOnWire {
		return suiteTransport
	}
	return http.DefaultTransport
}

func TestClientSuiteOnTransport(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run", "^Test(Send|Body)", "-test.count", "1", "-test.v")
	cmd.Env = append(os.Environ(), "BULK_TEST_TRANSPORT=wire")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the Client tests on Transport failed: %v\n%s", err, out)
	}
	if n := strings.Count(string(out), "--- PASS: TestSend"); n < 15 {
		t.Fatalf("the child ran %d TestSend tests:\n%s", n, out)
	}
}

// TestSendUsesSuiteTransport checks that the child run does send through
// Transport (and the parent through net/http).
func TestSendUsesSuiteTransport(t *testing.T) {
	srv, _ := fakeNode(t, echoAll)
	b, items := testBatch(t, 3, 10)
	c := testClient()
	before := dialsOf(suiteTransport)
	if _, err := c.Send(context.Background(), srv.URL, b, items, make([]Outcome, len(items))); err != nil {
		t.Fatal(err)
	}
	dials := dialsOf(suiteTransport) - before
	if want := map[bool]int{true: 1, false: 0}[suiteOnWire]; dials != want {
		t.Fatalf("on wire %v: Transport dialled %d times", suiteOnWire, dials)
	}
}
