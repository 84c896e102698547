package ss4o

import (
	"bytes"
	"math"
	"strconv"
	"time"
	"unsafe"
)

// DeadLetter is a record the server refused in both shapes (the document
// and its fallback, see AppendUnmapped), as it is kept in a dead-letter
// index: the original document and the server's answer to the last attempt.
type DeadLetter struct {
	Time        time.Time // when it was dead-lettered
	Signal      string    // "logs" or "traces"
	Index       string    // the index the record was meant for
	ID          string    // its _id; "" when the server was to generate one
	Status      int       // the HTTP status of the refused item
	ErrorType   string    // the item's error.type
	ErrorReason string    // the item's error.reason, in full
	CauseType   string    // error.caused_by.type
	CauseReason string    // error.caused_by.reason
	Shape       string    // the shape refused last: "original" or "unmapped"
	Document    []byte    // the original SS4O document (never the fallback one)
}

// Signals and shapes of a DeadLetter.
const (
	SignalLogs     = "logs"
	SignalTraces   = "traces"
	ShapeOriginal  = "original"
	ShapeUnmapped  = "unmapped"
	deadLetterDocF = "document"
)

// AppendDeadLetter appends the dead-letter document of dl to dst: one
// compact JSON object with "@timestamp" (dl.Time in UTC, RFC 3339 with
// nanoseconds, trailing zeros removed), "signal", "index", "id", "status",
// "error" {"type", "reason", "caused_by" {"type", "reason"}} (caused_by
// only when CauseType or CauseReason is set), "shape" and "document", the
// original document as a JSON string, so that nothing in it is mapped.
// Strings are written as the encoder writes them (invalid UTF-8 as U+FFFD,
// control characters escaped). dl.Time must lie within years 0 to 9999.
func AppendDeadLetter(dst []byte, dl *DeadLetter) []byte {
	dst = append(dst, `{"@timestamp":"`...)
	dst = dl.Time.UTC().AppendFormat(dst, time.RFC3339Nano)
	dst = append(dst, `","signal":`...)
	dst = appendString(dst, dl.Signal)
	dst = append(dst, `,"index":`...)
	dst = appendString(dst, dl.Index)
	dst = append(dst, `,"id":`...)
	dst = appendString(dst, dl.ID)
	dst = append(dst, `,"status":`...)
	dst = strconv.AppendInt(dst, int64(dl.Status), 10)
	dst = append(dst, `,"error":{"type":`...)
	dst = appendString(dst, dl.ErrorType)
	dst = append(dst, `,"reason":`...)
	dst = appendString(dst, dl.ErrorReason)
	if dl.CauseType != "" || dl.CauseReason != "" {
		dst = append(dst, `,"caused_by":{"type":`...)
		dst = appendString(dst, dl.CauseType)
		dst = append(dst, `,"reason":`...)
		dst = appendString(dst, dl.CauseReason)
		dst = append(dst, '}')
	}
	dst = append(dst, `},"shape":`...)
	dst = appendString(dst, dl.Shape)
	dst = append(dst, `,"document":`...)
	dst = appendString(dst, unsafe.String(unsafe.SliceData(dl.Document), len(dl.Document)))
	return append(dst, '}')
}

// ParseDeadLetter reads a dead-letter document: a JSON object with a string
// "document" and an object "error"; the other fields of AppendDeadLetter
// are read when present and other members are skipped (also inside
// "error"). A known field of the wrong type or repeated, or a missing
// "document" or "error", gives an error matching ErrForeign; malformed JSON
// a *SyntaxError.
func ParseDeadLetter(src []byte) (DeadLetter, error) {
	var dl DeadLetter
	err := checkForeign(src, parseDeadLetter(src, &dl))
	return dl, err
}

// deadLetterFields are the members parseDeadLetter reads; each may appear
// once.
var deadLetterFields = [...]string{"@timestamp", "signal", "index", "id", "status", "error", "shape", deadLetterDocF}

func parseDeadLetter(src []byte, dl *DeadLetter) error {
	d := decoder{src: src}
	var seen uint16
	err := d.topObject(func(key []byte) error {
		i := 0
		for i < len(deadLetterFields) && deadLetterFields[i] != string(key) {
			i++
		}
		if i == len(deadLetterFields) {
			return d.skip()
		}
		if seen&(1<<i) != 0 {
			return foreign(key, "repeated")
		}
		seen |= 1 << i
		var err error
		switch string(key) {
		case "@timestamp":
			var s string
			if s, err = d.stringField(key); err == nil {
				var perr error
				if dl.Time, perr = time.Parse(time.RFC3339Nano, s); perr != nil {
					err = foreign(key, perr.Error())
				}
			}
		case "signal":
			dl.Signal, err = d.stringField(key)
		case "index":
			dl.Index, err = d.stringField(key)
		case "id":
			dl.ID, err = d.stringField(key)
		case "status":
			var n int64
			n, err = d.intField(key, math.MinInt32, math.MaxInt32)
			dl.Status = int(n)
		case "error":
			err = d.deadLetterError(key, dl)
		case "shape":
			dl.Shape, err = d.stringField(key)
		case deadLetterDocF:
			if d.peek() != '"' {
				return foreign(key, "not a string")
			}
			var s []byte
			s, err = d.str()
			dl.Document = bytes.Clone(s)
		}
		return err
	})
	if err != nil {
		return err
	}
	for _, f := range [...]int{5, 7} { // error, document
		if seen&(1<<f) == 0 {
			return &foreignError{field: deadLetterFields[f], msg: "missing"}
		}
	}
	return nil
}

func (d *decoder) deadLetterError(key []byte, dl *DeadLetter) error {
	if d.peek() != '{' {
		return foreign(key, "not an object")
	}
	return d.object(func(k []byte) error {
		var err error
		switch string(k) {
		case "type":
			dl.ErrorType, err = d.stringField(k)
		case "reason":
			dl.ErrorReason, err = d.stringField(k)
		case "caused_by":
			if d.peek() != '{' {
				return foreign(k, "not an object")
			}
			err = d.object(func(k []byte) error {
				var err error
				switch string(k) {
				case "type":
					dl.CauseType, err = d.stringField(k)
				case "reason":
					dl.CauseReason, err = d.stringField(k)
				default:
					err = d.skip()
				}
				return err
			})
		default:
			err = d.skip()
		}
		return err
	})
}

// decodeDeadLetter is how DecodeLog and DecodeSpan read src after it failed
// to decode as a document of theirs: when src is a dead-letter document of
// signal, decode (decodeLog or decodeSpan on its "document") is done and ok
// is true.
func decodeDeadLetter(src []byte, signal string, decode func(doc []byte) error) (ok bool, err error) {
	var dl DeadLetter
	if parseDeadLetter(src, &dl) != nil {
		return false, nil
	}
	if dl.Signal != signal {
		return true, &foreignError{field: "signal", msg: "a dead-letter document of " + strconv.Quote(dl.Signal) + ", not " + signal}
	}
	if err := decode(dl.Document); err != nil {
		return true, &foreignError{field: deadLetterDocF, msg: "the dead-letter document's own document: " + err.Error()}
	}
	return true, nil
}
