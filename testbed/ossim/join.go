package ossim

// RestartNodeDetached restarts node i as RestartNode does, but the node
// does not join the cluster: it answers HTTP (GET / included) while its
// own cluster state has no elected cluster manager, as an OpenSearch node
// does that started HTTP after discovery.initial_state_timeout without
// finding the cluster. GET /_cluster/health?local=true on it answers 200,
// status red, discovered_master and discovered_cluster_manager false.
// JoinNode makes it a member.
func (c *Cluster) RestartNodeDetached(i int) error { return c.restartNode(i, false) }

// JoinNode makes a running node that is not a member (RestartNodeDetached)
// join the cluster; it receives unassigned replicas. Joining a member does
// nothing.
func (c *Cluster) JoinNode(i int) error {
	n, err := c.nodeAt(i)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if n.joined || !n.Running() {
		return nil
	}
	n.joined = true
	c.reallocate()
	return nil
}

// detachedHealth answers a local cluster health request on a node that is
// not a member; it reports whether it did.
func (q *request) detachedHealth() bool {
	c := q.n.c
	c.mu.RLock()
	joined := q.n.joined
	c.mu.RUnlock()
	if joined {
		return false
	}
	q.replyJSON(200, map[string]any{
		"cluster_name": c.opts.ClusterName, "status": "red", "timed_out": false,
		"number_of_nodes": 1, "number_of_data_nodes": 1, "discovered_master": false,
		"discovered_cluster_manager": false, "active_primary_shards": 0, "active_shards": 0,
		"relocating_shards": 0, "initializing_shards": 0, "unassigned_shards": 0,
		"delayed_unassigned_shards": 0, "number_of_pending_tasks": 0, "number_of_in_flight_fetch": 0,
		"task_max_waiting_in_queue_millis": 0, "active_shards_percent_as_number": 0.0,
	})
	return true
}
