package routing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

// deadAddr returns a loopback host:port nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	a := l.Addr().String()
	l.Close()
	return a
}

// idOn returns a document id whose shard (of 3, R 768) is s.
func idOn(s int) string {
	for i := 0; ; i++ {
		id := fmt.Sprint("doc-", i)
		if got, _ := ShardFor(id, "", 3, 768, 1); got == s {
			return id
		}
	}
}

// Two of three nodes publish addresses nothing listens on (a proxy in
// front of the cluster): their primaries' documents are unrouted with
// reason unreachable, unrouted traffic goes to the one reachable node, and
// one warning names both addresses, once across refreshes.
func TestUnreachablePublishAddresses(t *testing.T) {
	f := threeNodes(t)
	a1, a2 := deadAddr(t), deadAddr(t)
	f.publish["n1"], f.publish["n2"] = a1, a2
	core, logs := observer.New(zap.WarnLevel)
	r := newTestRouter(t, f, func(o *Options) { o.Logger = zap.New(core) })
	r.want("logs")
	for i := 0; i < 3; i++ {
		if err := r.Refresh(context.Background(), TriggerStart); err != nil {
			t.Fatal(err)
		}
	}
	if n, why := r.Locate("logs", idOn(0), ""); why != Routed || n.Name() != "n0" {
		t.Fatalf("reachable primary: %v %v", n, why)
	}
	for _, s := range []int{1, 2} {
		if n, why := r.Locate("logs", idOn(s), ""); n != nil || why != ReasonUnreachable {
			t.Fatalf("shard %d on an unreachable node: %v %v", s, n, why)
		}
	}
	if ns := r.Nodes(); len(ns) != 1 || ns[0].Name() != "n0" {
		t.Fatalf("Nodes() = %v", ns)
	}
	for i := 0; i < 20; i++ {
		if p := r.Pick(); p.Name() != "n0" {
			t.Fatalf("Pick() = %s", p.Name())
		}
	}
	warns := logs.FilterMessageSnippet("cannot reach").All()
	if len(warns) != 1 {
		t.Fatalf("%d unreachable warnings, want 1: %v", len(warns), logs.All())
	}
	got := fmt.Sprint(warns[0].ContextMap()["unreachable"])
	if !strings.Contains(got, a1) || !strings.Contains(got, a2) || strings.Contains(got, f.hostPort()) {
		t.Fatalf("warning names %s, want %s and %s only", got, a1, a2)
	}
	if !strings.Contains(fmt.Sprint(warns[0].ContextMap()["what_to_do"]), "routing.enabled: false") {
		t.Fatalf("warning says nothing to do: %v", warns[0].ContextMap())
	}
	for _, ep := range r.endpoints() {
		if strings.Contains(ep, a1) || strings.Contains(ep, a2) {
			t.Fatalf("discovery calls go to an unreachable address: %v", r.endpoints())
		}
	}

	// The node's address answers later: after the next probe (a refresh
	// interval after the last) it is routed to.
	f.set(func(f *fakeCluster) { delete(f.publish, "n1") })
	r.refreshMu.Lock()
	r.lastRefresh = r.lastRefresh.Add(-r.opts.RefreshInterval)
	r.refreshMu.Unlock()
	r.Refresh(context.Background(), TriggerPeriodic)
	if n, why := r.Locate("logs", idOn(1), ""); why != Routed || n.Name() != "n1" {
		t.Fatalf("after the address was fixed: %v %v", n, why)
	}
}

// No discovered address answers (a load balancer in front): everything
// goes through the configured endpoint.
func TestNoReachableNodeUsesEndpoints(t *testing.T) {
	f := threeNodes(t)
	for _, n := range f.nodes {
		f.publish[n] = deadAddr(t)
	}
	r := newTestRouter(t, f, nil)
	r.want("logs")
	if err := r.Refresh(context.Background(), TriggerStart); err != nil {
		t.Fatal(err)
	}
	for s := 0; s < 3; s++ {
		if _, why := r.Locate("logs", idOn(s), ""); why != ReasonUnreachable {
			t.Fatalf("shard %d: %v", s, why)
		}
	}
	if p := r.Pick(); p != r.seeds[0] {
		t.Fatalf("Pick() = %s, want the endpoint", p.URL())
	}
}

// Every discovered node dead: unrouted traffic goes to the configured
// endpoints, not to a dead node.
func TestAllNodesDeadUsesEndpoints(t *testing.T) {
	f := threeNodes(t)
	other := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(other.Close)
	u, _ := url.Parse(other.URL)
	for _, n := range f.nodes {
		f.publish[n] = u.Host // reachable, but not the seed's address
	}
	r := newTestRouter(t, f, nil)
	r.afterDur = (&syncTimers{}).after
	if err := r.Refresh(context.Background(), TriggerStart); err != nil {
		t.Fatal(err)
	}
	if len(r.Nodes()) != 3 || r.Nodes()[0] == r.seeds[0] {
		t.Fatalf("Nodes() = %v", r.Nodes())
	}
	for _, n := range r.Topology().Nodes {
		r.MarkDead(n, errors.New("connection refused"))
	}
	for i := 0; i < 10; i++ {
		if p := r.Pick(); p != r.seeds[0] {
			t.Fatalf("Pick() = %s, want the endpoint %s", p.URL(), r.seeds[0].URL())
		}
	}
}

// A publish address whose certificate does not verify is unreachable, and
// the warning gives the TLS reason.
func TestUntrustedCertificateIsUnreachable(t *testing.T) {
	f := threeNodes(t)
	ts := httptest.NewTLSServer(http.NotFoundHandler())
	t.Cleanup(ts.Close)
	u, _ := url.Parse(ts.URL)
	f.publish["n2"] = u.Host
	core, logs := observer.New(zap.WarnLevel)
	// The seed is http; the probe of an https publish address is what is
	// tested, so it is called directly with the scheme the node would have.
	r := newTestRouter(t, f, func(o *Options) { o.Logger = zap.New(core) })
	why := r.reachProbe(context.Background(), ts.URL, maxReachProbe)
	if !strings.HasPrefix(why, "tls: ") {
		t.Fatalf("probe of an untrusted certificate: %q", why)
	}
	p := &nodePlan{infos: []*NodeInfo{{ID: "x", Name: "n2", URL: ts.URL}}}
	p.nodes = []*Node{newNode(p.infos[0], 1, false)}
	if got := r.probeReach(context.Background(), p); len(got) != 0 {
		t.Fatalf("untrusted node reachable: %v", got)
	}
	w := logs.FilterMessageSnippet("cannot reach").All()
	if len(w) != 1 || !strings.Contains(fmt.Sprint(w[0].ContextMap()["unreachable"]), "tls: ") ||
		!strings.Contains(fmt.Sprint(w[0].ContextMap()["what_to_do"]), "certificates") {
		t.Fatalf("warning: %v", logs.All())
	}
}

// Routing disabled: no request of any kind goes to a discovered address;
// the endpoints take the cluster's smallest http.max_content_length.
func TestDisabledUsesEndpointsOnly(t *testing.T) {
	f := threeNodes(t)
	trapped, trap := countingServer(t)
	for _, n := range f.nodes {
		f.publish[n] = trap
	}
	f.raw["nodes"] = strings.Replace(mustJSON(t, f.nodesInfo()), "104857600", "1000", 1)
	r := newTestRouter(t, f, func(o *Options) { o.Disabled = true })
	for i := 0; i < 2; i++ {
		if err := r.Refresh(context.Background(), TriggerStart); err != nil {
			t.Fatal(err)
		}
	}
	r.sampleRTT(context.Background())
	_ = r.PollStats(context.Background())
	if _, why := r.Locate("logs", "a", ""); why != ReasonDisabled {
		t.Fatalf("Locate: %v", why)
	}
	for i := 0; i < 30; i++ {
		if p := r.Pick(); p != r.seeds[0] {
			t.Fatalf("Pick() = %s, want the endpoint", p.URL())
		}
	}
	if n := trapped.Load(); n != 0 {
		t.Fatalf("%d requests reached a discovered address with routing disabled", n)
	}
	if r.Topology() != nil {
		t.Fatal("a topology with routing disabled")
	}
	if m := r.seeds[0].Info().MaxContentLength; m != 1000 {
		t.Fatalf("endpoint max_content_length %d, want the smallest node's 1000", m)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// countingServer is an HTTP server that counts the requests it gets; it
// returns the count and its host:port.
func countingServer(t *testing.T) (*atomic.Int64, string) {
	t.Helper()
	var n atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { n.Add(1) }))
	t.Cleanup(s.Close)
	u, _ := url.Parse(s.URL)
	return &n, u.Host
}
