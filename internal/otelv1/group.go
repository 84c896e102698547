package otelv1

import (
	"strconv"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/opensearchrouted/opensearchrouted/internal/jsonstr"
	"github.com/opensearchrouted/opensearchrouted/internal/tracegroup"
)

// TracesDecoder decodes span documents into one ptrace.Traces, putting
// spans with equal resources (and schema URLs) into one ResourceSpans and,
// within it, spans with equal scopes into one ScopeSpans, in order of
// first appearance. The zero value is ready to use; not safe for
// concurrent use.
type TracesDecoder struct{ d tracegroup.Decoder }

var layout = tracegroup.Layout{
	Decode: DecodeSpan,
	ResourceKey: func(dst []byte, rs ptrace.ResourceSpans) []byte {
		return groupKey(dst, rs.Resource().Attributes(), rs.Resource().DroppedAttributesCount(), rs.SchemaUrl())
	},
	ScopeKey: func(dst []byte, ss ptrace.ScopeSpans) []byte {
		sc := ss.Scope()
		dst = groupKey(dst, sc.Attributes(), sc.DroppedAttributesCount(), ss.SchemaUrl())
		dst = jsonstr.Append(dst, sc.Name())
		return jsonstr.Append(dst, sc.Version())
	},
}

// Add decodes src (see DecodeSpan) and adds the span. On error nothing is
// added, and the error is DecodeSpan's.
func (d *TracesDecoder) Add(src []byte) error { return d.d.Add(&layout, src) }

// Traces returns the spans added since the last call and starts anew.
func (d *TracesDecoder) Traces() ptrace.Traces { return d.d.Traces() }

// groupKey identifies a resource or a scope: its attributes (typed, in
// order), dropped count and schema URL.
func groupKey(dst []byte, attrs pcommon.Map, dropped uint32, schemaURL string) []byte {
	dst = appendTypedPairs(dst, attrs)
	dst = strconv.AppendUint(dst, uint64(dropped), 10)
	return jsonstr.Append(dst, schemaURL)
}
