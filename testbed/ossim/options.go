package ossim

import (
	"fmt"
	"runtime"
	"time"
)

// Options configure a Cluster. The zero value of every field means its
// documented default; negative values are errors.
type Options struct {
	// Nodes is the number of nodes. Default 1.
	Nodes int
	// Zones gives node i the zone attribute Zones[i % len(Zones)]. Empty:
	// nodes have no zone attribute and every hop counts as same-zone.
	Zones []string
	// BasePort, when non-zero, puts node i on 127.0.0.1:BasePort+i.
	// Zero: every node gets a free port.
	BasePort int
	// Roles[i] are node i's roles (node.roles). Missing or nil: the
	// default cluster_manager, data, ingest, remote_cluster_client. A node
	// without the data role holds no shard copy; one without
	// cluster_manager is never the elected manager; [] is coordinating-only.
	Roles [][]string
	// ClusterName is returned by GET /. Default "ossim".
	ClusterName string

	// HopLatency is the one-way latency of an internal hop between two
	// nodes of the same zone (paid on the request and on the response).
	// Default 250µs; set NoHopLatency for none.
	HopLatency time.Duration
	// CrossZoneHopLatency is the one-way latency between zones. Default 1ms.
	CrossZoneHopLatency time.Duration
	// NoHopLatency makes internal hops free (HopLatency and
	// CrossZoneHopLatency are then ignored).
	NoHopLatency bool
	// NoHTTPCompression answers uncompressed whatever the client accepts,
	// as OpenSearch with http.compression: false (default: gzip when the
	// client accepts it, as OpenSearch's default; Go's HTTP client asks for
	// it on every request).
	NoHTTPCompression bool

	// WriteThreads is the size of each node's write thread pool. Default:
	// runtime.NumCPU(), like OpenSearch's allocated processors.
	WriteThreads int
	// WriteQueue is the write queue size of each node. Default 10000.
	// A negative value is an error; use SetQueue(i, 0) for no queue.
	WriteQueue int
	// ServiceBase and ServicePerItem model a shard-level write: it holds a
	// worker for ServiceBase + ServicePerItem × items (by waiting, not by
	// burning CPU). Default 0.
	ServiceBase, ServicePerItem time.Duration

	// MaxContentLength is http.max_content_length, checked on the
	// (decompressed) request body. Default 100 MiB.
	MaxContentLength int64

	// DetectionDelay is how long after a node stops the cluster notices
	// (promotes its replicas, reallocates). Default 100ms.
	DetectionDelay time.Duration
	// NodeLeftDelay is index.unassigned.node_left.delayed_timeout: how long
	// a replica lost with its node stays UNASSIGNED before it is allocated
	// elsewhere. Default 0 (OpenSearch's default is 1m).
	NodeLeftDelay time.Duration
	// RecoveryTime is how long a new replica stays INITIALIZING and a
	// relocating shard RELOCATING. Default 50ms.
	RecoveryTime time.Duration
	// PrimaryWait is how long a write waits for an unassigned or unreachable
	// primary before it fails with 503 unavailable_shards_exception
	// (OpenSearch: the bulk timeout, 1m). Default 2s.
	PrimaryWait time.Duration
	// HopTimeout bounds one internal HTTP hop. Default 10s.
	HopTimeout time.Duration
	// DefaultShards and DefaultReplicas apply to auto-created indices and
	// to indices created without settings. Defaults 1 and 1, like
	// OpenSearch 2.x. Use a negative DefaultReplicas for 0 replicas.
	DefaultShards, DefaultReplicas int

	// Version is the OpenSearch release the emulator answers as (GET /)
	// and whose document refusals it reproduces: "2.19.6" (default) or
	// "3.9.0".
	Version string
}

const (
	defaultHopLatency          = 250 * time.Microsecond
	defaultCrossZoneHopLatency = time.Millisecond
	defaultWriteQueue          = 10000
	defaultMaxContentLength    = 100 << 20
)

// withDefaults validates o and fills in defaults.
func (o Options) withDefaults() (Options, error) {
	neg := func(name string, v int64) error {
		if v < 0 {
			return fmt.Errorf("ossim: Options.%s must not be negative, got %d", name, v)
		}
		return nil
	}
	for _, c := range []struct {
		name string
		v    int64
	}{
		{"Nodes", int64(o.Nodes)}, {"BasePort", int64(o.BasePort)},
		{"HopLatency", int64(o.HopLatency)}, {"CrossZoneHopLatency", int64(o.CrossZoneHopLatency)},
		{"WriteThreads", int64(o.WriteThreads)}, {"WriteQueue", int64(o.WriteQueue)},
		{"ServiceBase", int64(o.ServiceBase)}, {"ServicePerItem", int64(o.ServicePerItem)},
		{"MaxContentLength", o.MaxContentLength}, {"DetectionDelay", int64(o.DetectionDelay)},
		{"NodeLeftDelay", int64(o.NodeLeftDelay)}, {"RecoveryTime", int64(o.RecoveryTime)},
		{"PrimaryWait", int64(o.PrimaryWait)}, {"HopTimeout", int64(o.HopTimeout)},
		{"DefaultShards", int64(o.DefaultShards)},
	} {
		if err := neg(c.name, c.v); err != nil {
			return o, err
		}
	}
	if o.Nodes == 0 {
		o.Nodes = 1
	}
	if o.Nodes > 100 {
		return o, fmt.Errorf("ossim: Options.Nodes must be at most 100, got %d", o.Nodes)
	}
	if o.BasePort != 0 && o.BasePort+o.Nodes-1 > 65535 {
		return o, fmt.Errorf("ossim: Options.BasePort %d leaves no room for %d nodes", o.BasePort, o.Nodes)
	}
	if len(o.Roles) > o.Nodes {
		return o, fmt.Errorf("ossim: Options.Roles has %d entries for %d nodes", len(o.Roles), o.Nodes)
	}
	for i, z := range o.Zones {
		if z == "" {
			return o, fmt.Errorf("ossim: Options.Zones[%d] is empty", i)
		}
	}
	if o.ClusterName == "" {
		o.ClusterName = "ossim"
	}
	if o.NoHopLatency {
		o.HopLatency, o.CrossZoneHopLatency = 0, 0
	} else {
		if o.HopLatency == 0 {
			o.HopLatency = defaultHopLatency
		}
		if o.CrossZoneHopLatency == 0 {
			o.CrossZoneHopLatency = defaultCrossZoneHopLatency
		}
	}
	if o.WriteThreads == 0 {
		o.WriteThreads = runtime.NumCPU()
	}
	if o.WriteQueue == 0 {
		o.WriteQueue = defaultWriteQueue
	}
	if o.MaxContentLength == 0 {
		o.MaxContentLength = defaultMaxContentLength
	}
	if o.DetectionDelay == 0 {
		o.DetectionDelay = 100 * time.Millisecond
	}
	if o.RecoveryTime == 0 {
		o.RecoveryTime = 50 * time.Millisecond
	}
	if o.PrimaryWait == 0 {
		o.PrimaryWait = 2 * time.Second
	}
	if o.HopTimeout == 0 {
		o.HopTimeout = 10 * time.Second
	}
	if o.DefaultShards == 0 {
		o.DefaultShards = 1
	}
	switch {
	case o.DefaultReplicas == 0:
		o.DefaultReplicas = 1
	case o.DefaultReplicas < 0:
		o.DefaultReplicas = 0
	}
	switch o.Version {
	case "":
		o.Version = Version
	case Version, "3.9.0":
	default:
		return o, fmt.Errorf("ossim: Options.Version must be %s or 3.9.0, got %q", Version, o.Version)
	}
	return o, nil
}

// CalibratedService returns a ServiceBase and ServicePerItem measured on
// real OpenSearch 2.19.6 on a 2-core machine (README, "Service time"):
// what a shard-level write of SS4O log documents costs one copy, 3 ms +
// 100 µs per document.
//
//	o.ServiceBase, o.ServicePerItem = ossim.CalibratedService()
func CalibratedService() (base, perItem time.Duration) {
	return calibratedServiceBase, calibratedServicePerItem
}

const (
	calibratedServiceBase    = 3 * time.Millisecond
	calibratedServicePerItem = 100 * time.Microsecond
)
