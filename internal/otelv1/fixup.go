package otelv1

import (
	"strconv"

	"github.com/opensearchrouted/opensearchrouted/internal/jsonstr"
)

// AppendGroupUpdate appends the body of a bulk update that gives a span
// document written without its trace group the group g:
// {"doc":{"traceGroup":…,"traceGroupFields":{"endTime":…,"durationInNanos":…,"statusCode":…}}},
// the fields exactly as AppendSpan writes them. The server merges it into
// the stored document.
func AppendGroupUpdate(dst []byte, g *TraceGroup) []byte {
	var c clock
	dst = append(dst, `{"doc":{"traceGroup":`...)
	dst = jsonstr.Append(dst, g.Name)
	dst = append(dst, `,"traceGroupFields":{"endTime":`...)
	dst = c.appendTime(dst, uint64(g.EndTime))
	dst = append(dst, `,"durationInNanos":`...)
	dst = strconv.AppendInt(dst, g.DurationNanos, 10)
	dst = append(dst, `,"statusCode":`...)
	dst = strconv.AppendInt(dst, int64(g.StatusCode), 10)
	return append(dst, "}}}"...)
}
