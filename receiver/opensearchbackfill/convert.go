package opensearchbackfill

import (
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/opensearchrouted/opensearchrouted/internal/otelv1"
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
	// otelV1: span documents are in the otel-v1 layout (convert_otelv1.go).
	otelV1   bool
	otelv1Tr otelv1.TracesDecoder
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

// spanDecoder is ss4o.TracesDecoder or otelv1.TracesDecoder.
type spanDecoder interface {
	Add(src []byte) error
	Traces() ptrace.Traces
}

// toTraces decodes span documents in the configured mapping; a document
// that is not a span cannot be delivered as one and is returned in
// skipped.
func (c *converter) toTraces(hits []pit.Hit) (ptrace.Traces, []skipped) {
	var dec spanDecoder = &c.traces
	if c.otelV1 {
		dec = &c.otelv1Tr
	}
	var skip []skipped
	for i := range hits {
		h := &hits[i]
		if len(h.Source) == 0 {
			skip = append(skip, skipped{h.Index, h.ID, errNoSource})
			continue
		}
		if err := dec.Add(h.Source); err != nil {
			skip = append(skip, skipped{h.Index, h.ID, err})
		}
	}
	return dec.Traces(), skip
}

type constErr string

func (e constErr) Error() string { return string(e) }

const errNoSource = constErr("the hit has no _source (disabled or filtered out)")
