package ss4o

import (
	"errors"
	"unicode/utf8"
)

// UnmappedField is the member of a fallback document (see AppendUnmapped)
// that holds the moved members as one JSON string.
const UnmappedField = "unmapped"

// movable reports whether AppendUnmapped moves a top-level member of this
// name: the members whose contents take their names and types from the
// record's data, and so can conflict with an index's mapping.
func movable(key []byte) bool {
	switch string(key) {
	case "attributes", "resource", "instrumentationScope", "events", "links":
		return true
	}
	return false
}

// AppendUnmapped appends to dst the fallback shape of the document doc and
// returns the extended buffer. The top-level members attributes, resource,
// instrumentationScope, events and links that doc has are taken out and
// written, in their order in doc and as their exact bytes, into one JSON
// object, and that object's text is written as a JSON string under
// "unmapped", the last member of the result. Every other member is copied
// as it is (white space between members is not kept). DecodeLog, DecodeSpan
// and the group decoders read the result as the record doc holds.
//
// When doc has none of those members, the result is dst with doc appended
// unchanged; otherwise the result differs from doc. The error is a
// *SyntaxError for malformed JSON and matches ErrForeign when doc is valid
// JSON but not an object, or already has an "unmapped" member besides
// members to move; dst is then returned as it was. dst must not overlap doc.
func AppendUnmapped(dst, doc []byte) ([]byte, error) {
	d := decoder{src: doc}
	switch d.peek() {
	case '{':
	case 0:
		return dst, d.syntax("empty document")
	default:
		if err := d.skipRaw(); err != nil {
			return dst, err
		}
		if d.ws(); d.pos != len(doc) {
			return dst, d.syntax("data after the JSON value")
		}
		return dst, &foreignError{field: "", msg: "document is not a JSON object"}
	}
	start := len(dst)
	dst = append(dst, '{')
	// Kept members are copied to dst as they are read; moved ones are
	// remembered (as spans of doc, from the key's opening quote to the end
	// of the value) and written at the end.
	var movedBuf [8][2]int
	moved := movedBuf[:0]
	kept, unmapped := 0, false
	d.pos++
	d.depth = 1
	if d.peek() == '}' {
		d.pos++
	} else {
		for {
			if d.peek() != '"' {
				return dst[:start], d.syntax("expected a string key")
			}
			keyStart := d.pos
			key, err := d.str()
			if err != nil {
				return dst[:start], err
			}
			move := movable(key)
			unmapped = unmapped || string(key) == UnmappedField
			if d.peek() != ':' {
				return dst[:start], d.syntax("expected ':'")
			}
			d.pos++
			if err := d.skipRaw(); err != nil {
				return dst[:start], err
			}
			if move {
				moved = append(moved, [2]int{keyStart, d.pos})
			} else {
				if kept > 0 {
					dst = append(dst, ',')
				}
				dst = append(dst, doc[keyStart:d.pos]...)
				kept++
			}
			c := d.peek()
			d.pos++
			if c == '}' {
				break
			}
			if c != ',' {
				d.pos--
				return dst[:start], d.syntax("expected ',' or '}'")
			}
		}
	}
	d.ws()
	if d.pos != len(doc) {
		return dst[:start], d.syntax("data after the JSON object")
	}
	if len(moved) == 0 {
		return append(dst[:start], doc...), nil
	}
	if unmapped {
		return dst[:start], &foreignError{field: UnmappedField, msg: "already present"}
	}
	if kept > 0 {
		dst = append(dst, ',')
	}
	dst = append(dst, `"unmapped":"{`...)
	for i, m := range moved {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = appendEscaped(dst, doc[m[0]:m[1]])
	}
	return append(dst, `}"}`...), nil
}

// appendEscaped writes b, valid JSON text, as the inside of a JSON string:
// '"' and '\\' escaped, the control characters (in valid JSON only the white
// space \t, \n and \r between tokens) as \u00XX, every byte that is not
// part of valid UTF-8 as U+FFFD (as jsonstr.Append replaces it).
func appendEscaped(dst, b []byte) []byte {
	const hexDigits = "0123456789abcdef"
	start := 0
	for i := 0; i < len(b); {
		c := b[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			dst = append(dst, b[start:i]...)
			if c < 0x20 {
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			} else {
				dst = append(dst, '\\', c)
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, b[start:i]...)
			dst = append(dst, "\uFFFD"...)
			start = i + 1
		}
		i += size
	}
	return append(dst, b[start:]...)
}

// unmappedField reads the string value of "unmapped" (the text of the
// object of moved members) into a buffer of its own: the decoder's string
// scratch is reused while the members are read. The rest of the document
// bounds the unescaped length, so the buffer is allocated once.
func (d *decoder) unmappedField(key []byte) ([]byte, error) {
	if d.peek() != '"' {
		return nil, foreign(key, "not a string")
	}
	scratch := d.buf
	d.buf = make([]byte, 0, len(d.src)-d.pos)
	s, err := d.str()
	d.buf = scratch
	return s, err
}

// restoreUnmapped reads the members held in the text of a fallback
// document's "unmapped" string through fn, the same function that read the
// document's top-level members, as if they were top-level members
// themselves. Only members AppendUnmapped moves are allowed there. Malformed
// JSON inside the string is a foreign document: the document is valid JSON.
func (d *decoder) restoreUnmapped(text []byte, fn func(key []byte) error) error {
	outer := d.src
	d.src, d.pos, d.depth = text, 0, 0
	var err error
	if d.peek() != '{' {
		err = &foreignError{field: UnmappedField, msg: "not the text of a JSON object"}
	} else {
		err = d.object(func(key []byte) error {
			if !movable(key) {
				return foreign(key, "not allowed inside "+UnmappedField)
			}
			return fn(key)
		})
		if err == nil {
			if d.ws(); d.pos != len(d.src) {
				err = d.syntax("data after the JSON object")
			}
		}
	}
	d.src, d.pos, d.depth = outer, len(outer), 0
	if se := (*SyntaxError)(nil); errors.As(err, &se) {
		return &foreignError{field: UnmappedField, msg: "invalid JSON inside: " + se.Error()}
	}
	return err
}
