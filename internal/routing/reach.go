package routing

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/opensearchrouted/opensearchrouted/internal/httpio"
)

// Reachability: a discovered node receives requests only once its own
// publish address has answered a probe (GET /, any HTTP status). Behind a
// load balancer, a proxy, NAT, Docker port mapping or a Kubernetes Service
// the addresses nodes publish are often not reachable from the collector;
// their documents then go through the configured endpoints.
const (
	// maxReachProbe bounds one reachability probe (RequestTimeout if
	// shorter): an address that drops packets costs at most this, once per
	// refresh interval, in the refresh goroutine, never per document.
	maxReachProbe = 2 * time.Second
	// reachProbeParallel bounds the probes in flight at once.
	reachProbeParallel = 16
)

// probeReach probes, concurrently, the nodes of a plan that may receive
// requests (roles.go) and have not
// answered at their current URL: new nodes, nodes whose URL changed, and
// unreachable nodes whose last probe is at least a refresh interval old.
// It returns the reachable ones in plan order.
func (r *Router) probeReach(ctx context.Context, p *nodePlan) []*Node {
	now := r.now()
	timeout := min(r.opts.RequestTimeout, maxReachProbe)
	sem := make(chan struct{}, reachProbeParallel)
	var wg sync.WaitGroup
	for i, n := range p.nodes {
		u := p.infos[i].URL
		if !servesRequests(p.infos[i].Roles) {
			continue // never contacted (roles.go)
		}
		n.mu.Lock()
		due := n.probedURL != u || (n.unreachable != "" && now.Sub(n.probedAt) >= r.opts.RefreshInterval)
		n.mu.Unlock()
		if !due {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			why := r.reachProbe(ctx, u, timeout)
			if ctx.Err() != nil {
				return // closing: leave the node as it was
			}
			n.mu.Lock()
			was := n.probedURL == u && n.unreachable == ""
			n.probedURL, n.probedAt, n.unreachable = u, r.now(), why
			n.mu.Unlock()
			n.reachable.Store(why == "")
			if why == "" && !was && r.warnedUnreachable(u) {
				r.log.Info("OpenSearch node's publish address answers now; documents for its primaries go to it directly",
					zap.String("node", p.infos[i].Name), zap.String("url", u))
			}
		}()
	}
	wg.Wait()
	r.warnUnreachable(p)
	out := make([]*Node, 0, len(p.nodes))
	for i, n := range p.nodes {
		if n.reachable.Load() && servesRequests(p.infos[i].Roles) {
			out = append(out, n)
		}
	}
	return out
}

// preferredOf returns the nodes unrouted documents prefer (roles.go).
func preferredOf(nodes []*Node) []*Node {
	var out []*Node
	for _, n := range nodes {
		if preferredUnrouted(n.Info().Roles) {
			out = append(out, n)
		}
	}
	return out
}

// reachProbe sends GET / to base and returns "" if any HTTP answer came
// back, else why not ("tls: …" for a TLS failure: a certificate that does
// not verify, a failed handshake).
func (r *Router) reachProbe(ctx context.Context, base string, timeout time.Duration) string {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/", nil)
	if err != nil {
		return err.Error()
	}
	resp, err := r.opts.Client.Do(req)
	if err != nil {
		if httpio.IsTLS(err) {
			return "tls: " + err.Error()
		}
		if ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return "no answer within " + timeout.String()
		}
		return err.Error()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	return ""
}

func (r *Router) warnedUnreachable(url string) bool {
	_, ok := r.warned.Load("unreachable " + url)
	return ok
}

// warnUnreachable logs one warning naming the publish addresses of a plan
// that did not answer and have not been warned about yet.
func (r *Router) warnUnreachable(p *nodePlan) {
	var addrs []string
	tlsOnly := true
	for i, n := range p.nodes {
		n.mu.Lock()
		why := n.unreachable
		n.mu.Unlock()
		if why == "" {
			continue
		}
		u := p.infos[i].URL
		if _, dup := r.warned.LoadOrStore("unreachable "+u, struct{}{}); dup {
			continue
		}
		addrs = append(addrs, p.infos[i].Name+" "+u+": "+why)
		tlsOnly = tlsOnly && strings.HasPrefix(why, "tls: ")
	}
	if len(addrs) == 0 {
		return
	}
	sort.Strings(addrs)
	hint := "if the cluster is reached through a load balancer, proxy, NAT, Docker port mapping or Kubernetes Service, " +
		"set routing.enabled: false (configured endpoints only); otherwise make each node's http.publish_host/http.publish_port reachable from the collector"
	if tlsOnly {
		hint = "the nodes' certificates must be valid for the addresses they publish (their names, with https), " +
			"and trusted by the exporter's tls settings; or set routing.enabled: false (configured endpoints only)"
	}
	r.log.Warn("OpenSearch nodes publish HTTP addresses this collector cannot reach; documents for their primaries go through the configured endpoints",
		zap.Strings("unreachable", addrs), zap.Int("reachable", len(p.nodes)-countUnreachable(p)), zap.String("what_to_do", hint))
}

func countUnreachable(p *nodePlan) int {
	k := 0
	for _, n := range p.nodes {
		n.mu.Lock()
		if n.unreachable != "" {
			k++
		}
		n.mu.Unlock()
	}
	return k
}

// refreshLimits is the refresh with routing disabled: requests go to the
// configured endpoints only, so the one thing discovery is for is the
// smallest http.max_content_length of the cluster's nodes (a load balancer
// may hand a request to any of them), applied to every endpoint. Only the
// endpoints are asked; no topology is kept.
func (r *Router) refreshLimits(ctx context.Context) error {
	var ni nodesInfoResponse
	if err := r.get(ctx, r.endpoints(), "nodes", pathNodesInfo, &ni); err != nil {
		if isForbidden(err) {
			r.forbidden("nodes", err)
		}
		return err
	}
	infos, err := parseNodes(&ni, r.scheme)
	if err != nil {
		return err
	}
	var m int64
	for _, in := range infos {
		if in.MaxContentLength > 0 && (m == 0 || in.MaxContentLength < m) {
			m = in.MaxContentLength
		}
	}
	for _, s := range r.seeds {
		if old := s.Info(); old.MaxContentLength != m {
			ni := *old
			ni.MaxContentLength = m
			s.info.Store(&ni)
		}
	}
	return nil
}
