package opensearchrouted

// Temporary stand-ins for the internal/bulk and internal/ss4o API that is
// being built beside this change (bulk.IsShapeRefusal, Outcome.Cause*,
// ss4o.AppendUnmapped, ss4o.DeadLetter, ss4o.AppendDeadLetter).

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/opensearchrouted/opensearchrouted/internal/bulk"
)

func shapeRefused(o bulk.Outcome) bool {
	if o.Status != 400 {
		return false
	}
	switch o.ErrorType {
	case "mapper_parsing_exception", "document_parsing_exception", "strict_dynamic_mapping_exception":
		return true
	case "illegal_argument_exception":
		for _, m := range []string{"Limit of total fields", "depth of the field", "cannot be changed from type", "Could not dynamically add mapping", "object mapping for", "non object mapping"} {
			if strings.Contains(o.ErrorReason, m) {
				return true
			}
		}
	}
	return false
}

var moved = map[string]bool{"attributes": true, "resource": true, "instrumentationScope": true, "events": true, "links": true}

func unmappedShape(dst, doc []byte) ([]byte, error) {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("not an object")
	}
	var keep, move bytes.Buffer
	keep.WriteByte('{')
	move.WriteByte('{')
	for d.More() {
		t, err := d.Token()
		if err != nil {
			return nil, err
		}
		k := t.(string)
		var raw json.RawMessage
		if err := d.Decode(&raw); err != nil {
			return nil, err
		}
		kj, _ := json.Marshal(k)
		b := &keep
		if moved[k] {
			b = &move
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.Write(kj)
		b.WriteByte(':')
		b.Write(raw)
	}
	if move.Len() == 1 {
		return append(dst, doc...), nil
	}
	move.WriteByte('}')
	s, _ := json.Marshal(move.String())
	if keep.Len() > 1 {
		keep.WriteByte(',')
	}
	keep.WriteString(`"unmapped":`)
	keep.Write(s)
	keep.WriteByte('}')
	return append(dst, keep.Bytes()...), nil
}

type deadLetter struct {
	Time                                           time.Time
	Signal, Index, ID                              string
	Status                                         int
	ErrorType, ErrorReason, CauseType, CauseReason string
	Shape                                          string
	Document                                       []byte
}

func fillCause(dl *deadLetter, o bulk.Outcome) {}

func causeField(o bulk.Outcome) zap.Field { return zap.Skip() }

func appendDeadLetter(dst []byte, d *deadLetter) []byte {
	m := map[string]any{"@timestamp": d.Time.UTC().Format(time.RFC3339Nano), "signal": d.Signal, "index": d.Index, "id": d.ID,
		"status": d.Status, "error": map[string]any{"type": d.ErrorType, "reason": d.ErrorReason}, "shape": d.Shape, "document": string(d.Document)}
	b, _ := json.Marshal(m)
	return append(dst, b...)
}
