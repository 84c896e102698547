package opensearchbackfill

import (
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/opensearchrouted/opensearchrouted/internal/pit"
	"github.com/opensearchrouted/opensearchrouted/internal/ss4o"
)

// Attribute keys of a log record made from a foreign document.
const (
	AttrIndex = "_index"
	AttrID    = "_id"
)

// converter turns the hits of a page into pdata. One per slice: not safe
// for concurrent use.
type converter struct {
	logs   ss4o.LogsDecoder
	traces ss4o.TracesDecoder
}

// skipped names a document that could not be delivered.
type skipped struct {
	Index, ID string
	Err       error
}

// toLogs decodes every hit: documents of our SS4O layout exactly, any other
// one as a log record whose body is its _source as a map (or, when _source
// is not a JSON object, its value; absent: empty), with _index and _id
// attributes. It never fails: malformed JSON becomes a string body.
func (c *converter) toLogs(hits []pit.Hit) plog.Logs {
	var foreign []int
	for i := range hits {
		if len(hits[i].Source) == 0 || c.logs.Add(hits[i].Source) != nil {
			foreign = append(foreign, i)
		}
	}
	ld := c.logs.Logs()
	if len(foreign) == 0 {
		return ld
	}
	recs := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords()
	recs.EnsureCapacity(len(foreign))
	for _, i := range foreign {
		h := &hits[i]
		lr := recs.AppendEmpty()
		if len(h.Source) > 0 {
			if err := ss4o.DecodeValue(h.Source, lr.Body()); err != nil {
				lr.Body().SetStr(string(h.Source))
			}
		}
		lr.Attributes().PutStr(AttrIndex, h.Index)
		lr.Attributes().PutStr(AttrID, h.ID)
	}
	return ld
}

// toTraces decodes span documents; a document that is not a span cannot be
// delivered as one and is returned in skipped.
func (c *converter) toTraces(hits []pit.Hit) (ptrace.Traces, []skipped) {
	var skip []skipped
	for i := range hits {
		h := &hits[i]
		if len(h.Source) == 0 {
			skip = append(skip, skipped{h.Index, h.ID, errNoSource})
			continue
		}
		if err := c.traces.Add(h.Source); err != nil {
			skip = append(skip, skipped{h.Index, h.ID, err})
		}
	}
	return c.traces.Traces(), skip
}

type constErr string

func (e constErr) Error() string { return string(e) }

const errNoSource = constErr("the hit has no _source (disabled or filtered out)")
