package opensearchrouted

import (
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"

	"github.com/opensearchrouted/opensearchrouted/internal/otelv1"
)

// Attributes that override dataset and namespace per record or resource.
const (
	attrDataset   = "data_stream.dataset"
	attrNamespace = "data_stream.namespace"
)

// targetCache names the index or data stream each record goes to, building
// each distinct name once.
type targetCache struct {
	fixed     string // logs_index / traces_index, when set
	prefix    string // "ss4o_logs-" or "ss4o_traces-"
	dataset   string
	namespace string
	def       string // the name for the configured dataset and namespace

	mu    sync.RWMutex
	names map[[2]string]string
}

func (t *targetCache) init(cfg *Config, sig signal) {
	t.prefix, t.fixed = "ss4o_logs-", cfg.LogsIndex
	if sig == signalTraces {
		t.prefix, t.fixed = "ss4o_traces-", cfg.TracesIndex
	}
	if sig == signalTraces && cfg.otelV1() && t.fixed == "" {
		t.fixed = otelv1.DefaultSpanAlias
	}
	t.dataset, t.namespace = cfg.Dataset, cfg.Namespace
	t.def = t.prefix + t.dataset + "-" + t.namespace
	t.names = map[[2]string]string{}
}

// origin is what a resource's records default to: the configured dataset
// and namespace, or the resource's own attributes where they name valid
// ones. It is found once per scope of records, not once per record.
type origin struct{ dataset, namespace string }

// resource returns the origin of the records of a resource with attributes
// res.
func (t *targetCache) resource(res pcommon.Map) origin {
	o := origin{t.dataset, t.namespace}
	if t.fixed == "" {
		o.override(res)
	}
	return o
}

// override replaces o's parts by m's data_stream.* attributes that are
// valid parts of an index name.
func (o *origin) override(m pcommon.Map) {
	if m.Len() == 0 {
		return
	}
	if v, ok := m.Get(attrDataset); ok && v.Type() == pcommon.ValueTypeStr && validPart(v.Str()) {
		o.dataset = v.Str()
	}
	if v, ok := m.Get(attrNamespace); ok && v.Type() == pcommon.ValueTypeStr && validPart(v.Str()) {
		o.namespace = v.Str()
	}
}

// record returns the target of a record with attributes rec under a
// resource of origin o: the fixed index if configured, else
// ss4o_<type>-<dataset>-<namespace>, where the record's attributes override
// the resource's, which override the configuration. A value that is not a
// valid part of an index name (uppercase, '-', '*', ...) is ignored, so
// that a bad attribute cannot make records unwritable.
func (t *targetCache) record(o origin, rec pcommon.Map) string {
	if t.fixed != "" {
		return t.fixed
	}
	o.override(rec)
	if o.dataset == t.dataset && o.namespace == t.namespace {
		return t.def
	}
	key := [2]string{o.dataset, o.namespace}
	t.mu.RLock()
	n, ok := t.names[key]
	t.mu.RUnlock()
	if ok {
		return n
	}
	n = t.prefix + o.dataset + "-" + o.namespace
	t.mu.Lock()
	if len(t.names) < 10000 {
		t.names[key] = n
	}
	t.mu.Unlock()
	return n
}

func validPart(s string) bool {
	return s != "" && checkNamePart(s) == nil
}
