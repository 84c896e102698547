package ossim

// validObject reports whether src is one JSON object with optional
// surrounding whitespace: what encoding/json's Valid accepts (bytes of a
// string are not checked as UTF-8; nesting is limited to 10,000), in one
// pass without its per-byte state machine. Every document source is
// checked with it before the mapping walks it.
func validObject(src []byte) bool {
	i := skipWS(src, 0)
	if i >= len(src) || src[i] != '{' {
		return false
	}
	i, ok := scanValue(src, i, 1)
	return ok && skipWS(src, i) == len(src)
}

const maxJSONDepth = 10000 // encoding/json's limit

func scanValue(b []byte, i, depth int) (int, bool) {
	if i >= len(b) {
		return i, false
	}
	switch c := b[i]; {
	case c == '{', c == '[':
		if depth > maxJSONDepth {
			return i, false
		}
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == end {
			return i + 1, true
		}
		for {
			var ok bool
			if c == '{' {
				if i >= len(b) || b[i] != '"' {
					return i, false
				}
				if i, ok = scanString(b, i); !ok {
					return i, false
				}
				i = skipWS(b, i)
				if i >= len(b) || b[i] != ':' {
					return i, false
				}
				i = skipWS(b, i+1)
			}
			if i, ok = scanValue(b, i, depth+1); !ok {
				return i, false
			}
			i = skipWS(b, i)
			switch {
			case i >= len(b):
				return i, false
			case b[i] == end:
				return i + 1, true
			case b[i] != ',':
				return i, false
			}
			i = skipWS(b, i+1)
		}
	case c == '"':
		return scanString(b, i)
	case c == 't':
		return scanLiteral(b, i, "true")
	case c == 'f':
		return scanLiteral(b, i, "false")
	case c == 'n':
		return scanLiteral(b, i, "null")
	case c == '-' || c >= '0' && c <= '9':
		return scanNumber(b, i)
	}
	return i, false
}

func scanString(b []byte, i int) (int, bool) {
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		case c == '\\':
			i++
			if i >= len(b) {
				return i, false
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) {
					return i, false
				}
				for _, h := range b[i+1 : i+5] {
					if !(h >= '0' && h <= '9' || h >= 'a' && h <= 'f' || h >= 'A' && h <= 'F') {
						return i, false
					}
				}
				i += 4
			default:
				return i, false
			}
		}
	}
	return i, false
}

func scanLiteral(b []byte, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) || string(b[i:i+len(lit)]) != lit {
		return i, false
	}
	return i + len(lit), true
}

func scanDigits(b []byte, i int) int {
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	return i
}

// scanNumber: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func scanNumber(b []byte, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return i, false
	case b[i] == '0':
		i++
	case b[i] >= '1' && b[i] <= '9':
		i = scanDigits(b, i)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := scanDigits(b, i+1)
		if j == i+1 {
			return j, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := scanDigits(b, i)
		if j == i {
			return j, false
		}
		i = j
	}
	return i, true
}
