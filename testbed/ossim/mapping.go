package ossim

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// The mapping model: each index knows every field path it has mapped
// (from its creation mappings, its template's, and what documents added
// dynamically), and refuses a document the way OpenSearch 2.19.6's
// document parser and mapping update do. See README.md for what is and is
// not emulated.

type fkind uint8

const (
	kObject fkind = iota
	kText
	kKeyword
	kLong
	kInteger
	kShort
	kByte
	kDouble
	kFloat
	kHalfFloat
	kBoolean
	kDate
	kDateNanos
	kOpaque // a type the emulator stores without checking (flat_object, ip, …)
)

var kindByType = map[string]fkind{
	"object": kObject, "text": kText, "keyword": kKeyword, "long": kLong, "integer": kInteger,
	"short": kShort, "byte": kByte, "double": kDouble, "float": kFloat, "half_float": kHalfFloat,
	"boolean": kBoolean, "date": kDate, "date_nanos": kDateNanos,
	// A nested field maps and checks its members as an object does (each
	// array element is a hidden document of its own on the server, which
	// changes queries, not what a document may hold); GET _mapping shows
	// its type.
	"nested": kObject,
}

type dynMode uint8

const (
	dynInherit dynMode = iota
	dynTrue
	dynFalse
	dynStrict
)

// mfield is one mapped field or object.
type mfield struct {
	path            string // full path (set when mapped)
	kind            fkind
	typ             string // the type name the server reports
	dynamic         dynMode
	disabled        bool // object with enabled: false
	ignoreMalformed bool
	noCoerce        bool
	ignoreAbove     int  // keyword: values longer (in UTF-16 units) are not indexed; 0 = none
	noTerms         bool // keyword with index and doc_values false: no term limit
	subs            []*mfield
	subNames        []string
	dateFmt         int            // dates: fmtDefault, …
	format          string         // dates: the format given
	spec            map[string]any // what GET _mapping shows (objects: without properties)
}

// dynTemplate is one entry of dynamic_templates.
type dynTemplate struct {
	name                        string
	pathMatch, pathUnmatch      string
	match, unmatch, mappingType string
	matchRE                     *regexp.Regexp
	mapping                     map[string]any
	raw                         any
}

type indexMapping struct {
	mu            sync.RWMutex
	fields        map[string]*mfield // full path → field; objects too
	count         int                // fields counted against total_fields.limit
	dynamic       dynMode
	dateDetection bool
	templates     []dynTemplate
	totalLimit    int
	depthLimit    int
	nameLimit     int
	top           map[string]any // top-level mapping keys echoed by GET _mapping
	v3            bool           // refuse as OpenSearch 3.9.0 does
}

// newIndexMapping builds an index's mapping from its mappings (nil for
// none) and settings. A data stream's backing index gets @timestamp as a
// date unless mapped.
func newIndexMapping(spec map[string]any, s map[string]string, dataStream bool) (*indexMapping, *osErr) {
	m := &indexMapping{fields: map[string]*mfield{}, dynamic: dynTrue, dateDetection: true, totalLimit: 1000, depthLimit: 20, nameLimit: math.MaxInt, top: map[string]any{}}
	for key, p := range map[string]*int{"index.mapping.total_fields.limit": &m.totalLimit, "index.mapping.depth.limit": &m.depthLimit, "index.mapping.field_name_length.limit": &m.nameLimit} {
		v, e := intSetting(s, key, *p)
		if e != nil {
			return nil, e
		}
		*p = v
	}
	if spec != nil {
		if e := m.parseTop(spec); e != nil {
			return nil, e
		}
	}
	if dataStream {
		m.top["_data_stream_timestamp"] = map[string]any{"enabled": true}
		if m.fields["@timestamp"] == nil {
			f, _ := parseFieldSpec(map[string]any{"type": "date"})
			f.path = "@timestamp"
			m.fields["@timestamp"] = f
			m.count++
		}
	}
	return m, nil
}

func mapErrorf(format string, a ...any) *osErr {
	return &osErr{status: 400, typ: "mapper_parsing_exception", reason: fmt.Sprintf(format, a...)}
}

func parseDynamic(v any) (dynMode, bool) {
	switch fmt.Sprint(v) {
	case "true":
		return dynTrue, true
	case "false":
		return dynFalse, true
	case "strict":
		return dynStrict, true
	}
	return dynInherit, false
}

func (m *indexMapping) parseTop(spec map[string]any) *osErr {
	for k, v := range spec {
		switch k {
		case "properties":
			props, _ := v.(map[string]any)
			if e := m.addProperties("", props); e != nil {
				return e
			}
		case "dynamic":
			d, ok := parseDynamic(v)
			if !ok {
				return mapErrorf("ossim: unsupported dynamic value [%v]", v)
			}
			m.dynamic = d
			m.top[k] = fmt.Sprint(v)
		case "date_detection":
			m.dateDetection = fmt.Sprint(v) == "true"
			m.top[k] = m.dateDetection
		case "dynamic_templates":
			list, _ := v.([]any)
			for _, e := range list {
				t, err := parseDynTemplate(e)
				if err != nil {
					return err
				}
				m.templates = append(m.templates, t)
			}
			m.top[k] = v
		default:
			m.top[k] = v
		}
	}
	return nil
}

func parseDynTemplate(v any) (dynTemplate, *osErr) {
	outer, _ := v.(map[string]any)
	if len(outer) != 1 {
		return dynTemplate{}, mapErrorf("ossim: a dynamic template must have one name")
	}
	var t dynTemplate
	for name, body := range outer {
		b, _ := body.(map[string]any)
		t = dynTemplate{name: name, raw: v}
		str := func(k string) string { s, _ := b[k].(string); return s }
		t.pathMatch, t.pathUnmatch, t.match, t.unmatch, t.mappingType = str("path_match"), str("path_unmatch"), str("match"), str("unmatch"), str("match_mapping_type")
		if str("match_pattern") == "regex" && t.match != "" {
			re, err := regexp.Compile(t.match)
			if err != nil {
				return t, mapErrorf("ossim: dynamic template [%s]: %v", name, err)
			}
			t.matchRE = re
		}
		t.mapping, _ = b["mapping"].(map[string]any)
		if t.mapping == nil {
			return t, mapErrorf("template [%s] must have either mapping or runtime set", name)
		}
	}
	return t, nil
}

// addProperties adds explicit properties under the object at prefix.
func (m *indexMapping) addProperties(prefix string, props map[string]any) *osErr {
	for name, v := range props {
		spec, _ := v.(map[string]any)
		path := name
		if prefix != "" {
			path = prefix + "." + name
		}
		f, e := parseFieldSpec(spec)
		if e != nil {
			return e
		}
		f.path = path
		m.fields[path] = f
		m.count += 1 + len(f.subs)
		if f.kind == kObject {
			sub, _ := spec["properties"].(map[string]any)
			if e := m.addProperties(path, sub); e != nil {
				return e
			}
		}
	}
	return nil
}

// parseFieldSpec reads one field's mapping.
func parseFieldSpec(spec map[string]any) (*mfield, *osErr) {
	typ, _ := spec["type"].(string)
	if typ == "" {
		if _, ok := spec["properties"]; ok || true {
			typ = "object"
		}
	}
	f := &mfield{typ: typ, spec: map[string]any{}}
	k, known := kindByType[typ]
	if !known {
		k = kOpaque
	}
	f.kind = k
	for key, v := range spec {
		if key == "properties" || key == "fields" {
			continue
		}
		f.spec[key] = v
		switch key {
		case "dynamic":
			f.dynamic, _ = parseDynamic(v)
			f.spec[key] = fmt.Sprint(v)
		case "enabled":
			f.disabled = fmt.Sprint(v) == "false"
		case "ignore_malformed":
			f.ignoreMalformed = fmt.Sprint(v) == "true"
		case "coerce":
			f.noCoerce = fmt.Sprint(v) == "false"
		case "ignore_above":
			n, err := strconv.Atoi(fmt.Sprint(v))
			if err != nil {
				return nil, mapErrorf("ossim: ignore_above [%v]", v)
			}
			f.ignoreAbove = n
		case "format":
			f.format = fmt.Sprint(v)
			if k, ok := dateFormatNames[f.format]; ok {
				f.dateFmt = k
			} else {
				f.dateFmt = fmtOther
			}
		}
	}
	f.noTerms = fmt.Sprint(spec["index"]) == "false" && fmt.Sprint(spec["doc_values"]) == "false"
	if fields, ok := spec["fields"].(map[string]any); ok {
		names := make([]string, 0, len(fields))
		for n := range fields {
			names = append(names, n)
		}
		sort.Strings(names)
		subSpecs := map[string]any{}
		for _, n := range names {
			ss, _ := fields[n].(map[string]any)
			sf, e := parseFieldSpec(ss)
			if e != nil {
				return nil, e
			}
			f.subs, f.subNames = append(f.subs, sf), append(f.subNames, n)
			subSpecs[n] = ss
		}
		f.spec["fields"] = subSpecs
	}
	if f.kind == kObject && typ != "nested" {
		delete(f.spec, "type") // shown only when the object has no properties
	}
	return f, nil
}

// Dynamic defaults.
var (
	dynTextSpec = map[string]any{"type": "text", "fields": map[string]any{"keyword": map[string]any{"type": "keyword", "ignore_above": json.Number("256")}}}
)

func defaultDynamicField(vt valueType, dateFormat string) *mfield {
	var spec map[string]any
	switch vt {
	case vtString:
		spec = dynTextSpec
	case vtLong:
		spec = map[string]any{"type": "long"}
	case vtDouble:
		spec = map[string]any{"type": "float"}
	case vtBool:
		spec = map[string]any{"type": "boolean"}
	case vtDate:
		spec = map[string]any{"type": "date"}
		if dateFormat != "" {
			spec["format"] = dateFormat
			spec["print_format"] = "yyyy/MM/dd HH:mm:ss"
		}
	default:
		spec = map[string]any{}
	}
	f, _ := parseFieldSpec(spec)
	return f
}

// valueType is a JSON value's kind as dynamic templates match it.
type valueType uint8

const (
	vtString valueType = iota
	vtLong
	vtDouble
	vtBool
	vtObject
	vtDate
)

var vtNames = [...]string{"string", "long", "double", "boolean", "object", "date"}

// wildcardMatch is OpenSearch's simple match: * matches any run.
func wildcardMatch(pat, s string) bool {
	if !strings.Contains(pat, "*") {
		return pat == s
	}
	parts := strings.Split(pat, "*")
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for i := 1; i < len(parts)-1; i++ {
		j := strings.Index(s, parts[i])
		if j < 0 {
			return false
		}
		s = s[j+len(parts[i]):]
	}
	return strings.HasSuffix(s, parts[len(parts)-1])
}

func (t *dynTemplate) matches(path, name string, vt valueType) bool {
	if t.pathMatch != "" && !wildcardMatch(t.pathMatch, path) {
		return false
	}
	if t.matchRE != nil {
		if !t.matchRE.MatchString(name) {
			return false
		}
	} else if t.match != "" && !wildcardMatch(t.match, name) {
		return false
	}
	if t.pathUnmatch != "" && wildcardMatch(t.pathUnmatch, path) {
		return false
	}
	if t.unmatch != "" && wildcardMatch(t.unmatch, name) {
		return false
	}
	if t.mappingType != "" && t.mappingType != "*" && t.mappingType != vtNames[vt] {
		return false
	}
	return true
}

// dynamicField is the mapping a new field of kind vt at path gets: the
// first matching dynamic template's, else the default (nil: none).
func (m *indexMapping) templateField(path, name string, vt valueType) *mfield {
	for i := range m.templates {
		t := &m.templates[i]
		if !t.matches(path, name, vt) {
			continue
		}
		spec := substitute(t.mapping, name, vt).(map[string]any)
		if _, ok := spec["type"]; !ok {
			switch vt {
			case vtString:
				spec["type"] = "text"
			case vtDouble:
				spec["type"] = "float"
			default:
				spec["type"] = vtNames[vt]
			}
		}
		f, _ := parseFieldSpec(spec)
		return f
	}
	return nil
}

// substitute replaces {name} and {dynamic_type} in a template's mapping.
func substitute(v any, name string, vt valueType) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[strings.ReplaceAll(strings.ReplaceAll(k, "{name}", name), "{dynamic_type}", vtNames[vt])] = substitute(e, name, vt)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = substitute(e, name, vt)
		}
		return out
	case string:
		dt := vtNames[vt]
		if vt == vtString {
			dt = "string"
		}
		return strings.ReplaceAll(strings.ReplaceAll(x, "{name}", name), "{dynamic_type}", dt)
	}
	return v
}

// mappingJSON is the "mappings" object GET _mapping answers.
func (m *indexMapping) mappingJSON() map[string]any {
	m.mu.RLock()
	defer m.mu.RUnlock()
	out := map[string]any{}
	for k, v := range m.top {
		out[k] = v
	}
	paths := make([]string, 0, len(m.fields))
	for p := range m.fields {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	objs := map[string]map[string]any{}
	root := map[string]any{}
	for _, p := range paths {
		f := m.fields[p]
		spec := make(map[string]any, len(f.spec)+1)
		for k, v := range f.spec {
			spec[k] = v
		}
		if f.kind == kObject {
			objs[p] = spec
		}
		parent := root
		name := p
		if i := strings.LastIndexByte(p, '.'); i >= 0 {
			for pp := p[:i]; ; {
				if o := objs[pp]; o != nil {
					props, _ := o["properties"].(map[string]any)
					if props == nil {
						props = map[string]any{}
						o["properties"] = props
					}
					parent, name = props, p[len(pp)+1:]
					break
				}
				j := strings.LastIndexByte(pp, '.')
				if j < 0 {
					name = p
					break
				}
				pp = pp[:j]
			}
		}
		parent[name] = spec
	}
	for _, o := range objs {
		if _, ok := o["properties"]; !ok {
			o["type"] = "object"
		}
	}
	if len(root) > 0 {
		out["properties"] = root
	}
	return out
}

// setMappingLocked gives a new index the mappings of specs (a template's,
// then the creation request's, later keys winning). Must hold c.mu.
func (c *Cluster) setMappingLocked(im *indexMeta, s map[string]string, specs ...map[string]any) *osErr {
	var merged map[string]any
	for _, sp := range specs {
		if sp != nil {
			merged = mergeSpec(merged, sp)
		}
	}
	m, e := newIndexMapping(merged, s, im.dataStream != "")
	if e != nil {
		return e
	}
	m.v3 = c.v3()
	im.mapping = m
	return nil
}

// v3 reports whether the cluster answers as OpenSearch 3.x.
func (c *Cluster) v3() bool { return strings.HasPrefix(c.opts.Version, "3.") }

// mergeSpec merges b into a copy of a: objects recursively, other values
// replaced.
func mergeSpec(a, b map[string]any) map[string]any {
	out := make(map[string]any, len(a)+len(b))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		am, ok1 := out[k].(map[string]any)
		bm, ok2 := v.(map[string]any)
		if ok1 && ok2 {
			out[k] = mergeSpec(am, bm)
		} else {
			out[k] = v
		}
	}
	return out
}

// clone copies the mapping (for a resize target).
func (m *indexMapping) clone() *indexMapping {
	m.mu.RLock()
	defer m.mu.RUnlock()
	n := &indexMapping{fields: make(map[string]*mfield, len(m.fields)), count: m.count, dynamic: m.dynamic, dateDetection: m.dateDetection,
		templates: m.templates, v3: m.v3, totalLimit: m.totalLimit, depthLimit: m.depthLimit, nameLimit: m.nameLimit, top: m.top}
	for k, v := range m.fields {
		n.fields[k] = v
	}
	return n
}

// appendCauses writes ,"caused_by":{...} for a cause chain.
func appendCauses(b []byte, c *errCause) []byte {
	if c == nil {
		return b
	}
	b = append(b, `,"caused_by":{"type":`...)
	b = appendStr(b, c.typ)
	b = append(b, `,"reason":`...)
	b = appendStr(b, c.reason)
	b = appendCauses(b, c.cause)
	return append(b, '}')
}

// handleGetMapping serves GET /<indices>/_mapping.
func (q *request) handleGetMapping(expr string) {
	q.replyPerIndex(expr, func(im *indexMeta) any { return map[string]any{"mappings": im.mapping.mappingJSON()} })
}

// errorBodyCause is errorBody with a caused_by chain on the error (not on
// its root cause), as the server writes it.
func errorBodyCause(status int, typ, reason string, c *errCause, extra ...string) []byte {
	root := appendCause(nil, typ, reason, extra...)
	b := []byte(`{"error":{"root_cause":[`)
	b = append(b, root...)
	b = append(b, `],`...)
	b = append(b, root[1:len(root)-1]...)
	b = appendCauses(b, c)
	b = append(b, `},"status":`...)
	b = strconv.AppendInt(b, int64(status), 10)
	return append(b, '}')
}
