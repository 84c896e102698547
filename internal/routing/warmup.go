package routing

import (
	"context"
	"errors"
	"net/http"
)

// pathReady asks a node for the cluster health as its own cluster state
// sees it (local=true: the node answers without asking the elected cluster
// manager, so a node that has not joined answers too, instead of
// forwarding or waiting).
const pathReady = "/_cluster/health?local=true&filter_path=discovered_master,discovered_cluster_manager"

type readyResponse struct {
	DiscoveredMaster         *bool `json:"discovered_master"`          // 2.x
	DiscoveredClusterManager *bool `json:"discovered_cluster_manager"` // 2.x and 3.x
}

// errNotJoined: the node answered, but its cluster state knows no elected
// cluster manager: it has not joined the cluster (yet).
var errNotJoined = errors.New("routing: the node has not joined the cluster: its local cluster state has no elected cluster manager")

// ready checks, after GET / answered, that a node coming back is a member
// of the cluster again: GET /_cluster/health?local=true, sent to the node
// itself, must answer 200 with discovered_cluster_manager (or, on 2.x,
// discovered_master) true. A node only receives the cluster state from the
// elected cluster manager once it has joined, so a node that answers HTTP
// but is still looking for the cluster (OpenSearch starts HTTP after
// discovery.initial_state_timeout even without a cluster manager) is not
// ready. Its shard copies need not be started: writes are routed to
// started primaries only, and a node that coordinates a request it holds
// no copy for forwards it. A 401 or 403 (credentials without the
// cluster:monitor/health privilege) counts as ready: GET / already proved
// the node is up, and the check cannot say more.
func (r *Router) ready(ctx context.Context, n *Node) error {
	ctx, cancel := context.WithTimeout(ctx, r.opts.RequestTimeout)
	defer cancel()
	var h readyResponse
	err := getJSON(ctx, r.opts.Client, "ready", n.URL(), pathReady, &h)
	var he *HTTPError
	switch {
	case errors.As(err, &he) && (he.Status == http.StatusUnauthorized || he.Status == http.StatusForbidden):
		return nil
	case err != nil:
		return err
	case (h.DiscoveredClusterManager != nil && *h.DiscoveredClusterManager) || (h.DiscoveredMaster != nil && *h.DiscoveredMaster):
		return nil
	}
	return errNotJoined
}

// Restart puts the window back into slow start: cwnd 1, ssthresh half the
// window it had (at least 2, never above the ceiling). A node back from
// dead must not receive the window it had before at once: its queues are
// empty, its caches cold, and it may still be recovering shards.
func (w *Window) Restart() {
	w.mu.Lock()
	w.ssthresh = min(max(w.cwnd/2, 2), w.ceiling)
	w.cwnd = 1
	w.acked = 0
	w.epoch++ // requests sent before the restart cannot shrink it again
	w.mu.Unlock()
}
