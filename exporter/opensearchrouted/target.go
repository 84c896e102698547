package opensearchrouted

import (
	"sync"

	"go.opentelemetry.io/collector/pdata/pcommon"
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
	t.dataset, t.namespace = cfg.Dataset, cfg.Namespace
	t.def = t.prefix + t.dataset + "-" + t.namespace
	t.names = map[[2]string]string{}
}

// name returns the target for a record: the fixed index if configured,
// else ss4o_<type>-<dataset>-<namespace>, where the record's attributes
// override the resource's, which override the configuration. A value that
// is not a valid part of an index name (uppercase, '-', '*', ...) is
// ignored, so that a bad attribute cannot make records unwritable.
func (t *targetCache) name(res, rec pcommon.Map) string {
	if t.fixed != "" {
		return t.fixed
	}
	ds, ns := t.dataset, t.namespace
	for _, m := range [2]pcommon.Map{res, rec} {
		if v, ok := m.Get(attrDataset); ok && v.Type() == pcommon.ValueTypeStr && validPart(v.Str()) {
			ds = v.Str()
		}
		if v, ok := m.Get(attrNamespace); ok && v.Type() == pcommon.ValueTypeStr && validPart(v.Str()) {
			ns = v.Str()
		}
	}
	if ds == t.dataset && ns == t.namespace {
		return t.def
	}
	key := [2]string{ds, ns}
	t.mu.RLock()
	n, ok := t.names[key]
	t.mu.RUnlock()
	if ok {
		return n
	}
	n = t.prefix + ds + "-" + ns
	t.mu.Lock()
	if len(t.names) < 10000 {
		t.names[key] = n
	}
	t.mu.Unlock()
	return n
}

func validPart(s string) bool {
	return s != "" && len(s) <= 100 && checkNamePart(s) == nil
}
