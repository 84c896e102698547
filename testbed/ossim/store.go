package ossim

import "sync"

// storedDoc is one document of a shard copy. source is the raw bytes the
// client sent (a sub-slice of the request body: never modified).
type storedDoc struct {
	id, routing string
	source      []byte
	seqNo       int64
	version     int64
	term        int64
}

// shardStore holds the documents of one shard copy on one node.
type shardStore struct {
	mu     sync.RWMutex
	ids    map[string]int32 // id → position in docs
	docs   []storedDoc
	maxSeq int64 // highest seq_no applied, -1 when none
	// asPrimary/asReplica: operations this copy executed as primary and
	// applied as replica (the per-copy indexing.index_total of the server).
	asPrimary, asReplica int64
}

func newShardStore() *shardStore {
	return &shardStore{ids: map[string]int32{}, maxSeq: -1}
}

func (s *shardStore) count() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.docs)
}

// indexed returns the operations executed as primary and as replica.
func (s *shardStore) indexed() (primary, replica int64) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.asPrimary, s.asReplica
}

// get returns the document with this id. Must not hold s.mu.
func (s *shardStore) get(id string) (storedDoc, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if i, ok := s.ids[id]; ok {
		return s.docs[i], true
	}
	return storedDoc{}, false
}

// snapshot copies the documents (for a search or a PIT context).
func (s *shardStore) snapshot() []storedDoc {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return append([]storedDoc(nil), s.docs...)
}

// lookupLocked returns the position of id. Must hold s.mu.
func (s *shardStore) lookupLocked(id string) (int32, bool) {
	i, ok := s.ids[id]
	return i, ok
}

// putLocked stores d, replacing any document with its id. Must hold s.mu.
func (s *shardStore) putLocked(d storedDoc) {
	if i, ok := s.ids[d.id]; ok {
		s.docs[i] = d
	} else {
		s.ids[d.id] = int32(len(s.docs))
		s.docs = append(s.docs, d)
	}
	if d.seqNo > s.maxSeq {
		s.maxSeq = d.seqNo
	}
}

// putAtLocked stores d at pos when exists (pos from lookupLocked), else
// appends it: one map operation instead of two. Must hold s.mu.
func (s *shardStore) putAtLocked(pos int32, exists bool, d storedDoc) {
	if exists {
		s.docs[pos] = d
	} else {
		s.ids[d.id] = int32(len(s.docs))
		s.docs = append(s.docs, d)
	}
	if d.seqNo > s.maxSeq {
		s.maxSeq = d.seqNo
	}
}

// deleteLocked removes id (swap with the last document). Must hold s.mu.
func (s *shardStore) deleteLocked(id string) {
	i, ok := s.ids[id]
	if !ok {
		return
	}
	last := int32(len(s.docs) - 1)
	if i != last {
		s.docs[i] = s.docs[last]
		s.ids[s.docs[i].id] = i
	}
	s.docs[last] = storedDoc{}
	s.docs = s.docs[:last]
	delete(s.ids, id)
}

// applyReplicaLocked applies an operation the primary already executed:
// it wins unless the copy holds a newer operation for that id.
func (s *shardStore) applyReplicaLocked(d storedDoc, del bool) {
	if i, ok := s.ids[d.id]; ok && s.docs[i].seqNo > d.seqNo {
		return
	}
	if del {
		s.deleteLocked(d.id)
	} else {
		s.putLocked(d)
	}
	if d.seqNo > s.maxSeq {
		s.maxSeq = d.seqNo
	}
}

// mergeFrom copies src's documents into s (recovery and relocation).
func (s *shardStore) mergeFrom(src *shardStore) {
	if s == src {
		return
	}
	docs := src.snapshot()
	src.mu.RLock()
	maxSeq := src.maxSeq
	src.mu.RUnlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range docs {
		s.applyReplicaLocked(d, false)
	}
	if maxSeq > s.maxSeq {
		s.maxSeq = maxSeq
	}
}
