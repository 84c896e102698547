package routing

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"syscall"

	"github.com/opensearchrouted/opensearchrouted/internal/httpio"
)

// Discovery endpoints (spec §3). filter_path keeps responses small.
const (
	pathNodesInfo = "/_nodes/http,os,thread_pool?filter_path=" +
		"nodes.*.name,nodes.*.roles,nodes.*.attributes,nodes.*.http.publish_address," +
		"nodes.*.http.max_content_length_in_bytes,nodes.*.os.allocated_processors," +
		"nodes.*.thread_pool.write.size,nodes.*.thread_pool.write.queue_size"
	pathDataStreams = "/_data_stream?filter_path=data_streams.name,data_streams.indices.index_name"
	pathMetadata    = "/_cluster/state/metadata/%s?filter_path=" +
		"metadata.indices.*.state,metadata.indices.*.routing_num_shards," +
		"metadata.indices.*.settings.index.number_of_shards," +
		"metadata.indices.*.settings.index.routing_partition_size"
	// id is the node id: node names need not be unique. (_cat/shards
	// answers 400 index_closed_exception if one of the names is a closed
	// index: closed ones are left out of it.)
	pathCatShards = "/_cat/shards/%s?format=json&h=index,shard,prirep,state,node,id"
	pathNodeStats = "/_nodes/stats/jvm,breaker,thread_pool?filter_path=" +
		"nodes.*.jvm.mem.heap_used_percent,nodes.*.breakers,nodes.*.thread_pool.write.rejected"

	// maxNamesLen keeps a URL's list of index names short.
	maxNamesLen = 2000
)

// privilege names the privilege each discovery call needs, for the one
// warning logged when it is refused.
var privilege = map[string]string{
	"nodes":        "cluster:monitor/nodes/info",
	"data_streams": "indices:admin/data_stream/get (view_index_metadata)",
	"metadata":     "cluster:monitor/state",
	"shards":       "cluster:monitor/state and indices:monitor/stats",
	"aliases":      "indices:admin/aliases/get (view_index_metadata)",
	"node_stats":   "cluster:monitor/nodes/stats",
}

// HTTPError is a non-2xx answer to a discovery call.
type HTTPError struct {
	Call   string
	Status int
}

func (e *HTTPError) Error() string {
	return fmt.Sprintf("routing: %s: HTTP %d", e.Call, e.Status)
}

// Forbidden reports a 401 or 403.
func (e *HTTPError) Forbidden() bool {
	return e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden
}

func isForbidden(err error) bool {
	var he *HTTPError
	return errors.As(err, &he) && he.Forbidden()
}

// failureReason names why a discovery call failed, for the start-up
// warning: refused (nothing listens), tls (handshake or certificate),
// forbidden (401/403), HTTP <status>, malformed response, or unreachable
// (timeouts, no route, unknown host, reset).
func failureReason(err error) string {
	var he *HTTPError
	var cve *tls.CertificateVerificationError
	var rhe tls.RecordHeaderError
	var uae x509.UnknownAuthorityError
	var hne x509.HostnameError
	switch {
	case errors.As(err, &he) && he.Forbidden():
		return "forbidden"
	case errors.As(err, &he):
		return fmt.Sprintf("HTTP %d", he.Status)
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.As(err, &cve), errors.As(err, &rhe), errors.As(err, &uae), errors.As(err, &hne),
		strings.Contains(err.Error(), "tls: "), strings.Contains(err.Error(), "x509: "),
		strings.Contains(err.Error(), "HTTP response to HTTPS client"):
		return "tls"
	case errors.Is(err, errMalformed):
		return "malformed response"
	}
	return "unreachable"
}

// errMalformed marks a response that could not be understood.
var errMalformed = errors.New("malformed response")

// getJSON GETs base+path and decodes the JSON body into v.
func getJSON(ctx context.Context, c *http.Client, call, base, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	if err := httpio.DecodeBody(resp); err != nil { // a user's Accept-Encoding header
		resp.Body.Close()
		return fmt.Errorf("routing: %s: %w: %v", call, errMalformed, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		return &HTTPError{Call: call, Status: resp.StatusCode}
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("routing: %s: %w: %v", call, errMalformed, err)
	}
	return nil
}

// --- response shapes ---

type nodesInfoResponse struct {
	Nodes map[string]struct {
		Name       string            `json:"name"`
		Roles      []string          `json:"roles"`
		Attributes map[string]string `json:"attributes"`
		HTTP       *struct {
			PublishAddress   string `json:"publish_address"`
			MaxContentLength int64  `json:"max_content_length_in_bytes"`
		} `json:"http"`
		OS struct {
			AllocatedProcessors int `json:"allocated_processors"`
		} `json:"os"`
		ThreadPool struct {
			Write struct {
				Size      int `json:"size"`
				QueueSize int `json:"queue_size"`
			} `json:"write"`
		} `json:"thread_pool"`
	} `json:"nodes"`
}

// publishHostPort returns the host:port to reach an http.publish_address,
// which is "ip:port" or "hostname/ip:port" (IPv6 in brackets): the ip, or,
// with byName (https: certificates are usually issued for names), the
// hostname when the node publishes one.
func publishHostPort(addr string, byName bool) (string, error) {
	name := ""
	if i := strings.LastIndexByte(addr, '/'); i >= 0 {
		name, addr = addr[:i], addr[i+1:]
	}
	host, port, err := splitHostPort(addr)
	if err == nil && byName && name != "" {
		host = name
	}
	if err != nil {
		return "", fmt.Errorf("publish_address %q: %w", addr, err)
	}
	if strings.IndexByte(host, ':') >= 0 {
		host = "[" + host + "]"
	}
	return host + ":" + port, nil
}

func splitHostPort(s string) (host, port string, err error) {
	u, err := url.Parse("//" + s)
	if err != nil || u.Port() == "" || u.Hostname() == "" {
		return "", "", errMalformed
	}
	return u.Hostname(), u.Port(), nil
}

// parseNodes turns _nodes/http,os,thread_pool into NodeInfos (sorted by
// id), using scheme for the URLs. Nodes without HTTP are left out.
func parseNodes(r *nodesInfoResponse, scheme string) ([]*NodeInfo, error) {
	if len(r.Nodes) == 0 {
		return nil, fmt.Errorf("routing: nodes: %w: no nodes", errMalformed)
	}
	out := make([]*NodeInfo, 0, len(r.Nodes))
	for id, n := range r.Nodes {
		if n.HTTP == nil || n.HTTP.PublishAddress == "" {
			continue
		}
		hp, err := publishHostPort(n.HTTP.PublishAddress, scheme == "https")
		if err != nil {
			return nil, fmt.Errorf("routing: nodes: %w: %v", errMalformed, err)
		}
		out = append(out, &NodeInfo{
			ID:               id,
			Name:             n.Name,
			URL:              scheme + "://" + hp,
			Roles:            n.Roles,
			Zone:             n.Attributes["zone"],
			Processors:       n.OS.AllocatedProcessors,
			WriteThreads:     n.ThreadPool.Write.Size,
			WriteQueue:       n.ThreadPool.Write.QueueSize,
			MaxContentLength: n.HTTP.MaxContentLength,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

type dataStreamsResponse struct {
	DataStreams []struct {
		Name    string `json:"name"`
		Indices []struct {
			IndexName string `json:"index_name"`
		} `json:"indices"`
	} `json:"data_streams"`
}

// writeIndices maps each data stream to its write index: the last entry of
// its backing indices.
func (r *dataStreamsResponse) writeIndices() map[string]string {
	out := make(map[string]string, len(r.DataStreams))
	for _, ds := range r.DataStreams {
		if ds.Name == "" || len(ds.Indices) == 0 {
			continue
		}
		out[ds.Name] = ds.Indices[len(ds.Indices)-1].IndexName
	}
	return out
}

type metadataResponse struct {
	Metadata struct {
		Indices map[string]struct {
			State            string `json:"state"` // "open" or "close"
			RoutingNumShards int    `json:"routing_num_shards"`
			Settings         struct {
				Index struct {
					NumberOfShards       string `json:"number_of_shards"`
					RoutingPartitionSize string `json:"routing_partition_size"`
				} `json:"index"`
			} `json:"settings"`
		} `json:"indices"`
	} `json:"metadata"`
}

// layouts returns the layout of every open index in the response. An index
// whose layout cannot be read or is impossible is an error: never guess. A
// closed index is left out: nothing can be written to it, and naming it to
// _cat/shards fails the whole call.
func (r *metadataResponse) layouts() (map[string]Layout, error) {
	out := make(map[string]Layout, len(r.Metadata.Indices))
	for name, im := range r.Metadata.Indices {
		if im.State == "close" {
			continue
		}
		n, err := strconv.Atoi(im.Settings.Index.NumberOfShards)
		if err != nil {
			return nil, fmt.Errorf("routing: metadata of %q: %w: number_of_shards %q", name, errMalformed, im.Settings.Index.NumberOfShards)
		}
		p := 1
		if s := im.Settings.Index.RoutingPartitionSize; s != "" {
			if p, err = strconv.Atoi(s); err != nil {
				return nil, fmt.Errorf("routing: metadata of %q: %w: routing_partition_size %q", name, errMalformed, s)
			}
		}
		if im.RoutingNumShards == 0 {
			return nil, fmt.Errorf("routing: metadata of %q: %w: no routing_num_shards", name, errMalformed)
		}
		l := Layout{Shards: n, RoutingShards: im.RoutingNumShards, PartitionSize: p}
		if err := l.Validate(); err != nil {
			return nil, fmt.Errorf("routing: metadata of %q: %w", name, err)
		}
		out[name] = l
	}
	return out, nil
}

// catShard is one row of _cat/shards?format=json: every value a string,
// node and id null when unassigned (id is the node's id, the source's
// while relocating).
type catShard struct {
	Index  string  `json:"index"`
	Shard  string  `json:"shard"`
	Prirep string  `json:"prirep"`
	State  string  `json:"state"`
	Node   *string `json:"node"`
	ID     *string `json:"id"`
}

// relocatingSource returns the source node name of a _cat/shards node value
// "src -> dstIp dstId dstName", or the value itself.
func relocatingSource(node string) string {
	if i := strings.Index(node, " -> "); i >= 0 {
		return node[:i]
	}
	return node
}

// batches splits names into comma-joined groups of at most maxNamesLen
// bytes, each name path-escaped.
func batches(names []string) []string {
	var out []string
	var b strings.Builder
	for _, n := range names {
		e := url.PathEscape(n)
		if b.Len() > 0 && b.Len()+1+len(e) > maxNamesLen {
			out = append(out, b.String())
			b.Reset()
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(e)
	}
	if b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}

type nodeStatsResponse struct {
	Nodes map[string]struct {
		JVM struct {
			Mem struct {
				HeapUsedPercent *int `json:"heap_used_percent"`
			} `json:"mem"`
		} `json:"jvm"`
		Breakers map[string]struct {
			Limit     int64 `json:"limit_size_in_bytes"`
			Estimated int64 `json:"estimated_size_in_bytes"`
		} `json:"breakers"`
		ThreadPool struct {
			Write struct {
				Rejected *int64 `json:"rejected"`
			} `json:"write"`
		} `json:"thread_pool"`
	} `json:"nodes"`
}

// Overload thresholds (seed 000 §9).
const (
	heapOverloadPercent = 85
	breakerOverload     = 0.90
)
