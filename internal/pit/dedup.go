package pit

import "math"

// window remembers the last n emitted (index, _id) pairs and their
// versions, oldest evicted first. Not safe for concurrent use (the
// iterating goroutine owns it).
//
// Each entry also holds a time key (the hit's first sort value as an
// integer, math.MinInt64 when unknown). Entries whose time key is at or
// above the floor are still needed (a later read may return them again):
// when the ring is full and its oldest entry is still needed, the ring
// grows, doubling, up to limit; past limit such an entry is evicted anyway
// and counted as an overflow. With the floor at math.MaxInt64 (the
// default) nothing is needed and the window is a plain ring of n.
//
// Memory per entry on 64-bit Go (measured by BenchmarkDedupWindow, see
// BENCHMARKS.part.md): the _id bytes (kept from the decoded hit, rounded
// up to a malloc size class: 24 B for a 20-char auto-generated id), a map
// slot of key (string header 16 B + index number 4 B, padded to 24 B) and
// version (8 B) at the map's load factor, a ring slot (24 B) and its time
// key (8 B). Index names are stored once per distinct index.
type window struct {
	seen      map[dedupKey]int64 // version by key
	ring      []dedupKey         // insertion order; ring[next] is the oldest once full
	ts        []int64            // time key of ring[i]
	next      int
	full      bool
	limit     int   // the ring grows up to this many entries
	floor     int64 // entries with a time key ≥ floor are still needed
	overflows int64 // needed entries evicted because the ring was at limit
	indices   map[string]uint32
	lastIx    string // the last index name looked up (hits of a page share it)
	lastNum   uint32
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
		ts:      make([]int64, n),
		limit:   n,
		floor:   math.MaxInt64,
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
func (w *window) observe(index, id string, version, ts int64) dedupResult {
	k := w.key(index, id)
	if old, ok := w.seen[k]; ok {
		if old == version {
			return dedupDuplicate
		}
		w.seen[k] = version
		return dedupChanged
	}
	if w.full {
		if w.ts[w.next] >= w.floor {
			if len(w.ring) < w.limit {
				w.grow()
			} else {
				w.overflows++
			}
		}
	}
	if w.full {
		delete(w.seen, w.ring[w.next])
	}
	w.ring[w.next] = k
	w.ts[w.next] = ts
	w.seen[k] = version
	w.next++
	if w.next == len(w.ring) {
		w.next = 0
		w.full = true
	}
	return dedupNew
}

// grow doubles the ring (up to limit), keeping the insertion order; the
// ring is then not full.
func (w *window) grow() {
	n := min(2*len(w.ring), w.limit)
	ring := make([]dedupKey, 0, n)
	ts := make([]int64, 0, n)
	ring = append(append(ring, w.ring[w.next:]...), w.ring[:w.next]...)
	ts = append(append(ts, w.ts[w.next:]...), w.ts[:w.next]...)
	w.next = len(ring)
	w.ring, w.ts = ring[:n], ts[:n]
	w.full = false
}

func (w *window) len() int { return len(w.seen) }

// DedupWindow is a deduplication window that outlives a Paginator: pass
// it as Options.Dedup to several Paginators in turn (one at a time), so
// that documents one of them emitted are dropped when a later one reads
// them again (a follower re-reading an overlap). It is not safe for
// concurrent use: only the Paginator iterating uses it.
type DedupWindow struct {
	w *window
}

// NewDedupWindow returns a window of size entries that may grow up to
// limit entries (limit < size means size) to keep every entry at or above
// its floor (see Keep).
func NewDedupWindow(size, limit int) *DedupWindow {
	if size < 1 {
		size = 1
	}
	w := newWindow(size)
	w.limit = max(limit, size)
	return &DedupWindow{w: w}
}

// Keep says that entries whose time key (the hit's first sort value, as
// an integer) is at or above floor are still needed: the window grows
// rather than evict them, up to its limit. math.MaxInt64 needs nothing.
func (d *DedupWindow) Keep(floor int64) { d.w.floor = floor }

// Len is the number of entries held; Cap the current ring size.
func (d *DedupWindow) Len() int { return d.w.len() }
func (d *DedupWindow) Cap() int { return len(d.w.ring) }

// Overflows counts entries evicted while still needed (the window was at
// its limit): their documents, if read again, are emitted again.
func (d *DedupWindow) Overflows() int64 { return d.w.overflows }

// timeKey parses a sort value that is a JSON integer (a date or date_nanos
// sort value); ok is false for anything else.
func timeKey(v []byte) (int64, bool) {
	if len(v) == 0 || len(v) > 20 {
		return 0, false
	}
	neg := v[0] == '-'
	if neg {
		v = v[1:]
		if len(v) == 0 {
			return 0, false
		}
	}
	var n uint64
	for _, c := range v {
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (math.MaxUint64-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	if neg {
		if n > 1<<63 {
			return 0, false
		}
		return int64(-n), true
	}
	if n > math.MaxInt64 {
		return 0, false
	}
	return int64(n), true
}

// TimeKey is timeKey for callers: the integer of a JSON integer sort value.
func TimeKey(v []byte) (int64, bool) { return timeKey(v) }
