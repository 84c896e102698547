package routing

import "strings"

// Node roles decide where requests go (discovery reads them from _nodes):
//
//   - A node that is cluster-manager-only (cluster_manager or master, with
//     nothing but voting_only and remote_cluster_client besides) gets no
//     request at all: no _bulk, routed or not, no backfill search, no
//     discovery call, not even the reachability probe. Production clusters
//     run dedicated cluster managers so that they are not loaded with this.
//   - A node whose only work roles are search or warm (OpenSearch 3.x: search
//     replicas, warm tiers) gets no request either: those nodes hold no
//     primaries and are sized for reads of their own indices.
//   - Unrouted documents prefer coordinating-only nodes (no role besides
//     remote_cluster_client) and ingest nodes without a data role when the
//     cluster has any that are alive: that is what they are for. Otherwise
//     they go to any other node (data nodes, ml, custom roles).
//   - A node that reports no roles field at all is treated as a data node.
//
// Routed documents go to the node of their primary, which is a data node.
// The configured endpoints are used as given, whatever their roles.

// servesRequests reports whether a node with these roles may receive
// requests.
func servesRequests(roles []string) bool {
	if roles == nil {
		return true
	}
	work := false
	for _, r := range roles {
		switch strings.ToLower(r) {
		case "cluster_manager", "master", "voting_only", "remote_cluster_client", "search", "warm":
		default:
			return true
		}
		switch strings.ToLower(r) {
		case "search", "warm":
			work = true
		}
	}
	// Only manager, search or warm roles: excluded, unless it has none of
	// them at all (coordinating-only: [] or [remote_cluster_client]).
	return !work && !hasRole(roles, "cluster_manager", "master")
}

// preferredUnrouted reports whether unrouted documents should prefer a node
// with these roles: coordinating-only, or ingest only.
func preferredUnrouted(roles []string) bool {
	if roles == nil {
		return false
	}
	for _, r := range roles {
		switch strings.ToLower(r) {
		case "ingest", "remote_cluster_client":
		default:
			return false
		}
	}
	return true
}

func hasRole(roles []string, names ...string) bool {
	for _, r := range roles {
		for _, n := range names {
			if strings.EqualFold(r, n) {
				return true
			}
		}
	}
	return false
}
