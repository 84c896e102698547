package bulk

import (
	"bytes"
	"errors"
	"fmt"
	"github.com/opensearchrouted/opensearchrouted/internal/jsonstr"
)

// Batch holds every encoded item of one export call in one arena.
//
// Each item is an action line and a source line, both ending in '\n':
//
//	{"create":{"_index":"<index>","_id":"<id>","routing":"<routing>"}}\n
//	<source>\n
//
// (no "_id" for an item without id, no "routing" for one without a routing
// value: BeginRouted, BeginSizedRouted).
//
// An item's bytes are contiguous; items keep the order in which they were
// committed, and item numbers (int32) are positions in that order. An item
// usually lives in this Batch's arena; Append adds items that stay in
// another Batch's arena, and SetID moves an item to a new copy.
//
// Use: Begin, append the source to the returned slice, Commit that slice.
// After Reset the arena and the item table are reused (capacity is kept), so
// a warmed-up Batch encodes without allocating.
//
// A Batch is not safe for concurrent mutation. Sends read the arena
// concurrently: Begin, Commit and Reset must not be called while any
// Client.Send over this Batch is in progress.
type Batch struct {
	arena []byte
	items []entry
	total int // bytes of all committed items

	// The open item (between Begin and Commit); open is false otherwise.
	open     bool
	start    int // offset of the open item's action line
	srcStart int // offset of the open item's source
	index    string
	id       string
	routing  string
	idAt     int // BeginSized: offset of the reserved id from start
	idLen    int // BeginSized: bytes reserved for the id; -1 after Begin

	// The last index name and its JSON form: one export call writes to few
	// indices, so most items reuse it.
	lastIndex     string
	lastIndexJSON []byte
}

type entry struct {
	data               []byte // the item's bytes (action line and source line)
	index, id, routing string
}

// ErrNotBegun is returned by Commit when no item is open.
var ErrNotBegun = errors.New("bulk: Commit without Begin")

// Begin opens a new item with a create action for index and, unless id is
// "", that _id. It returns the arena: append the item's JSON source to it and
// pass the result to Commit. An item still open from an earlier Begin is
// discarded.
//
// index and id are escaped as JSON strings; bytes that are not valid UTF-8
// are written as U+FFFD, as routing.SanitizeUTF8 (and so routing.Hash)
// assumes.
func (b *Batch) Begin(index, id string) []byte { return b.BeginRouted(index, id, "") }

// BeginRouted is Begin for an item with a custom routing value: unless
// routing is "", the action line sets it ("routing", escaped as id is),
// and the server puts the document in the shard of that value instead of
// its id's. Routing returns it.
func (b *Batch) BeginRouted(index, id, routing string) []byte {
	b.openItem(index, id, routing)
	b.idLen = -1
	a := b.appendAction(b.arena, index, id, routing)
	b.srcStart = len(a)
	b.arena = a
	return a
}

// openItem discards the open item, if any, and opens one at the arena's end.
func (b *Batch) openItem(index, id, routing string) {
	if b.open {
		b.arena = b.arena[:b.start]
	}
	b.open = true
	b.start = len(b.arena)
	b.index, b.id, b.routing = index, id, routing
}

// appendAction appends the create action line for index, id and routing
// (none when "" each), newline included.
func (b *Batch) appendAction(a []byte, index, id, routing string) []byte {
	a = b.appendHead(a, index)
	if id != "" {
		a = append(a, `,"_id":`...)
		a = appendJSONString(a, id)
	}
	return appendTail(a, routing)
}

// appendTail appends the end of an action line: the routing value unless
// it is "", and the closing braces and newline.
func appendTail(a []byte, routing string) []byte {
	if routing != "" {
		a = append(a, `,"routing":`...)
		a = appendJSONString(a, routing)
	}
	return append(a, "}}\n"...)
}

// appendHead appends the action line up to and including the index name.
func (b *Batch) appendHead(a []byte, index string) []byte {
	a = append(a, actionHead+indexKey...)
	if index != b.lastIndex || b.lastIndexJSON == nil {
		b.lastIndexJSON = appendJSONString(b.lastIndexJSON[:0], index)
		b.lastIndex = index
	}
	return append(a, b.lastIndexJSON...)
}

// BeginSized opens an item like Begin whose _id is known only once its
// source is written (a hash of the source): it reserves idLen bytes for the
// id in the action line. Append the source, read it back with OpenSource,
// and close the item with CommitID.
func (b *Batch) BeginSized(index string, idLen int) []byte {
	return b.BeginSizedRouted(index, "", idLen)
}

// BeginSizedRouted is BeginSized for an item with a custom routing value
// (none when ""), as BeginRouted.
func (b *Batch) BeginSizedRouted(index, routing string, idLen int) []byte {
	b.openItem(index, "", routing)
	a := b.appendHead(b.arena, index)
	a = append(a, `,"_id":"`...)
	b.idAt = len(a) - b.start
	for n := idLen; n > 0; {
		k := min(n, len(idFill))
		a = append(a, idFill[:k]...)
		n -= k
	}
	a = appendTail(append(a, '"'), routing)
	b.idLen = idLen
	b.srcStart = len(a)
	b.arena = a
	return a
}

// idFill fills the place reserved for an id until CommitID writes it.
const idFill = "00000000000000000000000000000000"

// OpenSource returns the source appended so far to buf, the slice returned
// by Begin or BeginSized with the open item's source appended.
func (b *Batch) OpenSource(buf []byte) []byte {
	if !b.open || len(buf) < b.srcStart {
		return nil
	}
	return buf[b.srcStart:]
}

// CommitID closes an item opened by BeginSized, as Commit does, writing id
// in the reserved place. id must have exactly the reserved length and only
// characters that need no JSON escaping, and not be empty; otherwise the
// item is discarded with an error.
func (b *Batch) CommitID(buf []byte, id string) (int32, error) {
	return b.commitSized("CommitID", buf, id, true)
}

// CommitCompact is CommitID for a caller that guarantees the two things
// CommitID scans for: the source holds no raw '\n' (compact JSON whose
// strings escape every control character, as ss4o writes it) and id is made
// of characters that need no JSON escaping (as ss4o.AppendID's). It
// still refuses an id of the wrong length, an empty index and a source that
// does not start with '{'. A source that breaks the promise would split its
// item's line and make the server misread the items after it.
func (b *Batch) CommitCompact(buf []byte, id string) (int32, error) {
	return b.commitSized("CommitCompact", buf, id, false)
}

// commitSized writes id in the place BeginSized reserved and closes the
// item; scan: check id's characters and rewrite the source's raw newlines
// (CommitID), or trust both (CommitCompact). name is the caller's, for
// errors.
func (b *Batch) commitSized(name string, buf []byte, id string, scan bool) (int32, error) {
	if !b.open || b.idLen < 0 {
		b.Abort()
		return -1, fmt.Errorf("bulk: %s without BeginSized", name)
	}
	if len(id) == 0 || len(id) != b.idLen || (scan && !jsonstr.Plain(id)) || len(buf) < b.srcStart {
		b.Abort()
		return -1, fmt.Errorf("bulk: an id of %d bytes (or with characters to escape) does not fit the %d plain bytes reserved", len(id), b.idLen)
	}
	copy(buf[b.start+b.idAt:], id)
	b.id = id
	return b.commit(buf, scan)
}

// Commit closes the item opened by Begin: buf is the slice Begin returned
// with the item's source appended. It returns the item's number.
//
// The source must be one JSON object. Any raw '\n' in it (legal JSON
// whitespace, fatal to NDJSON) is rewritten as ' '. An empty index or a
// source that does not start with '{' is refused with an error and the item
// is discarded: a broken line would make the server misread every item after
// it.
func (b *Batch) Commit(buf []byte) (int32, error) {
	if !b.open {
		return -1, ErrNotBegun
	}
	return b.commit(buf, true)
}

// commit closes the open item; scan: rewrite raw newlines in the source.
func (b *Batch) commit(buf []byte, scan bool) (int32, error) {
	b.open = false
	if len(buf) < b.srcStart {
		b.arena = b.arena[:b.start]
		return -1, errors.New("bulk: Commit got a slice shorter than the one Begin returned")
	}
	src := buf[b.srcStart:]
	var err error
	switch {
	case b.index == "":
		err = errors.New("bulk: item has an empty index name")
	case !startsObject(src):
		err = errors.New("bulk: item source is not a JSON object")
	}
	if err != nil {
		b.arena = buf[:b.start]
		return -1, err
	}
	if scan {
		spaceNewlines(src)
	}
	buf = append(buf, '\n')
	b.arena = buf
	b.items = append(b.items, entry{data: buf[b.start:len(buf):len(buf)], index: b.index, id: b.id, routing: b.routing})
	b.total += len(buf) - b.start
	return int32(len(b.items) - 1), nil
}

// spaceNewlines rewrites every raw '\n' of src as ' '.
func spaceNewlines(src []byte) {
	for i := bytes.IndexByte(src, '\n'); i >= 0; {
		src[i] = ' '
		j := bytes.IndexByte(src[i+1:], '\n')
		if j < 0 {
			break
		}
		i += 1 + j
	}
}

func startsObject(src []byte) bool {
	for _, c := range src {
		switch c {
		case ' ', '\t', '\r', '\n':
			continue
		case '{':
			return true
		}
		return false
	}
	return false
}

// Abort discards the open item, if any.
func (b *Batch) Abort() {
	if b.open {
		b.arena = b.arena[:b.start]
		b.open = false
		b.index, b.id, b.routing = "", "", ""
	}
}

// Len returns the number of committed items.
func (b *Batch) Len() int { return len(b.items) }

// Size returns the bytes of all committed items.
func (b *Batch) Size() int { return b.total }

// Item returns item i's index and id (the strings given to Begin) and its
// size in bytes (action line and source, newlines included).
func (b *Batch) Item(i int32) (index, id string, size int) {
	e := &b.items[i]
	return e.index, e.id, len(e.data)
}

// Routing returns item i's routing value (the one given to BeginRouted or
// BeginSizedRouted), "" when it has none: the server places such an item
// by this value, not by its id.
func (b *Batch) Routing(i int32) string { return b.items[i].routing }

// Bytes returns item i's bytes (action line and source line). The slice
// aliases the arena: do not modify it; it is valid until Reset.
func (b *Batch) Bytes(i int32) []byte { return b.items[i].data }

func (b *Batch) size(i int32) int { return len(b.items[i].data) }

// Items is a view of some committed items of a Batch, for AppendItems.
type Items struct {
	entries []entry
	size    int
}

// Items returns a view of b's committed items [from, to). The view does not
// change as b grows: another goroutine may pass it to AppendItems while the
// one that owns b commits further items (not Reset, SetID or Abort).
func (b *Batch) Items(from, to int) Items {
	v := Items{entries: b.items[from:to:to]}
	for _, e := range v.entries {
		v.size += len(e.data)
	}
	return v
}

// Len is the number of items in the view.
func (v Items) Len() int { return len(v.entries) }

// AppendItems adds the items of v, in order, after b's items, without
// copying their bytes: they stay in the arena of the Batch v was taken
// from, which may go on committing items but must not be Reset (nor give
// those items a new id) until b is Reset. Item k of v becomes item Len()+k
// of b. An item open in b is discarded.
func (b *Batch) AppendItems(v Items) {
	b.Abort()
	b.total += v.size
	b.items = append(b.items, v.entries...)
}

// SetID gives item i a new _id: the item is rewritten (action line and a
// copy of its source) at the end of b's arena. id is escaped as in Begin.
// The item keeps its number, its index and its routing value.
func (b *Batch) SetID(i int32, id string) {
	b.Abort()
	e := &b.items[i]
	src := e.data[bytes.IndexByte(e.data, '\n')+1:]
	start := len(b.arena)
	a := b.appendAction(b.arena, e.index, id, e.routing)
	a = append(a, src...)
	b.arena = a
	b.total += len(a) - start - len(e.data)
	e.data, e.id = a[start:len(a):len(a)], id
}

// Source returns item i's source: its JSON document, without the action
// line and the final newline. The slice aliases the arena: do not modify
// it; it stays valid until Reset, also after Replace or SetID of item i.
func (b *Batch) Source(i int32) []byte {
	d := b.items[i].data
	return d[bytes.IndexByte(d, '\n')+1 : len(d)-1]
}

// Replace rewrites item i as a create of src into index with id (none when
// ""), at the end of b's arena, as Begin and Commit would write it (src is
// copied, its raw newlines written as spaces). The item keeps its number.
// An empty index or a src that is not a JSON object is refused with an
// error and the item is left as it was. Not while a Send over b is in
// progress. The item keeps its routing value when index is its index;
// written to another index, it has none (a routing value places documents
// within one index).
func (b *Batch) Replace(i int32, index, id string, src []byte) error {
	b.Abort()
	if index == "" {
		return errors.New("bulk: Replace with an empty index name")
	}
	if !startsObject(src) {
		return errors.New("bulk: Replace with a source that is not a JSON object")
	}
	e := &b.items[i]
	if index != e.index {
		e.routing = ""
	}
	start := len(b.arena)
	a := b.appendAction(b.arena, index, id, e.routing)
	srcStart := len(a)
	a = append(a, src...)
	spaceNewlines(a[srcStart:])
	a = append(a, '\n')
	b.arena = a
	b.total += len(a) - start - len(e.data)
	e.data, e.index, e.id = a[start:len(a):len(a)], index, id
	return nil
}

// Reset empties the Batch and keeps its capacity. Item numbers, slices from
// Bytes and outcomes' item positions refer to nothing after Reset.
func (b *Batch) Reset() {
	clear(b.items) // drop references to the callers' strings
	b.items = b.items[:0]
	b.arena = b.arena[:0]
	b.total = 0
	b.open = false
	b.index, b.id, b.routing = "", "", ""
}

// Split cuts items (item numbers of b, in order) into consecutive sub-bulks of
// at most maxBytes each and returns them appended to dst[:0]. An item larger
// than maxBytes goes alone into its own sub-bulk. maxBytes <= 0 means no
// limit. The sub-bulks are sub-slices of items (capped, so appending to one
// never overwrites the next): nothing is copied.
func Split(b *Batch, items []int32, maxBytes int, dst [][]int32) [][]int32 {
	dst = dst[:0]
	if len(items) == 0 {
		return dst
	}
	if maxBytes <= 0 {
		return append(dst, items[:len(items):len(items)])
	}
	start, size := 0, 0
	for k, it := range items {
		s := b.size(it)
		if k > start && size+s > maxBytes {
			dst = append(dst, items[start:k:k])
			start, size = k, 0
		}
		size += s
	}
	return append(dst, items[start:len(items):len(items)])
}

// appendJSONString appends s as a quoted JSON string (see jsonstr.Append:
// invalid UTF-8 as U+FFFD, as routing.Hash assumes).
func appendJSONString(dst []byte, s string) []byte { return jsonstr.Append(dst, s) }
