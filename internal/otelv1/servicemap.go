package otelv1

import (
	"crypto/md5"
	"encoding/base64"
	"strings"
	"unicode/utf8"

	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/opensearchrouted/opensearchrouted/internal/jsonstr"
)

// Endpoint is one end of a service-map edge: the service (Domain) and the
// span name (Resource: the API or operation) it is called at.
type Endpoint struct {
	Resource string
	Domain   string
}

// Edge is the content of one service-map document, as Data Prepper's
// service-map processor writes it. A document has either a Destination
// (the caller's side: the client span of ServiceName calling the service
// Destination.Domain at Destination.Resource) or a Target (the callee's
// side: ServiceName serving Target.Resource; Target.Domain is ServiceName);
// the other is null.
type Edge struct {
	ServiceName    string
	Kind           string // the span kind of ServiceName's span, as in span documents ("SPAN_KIND_CLIENT")
	Destination    *Endpoint
	Target         *Endpoint
	TraceGroupName string // the name of the trace's root span
}

// EdgesOf returns the two documents a parent span of parentService with a
// child span of another service, childService, produce in a trace whose
// root is named traceGroup: the destination edge (parentService, the
// parent's kind, destination {childService, child's name}) and the target
// edge (childService, the child's kind, target {childService, child's
// name}). Spans of the same service, or with a service unknown (""),
// produce none.
func EdgesOf(parent ptrace.Span, parentService string, child ptrace.Span, childService string, traceGroup string) []Edge {
	if parentService == "" || childService == "" || parentService == childService {
		return nil
	}
	name := child.Name()
	return []Edge{
		{
			ServiceName:    parentService,
			Kind:           KindName(parent.Kind()),
			Destination:    &Endpoint{Resource: name, Domain: childService},
			TraceGroupName: traceGroup,
		},
		{
			ServiceName:    childService,
			Kind:           KindName(child.Kind()),
			Target:         &Endpoint{Resource: name, Domain: childService},
			TraceGroupName: traceGroup,
		},
	}
}

// ID returns the edge's hashId, which is also its document id: the
// standard base64 of the MD5 of "serviceName,kind,traceGroupName," then
// "target.resource,target.domain" (when a target), ",", then
// "destination.resource,destination.domain" (when a destination), in
// UTF-8 (invalid UTF-8 as U+FFFD), exactly as Data Prepper derives it, so
// the same edge written by either gets the same id and a repeat is a
// version conflict, not a second document.
func (e *Edge) ID() string {
	var b strings.Builder
	b.WriteString(e.ServiceName)
	b.WriteByte(',')
	b.WriteString(e.Kind)
	b.WriteByte(',')
	b.WriteString(e.TraceGroupName)
	b.WriteByte(',')
	if e.Target != nil {
		b.WriteString(e.Target.Resource)
		b.WriteByte(',')
		b.WriteString(e.Target.Domain)
	}
	b.WriteByte(',')
	if e.Destination != nil {
		b.WriteString(e.Destination.Resource)
		b.WriteByte(',')
		b.WriteString(e.Destination.Domain)
	}
	s := b.String()
	if !utf8.ValidString(s) {
		s = sanitize(s)
	}
	sum := md5.Sum([]byte(s))
	return base64.StdEncoding.EncodeToString(sum[:])
}

// sanitize replaces every byte that is not part of valid UTF-8 with
// U+FFFD, one per byte (as a Java decoder and jsonstr do).
func sanitize(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// AppendEdge appends e's service-map document to dst: serviceName, kind,
// destination, target (an object or null), traceGroupName and hashId.
func AppendEdge(dst []byte, e *Edge) []byte {
	dst = append(dst, `{"serviceName":`...)
	dst = jsonstr.Append(dst, e.ServiceName)
	dst = append(dst, `,"kind":`...)
	dst = jsonstr.Append(dst, e.Kind)
	dst = append(dst, `,"destination":`...)
	dst = appendEndpoint(dst, e.Destination)
	dst = append(dst, `,"target":`...)
	dst = appendEndpoint(dst, e.Target)
	dst = append(dst, `,"traceGroupName":`...)
	dst = jsonstr.Append(dst, e.TraceGroupName)
	dst = append(dst, `,"hashId":`...)
	dst = jsonstr.Append(dst, e.ID())
	return append(dst, '}')
}

func appendEndpoint(dst []byte, p *Endpoint) []byte {
	if p == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, `{"resource":`...)
	dst = jsonstr.Append(dst, p.Resource)
	dst = append(dst, `,"domain":`...)
	dst = jsonstr.Append(dst, p.Domain)
	return append(dst, '}')
}
