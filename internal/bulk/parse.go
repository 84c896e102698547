package bulk

import (
	"fmt"
	"sync"
	"unicode/utf16"
	"unicode/utf8"
)

// The response parser: a small hand-written scanner for
//
//	{"took":N,"errors":bool,"items":[{"<op>":{"_index":"..","status":N,"error":{"type":"..","reason":".."}}}, ...]}
//
// in any key order, with any other keys skipped (so it reads the full and
// the filter_path-trimmed shapes alike). It validates all of the JSON it
// walks, skipped values included, and decodes strings exactly as
// encoding/json does (escapes, surrogate pairs, U+FFFD for invalid UTF-8 and
// lone surrogates); a fuzz test holds it to agree with encoding/json.
//
// Rules (anything else is an error):
//   - the body is one object with exactly one "items" array; "errors", when
//     present, is a boolean;
//   - every element of "items" is an object with exactly one key (the
//     operation) whose value is an object with an integer "status" in
//     [0, 999], an optional "_index" (string or null) and an optional
//     "error": an object with optional "type" and "reason" (strings or null)
//     and an optional "caused_by", a string (taken as the reason), or null;
//   - "caused_by" (of "error" only; deeper levels are skipped) is an object
//     with optional "type" and "reason" (strings or null), or null; any
//     other value is skipped;
//   - the keys read ("items", "errors", "_index", "status", "error", "type",
//     "reason", "caused_by") appear at most once in their object.
//
// Per item on the success path it allocates nothing: _index and error types
// are interned, reasons are copied only when they differ from the previous
// item's.

// maxDepth is encoding/json's nesting limit.
const maxDepth = 10000

type parseError struct {
	msg string
	off int
}

func (e *parseError) Error() string {
	return fmt.Sprintf("bulk response: %s at offset %d", e.msg, e.off)
}

// parser holds one parse's state. The zero value is ready; a parser may be
// reused for one parse at a time.
type parser struct {
	buf     []byte
	pos     int
	depth   int
	in      *interner
	scratch []byte

	// Previous values, raw bytes as in the buffer, so that runs of equal
	// strings cost one comparison.
	prevIndexRaw, prevTypeRaw, prevReasonRaw []byte
	prevIndex, prevType, prevReason          string
	prevCauseTypeRaw, prevCauseReasonRaw     []byte
	prevCauseType, prevCauseReason           string

	// The fast path. head is the previous item's bytes from its '{' up to
	// the ':' after "status", recorded only when "_index" (a string or null)
	// and "status" were its first two keys; headIndex is that item's Index.
	// An item starting with the same bytes parses the same up to there, so
	// only its status and the closing "}}" are left to read.
	head      []byte
	headIndex string
	itemStart int // offset of the current item's '{'
	headEnd   int // end of the current item's head, 0 if it has none
}

func (p *parser) fail(msg string) error { return &parseError{msg: msg, off: p.pos} }

// parseResponse parses body into out (item k's outcome in out[k], for the
// first len(out) items) and returns the number of items in the response and
// the "errors" flag. Items beyond len(out) are validated and counted only.
func (p *parser) parseResponse(body []byte, out []Outcome) (n int, errorsFlag bool, err error) {
	*p = parser{in: p.in, scratch: p.scratch[:0], buf: body}
	defer func() {
		// Drop references to body: the buffer goes back to a pool.
		p.buf, p.prevIndexRaw, p.prevTypeRaw, p.prevReasonRaw, p.head = nil, nil, nil, nil, nil
		p.prevCauseTypeRaw, p.prevCauseReasonRaw = nil, nil
	}()
	p.ws()
	if !p.consume('{') {
		return 0, false, p.fail("expected an object")
	}
	p.depth = 1
	seenItems, seenErrors := false, false
	p.ws()
	if !p.consume('}') {
		for {
			key, err := p.key()
			if err != nil {
				return 0, false, err
			}
			switch string(key) {
			case "items":
				if seenItems {
					return 0, false, p.fail(`duplicate "items"`)
				}
				seenItems = true
				if n, err = p.items(out); err != nil {
					return 0, false, err
				}
			case "errors":
				if seenErrors {
					return 0, false, p.fail(`duplicate "errors"`)
				}
				seenErrors = true
				switch {
				case p.literal("true"):
					errorsFlag = true
				case p.literal("false"):
				default:
					return 0, false, p.fail(`"errors" is not a boolean`)
				}
			default:
				if err := p.skip(); err != nil {
					return 0, false, err
				}
			}
			if done, err := p.next('}'); err != nil {
				return 0, false, err
			} else if done {
				break
			}
		}
	}
	p.ws()
	if p.pos != len(p.buf) {
		return 0, false, p.fail("data after the response object")
	}
	if !seenItems {
		return 0, false, p.fail(`no "items"`)
	}
	return n, errorsFlag, nil
}

func (p *parser) items(out []Outcome) (int, error) {
	p.ws()
	if !p.consume('[') {
		return 0, p.fail(`"items" is not an array`)
	}
	if err := p.push(); err != nil {
		return 0, err
	}
	p.ws()
	n := 0
	if p.consume(']') {
		p.depth--
		return 0, nil
	}
	var scratch Outcome
	for {
		o := &scratch
		if n < len(out) {
			o = &out[n]
		}
		if !p.fastItem(o) {
			if err := p.item(o); err != nil {
				return 0, err
			}
		}
		n++
		if done, err := p.next(']'); err != nil {
			return 0, err
		} else if done {
			p.depth--
			return n, nil
		}
	}
}

// fastItem parses an item that starts with the previous item's head and
// ends right after its status with "}}". It reports false, having consumed
// nothing, for any other item.
func (p *parser) fastItem(o *Outcome) bool {
	p.ws()
	if len(p.head) == 0 || len(p.buf)-p.pos < len(p.head) || string(p.buf[p.pos:p.pos+len(p.head)]) != string(p.head) {
		return false
	}
	save := p.pos
	p.pos += len(p.head)
	// A plain three-digit status, the common case, without the general
	// number parser.
	if b := p.buf[p.pos:]; len(b) >= 5 && b[3] == '}' && b[4] == '}' &&
		b[0] >= '1' && b[0] <= '9' && b[1] >= '0' && b[1] <= '9' && b[2] >= '0' && b[2] <= '9' {
		*o = Outcome{Status: int(b[0]-'0')*100 + int(b[1]-'0')*10 + int(b[2]-'0'), Index: p.headIndex}
		p.pos += 5
		return true
	}
	p.pos = save
	return false
}

// item parses {"<op>":{...}} into o.
func (p *parser) item(o *Outcome) error {
	p.ws()
	p.itemStart, p.headEnd = p.pos, 0
	if !p.consume('{') {
		return p.fail("item is not an object")
	}
	if err := p.push(); err != nil {
		return err
	}
	p.ws()
	if p.peek() == '}' {
		return p.fail("item has no operation")
	}
	if _, err := p.key(); err != nil {
		return err
	}
	if err := p.result(o); err != nil {
		return err
	}
	p.ws()
	if !p.consume('}') {
		return p.fail("item has more than one operation")
	}
	p.depth--
	if p.headEnd > p.itemStart {
		p.head, p.headIndex = p.buf[p.itemStart:p.headEnd], o.Index
	}
	return nil
}

// result parses an item's {"_index":..,"status":..,"error":..}.
func (p *parser) result(o *Outcome) error {
	p.ws()
	if !p.consume('{') {
		return p.fail("item result is not an object")
	}
	if err := p.push(); err != nil {
		return err
	}
	*o = Outcome{}
	var seenIndex, seenStatus, seenError bool
	p.ws()
	if !p.consume('}') {
		for nkeys := 1; ; nkeys++ {
			key, err := p.key()
			if err != nil {
				return err
			}
			if nkeys == 2 && seenIndex && string(key) == "status" {
				p.headEnd = p.pos
			}
			switch string(key) {
			case "_index":
				if seenIndex {
					return p.fail(`duplicate "_index"`)
				}
				seenIndex = true
				if o.Index, err = p.nullableString(&p.prevIndexRaw, &p.prevIndex, true); err != nil {
					return err
				}
			case "status":
				if seenStatus {
					return p.fail(`duplicate "status"`)
				}
				seenStatus = true
				if o.Status, err = p.status(); err != nil {
					return err
				}
			case "error":
				if seenError {
					return p.fail(`duplicate "error"`)
				}
				seenError = true
				if err := p.itemError(o); err != nil {
					return err
				}
			default:
				if err := p.skip(); err != nil {
					return err
				}
			}
			if done, err := p.next('}'); err != nil {
				return err
			} else if done {
				break
			}
		}
	}
	p.depth--
	if !seenStatus {
		return p.fail(`item has no "status"`)
	}
	return nil
}

func (p *parser) itemError(o *Outcome) error {
	p.ws()
	switch p.peek() {
	case 'n':
		if !p.literal("null") {
			return p.fail("invalid literal")
		}
		return nil
	case '"':
		var err error
		o.ErrorReason, err = p.nullableString(&p.prevReasonRaw, &p.prevReason, false)
		return err
	case '{':
	default:
		return p.fail(`"error" is not an object, a string or null`)
	}
	p.pos++
	if err := p.push(); err != nil {
		return err
	}
	var seenType, seenReason, seenCause bool
	p.ws()
	if !p.consume('}') {
		for {
			key, err := p.key()
			if err != nil {
				return err
			}
			switch string(key) {
			case "type":
				if seenType {
					return p.fail(`duplicate "type"`)
				}
				seenType = true
				if o.ErrorType, err = p.nullableString(&p.prevTypeRaw, &p.prevType, true); err != nil {
					return err
				}
			case "reason":
				if seenReason {
					return p.fail(`duplicate "reason"`)
				}
				seenReason = true
				if o.ErrorReason, err = p.nullableString(&p.prevReasonRaw, &p.prevReason, false); err != nil {
					return err
				}
			case "caused_by":
				if seenCause {
					return p.fail(`duplicate "caused_by"`)
				}
				seenCause = true
				if err := p.cause(o); err != nil {
					return err
				}
			default:
				if err := p.skip(); err != nil {
					return err
				}
			}
			if done, err := p.next('}'); err != nil {
				return err
			} else if done {
				break
			}
		}
	}
	p.depth--
	return nil
}

// cause parses the error's "caused_by": its type and reason go to
// o.CauseType and o.CauseReason; its own "caused_by" and other keys are
// skipped, and so is a value that is neither an object nor null.
func (p *parser) cause(o *Outcome) error {
	p.ws()
	if p.peek() != '{' {
		return p.skip()
	}
	p.pos++
	if err := p.push(); err != nil {
		return err
	}
	var seenType, seenReason bool
	p.ws()
	if !p.consume('}') {
		for {
			key, err := p.key()
			if err != nil {
				return err
			}
			switch string(key) {
			case "type":
				if seenType {
					return p.fail(`duplicate "type" in "caused_by"`)
				}
				seenType = true
				if o.CauseType, err = p.nullableString(&p.prevCauseTypeRaw, &p.prevCauseType, true); err != nil {
					return err
				}
			case "reason":
				if seenReason {
					return p.fail(`duplicate "reason" in "caused_by"`)
				}
				seenReason = true
				if o.CauseReason, err = p.nullableString(&p.prevCauseReasonRaw, &p.prevCauseReason, false); err != nil {
					return err
				}
			default:
				if err := p.skip(); err != nil {
					return err
				}
			}
			if done, err := p.next('}'); err != nil {
				return err
			} else if done {
				break
			}
		}
	}
	p.depth--
	return nil
}

// status parses an integer literal in [0, 999].
func (p *parser) status() (int, error) {
	p.ws()
	start := p.pos
	if err := p.number(); err != nil {
		return 0, err
	}
	lit := p.buf[start:p.pos]
	neg := lit[0] == '-'
	if neg {
		lit = lit[1:]
	}
	v := 0
	for _, c := range lit {
		if c < '0' || c > '9' {
			return 0, p.fail(`"status" is not an integer`)
		}
		v = v*10 + int(c-'0')
		if v > 999 {
			return 0, p.fail(`"status" out of range`)
		}
	}
	if neg && v != 0 {
		return 0, p.fail(`"status" out of range`)
	}
	return v, nil
}

// nullableString reads a string or null. A value equal to the previous one
// (raw bytes) returns the previous string; otherwise it is interned (intern)
// or copied.
func (p *parser) nullableString(prevRaw *[]byte, prev *string, intern bool) (string, error) {
	p.ws()
	if p.peek() == 'n' {
		if !p.literal("null") {
			return "", p.fail("invalid literal")
		}
		return "", nil
	}
	if p.peek() != '"' {
		return "", p.fail("expected a string")
	}
	raw, clean, err := p.rawString()
	if err != nil {
		return "", err
	}
	if *prevRaw != nil && string(raw) == string(*prevRaw) {
		return *prev, nil
	}
	val := raw
	if !clean {
		p.scratch = unquote(p.scratch[:0], raw)
		val = p.scratch
	}
	var s string
	if intern {
		s = p.in.intern(val)
	} else {
		s = string(val)
	}
	*prevRaw, *prev = raw, s
	return s, nil
}

// key reads an object key and the ':' after it, returning the decoded key
// (valid until the next string is read).
func (p *parser) key() ([]byte, error) {
	p.ws()
	if p.peek() != '"' {
		return nil, p.fail("expected a key")
	}
	raw, clean, err := p.rawString()
	if err != nil {
		return nil, err
	}
	if !clean {
		p.scratch = unquote(p.scratch[:0], raw)
		raw = p.scratch
	}
	p.ws()
	if !p.consume(':') {
		return nil, p.fail("expected ':'")
	}
	return raw, nil
}

// next reads ',' (false) or the closing byte (true) after a member.
func (p *parser) next(closing byte) (bool, error) {
	p.ws()
	if p.consume(',') {
		return false, nil
	}
	if p.consume(closing) {
		return true, nil
	}
	return false, p.fail(fmt.Sprintf("expected ',' or '%c'", closing))
}

func (p *parser) push() error {
	p.depth++
	if p.depth > maxDepth {
		return p.fail("nesting too deep")
	}
	return nil
}

func (p *parser) ws() {
	for p.pos < len(p.buf) {
		switch p.buf[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) peek() byte {
	if p.pos < len(p.buf) {
		return p.buf[p.pos]
	}
	return 0
}

func (p *parser) consume(c byte) bool {
	if p.pos < len(p.buf) && p.buf[p.pos] == c {
		p.pos++
		return true
	}
	return false
}

func (p *parser) literal(lit string) bool {
	if len(p.buf)-p.pos >= len(lit) && string(p.buf[p.pos:p.pos+len(lit)]) == lit {
		p.pos += len(lit)
		return true
	}
	return false
}

// rawString reads a string at p.pos (which holds '"') and returns its bytes
// between the quotes; clean reports that they need no decoding (plain
// ASCII, no escapes).
func (p *parser) rawString() (raw []byte, clean bool, err error) {
	b := p.buf
	start := p.pos + 1
	clean = true
	for i := start + plainPrefix(b[start:]); i < len(b); i++ {
		c := b[i]
		switch {
		case c == '"':
			p.pos = i + 1
			return b[start:i], clean, nil
		case c < 0x20:
			p.pos = i
			return nil, false, p.fail("control character in string")
		case c == '\\':
			clean = false
			i++
			if i >= len(b) {
				break
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if len(b)-i < 5 || !isHex(b[i+1]) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) {
					p.pos = i
					return nil, false, p.fail("invalid \\u escape")
				}
				i += 4
			default:
				p.pos = i
				return nil, false, p.fail("invalid escape")
			}
		case c >= utf8.RuneSelf:
			clean = false
		}
	}
	p.pos = len(b)
	return nil, false, p.fail("unterminated string")
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func hexVal(c byte) rune {
	switch {
	case c <= '9':
		return rune(c - '0')
	case c >= 'a':
		return rune(c - 'a' + 10)
	}
	return rune(c - 'A' + 10)
}

// u4 decodes \uXXXX at s[0:6], -1 if s does not start with one.
func u4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		if !isHex(c) {
			return -1
		}
		r = r<<4 | hexVal(c)
	}
	return r
}

// unquote appends the decoded form of a validated raw string to dst, as
// encoding/json decodes it.
func unquote(dst, raw []byte) []byte {
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '\\':
			switch raw[i+1] {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r := u4(raw[i:])
				i += 6
				if utf16.IsSurrogate(r) {
					if d := utf16.DecodeRune(r, u4(raw[i:])); d != utf8.RuneError {
						r = d
						i += 6
					} else {
						r = utf8.RuneError
					}
				}
				dst = utf8.AppendRune(dst, r)
				continue
			default: // '"', '\\', '/'
				dst = append(dst, raw[i+1])
			}
			i += 2
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, size := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && size == 1 {
				dst = utf8.AppendRune(dst, utf8.RuneError)
			} else {
				dst = append(dst, raw[i:i+size]...)
			}
			i += size
		}
	}
	return dst
}

// number validates a JSON number at p.pos.
func (p *parser) number() error {
	b, i := p.buf, p.pos
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		p.pos = i
		return p.fail("invalid number")
	}
	if i < len(b) && b[i] == '.' {
		i++
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			p.pos = i
			return p.fail("invalid number")
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		d := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		if i == d {
			p.pos = i
			return p.fail("invalid number")
		}
	}
	p.pos = i
	return nil
}

// skip validates and skips one JSON value.
func (p *parser) skip() error {
	p.ws()
	switch c := p.peek(); {
	case c == '"':
		_, _, err := p.rawString()
		return err
	case c == '{':
		p.pos++
		if err := p.push(); err != nil {
			return err
		}
		p.ws()
		if !p.consume('}') {
			for {
				if _, err := p.key(); err != nil {
					return err
				}
				if err := p.skip(); err != nil {
					return err
				}
				if done, err := p.next('}'); err != nil {
					return err
				} else if done {
					break
				}
			}
		}
		p.depth--
		return nil
	case c == '[':
		p.pos++
		if err := p.push(); err != nil {
			return err
		}
		p.ws()
		if !p.consume(']') {
			for {
				if err := p.skip(); err != nil {
					return err
				}
				if done, err := p.next(']'); err != nil {
					return err
				} else if done {
					break
				}
			}
		}
		p.depth--
		return nil
	case c == 't':
		if p.literal("true") {
			return nil
		}
	case c == 'f':
		if p.literal("false") {
			return nil
		}
	case c == 'n':
		if p.literal("null") {
			return nil
		}
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	}
	return p.fail("invalid value")
}

// interner maps byte strings to shared strings. It is safe for concurrent
// use. It holds at most maxInterned strings and starts afresh when full, so
// a stream of ever new index names (daily indices, rollovers) cannot grow it
// without bound.
type interner struct {
	mu sync.Mutex
	m  map[string]string
}

const maxInterned = 4096

func (in *interner) intern(b []byte) string {
	if in == nil {
		return string(b)
	}
	in.mu.Lock()
	s, ok := in.m[string(b)]
	if !ok {
		if in.m == nil || len(in.m) >= maxInterned {
			in.m = make(map[string]string)
		}
		s = string(b)
		in.m[s] = s
	}
	in.mu.Unlock()
	return s
}
