package ossim

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/opensearchrouted/opensearchrouted/internal/routing"
)

// hashRouting is routing.Hash (kept as a name for the search side).
func hashRouting(s string) int32 { return routing.Hash(s) }

// shardOfSum is the last step of the routing formula for a search with
// routing on a partitioned index, which targets the p consecutive offsets
// hash(routing)+k: floorMod(sum, R) / (R/N). internal/routing exposes the
// document side only (Layout.Shard); TestShardOfSumAgreesWithRouting checks
// that this step agrees with it for every offset.
func shardOfSum(sum int32, l routing.Layout) int {
	m := int(sum) % l.RoutingShards
	if m < 0 {
		m += l.RoutingShards
	}
	return m / (l.RoutingShards / l.Shards)
}

// ---- query evaluation ----

type docView struct {
	node  string // id of the node that served the hit
	index string
	shard int
	pos   int
	d     storedDoc
	src   map[string]any // decoded lazily
}

func (v *docView) source() map[string]any {
	if v.src == nil {
		dec := json.NewDecoder(bytes.NewReader(v.d.source))
		dec.UseNumber()
		if err := dec.Decode(&v.src); err != nil || v.src == nil {
			v.src = map[string]any{}
		}
	}
	return v.src
}

func (v *docView) field(path string) (any, bool) {
	switch path {
	case "_id":
		return v.d.id, true
	case "_index":
		return v.index, true
	case "_routing":
		return v.d.routing, v.d.routing != ""
	}
	if x, ok := lookupPath(v.source(), path); ok {
		return x, true
	}
	if base, ok := strings.CutSuffix(path, ".keyword"); ok {
		return lookupPath(v.source(), base)
	}
	return nil, false
}

func lookupPath(m map[string]any, path string) (any, bool) {
	if x, ok := m[path]; ok {
		return x, true
	}
	for i := 0; i < len(path); i++ {
		if path[i] == '.' {
			if sub, ok := m[path[:i]].(map[string]any); ok {
				if x, ok := lookupPath(sub, path[i+1:]); ok {
					return x, true
				}
			}
		}
	}
	return nil, false
}

// scalar is a comparable value: numbers (and dates, as epoch millis)
// order before strings.
type scalar struct {
	isNum bool
	num   float64
	str   string
	raw   any // value as sort output
}

var dateLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04:05Z0700", "2006-01-02 15:04:05", "2006-01-02"}

func parseDate(s string) (time.Time, bool) {
	if len(s) < 10 || s[4] != '-' {
		return time.Time{}, false
	}
	for _, l := range dateLayouts {
		if t, err := time.Parse(l, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

func toScalar(v any) (scalar, bool) {
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			return scalar{isNum: true, num: float64(i), raw: i}, true
		}
		f, err := x.Float64()
		if err != nil {
			return scalar{}, false
		}
		return scalar{isNum: true, num: f, raw: f}, true
	case float64:
		return scalar{isNum: true, num: x, raw: x}, true
	case int64:
		return scalar{isNum: true, num: float64(x), raw: x}, true
	case int:
		return scalar{isNum: true, num: float64(x), raw: int64(x)}, true
	case string:
		if t, ok := parseDate(x); ok {
			ms := t.UnixMilli()
			return scalar{isNum: true, num: float64(ms), raw: ms}, true
		}
		return scalar{str: x, raw: x}, true
	case bool:
		if x {
			return scalar{isNum: true, num: 1, raw: true}, true
		}
		return scalar{isNum: true, num: 0, raw: false}, true
	}
	return scalar{}, false
}

func cmpScalar(a, b scalar) int {
	switch {
	case a.isNum && b.isNum:
		switch {
		case a.num < b.num:
			return -1
		case a.num > b.num:
			return 1
		}
		return 0
	case a.isNum:
		return -1
	case b.isNum:
		return 1
	}
	return strings.Compare(a.str, b.str)
}

// values returns the scalars of a field (arrays flattened).
func (v *docView) values(path string) []scalar {
	x, ok := v.field(path)
	if !ok {
		return nil
	}
	var out []scalar
	var add func(any)
	add = func(x any) {
		if arr, ok := x.([]any); ok {
			for _, e := range arr {
				add(e)
			}
			return
		}
		if s, ok := toScalar(x); ok {
			out = append(out, s)
		}
	}
	add(x)
	return out
}

type query func(*docView) bool

// queryError is a bad search request. unknown names a query type that
// does not exist; sortField names a field that cannot be sorted on.
type queryError struct {
	reason    string
	unknown   string
	sortField string
}

func (e *queryError) Error() string { return e.reason }

func qerr(format string, a ...any) error { return &queryError{reason: fmt.Sprintf(format, a...)} }

// compileQuery turns a query DSL object into a predicate.
func compileQuery(v any) (query, error) {
	if v == nil {
		return func(*docView) bool { return true }, nil
	}
	m, ok := v.(map[string]any)
	if !ok || len(m) != 1 {
		return nil, qerr("[query] malformed query, expected exactly one query clause")
	}
	for kind, body := range m {
		switch kind {
		case "match_all":
			return func(*docView) bool { return true }, nil
		case "match_none":
			return func(*docView) bool { return false }, nil
		case "term", "match", "match_phrase":
			field, val, err := singleField(kind, body, []string{"value", "query"})
			if err != nil {
				return nil, err
			}
			want, ok := toScalar(val)
			if !ok {
				return nil, qerr("[%s] query does not support value %v", kind, val)
			}
			return func(d *docView) bool {
				for _, s := range d.values(field) {
					if cmpScalar(s, want) == 0 {
						return true
					}
				}
				return false
			}, nil
		case "terms":
			bm, ok := body.(map[string]any)
			if !ok {
				return nil, qerr("[terms] query malformed")
			}
			var field string
			var list []scalar
			for k, x := range bm {
				if k == "boost" {
					continue
				}
				arr, ok := x.([]any)
				if !ok {
					return nil, qerr("[terms] query does not support [%s]", k)
				}
				field = k
				for _, e := range arr {
					if s, ok := toScalar(e); ok {
						list = append(list, s)
					}
				}
			}
			return func(d *docView) bool {
				for _, s := range d.values(field) {
					for _, w := range list {
						if cmpScalar(s, w) == 0 {
							return true
						}
					}
				}
				return false
			}, nil
		case "ids":
			bm, _ := body.(map[string]any)
			arr, _ := bm["values"].([]any)
			set := map[string]bool{}
			for _, e := range arr {
				if s, ok := e.(string); ok {
					set[s] = true
				}
			}
			return func(d *docView) bool { return set[d.d.id] }, nil
		case "exists":
			bm, _ := body.(map[string]any)
			field, _ := bm["field"].(string)
			if field == "" {
				return nil, qerr("[exists] must be provided with a [field]")
			}
			return func(d *docView) bool { return len(d.values(field)) > 0 }, nil
		case "range":
			bm, ok := body.(map[string]any)
			if !ok || len(bm) != 1 {
				return nil, qerr("[range] query doesn't support multiple fields")
			}
			for field, x := range bm {
				spec, ok := x.(map[string]any)
				if !ok {
					return nil, qerr("[range] query malformed, no start_object after query name")
				}
				type bound struct {
					v         scalar
					inclusive bool
					lower     bool
				}
				var bounds []bound
				for k, bv := range spec {
					var b bound
					switch k {
					case "gte", "from":
						b.inclusive, b.lower = true, true
					case "gt":
						b.lower = true
					case "lte", "to":
						b.inclusive = true
					case "lt":
					case "format", "time_zone", "boost", "include_lower", "include_upper", "relation":
						continue
					default:
						return nil, qerr("[range] query does not support [%s]", k)
					}
					if bv == nil {
						continue
					}
					s, ok := toScalar(bv)
					if !ok {
						return nil, qerr("[range] bad value for [%s]", k)
					}
					b.v = s
					bounds = append(bounds, b)
				}
				return func(d *docView) bool {
				next:
					for _, s := range d.values(field) {
						for _, b := range bounds {
							c := cmpScalar(s, b.v)
							if b.lower && (c < 0 || c == 0 && !b.inclusive) || !b.lower && (c > 0 || c == 0 && !b.inclusive) {
								continue next
							}
						}
						return true
					}
					return false
				}, nil
			}
		case "bool":
			bm, ok := body.(map[string]any)
			if !ok {
				return nil, qerr("[bool] malformed query")
			}
			clauses := map[string][]query{}
			msm := -1
			for k, x := range bm {
				switch k {
				case "must", "filter", "must_not", "should":
					var list []any
					if arr, ok := x.([]any); ok {
						list = arr
					} else {
						list = []any{x}
					}
					for _, e := range list {
						q, err := compileQuery(e)
						if err != nil {
							return nil, err
						}
						clauses[k] = append(clauses[k], q)
					}
				case "minimum_should_match":
					s, _ := toScalar(x)
					if !s.isNum {
						n, err := strconv.Atoi(s.str)
						if err != nil {
							return nil, qerr("[bool] unsupported minimum_should_match [%v]", x)
						}
						s.num = float64(n)
					}
					msm = int(s.num)
				case "boost", "_name", "adjust_pure_negative":
				default:
					return nil, qerr("[bool] query does not support [%s]", k)
				}
			}
			if msm < 0 {
				msm = 0
				if len(clauses["must"])+len(clauses["filter"]) == 0 && len(clauses["should"]) > 0 {
					msm = 1
				}
			}
			return func(d *docView) bool {
				for _, q := range clauses["must"] {
					if !q(d) {
						return false
					}
				}
				for _, q := range clauses["filter"] {
					if !q(d) {
						return false
					}
				}
				for _, q := range clauses["must_not"] {
					if q(d) {
						return false
					}
				}
				n := 0
				for _, q := range clauses["should"] {
					if q(d) {
						n++
					}
				}
				return n >= msm
			}, nil
		default:
			return nil, &queryError{reason: "unknown query [" + kind + "]", unknown: kind}
		}
	}
	return nil, qerr("[query] malformed query")
}

func singleField(kind string, body any, valueKeys []string) (string, any, error) {
	bm, ok := body.(map[string]any)
	if !ok {
		return "", nil, qerr("[%s] query malformed, no start_object after query name", kind)
	}
	var field string
	var val any
	n := 0
	for k, x := range bm {
		if k == "boost" || k == "_name" {
			continue
		}
		n++
		field, val = k, x
	}
	if n != 1 {
		return "", nil, qerr("[%s] query doesn't support multiple fields, found [%d]", kind, n)
	}
	if sub, ok := val.(map[string]any); ok {
		found := false
		for _, vk := range valueKeys {
			if x, ok := sub[vk]; ok {
				val, found = x, true
				break
			}
		}
		if !found {
			return "", nil, qerr("[%s] query malformed for field [%s]", kind, field)
		}
	}
	return field, val, nil
}

// ---- sort ----

type sortField struct {
	field string
	desc  bool
}

func parseSort(v any) ([]sortField, error) {
	if v == nil {
		return nil, nil
	}
	var list []any
	if arr, ok := v.([]any); ok {
		list = arr
	} else {
		list = []any{v}
	}
	var out []sortField
	for _, e := range list {
		switch x := e.(type) {
		case string:
			if x == "_shard_doc" {
				return nil, &queryError{reason: "No mapping found for [_shard_doc] in order to sort on", sortField: x}
			}
			out = append(out, sortField{field: x, desc: x == "_score"})
		case map[string]any:
			for f, spec := range x {
				sf := sortField{field: f, desc: f == "_score"}
				switch s := spec.(type) {
				case string:
					sf.desc = s == "desc"
				case map[string]any:
					if o, ok := s["order"].(string); ok {
						sf.desc = o == "desc"
					}
				}
				if f == "_shard_doc" {
					return nil, &queryError{reason: "No mapping found for [_shard_doc] in order to sort on", sortField: f}
				}
				out = append(out, sf)
			}
		default:
			return nil, qerr("[sort] malformed sort")
		}
	}
	return out, nil
}

type hit struct {
	v    *docView
	keys []scalar
	has  []bool
}

func (h *hit) compute(sorts []sortField) {
	h.keys = make([]scalar, len(sorts))
	h.has = make([]bool, len(sorts))
	for i, s := range sorts {
		switch s.field {
		case "_score":
			h.keys[i], h.has[i] = scalar{isNum: true, num: 1, raw: 1.0}, true
		case "_doc":
			h.keys[i], h.has[i] = scalar{isNum: true, num: float64(h.v.pos), raw: int64(h.v.pos)}, true
		default:
			vals := h.v.values(s.field)
			if len(vals) == 0 {
				continue
			}
			best := vals[0]
			for _, x := range vals[1:] {
				if c := cmpScalar(x, best); s.desc && c > 0 || !s.desc && c < 0 {
					best = x
				}
			}
			h.keys[i], h.has[i] = best, true
		}
	}
}

// cmpHits orders two hits by sorts; missing values sort last.
func cmpHits(a, b *hit, sorts []sortField) int {
	for i, s := range sorts {
		switch {
		case !a.has[i] && !b.has[i]:
			continue
		case !a.has[i]:
			return 1
		case !b.has[i]:
			return -1
		}
		c := cmpScalar(a.keys[i], b.keys[i])
		if s.desc {
			c = -c
		}
		if c != 0 {
			return c
		}
	}
	if c := strings.Compare(a.v.index, b.v.index); c != 0 {
		return c
	}
	if a.v.shard != b.v.shard {
		return a.v.shard - b.v.shard
	}
	return a.v.pos - b.v.pos
}

// afterSearchAfter reports whether h sorts strictly after the values.
func afterSearchAfter(h *hit, after []scalar, sorts []sortField) bool {
	for i, s := range sorts {
		if !h.has[i] {
			return true
		}
		c := cmpScalar(h.keys[i], after[i])
		if s.desc {
			c = -c
		}
		if c != 0 {
			return c > 0
		}
	}
	return false
}

// ---- search request ----

type searchReq struct {
	q          query
	sorts      []sortField
	size, from int
	after      []scalar
	hasAfter   bool
	sliceID    int
	sliceMax   int
	track      int // -1 exact, 0 off, else threshold
	noSource   bool
	explain    bool
	pitID      string
	keepAlive  time.Duration
}

func parseSearch(body map[string]any, params map[string][]string) (*searchReq, error) {
	sr := &searchReq{size: 10, track: 10000}
	var err error
	if sr.q, err = compileQuery(body["query"]); err != nil {
		return nil, err
	}
	if sr.sorts, err = parseSort(body["sort"]); err != nil {
		return nil, err
	}
	num := func(k string, dst *int) error {
		x, ok := body[k]
		if !ok {
			if p := params[k]; len(p) > 0 {
				x = json.Number(p[0])
			} else {
				return nil
			}
		}
		s, ok := toScalar(x)
		if !ok || !s.isNum || s.num < 0 {
			return qerr("[%s] must be a non-negative number", k)
		}
		*dst = int(s.num)
		return nil
	}
	if err := num("size", &sr.size); err != nil {
		return nil, err
	}
	if err := num("from", &sr.from); err != nil {
		return nil, err
	}
	if sa, ok := body["search_after"].([]any); ok {
		if len(sa) != len(sr.sorts) {
			return nil, qerr("search_after has %d value(s) but sort has %d.", len(sa), len(sr.sorts))
		}
		sr.hasAfter = true
		for _, x := range sa {
			s, ok := toScalar(x)
			if !ok && x != nil {
				return nil, qerr("search_after value %v is not supported", x)
			}
			sr.after = append(sr.after, s)
		}
	}
	if sl, ok := body["slice"].(map[string]any); ok {
		id, _ := toScalar(sl["id"])
		max, _ := toScalar(sl["max"])
		sr.sliceID, sr.sliceMax = int(id.num), int(max.num)
		if sr.sliceMax <= 1 || sr.sliceID < 0 || sr.sliceID >= sr.sliceMax {
			return nil, qerr("[slice] id must be in [0, max) and max must be greater than 1")
		}
	}
	switch t := body["track_total_hits"].(type) {
	case bool:
		if t {
			sr.track = -1
		} else {
			sr.track = 0
		}
	case json.Number:
		n, _ := t.Int64()
		sr.track = int(n)
		if n < 0 {
			sr.track = -1
		}
	}
	if s, ok := body["_source"].(bool); ok && !s {
		sr.noSource = true
	}
	sr.explain, _ = body["explain"].(bool)
	if pit, ok := body["pit"].(map[string]any); ok {
		sr.pitID, _ = pit["id"].(string)
		if sr.pitID == "" {
			return nil, qerr("[pit] id is required")
		}
		if ka, ok := pit["keep_alive"].(string); ok {
			d, err := parseTimeValue(ka)
			if err != nil {
				return nil, err
			}
			sr.keepAlive = d
		}
	}
	return sr, nil
}

// shardFailure is one failed shard of a search.
type shardFailure struct {
	shard  int
	index  string
	node   string
	typ    string
	reason string
}

// shardTarget is one shard a search reads.
type shardTarget struct {
	index string
	shard int
	node  *Node
	ctxID int64 // PIT context, 0 for none
	docs  []storedDoc
}

func (q *request) searchBody() (map[string]any, bool) {
	body, ok := q.decodeBody()
	if !ok {
		return nil, false
	}
	if src := q.q.Get("q"); src != "" {
		q.fail(400, "illegal_argument_exception", "ossim: the q parameter is not supported")
		return nil, false
	}
	return body, true
}

func (q *request) handleSearch(expr string) {
	body, ok := q.searchBody()
	if !ok {
		return
	}
	sr, err := parseSearch(body, q.q)
	if err != nil {
		q.failQuery(err, expr)
		return
	}
	c := q.n.c
	var targets []shardTarget
	var failures []shardFailure
	if sr.pitID != "" {
		if expr != "" {
			q.fail(400, "action_request_validation_exception", "Validation Failed: 1: [indices] cannot be used with point in time. Do not specify any index with point in time.;")
			return
		}
		for _, param := range []string{"preference", "routing"} {
			if q.q.Has(param) { // as OpenSearch 2.19.6: the PIT holds them
				q.fail(400, "action_request_validation_exception", "Validation Failed: 1: ["+param+"] cannot be used with point in time;")
				return
			}
		}
		pid, err := decodePITID(sr.pitID)
		if err != nil {
			q.fail(400, "illegal_argument_exception", "invalid id: ["+sr.pitID+"]")
			return
		}
		for _, pc := range pid.Contexts {
			t, f := c.pitTarget(pc, sr.keepAlive)
			if f != nil {
				failures = append(failures, *f)
				continue
			}
			targets = append(targets, t)
		}
	} else {
		targets, failures, err = q.liveTargets(expr)
		if err != nil {
			var oe *osErr
			if e, ok := err.(*osErr); ok {
				oe = e
			}
			q.failE(oe)
			return
		}
	}
	total := len(targets) + len(failures)
	if total > 0 && len(targets) == 0 && len(failures) > 0 {
		q.reply(failureStatus(failures), allShardsFailed(failures))
		return
	}
	searchDelay(q.r.Context(), q.n)
	var hits []*hit
	for _, t := range targets {
		t.node.st.searchRequests.Add(1)
		for i := range t.docs {
			v := &docView{node: t.node.id, index: t.index, shard: t.shard, pos: i, d: t.docs[i]}
			if sr.sliceMax > 0 {
				m := int(routing.Hash(v.d.id)) % sr.sliceMax
				if m < 0 {
					m += sr.sliceMax
				}
				if m != sr.sliceID {
					continue
				}
			}
			if !sr.q(v) {
				continue
			}
			hits = append(hits, &hit{v: v})
		}
	}
	for _, h := range hits {
		h.compute(sr.sorts)
	}
	sort.SliceStable(hits, func(i, j int) bool { return cmpHits(hits[i], hits[j], sr.sorts) < 0 })
	matched := len(hits)
	if sr.hasAfter {
		k := sort.Search(len(hits), func(i int) bool { return afterSearchAfter(hits[i], sr.after, sr.sorts) })
		hits = hits[k:]
		matched = len(hits) + k // total counts the query, not the page
	}
	if sr.from < len(hits) {
		hits = hits[sr.from:]
	} else {
		hits = nil
	}
	if len(hits) > sr.size {
		hits = hits[:sr.size]
	}
	out := map[string]any{"took": 1, "timed_out": false}
	if sr.pitID != "" {
		out["pit_id"] = sr.pitID
	}
	shards := map[string]any{"total": total, "successful": len(targets), "skipped": 0, "failed": len(failures)}
	if len(failures) > 0 {
		shards["failures"] = failuresJSON(failures)
	}
	out["_shards"] = shards
	hj := map[string]any{}
	switch {
	case sr.track < 0:
		hj["total"] = map[string]any{"value": matched, "relation": "eq"}
	case sr.track > 0:
		if matched > sr.track {
			hj["total"] = map[string]any{"value": sr.track, "relation": "gte"}
		} else {
			hj["total"] = map[string]any{"value": matched, "relation": "eq"}
		}
	}
	scored := len(sr.sorts) == 0
	for _, s := range sr.sorts {
		if s.field == "_score" {
			scored = true
		}
	}
	switch {
	case scored && len(hits) > 0:
		hj["max_score"] = 1.0
	case scored && len(targets) == 0:
		hj["max_score"] = 0 // no shard searched at all (ignore_unavailable): as OpenSearch
	default:
		hj["max_score"] = nil
	}
	list := make([]any, 0, len(hits))
	for _, h := range hits {
		m := map[string]any{"_index": h.v.index, "_id": h.v.d.id, "_score": nil}
		if scored {
			m["_score"] = 1.0
		}
		if h.v.d.routing != "" {
			m["_routing"] = h.v.d.routing
		}
		if sr.explain {
			m["_shard"] = "[" + h.v.index + "][" + strconv.Itoa(h.v.shard) + "]"
			m["_node"] = h.v.node
			m["_explanation"] = map[string]any{"value": 1.0, "description": "*:*", "details": []any{}}
		}
		if !sr.noSource {
			m["_source"] = json.RawMessage(h.v.d.source)
		}
		if len(sr.sorts) > 0 {
			sv := make([]any, len(sr.sorts))
			for i := range sr.sorts {
				if h.has[i] {
					sv[i] = h.keys[i].raw
				} else if sr.sorts[i].desc {
					sv[i] = int64(math.MinInt64)
				} else {
					sv[i] = int64(math.MaxInt64)
				}
			}
			m["sort"] = sv
		}
		list = append(list, m)
	}
	hj["hits"] = list
	out["hits"] = hj
	q.replyJSON(200, out)
}

// failureStatus is the HTTP status of "all shards failed": that of the
// failures' exception (404 for lost contexts, 503 for no copy, else 500).
// failQuery answers a bad search request in OpenSearch 2.19's shapes: an
// unknown query is a parsing_exception (with line, col and caused_by
// named_object_not_found_exception); an unsortable field fails in the
// can_match phase with a query_shard_exception per (grouped) shard.
func (q *request) failQuery(err error, expr string) {
	qe, ok := err.(*queryError)
	switch {
	case ok && qe.unknown != "":
		cause := map[string]any{"type": "parsing_exception", "reason": qe.reason, "line": 1, "col": 1}
		e := map[string]any{"root_cause": []any{cause}, "type": "parsing_exception", "reason": qe.reason, "line": 1, "col": 1,
			"caused_by": map[string]any{"type": "named_object_not_found_exception", "reason": "[1:1] unknown field [" + qe.unknown + "]"}}
		q.replyJSON(400, map[string]any{"error": e, "status": 400})
	case ok && qe.sortField != "":
		c := q.n.c
		c.mu.RLock()
		ims, _ := c.resolveIndicesLocked(expr)
		c.mu.RUnlock()
		name, uuid := "", "_na_"
		if len(ims) > 0 {
			name, uuid = ims[0].name, ims[0].uuid
		}
		cause := map[string]any{"type": "query_shard_exception", "reason": qe.reason, "index": name, "index_uuid": uuid}
		e := map[string]any{"root_cause": []any{cause}, "type": "search_phase_execution_exception", "reason": "all shards failed",
			"phase": "can_match", "grouped": true, "caused_by": cause,
			"failed_shards": []any{map[string]any{"shard": 0, "index": name, "node": q.n.id, "reason": cause}}}
		q.replyJSON(400, map[string]any{"error": e, "status": 400})
	default:
		q.fail(400, "parsing_exception", err.Error())
	}
}

// groupFailures keeps one failure per (index, type, reason), as
// OpenSearch groups identical shard failures.
func groupFailures(f []shardFailure) []shardFailure {
	seen := map[string]bool{}
	var out []shardFailure
	for _, x := range f {
		k := x.index + "\x00" + x.typ + "\x00" + x.reason
		if !seen[k] {
			seen[k] = true
			out = append(out, x)
		}
	}
	return out
}

func failureStatus(f []shardFailure) int {
	status := 0
	for _, x := range f {
		s := 500
		switch x.typ {
		case "search_context_missing_exception":
			s = 404
		case "no_shard_available_action_exception":
			s = 503
		}
		if s > status {
			status = s
		}
	}
	return status
}

func failuresJSON(failures []shardFailure) []any {
	var out []any
	for _, f := range groupFailures(failures) {
		m := map[string]any{"shard": f.shard, "index": f.index, "reason": map[string]any{"type": f.typ, "reason": f.reason}}
		if f.node != "" {
			m["node"] = f.node
		}
		out = append(out, m)
	}
	return out
}

func allShardsFailed(failures []shardFailure) []byte {
	var roots []any
	seen := map[string]bool{}
	for _, f := range failures {
		k := f.typ + f.reason
		if !seen[k] {
			seen[k] = true
			roots = append(roots, map[string]any{"type": f.typ, "reason": f.reason})
		}
	}
	b, _ := json.Marshal(map[string]any{
		"error": map[string]any{
			"root_cause": roots, "type": "search_phase_execution_exception", "reason": "all shards failed",
			"phase": "query", "grouped": true, "failed_shards": failuresJSON(failures),
		},
		"status": failureStatus(failures),
	})
	return b
}

// liveTargets picks one readable copy of every shard of expr.
func (q *request) liveTargets(expr string) ([]shardTarget, []shardFailure, error) {
	c := q.n.c
	c.mu.RLock()
	defer c.mu.RUnlock()
	ims, e := c.resolveIndicesLocked(expr)
	if e != nil && e.typ == "index_not_found_exception" && q.q.Get("ignore_unavailable") == "true" {
		// As OpenSearch: the names that exist are searched, the others
		// left out (none at all: an empty answer).
		ims, e = nil, nil
		for _, part := range strings.Split(expr, ",") {
			if found, pe := c.resolveIndicesLocked(part); pe == nil {
				ims = append(ims, found...)
			}
		}
	}
	if e != nil {
		return nil, nil, e
	}
	var targets []shardTarget
	var failures []shardFailure
	for _, im := range ims {
		for _, s := range searchShardsFor(im, q.q.Get("routing")) {
			n := readCopy(im.shards[s], q.n)
			if n == nil {
				failures = append(failures, shardFailure{shard: s, index: im.name, typ: "no_shard_available_action_exception", reason: "No shard available for [" + im.name + "][" + strconv.Itoa(s) + "]"})
				continue
			}
			var docs []storedDoc
			if st := n.store(im.uuid, s); st != nil {
				docs = st.snapshot()
			}
			targets = append(targets, shardTarget{index: im.name, shard: s, node: n, docs: docs})
		}
	}
	return targets, failures, nil
}

// readCopy picks the copy to read: a started copy on the local node, else
// the primary, else any started replica, on a running node.
func readCopy(g *shardGroup, local *Node) *Node {
	var pick *Node
	for _, sc := range g.copies {
		if sc.node == nil || !sc.node.Running() || sc.state == StateInitializing || sc.state == StateUnassigned {
			continue
		}
		if sc.node == local {
			return local
		}
		if pick == nil || sc.primary {
			pick = sc.node
		}
	}
	return pick
}

func (q *request) handleCount(expr string) {
	body, ok := q.searchBody()
	if !ok {
		return
	}
	qq, err := compileQuery(body["query"])
	if err != nil {
		q.failQuery(err, expr)
		return
	}
	targets, failures, err := q.liveTargets(expr)
	if err != nil {
		q.failE(err.(*osErr))
		return
	}
	n := 0
	for _, t := range targets {
		for i := range t.docs {
			if qq(&docView{index: t.index, shard: t.shard, pos: i, d: t.docs[i]}) {
				n++
			}
		}
	}
	sh := map[string]any{"total": len(targets) + len(failures), "successful": len(targets), "skipped": 0, "failed": len(failures)}
	if len(failures) > 0 {
		sh["failures"] = failuresJSON(failures)
	}
	q.replyJSON(200, map[string]any{"count": n, "_shards": sh})
}

func (q *request) handleRefresh(expr string) {
	c := q.n.c
	c.mu.RLock()
	ims, e := c.resolveIndicesLocked(expr)
	total, ok := 0, 0
	for _, im := range ims {
		for _, g := range im.shards {
			for _, sc := range g.copies {
				total++
				if sc.node != nil && sc.state != StateUnassigned && sc.state != StateInitializing {
					ok++
				}
			}
		}
	}
	c.mu.RUnlock()
	if e != nil {
		q.failE(e)
		return
	}
	q.replyJSON(200, map[string]any{"_shards": map[string]any{"total": total, "successful": ok, "failed": 0}})
}

// ---- single documents ----

func (q *request) handleGetDoc(index, id string) {
	c := q.n.c
	c.mu.RLock()
	im := c.indices[index]
	if im == nil {
		c.mu.RUnlock()
		e := notFound(index)
		e.resType = "index_expression"
		q.failE(e)
		return
	}
	shard, err := im.layout.Shard(id, q.q.Get("routing"))
	if err != nil {
		c.mu.RUnlock()
		q.fail(400, "routing_missing_exception", fmt.Sprintf("routing is required for [%s]/[%s]", index, id), "index", index, "index_uuid", "_na_")
		return
	}
	n := readCopy(im.shards[shard], q.n)
	c.mu.RUnlock()
	if n == nil {
		q.fail(503, "no_shard_available_action_exception", fmt.Sprintf("No shard available for [get [%s][%s]: routing [%s]]", index, id, q.q.Get("routing")))
		return
	}
	var d storedDoc
	found := false
	if st := n.store(im.uuid, shard); st != nil {
		d, found = st.get(id)
	}
	b := []byte(`{"_index":`)
	b = appendStr(b, index)
	b = append(b, `,"_id":`...)
	b = appendStr(b, id)
	if !found {
		q.reply(404, append(b, `,"found":false}`...))
		return
	}
	b = append(b, `,"_version":`...)
	b = strconv.AppendInt(b, d.version, 10)
	b = append(b, `,"_seq_no":`...)
	b = strconv.AppendInt(b, d.seqNo, 10)
	b = append(b, `,"_primary_term":`...)
	b = strconv.AppendInt(b, d.term, 10)
	if d.routing != "" {
		b = append(b, `,"_routing":`...)
		b = appendStr(b, d.routing)
	}
	b = append(b, `,"found":true,"_source":`...)
	b = append(b, d.source...)
	q.reply(200, append(b, '}'))
}

func (q *request) handleIndexDoc(index, id string, create bool) {
	op := "index"
	if create || q.q.Get("op_type") == "create" {
		op = "create"
	}
	it := &bulkItem{op: op, name: index, id: id, hasID: id != "", routing: q.q.Get("routing"), source: q.body}
	q.singleItem(it)
}

func (q *request) handleDeleteDoc(index, id string) {
	it := &bulkItem{op: "delete", name: index, id: id, hasID: true, routing: q.q.Get("routing")}
	q.singleItem(it)
}

func (q *request) singleItem(it *bulkItem) {
	if e := validateIDs([]*bulkItem{it}); e != nil {
		q.failE(e)
		return
	}
	c := q.n.c
	c.mu.RLock()
	_, exists := c.indices[it.name]
	_, isDS := c.dataStreams[it.name]
	c.mu.RUnlock()
	if it.op == "delete" && !exists && !isDS {
		q.failE(notFound(it.name))
		return
	}
	c.resolveItems([]*bulkItem{it})
	q.n.executeItems(q.r.Context(), []*bulkItem{it})
	r := it.res
	idx := r.index
	if idx == "" {
		idx = it.name
	}
	if r.errType != "" {
		extra := []string{"index", idx}
		if r.indexUUID != "" {
			extra = append(extra, "shard", strconv.Itoa(r.shardLabel), "index_uuid", r.indexUUID)
		}
		if r.cause != nil {
			q.reply(r.status, errorBodyCause(r.status, r.errType, r.errReason, r.cause, extra...))
			return
		}
		q.fail(r.status, r.errType, r.errReason, extra...)
		return
	}
	b := []byte(`{"_index":`)
	b = appendStr(b, idx)
	b = append(b, `,"_id":`...)
	b = appendStr(b, it.id)
	b = append(b, `,"_version":`...)
	b = strconv.AppendInt(b, r.version, 10)
	b = append(b, `,"result":"`+r.result+`","_shards":{"total":`...)
	b = strconv.AppendInt(b, int64(r.total), 10)
	b = append(b, `,"successful":`...)
	b = strconv.AppendInt(b, int64(r.ok), 10)
	b = append(b, `,"failed":0},"_seq_no":`...)
	b = strconv.AppendInt(b, r.seqNo, 10)
	b = append(b, `,"_primary_term":`...)
	b = strconv.AppendInt(b, r.term, 10)
	q.reply(r.status, append(b, '}'))
}

// ---- point in time ----

type pitContext struct {
	id      int64
	index   string
	shard   int
	docs    []storedDoc
	expires atomic.Int64 // unix nanos
}

type pitRef struct {
	Node  int    `json:"n"`
	NID   string `json:"nid"`
	Ctx   int64  `json:"x"`
	Index string `json:"i"`
	Shard int    `json:"s"`
}

type pitID struct {
	Contexts []pitRef `json:"c"`
	Created  int64    `json:"t"`
}

func encodePITID(p pitID) string {
	b, _ := json.Marshal(p)
	return base64.URLEncoding.EncodeToString(b)
}

func decodePITID(s string) (pitID, error) {
	var p pitID
	b, err := base64.URLEncoding.DecodeString(s)
	if err != nil {
		return p, err
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return p, err
	}
	if len(p.Contexts) == 0 {
		return p, fmt.Errorf("empty pit id")
	}
	return p, nil
}

var pitSeq atomic.Int64

func (q *request) handleCreatePIT(expr string) {
	ka := q.q.Get("keep_alive")
	if ka == "" {
		q.fail(400, "action_request_validation_exception", "Validation Failed: 1: keep alive not specified;")
		return
	}
	keep, err := parseTimeValue(ka)
	if err != nil {
		q.fail(400, "illegal_argument_exception", err.Error())
		return
	}
	c := q.n.c
	ims, ok := q.rlockIndices(expr)
	if !ok {
		return
	}
	type pick struct {
		im    *indexMeta
		shard int
		n     *Node
	}
	var picks []pick
	pref := parsePreference(q.q.Get("preference"))
	for _, im := range ims {
		for _, num := range searchShardsFor(im, q.q.Get("routing")) {
			g := im.shards[num]
			n := pref.copy(g, q.n)
			if n == nil && pref.only() {
				// As OpenSearch 2.19.6.
				c.mu.RUnlock()
				q.fail(400, "illegal_argument_exception", "no data nodes with criteria ["+pref.list+"] found for shard: ["+im.name+"]["+strconv.Itoa(num)+"]")
				return
			}
			if n == nil {
				c.mu.RUnlock()
				q.fail(503, "search_phase_execution_exception", "all shards failed: no copy of ["+im.name+"]["+strconv.Itoa(g.num)+"] available")
				return
			}
			picks = append(picks, pick{im, g.num, n})
		}
	}
	c.mu.RUnlock()
	now := time.Now()
	pid := pitID{Created: now.UnixMilli()}
	for _, p := range picks {
		var docs []storedDoc
		if st := p.n.store(p.im.uuid, p.shard); st != nil {
			docs = st.snapshot()
		}
		pc := &pitContext{id: pitSeq.Add(1), index: p.im.name, shard: p.shard, docs: docs}
		pc.expires.Store(now.Add(keep).UnixNano())
		p.n.smu.Lock()
		p.n.pits[pc.id] = pc
		p.n.smu.Unlock()
		pid.Contexts = append(pid.Contexts, pitRef{Node: p.n.idx, NID: p.n.id, Ctx: pc.id, Index: p.im.name, Shard: p.shard})
	}
	q.replyJSON(200, map[string]any{
		"pit_id":        encodePITID(pid),
		"_shards":       map[string]any{"total": len(picks), "successful": len(picks), "skipped": 0, "failed": 0},
		"creation_time": pid.Created,
	})
}

// pitTarget finds a PIT context on its node; an expired or lost context
// is a search_context_missing_exception failure.
func (c *Cluster) pitTarget(pc pitRef, keep time.Duration) (shardTarget, *shardFailure) {
	missing := &shardFailure{shard: pc.Shard, index: pc.Index, node: pc.NID, typ: "search_context_missing_exception",
		reason: "No search context found for id [" + strconv.FormatInt(pc.Ctx, 10) + "]"}
	if pc.Node < 0 || pc.Node >= len(c.nodes) {
		return shardTarget{}, missing
	}
	n := c.nodes[pc.Node]
	c.mu.RLock()
	joined := n.joined
	c.mu.RUnlock()
	if !joined {
		// As OpenSearch 2.19: a context on a node that left the cluster.
		return shardTarget{}, &shardFailure{shard: pc.Shard, index: pc.Index, typ: "illegal_state_exception",
			reason: "no node found for id: " + pc.NID}
	}
	if !n.Running() {
		return shardTarget{}, &shardFailure{shard: pc.Shard, index: pc.Index, node: pc.NID, typ: "node_not_connected_exception",
			reason: "[" + n.name + "][" + n.transportAddr() + "] Node not connected"}
	}
	n.smu.Lock()
	ctx := n.pits[pc.Ctx]
	now := time.Now()
	if ctx != nil && now.UnixNano() > ctx.expires.Load() {
		delete(n.pits, pc.Ctx)
		ctx = nil
	}
	if ctx != nil && keep > 0 {
		ctx.expires.Store(now.Add(keep).UnixNano())
	}
	n.smu.Unlock()
	if ctx == nil {
		return shardTarget{}, missing
	}
	return shardTarget{index: ctx.index, shard: ctx.shard, node: n, ctxID: ctx.id, docs: ctx.docs}, nil
}

func (q *request) handleDeletePIT(all bool) {
	c := q.n.c
	var ids []string
	if !all {
		body, ok := q.decodeBody()
		if !ok {
			return
		}
		switch x := body["pit_id"].(type) {
		case string:
			ids = []string{x}
		case []any:
			for _, e := range x {
				if s, ok := e.(string); ok {
					ids = append(ids, s)
				}
			}
		}
		if len(ids) == 0 {
			q.fail(400, "action_request_validation_exception", "Validation Failed: 1: No pit ids specified;")
			return
		}
	}
	var out []any
	if all {
		for _, n := range c.nodes {
			n.smu.Lock()
			for id := range n.pits {
				delete(n.pits, id)
			}
			n.smu.Unlock()
		}
		out = []any{}
	}
	for _, s := range ids {
		pid, err := decodePITID(s)
		if err != nil {
			q.fail(400, "illegal_argument_exception", "invalid id: ["+s+"]")
			return
		}
		okAll := true
		for _, pc := range pid.Contexts {
			if pc.Node < 0 || pc.Node >= len(c.nodes) {
				okAll = false
				continue
			}
			n := c.nodes[pc.Node]
			n.smu.Lock()
			if _, ok := n.pits[pc.Ctx]; ok && n.Running() {
				delete(n.pits, pc.Ctx)
			} else {
				okAll = false
			}
			n.smu.Unlock()
		}
		out = append(out, map[string]any{"successful": okAll, "pit_id": s})
	}
	q.replyJSON(200, map[string]any{"pits": out})
}

func (q *request) handleListPIT() {
	c := q.n.c
	var out []any
	for _, n := range c.nodes {
		n.smu.RLock()
		for id, pc := range n.pits {
			out = append(out, map[string]any{"node": n.name, "context": id, "index": pc.index, "shard": pc.shard,
				"keep_alive": time.Until(time.Unix(0, pc.expires.Load())).Milliseconds()})
		}
		n.smu.RUnlock()
	}
	q.replyJSON(200, map[string]any{"pits": out})
}
