package ossim

import (
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"sync"
	"time"
)

// check parses a document against the mapping and learns its new fields.
// A document whose fields are all mapped costs one walk under the read
// lock; one with new fields is walked again under the write lock (the
// mapping may have changed meanwhile) and its fields are added there, so
// concurrent bulks see one consistent mapping.
func (m *indexMapping) check(src []byte, id string) *osErr {
	w := walkPool.Get().(*docWalk)
	defer w.release()
	w.reset(m, src, id)
	m.mu.RLock()
	w.walk()
	m.mu.RUnlock()
	if w.err != nil {
		return w.err
	}
	if len(w.pending) == 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	w.reset(m, src, id)
	w.walk()
	if w.err != nil {
		return w.err
	}
	add, e := w.merged()
	if e != nil {
		return e
	}
	n := 0
	for _, p := range add {
		n += 1 + len(p.f.subs)
		if len(p.path) > 0 {
			name := p.path[strings.LastIndexByte(p.path, '.')+1:]
			if len(name) > m.nameLimit {
				return &osErr{status: 400, typ: "illegal_argument_exception", reason: fmt.Sprintf("Field name [%s] is longer than the limit of [%d] characters", name, m.nameLimit)}
			}
		}
	}
	if m.count+n > m.totalLimit {
		return &osErr{status: 400, typ: "illegal_argument_exception", reason: fmt.Sprintf("Limit of total fields [%d] has been exceeded", m.totalLimit)}
	}
	for _, p := range add {
		if p.f.kind == kObject {
			if d := strings.Count(p.path, ".") + 2; d > m.depthLimit {
				return &osErr{status: 400, typ: "illegal_argument_exception", reason: fmt.Sprintf("Limit of mapping depth [%d] has been exceeded due to object field [%s]", m.depthLimit, p.path)}
			}
		}
	}
	for _, p := range add {
		p.f.path = p.path
		m.fields[p.path] = p.f
	}
	m.count += n
	return nil
}

// termError is the refusal Lucene gives a document with a keyword value
// over 32766 bytes (after the mapping took its new fields), or nil. Only a
// source longer than that can hold one.
func (m *indexMapping) termError(src []byte, id string) *osErr {
	if len(src) <= 32766 {
		return nil
	}
	w := walkPool.Get().(*docWalk)
	defer w.release()
	w.reset(m, src, id)
	m.mu.RLock()
	defer m.mu.RUnlock()
	w.walk()
	if w.err != nil {
		return nil
	}
	return w.termErr
}

// walkPool keeps walkers (and their path buffers) between documents.
var walkPool = sync.Pool{New: func() any { return new(docWalk) }}

func (w *docWalk) reset(m *indexMapping, src []byte, id string) {
	*w = docWalk{m: m, src: src, id: id, buf: w.buf[:0], pending: w.pending[:0]}
}

func (w *docWalk) release() {
	clear(w.pending)
	*w = docWalk{buf: w.buf[:0], pending: w.pending[:0]}
	walkPool.Put(w)
}

var (
	bigLongMax = new(big.Float).SetInt64(math.MaxInt64)
	bigLongMin = new(big.Float).SetInt64(math.MinInt64)
)

type intRange struct {
	min, max int64
	name     string
}

var intRanges = map[fkind]intRange{
	kLong:    {math.MinInt64, math.MaxInt64, "long"},
	kInteger: {math.MinInt32, math.MaxInt32, "integer"},
	kShort:   {math.MinInt16, math.MaxInt16, "short"},
	kByte:    {math.MinInt8, math.MaxInt8, "byte"},
}

func iae(reason string) *errCause {
	return &errCause{typ: "illegal_argument_exception", reason: reason}
}

// lineCol is the 1-based line and column (in bytes) of offset pos.
func lineCol(src []byte, pos int) (int, int) {
	line, start := 1, 0
	for i := 0; i < pos && i < len(src); i++ {
		if src[i] == '\n' {
			line, start = line+1, i+1
		}
	}
	return line, pos - start + 1
}

// jsonErr is a Jackson error at the parser's location (just after the
// current token, which ends at end): on 2.19.6 one cause of type typ, on
// 3.9.0 (newer Jackson) an input_coercion_exception wrapping itself, with
// the byte offset for the location.
func jsonErr(v3 bool, typ, msg string, src []byte, end int) *errCause {
	if v3 {
		msg = strings.NewReplacer("can not use", "cannot use", "range of long", "range of `long`", "range of int ", "range of `int` ").Replace(msg)
		r := fmt.Sprintf("%s\n at [Source: REDACTED (`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION` disabled); byte offset: #%d]", msg, end)
		return &errCause{typ: "input_coercion_exception", reason: r, cause: &errCause{typ: "input_coercion_exception", reason: r}}
	}
	l, c := lineCol(src, end)
	return &errCause{typ: typ, reason: fmt.Sprintf("%s\n at [Source: REDACTED (`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION` disabled); line: %d, column: %d]", msg, l, c)}
}

// objectCause is why an object (at start) cannot go into leaf f.
func objectCause(v3 bool, f *mfield, src []byte, start int) *errCause {
	switch f.kind {
	case kLong, kInteger, kShort, kByte, kDouble, kFloat, kHalfFloat:
		return jsonErr(v3, "json_parse_exception", "Current token (START_OBJECT) not numeric, can not use numeric value accessors", src, start+1)
	case kBoolean:
		return jsonErr(v3, "json_parse_exception", "Current token (START_OBJECT) not of boolean type", src, start+1)
	}
	l, c := lineCol(src, start)
	return &errCause{typ: "illegal_state_exception", reason: fmt.Sprintf("Can't get text on a START_OBJECT at %d:%d", l, c)}
}

func tokenName(kind byte, text string) string {
	switch kind {
	case 't':
		return "VALUE_TRUE"
	case 'f':
		return "VALUE_FALSE"
	}
	if strings.ContainsAny(text, ".eE") {
		return "VALUE_NUMBER_FLOAT"
	}
	return "VALUE_NUMBER_INT"
}

var javaRange = map[fkind]string{kLong: "long (-9223372036854775808 - 9223372036854775807)", kInteger: "int (-2147483648 - 2147483647)",
	kShort: "Java short", kByte: "Java byte"}

// checkScalar returns why a scalar (kind: '"', 't', 'f' or a number's
// first byte; text: the string's value or the literal, which spans
// src[start:end]) cannot go into f, or nil.
func checkScalar(v3 bool, f *mfield, kind byte, text string, src []byte, end int) *errCause {
	isStr := kind == '"'
	isBool := kind == 't' || kind == 'f'
	switch f.kind {
	case kText, kKeyword, kOpaque:
		return nil
	case kLong, kInteger, kShort, kByte:
		r := intRanges[f.kind]
		if isBool {
			return jsonErr(v3, "json_parse_exception", "Current token ("+tokenName(kind, text)+") not numeric, can not use numeric value accessors", src, end)
		}
		if isStr {
			if text == "" && !f.noCoerce {
				return nil
			}
			if f.kind == kLong {
				return checkIntString(text, r, !f.noCoerce)
			}
			if !javaParsesDouble(text) {
				return &errCause{typ: "number_format_exception", reason: javaNumberFormat(text)}
			}
			v := javaParseDouble(text)
			if v < float64(r.min) || v > float64(r.max) || math.IsNaN(v) {
				return iae(fmt.Sprintf("Value [%s] is out of range for %s", text, article(r.name)))
			}
			if f.noCoerce && v != math.Trunc(v) {
				return iae(fmt.Sprintf("Value [%s] has a decimal part", text))
			}
			return nil
		}
		if strings.ContainsAny(text, ".eE") {
			v, _ := strconv.ParseFloat(text, 64)
			if v >= float64(r.max)+1 || v < float64(r.min) || math.IsInf(v, 0) {
				return jsonErr(v3, "input_coercion_exception", fmt.Sprintf("Numeric value (%s) out of range of %s", text, javaRange[f.kind]), src, end)
			}
			if f.noCoerce && v != math.Trunc(v) {
				return iae(fmt.Sprintf("%s cannot be converted to %s without data loss", javaDouble(v), javaBoxName(f.kind)))
			}
			return nil
		}
		v, err := strconv.ParseInt(text, 10, 64)
		if err != nil || v > r.max || v < r.min {
			return jsonErr(v3, "input_coercion_exception", fmt.Sprintf("Numeric value (%s) out of range of %s", text, javaRange[f.kind]), src, end)
		}
		return nil
	case kDouble, kFloat, kHalfFloat:
		if isBool {
			return jsonErr(v3, "json_parse_exception", "Current token ("+tokenName(kind, text)+") not numeric, can not use numeric value accessors", src, end)
		}
		var v float64
		if isStr {
			if text == "" && !f.noCoerce {
				return nil
			}
			if !javaParsesDouble(text) {
				return &errCause{typ: "number_format_exception", reason: javaNumberFormat(text)}
			}
			v = javaParseDouble(text)
		} else {
			v, _ = strconv.ParseFloat(text, 64)
		}
		if f.kind != kDouble {
			v = float64(float32(v))
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return iae(fmt.Sprintf("[%s] supports only finite values, but got [%s]", f.typ, javaDouble(v)))
		}
		return nil
	case kBoolean:
		if isBool {
			return nil
		}
		if isStr {
			if text == "" || text == "true" || text == "false" {
				return nil
			}
			return iae("Failed to parse value [" + text + "] as only [true] or [false] are allowed.")
		}
		return jsonErr(v3, "json_parse_exception", "Current token ("+tokenName(kind, text)+") not of boolean type", src, end)
	case kDate, kDateNanos:
		return checkDate(f, text)
	}
	return nil
}

func javaBoxName(k fkind) string {
	switch k {
	case kInteger:
		return "Integer"
	case kShort:
		return "Short"
	case kByte:
		return "Byte"
	}
	return "Long"
}

// Date formats the emulator checks.
const (
	fmtDefault = iota // strict_date_optional_time||epoch_millis
	fmtEpoch          // epoch_millis
	fmtSlash          // yyyy/MM/dd HH:mm:ss||yyyy/MM/dd||epoch_millis (date detection)
	fmtStrict         // strict_date_optional_time
	fmtOther          // not checked
)

var dateFormatNames = map[string]int{"": fmtDefault, "strict_date_optional_time||epoch_millis": fmtDefault, "epoch_millis": fmtEpoch,
	slashFormat: fmtSlash, "strict_date_optional_time": fmtStrict}

const slashFormat = "yyyy/MM/dd HH:mm:ss||yyyy/MM/dd||epoch_millis"

func dateFormatName(f int, given string) string {
	switch f {
	case fmtDefault:
		return "strict_date_optional_time||epoch_millis"
	case fmtEpoch:
		return "epoch_millis"
	case fmtSlash:
		return slashFormat
	case fmtStrict:
		return "strict_date_optional_time"
	}
	return given
}

func isEpochMillis(s string) bool {
	t := strings.TrimPrefix(s, "-")
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return false
	}
	if i == len(t) {
		return true
	}
	if t[i] != '.' || i+1 == len(t) {
		return false
	}
	for _, c := range t[i+1:] {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// checkDate parses a date value (a string, or a number's or boolean's
// text) as the field's format does.
func checkDate(f *mfield, text string) *errCause {
	if f.dateFmt == fmtOther {
		return nil
	}
	var t time.Time
	ok := false
	if f.dateFmt == fmtDefault || f.dateFmt == fmtStrict {
		t, ok = parseDateOptionalTime(text)
	}
	if !ok && f.dateFmt == fmtSlash {
		t, ok = parseSlashDate(text)
	}
	if !ok && f.dateFmt != fmtStrict && isEpochMillis(text) {
		ms, err := strconv.ParseFloat(text, 64)
		if err == nil {
			sec := math.Floor(ms / 1000)
			t, ok = time.Unix(int64(sec), int64((ms-sec*1000)*1e6)).UTC(), true
		}
	}
	if !ok {
		return &errCause{typ: "illegal_argument_exception", reason: fmt.Sprintf("failed to parse date field [%s] with format [%s]", text, dateFormatName(f.dateFmt, f.format)),
			cause: &errCause{typ: "date_time_parse_exception", reason: "Failed to parse with all enclosed parsers"}}
	}
	if f.kind == kDateNanos {
		if t.Before(time.Unix(0, 0)) {
			return iae(fmt.Sprintf("date[%s] is before the epoch in 1970 and cannot be stored in nanosecond resolution", javaInstant(t)))
		}
		if t.After(time.Unix(0, math.MaxInt64)) {
			return iae(fmt.Sprintf("date[%s] is after 2262-04-11T23:47:16.854775807 and cannot be stored in nanosecond resolution", javaInstant(t)))
		}
	}
	return nil
}

// javaInstant is Java's Instant.toString.
func javaInstant(t time.Time) string {
	t = t.UTC()
	s := t.Format("2006-01-02T15:04:05")
	if ns := t.Nanosecond(); ns != 0 {
		switch {
		case ns%1e6 == 0:
			s += fmt.Sprintf(".%03d", ns/1e6)
		case ns%1e3 == 0:
			s += fmt.Sprintf(".%06d", ns/1e3)
		default:
			s += fmt.Sprintf(".%09d", ns)
		}
	}
	return s + "Z"
}

func javaTypeName(k fkind) string {
	switch k {
	case kInteger:
		return "int"
	case kShort:
		return "short"
	case kByte:
		return "byte"
	}
	return "long"
}

func article(name string) string {
	if name == "integer" {
		return "an integer"
	}
	return "a " + name
}

// checkIntString is the server's Numbers.toLong for a string value.
func checkIntString(s string, r intRange, coerce bool) *errCause {
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		if v > r.max || v < r.min {
			return iae(fmt.Sprintf("Value [%s] is out of range for %s", s, article(r.name)))
		}
		return nil
	}
	bf, ok := new(big.Float).SetPrec(200).SetString(s)
	if !ok || strings.ContainsAny(s, "xXpP_ \t") || strings.EqualFold(strings.TrimLeft(s, "+-"), "inf") || strings.EqualFold(strings.TrimLeft(s, "+-"), "infinity") {
		return iae("For input string: \"" + s + "\"")
	}
	if bf.Cmp(bigLongMax) >= 0 || bf.Cmp(bigLongMin) <= 0 {
		if bf.Cmp(bigLongMax) > 0 || bf.Cmp(bigLongMin) < 0 || !bf.IsInt() {
			return iae(fmt.Sprintf("Value [%s] is out of range for %s", s, article(r.name)))
		}
	}
	if !coerce && !bf.IsInt() {
		return iae(fmt.Sprintf("Value [%s] has a decimal part", s))
	}
	iv, _ := bf.Int(nil)
	if !iv.IsInt64() || iv.Int64() > r.max || iv.Int64() < r.min {
		return iae(fmt.Sprintf("Value [%s] is out of range for %s", s, article(r.name)))
	}
	return nil
}

func javaNumberFormat(s string) string {
	if strings.TrimSpace(s) == "" {
		return "empty String"
	}
	return "For input string: \"" + s + "\""
}

// javaParsesDouble reports whether Java's Double.parseDouble accepts s.
func javaParsesDouble(s string) bool {
	t := strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
	if t == "" {
		return false
	}
	u := strings.TrimLeft(t, "+-")
	if len(t)-len(u) > 1 {
		return false
	}
	if u == "NaN" || u == "Infinity" {
		return true
	}
	if n := len(u); n > 0 && strings.IndexByte("fFdD", u[n-1]) >= 0 {
		u = u[:n-1]
	}
	if strings.HasPrefix(u, "0x") || strings.HasPrefix(u, "0X") {
		_, err := strconv.ParseFloat(u, 64)
		return err == nil && strings.ContainsAny(u, "pP")
	}
	if u == "" || strings.ContainsAny(u, "xXpP_iInN") {
		return false
	}
	_, err := strconv.ParseFloat(u, 64)
	return err == nil || strings.Contains(err.Error(), "range")
}

func javaParseDouble(s string) float64 {
	t := strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
	neg := strings.HasPrefix(t, "-")
	u := strings.TrimLeft(t, "+-")
	switch u {
	case "NaN":
		return math.NaN()
	case "Infinity":
		if neg {
			return math.Inf(-1)
		}
		return math.Inf(1)
	}
	if n := len(u); n > 0 && strings.IndexByte("fFdD", u[n-1]) >= 0 && !strings.HasPrefix(u, "0x") {
		t = t[:len(t)-1]
	}
	v, _ := strconv.ParseFloat(t, 64)
	return v
}

// javaParsesNumber: Long.parseLong or Double.parseDouble accepts s (the
// server does not detect dates in such strings).
func javaParsesNumber(s string) bool {
	if _, err := strconv.ParseInt(s, 10, 64); err == nil {
		return true
	}
	return javaParsesDouble(s)
}

func digits(s string, n int) (int, bool) {
	if len(s) < n {
		return 0, false
	}
	v := 0
	for i := 0; i < n; i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return v, true
}

func daysIn(y, m int) int { return time.Date(y, time.Month(m)+1, 0, 0, 0, 0, 0, time.UTC).Day() }

// parseDateOptionalTime parses strict_date_optional_time:
// yyyy[-MM[-dd['T'HH[:mm[:ss[.S…]]][zone]]]].
func parseDateOptionalTime(s string) (time.Time, bool) {
	i := 0
	for i < len(s) && i < 9 && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	if i < 4 {
		return time.Time{}, false
	}
	y, _ := strconv.Atoi(s[:i])
	mo, d, h, mi, sec, ns := 1, 1, 0, 0, 0, 0
	loc := time.UTC
	s = s[i:]
	fail := func() (time.Time, bool) { return time.Time{}, false }
	if s != "" {
		var ok bool
		if s[0] != '-' {
			return fail()
		}
		if mo, ok = digits(s[1:], 2); !ok || mo < 1 || mo > 12 {
			return fail()
		}
		s = s[3:]
	}
	if s != "" {
		var ok bool
		if s[0] != '-' {
			return fail()
		}
		if d, ok = digits(s[1:], 2); !ok || d < 1 || d > daysIn(y, mo) {
			return fail()
		}
		s = s[3:]
	}
	if s != "" {
		var ok bool
		if s[0] != 'T' {
			return fail()
		}
		s = s[1:]
		if h, ok = digits(s, 2); !ok || h > 23 {
			return fail()
		}
		s = s[2:]
		if s != "" && s[0] == ':' {
			if mi, ok = digits(s[1:], 2); !ok || mi > 59 {
				return fail()
			}
			s = s[3:]
			if s != "" && s[0] == ':' {
				if sec, ok = digits(s[1:], 2); !ok || sec > 59 {
					return fail()
				}
				s = s[3:]
				if s != "" && (s[0] == '.' || s[0] == ',') {
					j := 1
					for j < len(s) && j <= 9 && s[j] >= '0' && s[j] <= '9' {
						j++
					}
					if j == 1 {
						return fail()
					}
					frac := s[1:j] + strings.Repeat("0", 10-j)
					ns, _ = strconv.Atoi(frac)
					s = s[j:]
				}
			}
		}
		if loc, ok = zone(s); !ok {
			return fail()
		}
	}
	return time.Date(y, time.Month(mo), d, h, mi, sec, ns, loc), true
}

func zone(s string) (*time.Location, bool) {
	if s == "" || s == "Z" {
		return time.UTC, true
	}
	if s[0] != '+' && s[0] != '-' {
		return nil, false
	}
	h, ok := digits(s[1:], 2)
	if !ok || h > 23 {
		return nil, false
	}
	r := s[3:]
	m := 0
	if r != "" {
		if r[0] == ':' {
			r = r[1:]
		}
		if m, ok = digits(r, 2); !ok || len(r) != 2 || m > 59 {
			return nil, false
		}
	}
	off := h*3600 + m*60
	if s[0] == '-' {
		off = -off
	}
	return time.FixedZone("", off), true
}

// parseSlashDate parses yyyy/MM/dd HH:mm:ss or yyyy/MM/dd.
func parseSlashDate(s string) (time.Time, bool) {
	y, ok := digits(s, 4)
	if !ok || len(s) < 10 || s[4] != '/' || s[7] != '/' {
		return time.Time{}, false
	}
	mo, ok1 := digits(s[5:], 2)
	d, ok2 := digits(s[8:], 2)
	if !ok1 || !ok2 || mo < 1 || mo > 12 || d < 1 || d > daysIn(y, mo) {
		return time.Time{}, false
	}
	s = s[10:]
	if s == "" {
		return time.Date(y, time.Month(mo), d, 0, 0, 0, 0, time.UTC), true
	}
	if len(s) != 9 || s[0] != ' ' || s[3] != ':' || s[6] != ':' {
		return time.Time{}, false
	}
	h, ok1 := digits(s[1:], 2)
	mi, ok2 := digits(s[4:], 2)
	se, ok3 := digits(s[7:], 2)
	if !ok1 || !ok2 || !ok3 || h > 23 || mi > 59 || se > 59 {
		return time.Time{}, false
	}
	return time.Date(y, time.Month(mo), d, h, mi, se, 0, time.UTC), true
}
