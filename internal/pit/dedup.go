package pit

// window remembers the last n emitted (index, _id) pairs and their
// versions, oldest evicted first. Not safe for concurrent use (the
// iterating goroutine owns it).
//
// Memory per entry on 64-bit Go (measured by BenchmarkDedupWindow, see
// BENCHMARKS.part.md): the _id bytes (kept from the decoded hit, rounded
// up to a malloc size class: 24 B for a 20-char auto-generated id), a map
// slot of key (string header 16 B + index number 4 B, padded to 24 B) and
// version (8 B) at the map's load factor, and a ring slot (24 B). Index
// names are stored once per distinct index.
type window struct {
	seen    map[dedupKey]int64 // version by key
	ring    []dedupKey         // insertion order; ring[next] is the oldest once full
	next    int
	full    bool
	indices map[string]uint32
	lastIx  string // the last index name looked up (hits of a page share it)
	lastNum uint32
}

type dedupKey struct {
	id  string
	idx uint32
}

// dedupResult is what observe found.
type dedupResult uint8

const (
	dedupNew       dedupResult = iota // first time seen (or evicted since)
	dedupDuplicate                    // seen with the same version: skip
	dedupChanged                      // seen with another version: emit, out of order
)

func newWindow(n int) *window {
	return &window{
		seen:    make(map[dedupKey]int64, n),
		ring:    make([]dedupKey, n),
		indices: make(map[string]uint32),
	}
}

func (w *window) key(index, id string) dedupKey {
	if index == w.lastIx && len(w.indices) > 0 {
		return dedupKey{id: id, idx: w.lastNum}
	}
	ix, ok := w.indices[index]
	if !ok {
		ix = uint32(len(w.indices))
		w.indices[index] = ix
	}
	w.lastIx, w.lastNum = index, ix
	return dedupKey{id: id, idx: ix}
}

// observe records an emitted hit and says whether it was emitted before.
// version -1 (unknown) compares equal to -1 only.
func (w *window) observe(index, id string, version int64) dedupResult {
	k := w.key(index, id)
	if old, ok := w.seen[k]; ok {
		if old == version {
			return dedupDuplicate
		}
		w.seen[k] = version
		return dedupChanged
	}
	if w.full {
		delete(w.seen, w.ring[w.next])
	}
	w.ring[w.next] = k
	w.seen[k] = version
	w.next++
	if w.next == len(w.ring) {
		w.next = 0
		w.full = true
	}
	return dedupNew
}

func (w *window) len() int { return len(w.seen) }
