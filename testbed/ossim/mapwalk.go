package ossim

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
	"unsafe"
)

// docWalk parses one document source (already known to be one valid JSON
// object) against an index's mapping, the way OpenSearch's document
// parser does: lookups go to the mapping as it was before the document,
// so every occurrence of a new field in the document makes its own
// dynamic mapping, and those are merged (and may conflict) afterwards.
type docWalk struct {
	m       *indexMapping
	src     []byte
	pos     int
	id      string
	depth   int
	arrays  int
	pending []pendingField
	buf     []byte
	err     *osErr
	termErr *osErr
}

type pendingField struct {
	path string
	f    *mfield
}

// errCause is an error's caused_by chain.
type errCause struct {
	typ, reason string
	cause       *errCause
}

var rootField = &mfield{kind: kObject}

func join(prefix, name string) string {
	if prefix == "" {
		return name
	}
	return prefix + "." + name
}

func (w *docWalk) fail(e *osErr) {
	if w.err == nil {
		w.err = e
	}
}

// failParse is "failed to parse" with a cause.
func (w *docWalk) failParse(typ, reason string) {
	w.fail(&osErr{status: 400, typ: "mapper_parsing_exception", reason: "failed to parse", cause: &errCause{typ: typ, reason: reason}})
}

func (w *docWalk) ws() { w.pos = skipWS(w.src, w.pos) }

// readKey reads an object key at w.pos. A key without escapes is a view
// of the source, not a copy: it must not outlive the walk (new field
// paths are cloned when kept).
func (w *docWalk) readKey() string {
	start := w.pos + 1
	i := start
	for ; w.src[i] != '"'; i++ {
		if w.src[i] == '\\' {
			return w.readString()
		}
	}
	w.pos = i + 1
	if i == start {
		return ""
	}
	return unsafe.String(&w.src[start], i-start)
}

// lookup is the mapped field at prefix.name, without building the path.
func (w *docWalk) lookup(prefix, name string) *mfield {
	if prefix == "" {
		return w.m.fields[name]
	}
	w.buf = append(append(append(w.buf[:0], prefix...), '.'), name...)
	return w.m.fields[string(w.buf)]
}

// readString reads a JSON string at w.pos and returns its value.
func (w *docWalk) readString() string {
	start := w.pos + 1
	i := start
	esc := false
	for ; w.src[i] != '"'; i++ {
		if w.src[i] == '\\' {
			esc = true
			i++
		}
	}
	w.pos = i + 1
	if !esc {
		return string(w.src[start:i])
	}
	var s string
	_ = json.Unmarshal(w.src[start-1:i+1], &s) // rare: keys and values with escapes
	return s
}

// skipValue skips one JSON value.
func (w *docWalk) skipValue() {
	w.ws()
	switch w.src[w.pos] {
	case '"':
		w.skipString()
	case '{', '[':
		depth := 0
		for {
			c := w.src[w.pos]
			switch c {
			case '"':
				w.skipString()
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
			}
			w.pos++
			if depth == 0 {
				return
			}
		}
	default:
		for w.pos < len(w.src) {
			switch w.src[w.pos] {
			case ',', '}', ']', ' ', '\t', '\n', '\r':
				return
			}
			w.pos++
		}
	}
}

func (w *docWalk) skipString() {
	i := w.pos + 1
	for w.src[i] != '"' {
		if w.src[i] == '\\' {
			i++
		}
		i++
	}
	w.pos = i + 1
}

// splitPath splits a field name on dots as the server does (trailing
// empty parts dropped), or fails.
func (w *docWalk) splitPath(key string, one []string) []string {
	if strings.IndexByte(key, '.') < 0 {
		if key == "" {
			w.failParse("illegal_argument_exception", "field name cannot be an empty string")
			return nil
		}
		return append(one[:0], key)
	}
	parts := one[:0]
	for rest := key; ; {
		i := strings.IndexByte(rest, '.')
		if i < 0 {
			parts = append(parts, rest)
			break
		}
		parts = append(parts, rest[:i])
		rest = rest[i+1:]
	}
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	if len(parts) == 0 {
		w.failParse("illegal_argument_exception", "field name cannot contain only the character [.]")
		return nil
	}
	for _, p := range parts {
		if strings.TrimSpace(p) == "" {
			if p != "" {
				w.failParse("illegal_argument_exception", "object field cannot contain only whitespace: ['"+key+"']")
			} else {
				w.failParse("illegal_argument_exception", "object field starting or ending with a [.] makes object resolution ambiguous: ["+key+"]")
			}
			return nil
		}
	}
	return parts
}

// scope is the object whose members are being parsed.
type scope struct {
	path  string
	f     *mfield
	isNew bool // created by this document: no mapped children
}

// walk parses the whole document.
func (w *docWalk) walk() {
	w.ws()
	w.members(scope{"", rootField, false})
}

// members parses an object at w.pos ('{') under sc.
func (w *docWalk) members(sc scope) {
	w.pos++ // '{'
	w.depth++
	if w.depth > w.m.depthLimit {
		w.failParse("parse_exception", fmt.Sprintf("The depth of the field has exceeded the allowed limit of [%d]. This limit can be set by changing the [index.mapping.depth.limit] index level setting.", w.m.depthLimit))
		return
	}
	var seen keySet
	var one [4]string
	for w.err == nil {
		w.ws()
		if w.src[w.pos] == '}' {
			w.pos++
			break
		}
		if w.src[w.pos] == ',' {
			w.pos++
			w.ws()
		}
		key := w.readKey()
		if w.m.v3 && utf8.RuneCountInString(key) > 50000 {
			r := fmt.Sprintf("Name length (%d) exceeds the maximum allowed (50000, from `StreamReadConstraints.getMaxNameLength()`)", utf8.RuneCountInString(key))
			w.fail(&osErr{status: 400, typ: "mapper_parsing_exception", reason: "failed to parse", cause: &errCause{typ: "stream_constraints_exception", reason: r, cause: &errCause{typ: "stream_constraints_exception", reason: r}}})
			return
		}
		if w.duplicate(&seen, key) {
			w.failDuplicate(key)
			return
		}
		w.ws()
		w.pos++ // ':'
		w.ws()
		paths := w.splitPath(key, one[:])
		if paths == nil {
			return
		}
		if w.disabledIn(sc, paths) {
			w.skipValue()
			continue
		}
		w.value(sc, key, paths, true)
	}
	w.depth--
}

// failDuplicate refuses a repeated key as the server's JSON parser does.
func (w *docWalk) failDuplicate(key string) {
	if w.m.v3 {
		r := fmt.Sprintf("Duplicate Object property \"%s\"\n at [Source: REDACTED (`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION` disabled); byte offset: #%d]", key, w.pos)
		w.fail(&osErr{status: 400, typ: "mapper_parsing_exception", reason: "failed to parse", cause: &errCause{typ: "json_parse_exception", reason: r, cause: &errCause{typ: "stream_read_exception", reason: r}}})
		return
	}
	w.failParse("json_parse_exception", jsonErr(false, "", "Duplicate field '"+key+"'", w.src, w.pos).reason)
}

// keySet holds an object's keys, to refuse a repeated one as the
// server's parser does.
type keySet struct {
	few  [32]string
	n    int
	many map[string]struct{}
}

func (w *docWalk) duplicate(ks *keySet, key string) bool {
	if ks.many != nil {
		if _, ok := ks.many[key]; ok {
			return true
		}
		ks.many[key] = struct{}{}
		return false
	}
	for _, k := range ks.few[:ks.n] {
		if k == key {
			return true
		}
	}
	if ks.n < len(ks.few) {
		ks.few[ks.n] = key
		ks.n++
		return false
	}
	ks.many = make(map[string]struct{}, 32)
	for _, k := range ks.few {
		ks.many[k] = struct{}{}
	}
	ks.many[key] = struct{}{}
	return false
}

// disabledIn reports whether an intermediate object of paths is disabled.
func (w *docWalk) disabledIn(sc scope, paths []string) bool {
	if sc.isNew || len(paths) < 2 {
		return false
	}
	p := sc.path
	for _, part := range paths[:len(paths)-1] {
		f := w.lookup(p, part)
		if f == nil || f.kind != kObject {
			return false
		}
		if f.disabled {
			return true
		}
		p = f.path
	}
	return false
}

// value parses the value at w.pos of member key.
func (w *docWalk) value(sc scope, key string, paths []string, member bool) {
	switch w.src[w.pos] {
	case '{':
		w.object(sc, key, paths)
	case '[':
		w.array(sc, key, paths)
	case 'n':
		w.pos += 4
		if f, _ := w.existing(sc, paths); f == nil && w.ownDynamic(sc) == dynStrict {
			w.fail(strictErr(sc.path, key))
		}
	default:
		w.scalar(sc, key, paths, member)
	}
}

// existing is the mapped field at sc + paths, or nil.
func (w *docWalk) existing(sc scope, paths []string) (*mfield, string) {
	if sc.isNew {
		return nil, ""
	}
	p := sc.path
	for _, part := range paths[:len(paths)-1] {
		f := w.lookup(p, part)
		if f == nil || f.kind != kObject {
			return nil, ""
		}
		p = f.path
	}
	f := w.lookup(p, paths[len(paths)-1])
	if f == nil {
		return nil, ""
	}
	return f, f.path
}

func (w *docWalk) ownDynamic(sc scope) dynMode {
	if sc.f == rootField {
		return w.m.dynamic
	}
	return sc.f.dynamic
}

// dynamicOf is the dynamic setting in force for new members of sc.
func (w *docWalk) dynamicOf(sc scope) dynMode {
	if sc.f == rootField {
		return w.m.dynamic
	}
	if sc.f.dynamic != dynInherit {
		return sc.f.dynamic
	}
	p := sc.path
	for {
		i := strings.LastIndexByte(p, '.')
		if i < 0 {
			return w.m.dynamic
		}
		p = p[:i]
		f := w.m.fields[p]
		if f == nil {
			return dynTrue
		}
		if f.dynamic != dynInherit {
			return f.dynamic
		}
	}
}

func strictErr(parent, name string) *osErr {
	if parent == "" {
		parent = "_doc"
	}
	return &osErr{status: 400, typ: "strict_dynamic_mapping_exception", reason: "mapping set to strict, dynamic introduction of [" + name + "] within [" + parent + "] is not allowed"}
}

// dynamicParent finds (creating the missing intermediate objects of a
// dotted name) the object a new field of paths goes in. ok is false when
// the document failed or the field is not to be mapped.
func (w *docWalk) dynamicParent(sc scope, paths []string) (scope, bool) {
	for _, part := range paths[:len(paths)-1] {
		p := join(sc.path, part)
		if !sc.isNew {
			if f := w.lookup(sc.path, part); f != nil {
				if f.kind != kObject {
					w.fail(mapErrorf("Could not dynamically add mapping for field [%s]. Existing mapping for [%s] must be of type object but found [%s].", strings.Join(paths, "."), p, f.typ))
					return sc, false
				}
				sc = scope{p, f, false}
				continue
			}
		}
		switch w.dynamicOf(sc) {
		case dynStrict:
			w.fail(strictErr(sc.path, part))
			return sc, false
		case dynFalse:
			return sc, true
		}
		nf := w.m.templateField(p, part, vtObject)
		if nf == nil || nf.kind != kObject {
			nf = &mfield{kind: kObject, typ: "object", spec: map[string]any{}}
		}
		p = strings.Clone(p)
		w.pending = append(w.pending, pendingField{p, nf})
		sc = scope{p, nf, true}
	}
	return sc, true
}

// newField resolves where the new field of paths (whose value is at
// w.pos) goes: its parent, name and path. ok is false when it is not to be
// mapped (the document failed, or dynamic is false there; the value is
// then skipped). A strict refusal names the object the key is in for an
// object value, the field's parent for a scalar, as the server does.
func (w *docWalk) newField(sc scope, paths []string, objectValue bool) (ps scope, name, p string, ok bool) {
	ps, ok = w.dynamicParent(sc, paths)
	if !ok {
		w.skipValue()
		return ps, "", "", false
	}
	name = paths[len(paths)-1]
	switch w.dynamicOf(ps) {
	case dynStrict:
		at := ps.path
		if objectValue {
			at = sc.path
		}
		w.fail(strictErr(at, name))
		return ps, "", "", false
	case dynFalse:
		w.skipValue()
		return ps, "", "", false
	}
	return ps, name, join(ps.path, name), true
}

func (w *docWalk) object(sc scope, key string, paths []string) {
	if f, p := w.existing(sc, paths); f != nil {
		if f.kind == kObject {
			if f.disabled {
				w.skipValue()
				return
			}
			w.members(scope{p, f, false})
			return
		}
		w.leaf(f, p, '{')
		return
	}
	_, name, p, ok := w.newField(sc, paths, true)
	if !ok {
		return
	}
	nf := w.m.templateField(p, name, vtObject)
	if nf == nil {
		nf = &mfield{kind: kObject, typ: "object", spec: map[string]any{}}
	}
	w.pending = append(w.pending, pendingField{strings.Clone(p), nf})
	if nf.kind != kObject {
		w.leaf(nf, p, '{')
		return
	}
	if nf.disabled {
		w.skipValue()
		return
	}
	w.members(scope{p, nf, true})
}

func (w *docWalk) array(sc scope, key string, paths []string) {
	if f, _ := w.existing(sc, paths); f == nil {
		ps, ok := w.dynamicParent(sc, paths)
		if !ok {
			w.skipValue()
			return
		}
		name := paths[len(paths)-1]
		if w.dynamicOf(ps) == dynStrict {
			w.fail(strictErr(ps.path, name))
			return
		}
		sc, key, paths = ps, name, []string{name}
	}
	w.pos++ // '['
	w.arrays++
	defer func() { w.arrays-- }()
	if w.arrays > w.m.depthLimit {
		w.failParse("parse_exception", fmt.Sprintf("The depth of the nested array field has exceeded the allowed limit of [%d]. This limit can be set by changing the [index.mapping.depth.limit] index level setting.", w.m.depthLimit))
		return
	}
	for w.err == nil {
		w.ws()
		switch w.src[w.pos] {
		case ']':
			w.pos++
			return
		case ',':
			w.pos++
			w.ws()
		}
		w.value(sc, key, paths, false)
	}
}

// scalar parses a string, number or boolean.
func (w *docWalk) scalar(sc scope, key string, paths []string, member bool) {
	if f, p := w.existing(sc, paths); f != nil {
		if f.kind == kObject && f.disabled {
			w.skipValue()
			return
		}
		if f.kind == kObject {
			name := key
			if !member {
				name = "null"
			}
			w.skipValue()
			w.fail(mapErrorf("object mapping for [%s] tried to parse field [%s] as object, but found a concrete value", p, name))
			return
		}
		w.leaf(f, p, w.src[w.pos])
		return
	}
	_, name, p, ok := w.newField(sc, paths, false)
	if !ok {
		return
	}
	vt, dateFmt := w.peekType()
	nf := w.m.templateField(p, name, vt)
	if nf == nil {
		nf = defaultDynamicField(vt, dateFmt)
	}
	w.pending = append(w.pending, pendingField{strings.Clone(p), nf})
	w.leaf(nf, p, w.src[w.pos])
}

// peekType is the dynamic type of the scalar at w.pos.
func (w *docWalk) peekType() (valueType, string) {
	switch c := w.src[w.pos]; {
	case c == 't' || c == 'f':
		return vtBool, ""
	case c == '"':
		if !w.m.dateDetection {
			return vtString, ""
		}
		save := w.pos
		s := w.readString()
		w.pos = save
		if javaParsesNumber(s) {
			return vtString, ""
		}
		if _, ok := parseDateOptionalTime(s); ok {
			return vtDate, ""
		}
		if _, ok := parseSlashDate(s); ok {
			return vtDate, slashFormat
		}
		return vtString, ""
	default:
		end := w.pos
		for end < len(w.src) && strings.IndexByte("-+0123456789", w.src[end]) >= 0 {
			end++
		}
		if end < len(w.src) && (w.src[end] == '.' || w.src[end] == 'e' || w.src[end] == 'E') {
			return vtDouble, ""
		}
		return vtLong, ""
	}
}

// token is the scalar at w.pos: its kind byte and text.
func (w *docWalk) token() (byte, string) {
	c := w.src[w.pos]
	switch c {
	case '"':
		return c, w.readKey() // a view when unescaped: used only while walking
	case '{':
		start := w.pos
		w.skipValue()
		return c, string(w.src[start:w.pos])
	}
	start := w.pos
	w.skipValue()
	return c, string(w.src[start:w.pos])
}

// leaf checks one value (at w.pos) against a leaf field and consumes it.
func (w *docWalk) leaf(f *mfield, path string, c byte) {
	if f.kind == kOpaque {
		w.skipValue()
		return
	}
	start := w.pos
	if c == '{' {
		if w.m.v3 && f.ignoreMalformed && f.kind >= kLong && f.kind <= kHalfFloat {
			w.skipValue() // 3.x: ignore_malformed numbers keep an object in _source
			return
		}
		cause := objectCause(w.m.v3, f, w.src, start)
		preview := w.preview()
		w.fail(&osErr{status: 400, typ: "mapper_parsing_exception",
			reason: fmt.Sprintf("failed to parse field [%s] of type [%s] in document with id '%s'. Preview of field's value: '%s'", path, f.typ, w.id, preview),
			cause:  cause})
		return
	}
	if f.kind == kText || f.kind == kKeyword {
		// Any scalar goes; only a string longer than a term can hold
		// needs reading (for the keyword term limit).
		if c == '"' {
			w.skipString()
			if w.pos-start-2 <= 32766 {
				return
			}
			w.pos = start
		} else {
			w.skipValue()
			return
		}
	}
	kind, text := w.token()
	if cause := checkScalar(w.m.v3, f, kind, text, w.src, w.pos); cause != nil {
		if f.ignoreMalformed {
			return
		}
		w.fail(&osErr{status: 400, typ: "mapper_parsing_exception",
			reason: fmt.Sprintf("failed to parse field [%s] of type [%s] in document with id '%s'. Preview of field's value: '%s'", path, f.typ, w.id, javaPreview(kind, text)),
			cause:  cause})
		return
	}
	if f.kind == kKeyword {
		w.checkTerm(f, path, text)
	}
	for i, s := range f.subs {
		if s.kind == kKeyword {
			w.checkTerm(s, path+"."+f.subNames[i], text)
		}
	}
}

// checkTerm records the immense-term refusal Lucene gives a keyword value
// over 32766 bytes.
func (w *docWalk) checkTerm(f *mfield, path, text string) {
	if len(text) <= 32766 || w.termErr != nil || f.noTerms {
		return
	}
	if f.ignoreAbove > 0 && utf16Len(text) > f.ignoreAbove {
		return
	}
	prefix := make([]string, 0, 30)
	for i := 0; i < 30 && i < len(text); i++ {
		prefix = append(prefix, strconv.Itoa(int(int8(text[i]))))
	}
	w.termErr = &osErr{status: 400, typ: "illegal_argument_exception",
		reason: fmt.Sprintf("Document contains at least one immense term in field=\"%s\" (whose UTF8 encoding is longer than the max length 32766), all of which were skipped.  Please correct the analyzer to not produce such terms.  The prefix of the first immense term is: '[%s]...', original message: bytes can be at most 32766 in length; got %d", path, strings.Join(prefix, ", "), len(text)),
		cause:  &errCause{typ: "max_bytes_length_exceeded_exception", reason: fmt.Sprintf("bytes can be at most 32766 in length; got %d", len(text))}}
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// preview is the Java Map.toString of the object at w.pos (consumed).
func (w *docWalk) preview() string {
	var b strings.Builder
	w.previewValue(&b)
	return b.String()
}

func (w *docWalk) previewValue(b *strings.Builder) {
	w.ws()
	switch c := w.src[w.pos]; c {
	case '{', '[':
		// A map prints as {k=v, …}, a list as [v, …].
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		w.pos++
		b.WriteByte(c)
		for first := true; ; first = false {
			w.ws()
			if w.src[w.pos] == end {
				w.pos++
				break
			}
			if w.src[w.pos] == ',' {
				w.pos++
				w.ws()
			}
			if !first {
				b.WriteString(", ")
			}
			if c == '{' {
				b.WriteString(w.readString())
				w.ws()
				w.pos++
				b.WriteByte('=')
			}
			w.previewValue(b)
		}
		b.WriteByte(end)
	default:
		kind, text := w.token()
		b.WriteString(javaPreview(kind, text))
	}
}

// javaPreview is how the server prints a scalar it read.
func javaPreview(kind byte, text string) string {
	switch kind {
	case '"', 't', 'f', 'n':
		return text
	}
	if strings.ContainsAny(text, ".eE") {
		v, _ := strconv.ParseFloat(text, 64)
		return javaDouble(v)
	}
	return text
}

// javaDouble is Java's Double.toString.
func javaDouble(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "Infinity"
	case math.IsInf(v, -1):
		return "-Infinity"
	}
	a := math.Abs(v)
	if a >= 1e-3 && a < 1e7 || v == 0 {
		s := strconv.FormatFloat(v, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		return s
	}
	s := strconv.FormatFloat(v, 'E', -1, 64)
	mant, exp, _ := strings.Cut(s, "E")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	if exp[0] == '+' {
		exp = exp[1:]
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}

// merged merges the document's new fields as the server's dynamic update
// does: sorted by path (equal paths in document order), each repeat
// merged into the first one kept before it, except that the first two
// entries of the whole list are both kept and merged the other way round.
func (w *docWalk) merged() ([]pendingField, *osErr) {
	sort.SliceStable(w.pending, func(i, j int) bool { return w.pending[i].path < w.pending[j].path })
	out := w.pending[:0:0]
	for i, p := range w.pending {
		if n := len(out); n > 0 && out[n-1].path == p.path {
			kept := out[n-1].f
			if (kept.kind == kObject) != (p.f.kind == kObject) {
				return nil, &osErr{status: 400, typ: "illegal_argument_exception", reason: "can't merge a non object mapping [" + p.path + "] with an object mapping"}
			}
			if kept.typ != p.f.typ {
				from, to := p.f.typ, kept.typ
				if i == 1 {
					from, to = to, from
				}
				return nil, &osErr{status: 400, typ: "illegal_argument_exception", reason: fmt.Sprintf("mapper [%s] cannot be changed from type [%s] to [%s]", p.path, from, to)}
			}
			if i == 1 {
				out[0] = p
			}
			continue
		}
		out = append(out, p)
	}
	return out, nil
}
