package bulk

// updateHead begins the action line of an update item. It has the length
// of actionHead, so that a request whose items share one index leaves the
// "_index" field out of update lines exactly as of create lines (see
// bodyState.parts).
const updateHead = `{"update":{`

// BeginUpdate opens an item like Begin whose action is an update of the
// document id in index (both required): append the update request's body
// (e.g. {"doc":{...}}, a partial document merged into the stored one) and
// Commit it. The server answers 200 (result updated, or noop when nothing
// changed) or 404 document_missing_exception; Classify makes the latter
// Permanent, like any other 4xx.
func (b *Batch) BeginUpdate(index, id string) []byte {
	a := b.Begin(index, id)
	copy(a[b.start:], updateHead)
	return a
}
