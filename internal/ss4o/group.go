package ss4o

import (
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/opensearchrouted/opensearchrouted/internal/tracegroup"
)

// LogsDecoder decodes log documents into one plog.Logs, putting records with
// equal resources (and schema URLs) into one ResourceLogs and, within it,
// records with equal scopes into one ScopeLogs, in order of first
// appearance. The zero value is ready to use; not safe for concurrent use.
type LogsDecoder struct {
	logs      plog.Logs
	started   bool
	resources map[string]int // encoded resource → index in logs
	scopes    []map[string]int
	rl        plog.ResourceLogs // scratch targets
	sl        plog.ScopeLogs
	lr        plog.LogRecord
	buf       []byte
}

// Add decodes src (see DecodeLog) and adds the record. On error nothing is
// added, and the error is DecodeLog's.
func (d *LogsDecoder) Add(src []byte) error {
	if !d.started {
		d.logs = plog.NewLogs()
		d.resources = map[string]int{}
		d.scopes = d.scopes[:0]
		d.started = true
	}
	if d.rl == (plog.ResourceLogs{}) {
		d.rl = plog.NewResourceLogs()
		d.sl = plog.NewScopeLogs()
		d.lr = plog.NewLogRecord()
	}
	if err := DecodeLog(src, d.rl, d.sl, d.lr); err != nil {
		return err
	}
	d.buf = appendResource(d.buf[:0], d.rl.Resource(), d.rl.SchemaUrl())
	ri, ok := d.resources[string(d.buf)]
	if !ok {
		ri = d.logs.ResourceLogs().Len()
		d.resources[string(d.buf)] = ri
		d.scopes = append(d.scopes, map[string]int{})
		d.rl.MoveTo(d.logs.ResourceLogs().AppendEmpty())
		d.rl = plog.NewResourceLogs()
	}
	rl := d.logs.ResourceLogs().At(ri)
	d.buf = appendScope(d.buf[:0], d.sl.Scope(), d.sl.SchemaUrl())
	si, ok := d.scopes[ri][string(d.buf)]
	if !ok {
		si = rl.ScopeLogs().Len()
		d.scopes[ri][string(d.buf)] = si
		d.sl.MoveTo(rl.ScopeLogs().AppendEmpty())
		d.sl = plog.NewScopeLogs()
	}
	d.lr.MoveTo(rl.ScopeLogs().At(si).LogRecords().AppendEmpty())
	return nil
}

// Logs returns the records added since the last call and starts anew.
func (d *LogsDecoder) Logs() plog.Logs {
	if !d.started {
		return plog.NewLogs()
	}
	d.started = false
	return d.logs
}

// TracesDecoder is LogsDecoder for spans.
type TracesDecoder struct{ d tracegroup.Decoder }

var spanLayout = tracegroup.Layout{
	Decode: DecodeSpan,
	ResourceKey: func(dst []byte, rs ptrace.ResourceSpans) []byte {
		return appendResource(dst, rs.Resource(), rs.SchemaUrl())
	},
	ScopeKey: func(dst []byte, ss ptrace.ScopeSpans) []byte {
		return appendScope(dst, ss.Scope(), ss.SchemaUrl())
	},
}

// Add decodes src (see DecodeSpan) and adds the span. On error nothing is
// added, and the error is DecodeSpan's.
func (d *TracesDecoder) Add(src []byte) error { return d.d.Add(&spanLayout, src) }

// Traces returns the spans added since the last call and starts anew.
func (d *TracesDecoder) Traces() ptrace.Traces { return d.d.Traces() }
