package ossim

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Bulk update items with a partial document ({"doc":{...}}), as the server
// runs them: the stored source is read (in real time, refreshed or not),
// the partial document merged into it (objects member by member, anything
// else replaced), and the result indexed as a new version; a merge that
// changes nothing is a noop (detect_noop, the default), which writes
// nothing. A missing document is 404 document_missing_exception. Scripts
// and upserts are refused (not emulated).

// updateDoc returns the partial document of an update item's body, or an
// error as the server words it: an unknown member refuses the whole bulk
// request (x_content_parse_exception, 2.19.6), as does a body without doc
// (action_request_validation_exception).
func updateDoc(body []byte) ([]byte, *osErr) {
	var req map[string]json.RawMessage
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, &osErr{status: 400, typ: "x_content_parse_exception", reason: "failed to parse the update request"}
	}
	for k := range req {
		if k != "doc" {
			if k == "script" || k == "upsert" || k == "doc_as_upsert" || k == "scripted_upsert" || k == "detect_noop" || k == "_source" {
				return nil, &osErr{status: 400, typ: "illegal_argument_exception", reason: fmt.Sprintf("ossim: update with [%s] is not emulated (only doc)", k)}
			}
			return nil, &osErr{status: 400, typ: "x_content_parse_exception", reason: fmt.Sprintf("[1:2] [UpdateRequest] unknown field [%s]", k)}
		}
	}
	doc, ok := req["doc"]
	if !ok {
		return nil, &osErr{status: 400, typ: "action_request_validation_exception", reason: "Validation Failed: 1: script or doc is missing;"}
	}
	if !validObject(doc) {
		return nil, &osErr{status: 400, typ: "mapper_parsing_exception", reason: "failed to parse"}
	}
	return doc, nil
}

// member is one member of a JSON object, its value raw.
type member struct {
	key string
	val json.RawMessage
}

func objectMembers(src []byte) ([]member, error) {
	dec := json.NewDecoder(bytes.NewReader(src))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, fmt.Errorf("not an object")
	}
	var ms []member
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		ms = append(ms, member{t.(string), v})
	}
	return ms, nil
}

func isObject(v []byte) bool {
	v = bytes.TrimLeft(v, " \t\r\n")
	return len(v) > 0 && v[0] == '{'
}

// mergeDoc merges patch into src: each member of patch replaces the member
// of src with its name (kept in its place), or, when both are objects, is
// merged into it; new members go last. changed is false when the result
// equals src.
func mergeDoc(src, patch []byte) (out []byte, changed bool, err error) {
	sm, err := objectMembers(src)
	if err != nil {
		return nil, false, err
	}
	pm, err := objectMembers(patch)
	if err != nil {
		return nil, false, err
	}
	for _, p := range pm {
		found := false
		for i := range sm {
			if sm[i].key != p.key {
				continue
			}
			found = true
			if isObject(sm[i].val) && isObject(p.val) {
				v, ch, err := mergeDoc(sm[i].val, p.val)
				if err != nil {
					return nil, false, err
				}
				if ch {
					sm[i].val, changed = v, true
				}
			} else if !jsonEqual(sm[i].val, p.val) {
				sm[i].val, changed = p.val, true
			}
			break
		}
		if !found {
			sm = append(sm, p)
			changed = true
		}
	}
	out = append(out, '{')
	for i, m := range sm {
		if i > 0 {
			out = append(out, ',')
		}
		out = appendStr(out, m.key)
		out = append(out, ':')
		var c bytes.Buffer
		if err := json.Compact(&c, m.val); err != nil {
			return nil, false, err
		}
		out = append(out, c.Bytes()...)
	}
	return append(out, '}'), changed, nil
}

func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return bytes.Equal(a, b)
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

// executeUpdate runs update item it on its primary's store (held locked):
// it sets it.res and, when the document changes, it.source to the merged
// document (what is stored and replicated). It reports whether the store
// is to be written.
func executeUpdate(st *shardStore, im *indexMeta, shard int, it *bulkItem, r itemResult) (itemResult, bool) {
	pos, exists := st.lookupLocked(it.id)
	if !exists {
		return itemResult{status: 404, index: im.name, errType: "document_missing_exception",
			errReason: fmt.Sprintf("[%s]: document missing", it.id), errIndex: true, shardLabel: shard, indexUUID: im.uuid}, false
	}
	if it.doc == nil { // forwarded from the coordinating node: the body as sent
		doc, e := updateDoc(it.source)
		if e != nil {
			return itemResult{status: e.status, index: im.name, errType: e.typ, errReason: e.reason}, false
		}
		it.doc = doc
	}
	cur := st.docs[pos]
	merged, changed, err := mergeDoc(cur.source, it.doc)
	if err != nil {
		return itemResult{status: 400, index: im.name, errType: "mapper_parsing_exception", errReason: "failed to parse"}, false
	}
	if !changed {
		// A bulk noop reports every copy successful (2.19.6).
		r.status, r.result, r.version, r.seqNo = 200, "noop", cur.version, cur.seqNo
		r.ok = r.total
		return r, false
	}
	if im.mapping != nil {
		if e := im.mapping.check(merged, it.id); e != nil {
			return itemResult{status: e.status, index: im.name, errType: e.typ, errReason: e.reason, cause: e.cause}, false
		}
	}
	it.source, it.routing = merged, cur.routing
	r.status, r.result, r.version = 200, "updated", cur.version+1
	return r, true
}
