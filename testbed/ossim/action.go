package ossim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode/utf8"
)

// action is one parsed bulk action/metadata line.
type action struct {
	op      string // index, create, update, delete
	index   string
	id      string
	hasID   bool
	routing string
	opType  string
	// Used by the internal replica protocol only.
	version, seqNo int64
}

// knownActionParams are the metadata keys the real server accepts.
var knownActionParams = map[string]bool{
	"_index": true, "_id": true, "routing": true, "op_type": true, "version": true,
	"version_type": true, "if_seq_no": true, "if_primary_term": true, "pipeline": true,
	"retry_on_conflict": true, "require_alias": true, "_source": true,
}

// parseAction parses `{"<op>":{"k":v,...}}`. The fast path handles string
// and integer values without escapes; anything else goes through
// encoding/json.
func parseAction(line []byte, lineNo int) (action, error) {
	if a, ok := parseActionFast(line); ok {
		return a, nil
	}
	return parseActionSlow(line, lineNo)
}

func skipWS(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// fastString reads a JSON string without escapes at b[i] == '"'.
func fastString(b []byte, i int) (string, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return "", i, false
	}
	j := i + 1
	ascii := true
	for j < len(b) && b[j] != '"' {
		if b[j] == '\\' || b[j] < 0x20 {
			return "", i, false
		}
		if b[j] >= 0x80 {
			ascii = false
		}
		j++
	}
	if j >= len(b) || !ascii && !utf8.Valid(b[i+1:j]) {
		return "", i, false
	}
	return string(b[i+1 : j]), j + 1, true
}

func parseActionFast(b []byte) (a action, ok bool) {
	i := skipWS(b, 0)
	if i >= len(b) || b[i] != '{' {
		return a, false
	}
	op, i, ok := fastString(b, skipWS(b, i+1))
	if !ok {
		return a, false
	}
	a.op = op
	i = skipWS(b, i)
	if i >= len(b) || b[i] != ':' {
		return a, false
	}
	i = skipWS(b, i+1)
	if i >= len(b) || b[i] != '{' {
		return a, false
	}
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		i++
	} else {
		for {
			var k string
			k, i, ok = fastString(b, skipWS(b, i))
			if !ok {
				return a, false
			}
			i = skipWS(b, i)
			if i >= len(b) || b[i] != ':' {
				return a, false
			}
			i = skipWS(b, i+1)
			if i >= len(b) {
				return a, false
			}
			var sv string
			var nv int64
			isNum := false
			if b[i] == '"' {
				sv, i, ok = fastString(b, i)
				if !ok {
					return a, false
				}
			} else {
				j := i
				if j < len(b) && b[j] == '-' {
					j++
				}
				for j < len(b) && b[j] >= '0' && b[j] <= '9' {
					j++
				}
				v, err := strconv.ParseInt(string(b[i:j]), 10, 64)
				if err != nil {
					return a, false
				}
				nv, isNum, i = v, true, j
			}
			switch k {
			case "_index":
				if isNum {
					return a, false
				}
				a.index = sv
			case "_id":
				if isNum {
					return a, false
				}
				a.id, a.hasID = sv, true
			case "routing":
				if isNum {
					return a, false
				}
				a.routing = sv
			case "op_type":
				a.opType = sv
			case "version":
				a.version = nv
			case "if_seq_no":
				a.seqNo = nv
			default:
				if !knownActionParams[k] {
					return a, false
				}
			}
			i = skipWS(b, i)
			if i < len(b) && b[i] == ',' {
				i++
				continue
			}
			if i < len(b) && b[i] == '}' {
				i++
				break
			}
			return a, false
		}
	}
	i = skipWS(b, i)
	if i >= len(b) || b[i] != '}' {
		return a, false
	}
	return a, skipWS(b, i+1) == len(b)
}

type bulkParseError struct {
	typ, reason string
}

func (e *bulkParseError) Error() string { return e.reason }

func parseActionSlow(line []byte, lineNo int) (action, error) {
	var a action
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	var outer map[string]json.RawMessage
	if err := d.Decode(&outer); err != nil {
		return a, &bulkParseError{"json_parse_exception", fmt.Sprintf("Malformed action/metadata line [%d]: %v", lineNo, err)}
	}
	if d.More() {
		return a, &bulkParseError{"illegal_argument_exception", fmt.Sprintf("Malformed action/metadata line [%d], expected a simple value for field [_index] but found [START_OBJECT]", lineNo)}
	}
	if len(outer) != 1 {
		return a, &bulkParseError{"illegal_argument_exception", fmt.Sprintf("Malformed action/metadata line [%d], expected START_OBJECT or END_OBJECT but found [%d fields]", lineNo, len(outer))}
	}
	for op, raw := range outer {
		a.op = op
		var meta map[string]any
		dd := json.NewDecoder(bytes.NewReader(raw))
		dd.UseNumber()
		if err := dd.Decode(&meta); err != nil || meta == nil {
			return a, &bulkParseError{"illegal_argument_exception", fmt.Sprintf("Malformed action/metadata line [%d], expected START_OBJECT but found [%s]", lineNo, bytes.TrimSpace(raw))}
		}
		for k, v := range meta {
			if !knownActionParams[k] {
				return a, &bulkParseError{"illegal_argument_exception", fmt.Sprintf("Action/metadata line [%d] contains an unknown parameter [%s]", lineNo, k)}
			}
			var s string
			switch x := v.(type) {
			case string:
				s = x
			case json.Number:
				s = x.String()
			case bool:
				s = strconv.FormatBool(x)
			case nil:
			default:
				return a, &bulkParseError{"illegal_argument_exception", fmt.Sprintf("Malformed action/metadata line [%d], expected a simple value for field [%s] but found [START_OBJECT]", lineNo, k)}
			}
			switch k {
			case "_index":
				a.index = s
			case "_id":
				a.id, a.hasID = s, v != nil
			case "routing":
				a.routing = s
			case "op_type":
				a.opType = s
			case "version":
				a.version, _ = strconv.ParseInt(s, 10, 64)
			case "if_seq_no":
				a.seqNo, _ = strconv.ParseInt(s, 10, 64)
			}
		}
	}
	return a, nil
}
