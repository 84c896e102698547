package pit

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"
)

// decodeSearch decodes a search response. The fast path scans the bytes by
// hand: _source and sort values are sub-slices of body (no copy: body must
// not be modified afterwards), index names are shared between hits, and
// fields we do not use are skipped without decoding. Anything it does not
// understand falls back to encoding/json, which also words the error.
func decodeSearch(body []byte) (*searchResponse, error) {
	if r, err := scanSearch(body); err == nil {
		return r, nil
	}
	var r searchResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

var errScan = errors.New("pit: unexpected JSON")

type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// peek returns the next non-space byte (0 at the end).
func (s *scanner) peek() byte {
	s.ws()
	if s.i >= len(s.b) {
		return 0
	}
	return s.b[s.i]
}

func (s *scanner) expect(c byte) error {
	if s.peek() != c {
		return errScan
	}
	s.i++
	return nil
}

// rawString returns the bytes between the quotes of the next string and
// whether they contain escapes.
func (s *scanner) rawString() ([]byte, bool, error) {
	if s.peek() != '"' {
		return nil, false, errScan
	}
	start := s.i + 1
	esc := false
	for j := start; j < len(s.b); j++ {
		switch c := s.b[j]; {
		case c == '"':
			s.i = j + 1
			return s.b[start:j], esc, nil
		case c == '\\':
			esc = true
			j++
		case c < 0x20:
			return nil, false, errScan
		}
	}
	return nil, false, errScan
}

// str decodes the next string. prev is returned instead of a new string
// when the bytes are equal (index names repeat on every hit).
func (s *scanner) str(prev string) (string, error) {
	s.ws()
	start := s.i
	raw, esc, err := s.rawString()
	if err != nil {
		return "", err
	}
	if !esc {
		if !utf8.Valid(raw) {
			return "", errScan // encoding/json would replace bad bytes: let it
		}
		if string(raw) == prev {
			return prev, nil
		}
		return string(raw), nil
	}
	var out string
	if err := json.Unmarshal(s.b[start:s.i], &out); err != nil {
		return "", errScan
	}
	return out, nil
}

// value skips the next value and returns its bytes.
func (s *scanner) value() ([]byte, error) {
	s.ws()
	start := s.i
	if err := s.skip(0); err != nil {
		return nil, err
	}
	return s.b[start:s.i], nil
}

func (s *scanner) skip(depth int) error {
	if depth > 1000 {
		return errScan
	}
	switch c := s.peek(); {
	case c == '"':
		_, _, err := s.rawString()
		return err
	case c == '{':
		s.i++
		if s.peek() == '}' {
			s.i++
			return nil
		}
		for {
			if _, _, err := s.rawString(); err != nil {
				return err
			}
			if err := s.expect(':'); err != nil {
				return err
			}
			if err := s.skip(depth + 1); err != nil {
				return err
			}
			switch s.peek() {
			case ',':
				s.i++
			case '}':
				s.i++
				return nil
			default:
				return errScan
			}
		}
	case c == '[':
		s.i++
		if s.peek() == ']' {
			s.i++
			return nil
		}
		for {
			if err := s.skip(depth + 1); err != nil {
				return err
			}
			switch s.peek() {
			case ',':
				s.i++
			case ']':
				s.i++
				return nil
			default:
				return errScan
			}
		}
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || (c >= '0' && c <= '9'):
		start := s.i
		for s.i < len(s.b) {
			c := s.b[s.i]
			if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
				s.i++
				continue
			}
			break
		}
		if !validNumber(s.b[start:s.i]) {
			return errScan
		}
		return nil
	default:
		return errScan
	}
}

func (s *scanner) literal(lit string) error {
	if !bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
		return errScan
	}
	s.i += len(lit)
	return nil
}

// object calls field for each key of the next object; field must consume
// the value.
func (s *scanner) object(field func(key []byte) error) error {
	if err := s.expect('{'); err != nil {
		return err
	}
	if s.peek() == '}' {
		s.i++
		return nil
	}
	for {
		key, esc, err := s.rawString()
		if err != nil || esc {
			return errScan // our keys never need escapes
		}
		if err := s.expect(':'); err != nil {
			return err
		}
		if err := field(key); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return nil
		default:
			return errScan
		}
	}
}

// array calls elem for each element of the next array.
func (s *scanner) array(elem func() error) error {
	if err := s.expect('['); err != nil {
		return err
	}
	if s.peek() == ']' {
		s.i++
		return nil
	}
	for {
		if err := elem(); err != nil {
			return err
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return nil
		default:
			return errScan
		}
	}
}

func scanSearch(body []byte) (*searchResponse, error) {
	s := &scanner{b: body}
	r := &searchResponse{}
	var sortBuf []json.RawMessage // one backing array for the sort values of a page
	lastIndex := ""
	err := s.object(func(key []byte) error {
		switch string(key) {
		case "pit_id":
			v, err := s.str("")
			r.PITID = v
			return err
		case "timed_out":
			switch s.peek() {
			case 't':
				r.TimedOut = true
				return s.literal("true")
			case 'f':
				return s.literal("false")
			}
			return errScan
		case "_shards":
			v, err := s.value()
			if err != nil {
				return err
			}
			return json.Unmarshal(v, &r.Shards)
		case "hits":
			return s.object(func(key []byte) error {
				if string(key) != "hits" {
					if bytes.EqualFold(key, []byte("hits")) {
						return errScan
					}
					_, err := s.value()
					return err
				}
				r.Hits.Hits = r.Hits.Hits[:0] // a repeated key replaces, as in encoding/json
				return s.array(func() error {
					var h hitJSON
					err := s.object(func(key []byte) error {
						var err error
						switch string(key) {
						case "_index":
							h.Index, err = s.str(lastIndex)
							lastIndex = h.Index
						case "_id":
							h.ID, err = s.str("")
						case "_routing":
							h.Routing, err = s.str("")
						case "_version", "_seq_no", "_primary_term":
							var v []byte
							if v, err = s.value(); err == nil {
								dst := &h.Version
								if key[1] == 's' {
									dst = &h.SeqNo
								} else if key[1] == 'p' {
									dst = &h.PrimaryTerm
								}
								err = dst.UnmarshalJSON(v)
							}
						case "_source":
							var v []byte
							if v, err = s.value(); err == nil {
								h.Source = v[:len(v):len(v)]
							}
						case "sort":
							start := len(sortBuf)
							err = s.array(func() error {
								v, err := s.value()
								sortBuf = append(sortBuf, v[:len(v):len(v)])
								return err
							})
							h.Sort = sortBuf[start:len(sortBuf):len(sortBuf)]
						default:
							if foldsTo(key, hitKeys) {
								return errScan
							}
							_, err = s.value()
						}
						return err
					})
					r.Hits.Hits = append(r.Hits.Hits, h)
					return err
				})
			})
		default:
			if foldsTo(key, topKeys) {
				return errScan
			}
			_, err := s.value()
			return err
		}
	})
	if err != nil {
		return nil, err
	}
	if s.peek() != 0 {
		return nil, fmt.Errorf("%w: trailing data", errScan)
	}
	return r, nil
}

// encoding/json matches keys without regard to case; a key that differs
// from ours only by case goes to the fallback so both decoders agree.
var (
	topKeys = []string{"pit_id", "timed_out", "_shards", "hits"}
	hitKeys = []string{"_index", "_id", "_routing", "_version", "_seq_no", "_primary_term", "_source", "sort"}
)

func foldsTo(key []byte, keys []string) bool {
	for _, k := range keys {
		if len(k) == len(key) && bytes.EqualFold(key, []byte(k)) {
			return true
		}
	}
	return false
}

// validNumber checks the JSON number grammar:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func validNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	digits := func() int {
		n := 0
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
			n++
		}
		return n
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case digits() == 0:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(b)
}
