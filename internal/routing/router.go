package routing

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// Options configure a Router. Zero values take the documented defaults.
type Options struct {
	// Client sends every discovery, stats and health request (the
	// collector's client, so TLS and auth extensions apply). Required.
	Client *http.Client
	// Seeds are the configured endpoint URLs. Required.
	Seeds []string
	// RefreshInterval between periodic topology refreshes. Default 30s.
	RefreshInterval time.Duration
	// MinRefreshInterval: triggered refreshes never run more often.
	// Default 1s.
	MinRefreshInterval time.Duration
	// StatsInterval between node stats polls and RTT samples. Default
	// 10s; negative disables polling.
	StatsInterval time.Duration
	// RequestTimeout bounds each discovery, stats or health request.
	// Default 10s.
	RequestTimeout time.Duration
	// WindowCeiling caps every node's congestion window. 0 = discovered:
	// the node's thread_pool.write.size, else 4 × its processors, else 32.
	WindowCeiling int
	// Disabled turns routing off: Locate always answers ReasonDisabled,
	// documents rotate over the healthy seeds, and no request goes to any
	// other address (refreshes only read the nodes' http.max_content_length
	// through the seeds).
	Disabled bool
	// Logger; nil means no logging.
	Logger *zap.Logger
	// OnRefresh, if set, is called after every refresh with its trigger
	// and outcome ("ok", "error", "forbidden"), and after every node stats
	// poll that fails (trigger TriggerNodeStats, "error" or "forbidden").
	OnRefresh func(trigger, outcome string)
	// OnNodeState, if set, is called when a node changes state.
	OnNodeState func(n *Node, s NodeState)
	// Degraded configures the write-latency detector (ObserveWrite) that
	// marks nodes degraded; off unless Degraded.Enabled.
	Degraded DegradedConfig
}

// Refresh triggers.
const (
	TriggerStart       = "start"
	TriggerPeriodic    = "periodic"
	TriggerUnknown     = "unknown_index"
	TriggerNodeFailure = "node_failure"
	TriggerRollover    = "rollover"
	TriggerMoved       = "shard_moved"
	// TriggerNodeStats is no refresh: the node stats poll, reported to
	// OnRefresh only when it fails.
	TriggerNodeStats = "node_stats"
)

// Resurrection constants (seed 001).
const (
	resurrectInitial  = 5 * time.Second
	resurrectMax      = 30 * time.Second
	resurrectFloor    = 500 * time.Millisecond
	resurrectJitter   = 0.5
	defaultProcessors = 8
	maxWanted         = 10000
	// wantedIdle is how long a target name may go without a document
	// located to it (or asked for) before refreshes stop fetching it (at
	// least three refresh intervals); a document for it later asks for it
	// again. Without it the names of data streams no longer written to
	// would be fetched at every refresh, and once maxWanted names had been
	// seen no new one would ever be routed.
	wantedIdle = 10 * time.Minute
)

// Router owns the topology and the per-node state. Locate and Pick are
// safe for concurrent use and take no lock on the topology.
type Router struct {
	opts   Options
	scheme string
	log    *zap.Logger

	topo  atomic.Pointer[Topology]
	seeds []*Node // pseudo-nodes for the seed URLs, used until discovery works

	mu     sync.Mutex       // guards nodes, wanted and seen
	nodes  map[string]*Node // every node ever discovered and not retired, by id
	wanted map[string]*wantedName
	seen   map[string]seenState // names written to but not (yet) in the topology

	refreshMu   sync.Mutex // serialises refreshes
	lastRefresh time.Time  // guarded by refreshMu
	startWarned bool       // the first failed discovery was logged; guarded by refreshMu
	warned      sync.Map   // call name → struct{}: one warning per refused call

	trigger chan string
	rr      atomic.Uint32
	writes  *writeDetector // nil: degraded-node detection is off

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	closed atomic.Bool

	// Counters.
	RefreshErrors atomic.Int64
	Forbidden     atomic.Int64
	Coalesced     atomic.Int64

	now      func() time.Time
	jitter   func() float64
	afterDur func(d time.Duration, f func()) *time.Timer
}

// New validates the options and returns a Router that knows only its
// seeds. Call Start to begin discovery, or Refresh to discover now.
func New(opts Options) (*Router, error) {
	if opts.Client == nil {
		return nil, errors.New("routing: Options.Client is required")
	}
	if len(opts.Seeds) == 0 {
		return nil, errors.New("routing: at least one seed endpoint is required")
	}
	if opts.RefreshInterval <= 0 {
		opts.RefreshInterval = 30 * time.Second
	}
	if opts.MinRefreshInterval <= 0 {
		opts.MinRefreshInterval = time.Second
	}
	if opts.StatsInterval == 0 {
		opts.StatsInterval = 10 * time.Second
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = 10 * time.Second
	}
	if opts.WindowCeiling < 0 {
		return nil, fmt.Errorf("routing: window ceiling must be ≥ 0, got %d", opts.WindowCeiling)
	}
	r := &Router{
		opts:     opts,
		log:      opts.Logger,
		nodes:    map[string]*Node{},
		wanted:   map[string]*wantedName{},
		seen:     map[string]seenState{},
		trigger:  make(chan string, 1),
		now:      time.Now,
		jitter:   rand.Float64,
		afterDur: time.AfterFunc,
	}
	if r.log == nil {
		r.log = zap.NewNop()
	}
	r.writes = newWriteDetector(r, opts.Degraded)
	for _, s := range opts.Seeds {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("routing: endpoint %q is not an http(s) URL", s)
		}
		if r.scheme == "" {
			r.scheme = u.Scheme
		} else if r.scheme != u.Scheme {
			return nil, fmt.Errorf("routing: endpoints mix %s and %s", r.scheme, u.Scheme)
		}
		base := u.Scheme + "://" + u.Host + strings.TrimSuffix(u.Path, "/")
		info := &NodeInfo{ID: base, Name: u.Host, URL: base}
		seed := newNode(info, r.ceiling(info), opts.WindowCeiling > 0)
		seed.reachable.Store(true)
		r.seeds = append(r.seeds, seed)
	}
	r.ctx, r.cancel = context.WithCancel(context.Background())
	return r, nil
}

// ceiling is the window ceiling for a node.
func (r *Router) ceiling(info *NodeInfo) int {
	switch {
	case r.opts.WindowCeiling > 0:
		return r.opts.WindowCeiling
	case info.WriteThreads > 0:
		return info.WriteThreads
	case info.Processors > 0:
		return 4 * info.Processors
	}
	return 4 * defaultProcessors
}

// Start begins periodic discovery (with an immediate first refresh) and,
// unless disabled, node stats polling. It does not wait for discovery.
func (r *Router) Start() {
	r.wg.Add(1)
	go r.refreshLoop()
	if r.opts.StatsInterval > 0 {
		r.wg.Add(1)
		go r.statsLoop()
	}
}

// Close stops every background goroutine and timer and waits for them.
func (r *Router) Close() {
	if r.closed.Swap(true) {
		return
	}
	r.cancel()
	r.mu.Lock()
	all := r.allNodesLocked()
	r.mu.Unlock()
	for _, n := range all {
		n.mu.Lock()
		if n.timer != nil && n.timer.Stop() {
			r.wg.Done() // the probe it would have run will not run
		}
		n.timer = nil
		n.mu.Unlock()
	}
	r.wg.Wait()
}

// must hold r.mu
func (r *Router) allNodesLocked() []*Node {
	out := append([]*Node(nil), r.seeds...)
	for _, n := range r.nodes {
		out = append(out, n)
	}
	return out
}

// Topology returns the current snapshot (nil before the first successful
// discovery).
func (r *Router) Topology() *Topology { return r.topo.Load() }

// Nodes returns the nodes requests can go to: the discovered ones whose
// address answered, or the seeds (before discovery, with routing disabled,
// or when no discovered node's address answers).
func (r *Router) Nodes() []*Node {
	if t := r.topo.Load(); t != nil && len(t.Reachable) > 0 {
		return t.Reachable
	}
	return r.seeds
}

// Seeds returns the pseudo-nodes of the configured endpoints.
func (r *Router) Seeds() []*Node { return r.seeds }

// Locate returns the healthy node holding the primary for a document, or
// nil and the reason it must be sent unrouted. A target the topology does
// not know is remembered and fetched by the next refresh (one is
// triggered).
func (r *Router) Locate(target, id, routing string) (*Node, Reason) {
	if r.opts.Disabled {
		return nil, ReasonDisabled
	}
	t := r.topo.Load()
	n, reason := t.Locate(target, id, routing)
	switch reason {
	case Routed:
		switch {
		case !n.reachable.Load():
			n, reason = nil, ReasonUnreachable
		case n.dead.Load():
			n, reason = nil, ReasonNodeUnhealthy
		}
	case ReasonUnknownIndex, ReasonNoTopology:
		r.want(target)
	case ReasonPrimaryMoving, ReasonUnassigned:
		// A new index's primaries start INITIALIZING; a relocation ends:
		// look again soon (once per snapshot, rate-limited by Trigger).
		if !t.moving.Swap(true) {
			r.Trigger(TriggerMoved)
		}
	}
	if reason != Routed && t.allDead() {
		return nil, ReasonAllNodesDown
	}
	return n, reason
}

// allDead reports whether t has nodes requests can go to and every one of
// them is marked dead (Pick then falls back to the configured endpoints).
// It stops at the first alive node: cheap unless all are dead.
func (t *Topology) allDead() bool {
	if t == nil || len(t.Reachable) == 0 {
		return false
	}
	for _, n := range t.Reachable {
		if !n.dead.Load() {
			return false
		}
	}
	return true
}

// wantedName is a target name that refreshes fetch, and whether documents
// still go to it.
type wantedName struct {
	// used is set when a document is located to the name (through the
	// topology's target, which points to it) or the name is asked for, and
	// cleared by each refresh.
	used atomic.Bool
	// lastUsed is when a refresh last found used set (or when the name was
	// first asked for); guarded by Router.mu.
	lastUsed time.Time
	// pinned names are never forgotten (Pin); guarded by Router.mu.
	pinned bool
}

// mark sets w.used, writing only when it is clear: Locate calls it for
// every document, from every core.
func (w *wantedName) mark() {
	if w != nil && !w.used.Load() {
		w.used.Store(true)
	}
}

// want records a target name to fetch at the next refresh, triggering one
// when the name is new. It reports whether the name is wanted: false for
// "" and, once maxWanted names are, for a new one.
func (r *Router) want(name string) bool { return r.wantName(name, false) != nil }

// Pin makes the router fetch name at every refresh, whether documents are
// located to it or not (the backfill receiver's indices, read through the
// topology rather than Locate). It reports whether the name is wanted
// (false once maxWanted names are).
func (r *Router) Pin(name string) bool {
	return r.wantName(name, true) != nil
}

func (r *Router) wantName(name string, pin bool) *wantedName {
	if name == "" {
		return nil
	}
	r.mu.Lock()
	w, ok := r.wanted[name]
	if !ok && len(r.wanted) < maxWanted {
		w = &wantedName{lastUsed: r.now()}
		r.wanted[name] = w
	}
	if w != nil && pin {
		w.pinned = true
	}
	r.mu.Unlock()
	w.mark()
	if !ok && w != nil {
		r.Trigger(TriggerUnknown)
	}
	return w
}

// pruneWanted forgets the names (not pinned) nothing was located to or
// asked for in the last wantedIdle (at least three refresh intervals), and
// the Seen state of names not seen for as long. Called under r.mu by each
// refresh.
func (r *Router) pruneWanted(now time.Time) {
	idle := max(wantedIdle, 3*r.opts.RefreshInterval)
	for name, w := range r.wanted {
		if w.used.Swap(false) {
			w.lastUsed = now
		} else if !w.pinned && now.Sub(w.lastUsed) > idle {
			delete(r.wanted, name)
		}
	}
	// A Seen state's next is at most RefreshInterval after the name was
	// last seen firing; it is kept as long as the name keeps being seen, so
	// that a name the cap refuses keeps its backoff.
	for name, st := range r.seen {
		if now.Sub(st.next) > idle {
			delete(r.seen, name)
		}
	}
}

// seenState rate-limits refreshes asked for by Seen, per name.
type seenState struct {
	next    time.Time
	backoff time.Duration
}

// Seen tells the router that a write to name succeeded. If the topology
// does not know name (a data stream or index that the write itself just
// created, or an alias), a refresh is triggered so that the next documents
// can be routed; for a name that stays unknown (an alias) the refreshes
// back off from MinRefreshInterval, doubling, to RefreshInterval.
func (r *Router) Seen(name string) {
	if r.opts.Disabled {
		return
	}
	if _, ok := r.topo.Load().WriteIndex(name); ok {
		return
	}
	now := r.now()
	r.mu.Lock()
	st, ok := r.seen[name]
	fire := !ok || !now.Before(st.next)
	if fire && len(r.seen) < maxWanted {
		if !ok {
			st.backoff = r.opts.MinRefreshInterval
		} else {
			st.backoff = min(2*st.backoff, r.opts.RefreshInterval)
		}
		st.next = now.Add(st.backoff)
		r.seen[name] = st
	}
	r.mu.Unlock()
	if fire && r.want(name) {
		r.Trigger(TriggerUnknown)
	}
}

// Pick chooses the node for a document that cannot be routed: the alive,
// not overloaded and not degraded node with the lowest Score among those requests can go to
// (Nodes; the coordinating-only and ingest-only ones first, roles.go),
// ties rotating. If every node is overloaded or degraded it picks among
// the alive ones; if every discovered node is dead, it picks among the
// configured endpoints, and if those are dead too it rotates over them (one
// of them may be back). With routing disabled it is plain round-robin over
// the healthy endpoints.
func (r *Router) Pick() *Node {
	start := int(r.rr.Add(1))
	if r.opts.Disabled {
		for i := range r.seeds {
			n := r.seeds[(start+i)%len(r.seeds)]
			if n.Alive() {
				return n
			}
		}
		return r.seeds[start%len(r.seeds)]
	}
	if t := r.topo.Load(); t != nil && len(t.preferred) > 0 {
		if n := bestOfPass(t.preferred, start, 1); n != nil {
			return n
		}
	}
	nodes := r.Nodes()
	if n := bestOf(nodes, start); n != nil {
		return n
	}
	if &nodes[0] != &r.seeds[0] {
		if n := bestOf(r.seeds, start); n != nil {
			return n
		}
	}
	return r.seeds[start%len(r.seeds)]
}

// bestOf returns the alive, not overloaded, not degraded node with the
// lowest Score (the alive one if all are overloaded or degraded), ties
// rotating from start; nil if every node is dead.
func bestOf(nodes []*Node, start int) *Node { return bestOfPass(nodes, start, 2) }

// bestOfPass is bestOf with passes 1: the alive, not overloaded, not
// degraded nodes only.
func bestOfPass(nodes []*Node, start, passes int) *Node {
	var best *Node
	bestScore := math.Inf(1)
	for pass := 0; pass < passes && best == nil; pass++ {
		for i := range nodes {
			n := nodes[(start+i)%len(nodes)]
			if !n.Alive() || (pass == 0 && (n.overloaded.Load() || n.degraded.Load())) {
				continue
			}
			if s := n.Score(); s < bestScore {
				best, bestScore = n, s
			}
		}
	}
	return best
}

// Trigger asks for a refresh soon. It never blocks: requests coalesce, and
// refreshes never run more often than MinRefreshInterval.
func (r *Router) Trigger(reason string) {
	select {
	case r.trigger <- reason:
	default:
		r.Coalesced.Add(1)
	}
}

func (r *Router) refreshLoop() {
	defer r.wg.Done()
	_ = r.Refresh(r.ctx, TriggerStart)
	tick := time.NewTicker(r.opts.RefreshInterval)
	defer tick.Stop()
	for {
		reason := TriggerPeriodic
		select {
		case <-r.ctx.Done():
			return
		case <-tick.C:
		case reason = <-r.trigger:
			r.refreshMu.Lock()
			wait := r.opts.MinRefreshInterval - r.now().Sub(r.lastRefresh)
			r.refreshMu.Unlock()
			if wait > 0 {
				select {
				case <-r.ctx.Done():
					return
				case <-time.After(wait):
				}
			}
		}
		_ = r.Refresh(r.ctx, reason)
	}
}

// endpoints lists where discovery calls go: seeds first, then the alive
// discovered nodes.
func (r *Router) endpoints() []string {
	out := make([]string, 0, len(r.seeds)+8)
	seen := map[string]bool{}
	for _, s := range r.seeds {
		out = append(out, s.URL())
		seen[s.URL()] = true
	}
	if t := r.topo.Load(); t != nil {
		for _, n := range t.Nodes {
			if u := n.URL(); !seen[u] && n.Alive() && n.reachable.Load() {
				out = append(out, u)
				seen[u] = true
			}
		}
	}
	return out
}

// get runs one discovery call against the first endpoint that answers. An
// HTTP error status is an answer (it comes from the cluster, not from a
// dead node); connection errors move on to the next endpoint.
func (r *Router) get(ctx context.Context, eps []string, call, path string, v any) error {
	var last error
	for _, ep := range eps {
		cctx, cancel := context.WithTimeout(ctx, r.opts.RequestTimeout)
		err := getJSON(cctx, r.opts.Client, call, ep, path, v)
		cancel()
		if err == nil {
			return nil
		}
		var he *HTTPError
		if errors.As(err, &he) || errors.Is(err, errMalformed) || ctx.Err() != nil {
			return err
		}
		last = err
	}
	return fmt.Errorf("routing: %s: no endpoint answered: %w", call, last)
}

// forbidden logs one warning per refused call and counts it.
func (r *Router) forbidden(call string, err error) {
	r.Forbidden.Add(1)
	if _, dup := r.warned.LoadOrStore(call, struct{}{}); !dup {
		r.log.Warn("OpenSearch refused a discovery call; documents that need it are sent unrouted",
			zap.String("call", call), zap.String("missing_privilege", privilege[call]), zap.Error(err))
	}
}

// Refresh discovers the topology now and swaps it in. On failure the
// previous snapshot stays in place and the error is counted and returned.
func (r *Router) Refresh(ctx context.Context, trigger string) error {
	r.refreshMu.Lock()
	defer r.refreshMu.Unlock()
	var t *Topology
	var plan *nodePlan
	var err error
	if r.opts.Disabled {
		err = r.refreshLimits(ctx)
	} else if t, plan, err = r.discover(ctx); err == nil {
		t.Reachable = r.probeReach(ctx, plan)
		t.preferred = preferredOf(t.Reachable)
	}
	r.lastRefresh = r.now()
	outcome := "ok"
	switch {
	case err == nil && t == nil:
	case err == nil:
		r.adoptNodes(plan)
		r.topo.Store(t)
	case isForbidden(err):
		outcome = "forbidden"
	default:
		outcome = "error"
		r.RefreshErrors.Add(1)
		switch {
		case ctx.Err() != nil:
		case r.topo.Load() == nil && !r.startWarned:
			// Until a discovery succeeds nothing is routed: say why once,
			// at start, not only when data flows.
			r.startWarned = true
			r.log.Warn("OpenSearch topology discovery failed; documents are sent unrouted through the configured endpoints until it succeeds",
				zap.String("reason", failureReason(err)), zap.Strings("endpoints", r.opts.Seeds), zap.Error(err))
		default:
			r.log.Debug("topology refresh failed; keeping the previous snapshot", zap.String("trigger", trigger), zap.Error(err))
		}
	}
	if r.opts.OnRefresh != nil {
		r.opts.OnRefresh(trigger, outcome)
	}
	return err
}

// discover builds a new snapshot from the cluster, and the changes to the
// persistent nodes that go with it: Refresh applies them only when all of
// discovery succeeded, so a refresh that fails half-way (a 503 during a
// failover) leaves the nodes as the snapshot still in use knows them (a
// dead node keeps its resurrection timer).
func (r *Router) discover(ctx context.Context) (*Topology, *nodePlan, error) {
	eps := r.endpoints()

	var ni nodesInfoResponse
	if err := r.get(ctx, eps, "nodes", pathNodesInfo, &ni); err != nil {
		if isForbidden(err) {
			r.forbidden("nodes", err)
		}
		return nil, nil, err
	}
	infos, err := parseNodes(&ni, r.scheme)
	if err != nil {
		return nil, nil, err
	}

	r.mu.Lock()
	r.pruneWanted(r.now())
	wanted := maps.Clone(r.wanted)
	r.mu.Unlock()

	t := &Topology{
		Indices:     map[string]*Index{},
		DataStreams: map[string]string{},
		targets:     map[string]target{},
		Fetched:     r.now(),
	}
	plan := r.planNodes(infos)
	t.Nodes = plan.nodes
	if len(wanted) == 0 {
		return t, plan, nil
	}

	// Data streams among the wanted names, and their write indices.
	var ds dataStreamsResponse
	if err := r.get(ctx, eps, "data_streams", pathDataStreams, &ds); err != nil {
		if !isForbidden(err) {
			return nil, nil, err
		}
		r.forbidden("data_streams", err)
	}
	writeIdx := ds.writeIndices()
	var others []string
	for w := range wanted {
		if _, ok := writeIdx[w]; !ok {
			others = append(others, w)
		}
	}
	aliases, err := r.resolveAliases(ctx, eps, others)
	if err != nil {
		return nil, nil, err
	}
	concrete := map[string]bool{}
	for w := range wanted {
		if wi, ok := writeIdx[w]; ok {
			t.DataStreams[w] = wi
			concrete[wi] = true
		} else if a, ok := aliases[w]; ok {
			concrete[a.index] = true
		} else {
			concrete[w] = true
		}
	}
	names := make([]string, 0, len(concrete))
	for n := range concrete {
		names = append(names, n)
	}

	layouts := map[string]Layout{}
	for _, b := range batches(names) {
		var md metadataResponse
		if err := r.get(ctx, eps, "metadata", fmt.Sprintf(pathMetadata, b), &md); err != nil {
			if isForbidden(err) {
				r.forbidden("metadata", err)
			}
			return nil, nil, err
		}
		ls, err := md.layouts()
		if err != nil {
			return nil, nil, err
		}
		for k, v := range ls {
			if concrete[k] { // an alias or pattern may expand to other names
				layouts[k] = v
			}
		}
	}
	for name, l := range layouts {
		t.Indices[name] = &Index{Name: name, Layout: l, Shards: make([]Shard, l.Shards)}
	}

	found := make([]string, 0, len(layouts))
	for n := range layouts {
		found = append(found, n)
	}
	byID, byName := map[string]*Node{}, map[string]*Node{}
	for _, n := range t.Nodes {
		byID[n.ID()] = n
		byName[n.Name()] = n
	}
	for _, b := range batches(found) {
		var rows []catShard
		if err := r.get(ctx, eps, "shards", fmt.Sprintf(pathCatShards, b), &rows); err != nil {
			if isForbidden(err) {
				r.forbidden("shards", err)
			}
			return nil, nil, err
		}
		if err := t.applyShards(rows, byID, byName); err != nil {
			return nil, nil, err
		}
	}

	for w, use := range wanted {
		name, ds, alias, routing := w, false, false, ""
		if wi, ok := t.DataStreams[w]; ok {
			name, ds = wi, true
		} else if a, ok := aliases[w]; ok {
			name, alias, routing = a.index, true, a.routing
		}
		if idx, ok := t.Indices[name]; ok {
			t.targets[w] = target{index: idx, dataStream: ds, alias: alias, routing: routing, use: use}
		}
	}
	return t, plan, nil
}

// applyShards fills the shard table from _cat/shards rows. A copy's node is
// found by id; by name only when the row has no id (names need not be
// unique: two nodes on one host may share the default one).
func (t *Topology) applyShards(rows []catShard, byID, byName map[string]*Node) error {
	for _, row := range rows {
		idx, ok := t.Indices[row.Index]
		if !ok {
			continue
		}
		s, err := strconv.Atoi(row.Shard)
		if err != nil || s < 0 || s >= len(idx.Shards) {
			return fmt.Errorf("routing: shards: %w: shard %q of %q (index has %d)", errMalformed, row.Shard, row.Index, len(idx.Shards))
		}
		c := ShardCopy{State: parseShardState(row.State)}
		switch {
		case row.ID != nil:
			c.Node = byID[*row.ID]
		case row.Node != nil:
			c.Node = byName[relocatingSource(*row.Node)]
		}
		switch row.Prirep {
		case "p":
			idx.Shards[s].Primary = c
		case "r":
			idx.Shards[s].Replicas = append(idx.Shards[s].Replicas, c)
		default:
			return fmt.Errorf("routing: shards: %w: prirep %q", errMalformed, row.Prirep)
		}
	}
	return nil
}

// nodePlan maps discovered NodeInfos onto persistent Nodes: known ids keep
// their state (window, health), new ids get fresh state. adoptNodes applies
// it.
type nodePlan struct {
	infos []*NodeInfo
	nodes []*Node // per info: the known node, or a new one
	fresh []bool  // nodes[i] is new
}

// planNodes matches infos with the known nodes without changing them.
func (r *Router) planNodes(infos []*NodeInfo) *nodePlan {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := &nodePlan{infos: infos, nodes: make([]*Node, 0, len(infos)), fresh: make([]bool, 0, len(infos))}
	for _, info := range infos {
		n, ok := r.nodes[info.ID]
		if !ok {
			n = newNode(info, r.ceiling(info), r.opts.WindowCeiling > 0)
		}
		p.nodes = append(p.nodes, n)
		p.fresh = append(p.fresh, !ok)
	}
	return p
}

// adoptNodes applies a plan: known nodes take their new info, new ones are
// registered, ids no longer present are retired.
func (r *Router) adoptNodes(p *nodePlan) {
	r.mu.Lock()
	defer r.mu.Unlock()
	present := map[string]bool{}
	for i, info := range p.infos {
		n := p.nodes[i]
		present[info.ID] = true
		if p.fresh[i] {
			// A discovered node that answers at a seed's address inherits
			// that seed's health.
			for _, s := range r.seeds {
				if s.URL() == info.URL && s.dead.Load() {
					n.dead.Store(true)
					r.scheduleProbe(n)
				}
			}
			r.nodes[info.ID] = n
		} else {
			n.info.Store(info)
			if !n.ceilingSet {
				n.window.SetCeiling(r.ceiling(info))
			}
		}
	}
	for id, n := range r.nodes {
		if !present[id] {
			delete(r.nodes, id)
			n.mu.Lock()
			n.retired = true
			if n.timer != nil && n.timer.Stop() {
				r.wg.Done()
			}
			n.timer = nil
			n.mu.Unlock()
		}
	}
}
