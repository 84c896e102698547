package opensearchrouted

import (
	"time"

	"go.uber.org/zap"

	"github.com/opensearchrouted/opensearchrouted/internal/bulk"
	"github.com/opensearchrouted/opensearchrouted/internal/ss4o"
)

// An item's shape: how its record is written. An item the server refuses
// for good moves on to the next shape and is sent again, within the same
// call, under the same rules (each item moves at most twice):
//
//	shapeOriginal   the SS4O document as encoded
//	shapeUnmapped   refused for its shape (a mapping conflict or limit,
//	                bulk.IsShapeRefusal): the same document, same index
//	                and _id, with its attribute objects written as one
//	                string (ss4o.AppendUnmapped), which no mapping refuses
//	shapeDeadLetter refused otherwise, or in the unmapped shape too: a
//	                dead-letter document (ss4o.AppendDeadLetter) holding
//	                the original document, where it was meant to go and the
//	                server's reason, written to the dead-letter index
//
// Ids keep exactly-once across attempts and calls: the unmapped shape has
// the record's own _id (a later attempt of the original shape answers
// 409), and a dead-letter document's _id is a hash of the record's index,
// _id and original document (a repeated dead-letter write answers 409).
const (
	shapeOriginal uint8 = iota
	shapeUnmapped
	shapeDeadLetter
)

var shapeNames = [...]string{"original", "unmapped"}

// reshape moves every item of c.pending refused for good (Permanent) to
// its next shape, making it retryable, and returns how many moved. It runs
// between rounds: no send over c.batch is in progress.
func (e *osExporter) reshape(c *call) int {
	moved := 0
	for _, it := range c.pending {
		if c.class[it] != bulk.Permanent {
			continue
		}
		// Refused credentials (401, 403) never get here: run makes them
		// retryable (refusedCredentials).
		o := c.result[it]
		if bulk.IsRoutingRefusal(o) {
			e.refusedRouting(c, it, o) // no other shape helps: dead-letter it
		}
		switch c.shape[it] {
		case shapeOriginal:
			// otel-v1 spans have no unmapped shape (see otelv1.go).
			if bulk.IsShapeRefusal(o) && e.otel == nil && e.toUnmapped(c, it) {
				moved++
				continue
			}
			fallthrough
		case shapeUnmapped:
			if e.cfg.DeadLetter.Enabled && e.toDeadLetter(c, it, o) {
				moved++
			}
		}
	}
	return moved
}

// original is item it's original document.
func (c *call) original(it int32) []byte {
	if c.shape[it] == shapeOriginal {
		return c.batch.Source(it)
	}
	return c.orig[it]
}

// toUnmapped rewrites item it in the unmapped shape; false when it has no
// attribute objects to move (or cannot be rewritten).
func (e *osExporter) toUnmapped(c *call, it int32) bool {
	src := c.batch.Source(it)
	doc, err := ss4o.AppendUnmapped(c.scratch[:0], src)
	if err != nil || len(doc) == len(src) {
		return false
	}
	c.scratch = doc
	index, id, _ := c.batch.Item(it)
	if c.batch.Replace(it, index, id, doc) != nil {
		return false
	}
	c.orig[it] = src // stays valid: the arena only grows until Reset
	c.shape[it] = shapeUnmapped
	c.class[it] = bulk.Retry
	return true
}

// toDeadLetter rewrites item it as a dead-letter document about refusal o.
func (e *osExporter) toDeadLetter(c *call, it int32, o bulk.Outcome) bool {
	index, id, _ := c.batch.Item(it)
	doc := c.original(it)
	dl := ss4o.DeadLetter{
		Time: time.Now(), Signal: e.signal.String(), Index: index, ID: id,
		Status: o.Status, ErrorType: o.ErrorType, ErrorReason: o.ErrorReason,
		CauseType: o.CauseType, CauseReason: o.CauseReason,
		Shape: shapeNames[c.shape[it]], Document: doc,
	}
	out := ss4o.AppendDeadLetter(c.scratch[:0], &dl)
	c.scratch = out
	// The dead-letter _id: the same for every attempt of this record.
	key := append(append(append(append(c.scratch2[:0], index...), 0), id...), 0)
	key = append(key, doc...)
	c.scratch2 = key
	dlID := string(ss4o.AppendID(nil, ss4o.ContentID(key), 0))
	if c.batch.Replace(it, e.deadLetterIndex(), dlID, out) != nil {
		return false
	}
	if c.shape[it] == shapeOriginal {
		c.orig[it] = doc
	}
	c.shape[it] = shapeDeadLetter
	c.class[it] = bulk.Retry
	if c.deadLogged < maxPermanentLogs && !c.refusedForRouting(it) { // refusedRouting logged it
		c.deadLogged++
		e.log.Warn("OpenSearch refused a document; it goes to the dead-letter index",
			zap.String("index", index), zap.String("dead_letter.index", e.deadLetterIndex()),
			zap.String("shape", dl.Shape), zap.Int("status", o.Status),
			zap.String("error.type", o.ErrorType), zap.String("error.reason", bulk.SafeReason(o.ErrorReason)),
			zap.String("error.cause", cause(o)))
	}
	return true
}

func (e *osExporter) deadLetterIndex() string {
	if e.signal == signalTraces {
		return e.cfg.DeadLetter.TracesIndex
	}
	return e.cfg.DeadLetter.LogsIndex
}

// cause is o's caused_by, type and reason, fit to log ("" when none).
func cause(o bulk.Outcome) string {
	switch {
	case o.CauseType == "" && o.CauseReason == "":
		return ""
	case o.CauseReason == "":
		return o.CauseType
	}
	return o.CauseType + ": " + bulk.SafeReason(o.CauseReason)
}
