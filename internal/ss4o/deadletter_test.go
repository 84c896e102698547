package ss4o

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

func TestAppendDeadLetterLayout(t *testing.T) {
	doc := `{"@timestamp":"2026-01-01T00:00:00Z","attributes":{"a":"x\"y"}}`
	dl := DeadLetter{
		Time:        time.Date(2026, 12, 1, 23, 4, 5, 120000000, time.FixedZone("x", 3600)),
		Signal:      SignalLogs,
		Index:       "ss4o_logs-app-prod",
		ID:          "abc\xff",
		Status:      400,
		ErrorType:   "mapper_parsing_exception",
		ErrorReason: "failed to parse field [attributes.a] of type [long]\n\t\"x\"",
		CauseType:   "illegal_argument_exception",
		CauseReason: "For input string: \"x\x01\"",
		Shape:       ShapeUnmapped,
		Document:    []byte(doc),
	}
	const want = `{"@timestamp":"2026-12-01T22:04:05.12Z","signal":"logs","index":"ss4o_logs-app-prod","id":"abc` + "\uFFFD" + `",` +
		`"status":400,"error":{"type":"mapper_parsing_exception","reason":"failed to parse field [attributes.a] of type [long]\n\t\"x\"",` +
		`"caused_by":{"type":"illegal_argument_exception","reason":"For input string: \"x\u0001\""}},"shape":"unmapped",` +
		`"document":"{\"@timestamp\":\"2026-01-01T00:00:00Z\",\"attributes\":{\"a\":\"x\\\"y\"}}"}`
	if got := string(AppendDeadLetter([]byte("prefix"), &dl)); got != "prefix"+want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	// No cause: no caused_by. Empty strings are written.
	dl = DeadLetter{Time: time.Unix(0, 0), Signal: SignalTraces, Status: 403, ErrorType: "t", Shape: ShapeOriginal, Document: []byte(`{}`)}
	const want2 = `{"@timestamp":"1970-01-01T00:00:00Z","signal":"traces","index":"","id":"","status":403,"error":{"type":"t","reason":""},"shape":"original","document":"{}"}`
	if got := string(AppendDeadLetter(nil, &dl)); got != want2 {
		t.Fatalf("got  %s\nwant %s", got, want2)
	}
	// A reason alone is a cause too.
	dl.CauseReason = "r"
	if got := string(AppendDeadLetter(nil, &dl)); !strings.Contains(got, `"caused_by":{"type":"","reason":"r"}`) {
		t.Fatalf("caused_by missing: %s", got)
	}
}

// TestDeadLetterRoundTrip: ParseDeadLetter reads back every field
// AppendDeadLetter wrote (strings as U+FFFD-sanitized), encoding/json reads
// the same document, and it is one NDJSON line.
func TestDeadLetterRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	e := &entropy{rng: rng}
	for range randomCases {
		in := DeadLetter{
			Time:        time.Unix(rng.Int64N(253402300799), rng.Int64N(1e9)),
			Signal:      e.str(),
			Index:       e.str(),
			ID:          e.str(),
			Status:      rng.IntN(600) - 50,
			ErrorType:   e.str(),
			ErrorReason: e.str() + e.str(),
			Shape:       e.str(),
			Document:    []byte(e.str() + e.str()),
		}
		if rng.IntN(2) == 0 {
			in.CauseType, in.CauseReason = e.str(), e.str()
		}
		doc := AppendDeadLetter(nil, &in)
		checkCompact(t, doc)
		var viaJSON struct {
			Timestamp string `json:"@timestamp"`
			Signal    string
			Status    int
			Error     struct {
				Reason   string
				CausedBy *struct{ Type, Reason string } `json:"caused_by"`
			}
			Document string
		}
		if err := json.Unmarshal(doc, &viaJSON); err != nil {
			t.Fatalf("encoding/json: %v\n%s", err, doc)
		}
		if viaJSON.Timestamp != in.Time.UTC().Format(time.RFC3339Nano) || viaJSON.Signal != sanitizeAny(in.Signal) ||
			viaJSON.Status != in.Status || viaJSON.Error.Reason != sanitizeAny(in.ErrorReason) ||
			(viaJSON.Error.CausedBy != nil) != (in.CauseType != "" || in.CauseReason != "") ||
			viaJSON.Document != sanitizeAny(string(in.Document)) {
			t.Fatalf("encoding/json reads %+v\nfrom %s", viaJSON, doc)
		}
		out, err := ParseDeadLetter(doc)
		if err != nil {
			t.Fatalf("ParseDeadLetter: %v\n%s", err, doc)
		}
		want := in
		for _, s := range []*string{&want.Signal, &want.Index, &want.ID, &want.ErrorType, &want.ErrorReason, &want.CauseType, &want.CauseReason, &want.Shape} {
			*s = sanitizeAny(*s)
		}
		want.Document = []byte(sanitizeAny(string(want.Document)))
		if !out.Time.Equal(want.Time) || out.Time.Location() != time.UTC {
			t.Fatalf("time %v, want %v", out.Time, want.Time)
		}
		out.Time = want.Time
		if string(out.Document) != string(want.Document) {
			t.Fatalf("document %q, want %q", out.Document, want.Document)
		}
		out.Document = want.Document
		if !equalDeadLetter(out, want) {
			t.Fatalf("got  %+v\nwant %+v", out, want)
		}
	}
}

func equalDeadLetter(a, b DeadLetter) bool {
	return a.Time.Equal(b.Time) && a.Signal == b.Signal && a.Index == b.Index && a.ID == b.ID && a.Status == b.Status &&
		a.ErrorType == b.ErrorType && a.ErrorReason == b.ErrorReason && a.CauseType == b.CauseType &&
		a.CauseReason == b.CauseReason && a.Shape == b.Shape && string(a.Document) == string(b.Document)
}

func TestParseDeadLetter(t *testing.T) {
	// Members it does not know are skipped, in the document and in error.
	got, err := ParseDeadLetter([]byte(`{"extra":[1,{"a":null}],"error":{"root_cause":[],"caused_by":{"caused_by":{"type":"deeper"},"type":"c"},"type":"t"},"document":"{}","status":429}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := (DeadLetter{ErrorType: "t", CauseType: "c", Status: 429, Document: []byte(`{}`)}); !equalDeadLetter(got, want) {
		t.Errorf("got %+v", got)
	}
	for src, field := range map[string]string{
		`{}`:                            "error",
		`{"error":{}}`:                  "document",
		`{"document":"{}"}`:             "error",
		`{"error":"x","document":"{}"}`: "error",
		`{"error":{},"document":{}}`:    "document",
		`{"error":{},"document":"","status":1.5}`:             "status",
		`{"error":{},"document":"","status":"1"}`:             "status",
		`{"error":{"type":1},"document":""}`:                  "type",
		`{"error":{"caused_by":[]},"document":""}`:            "caused_by",
		`{"error":{"caused_by":{"reason":{}}},"document":""}`: "reason",
		`{"error":{},"document":"","@timestamp":"yesterday"}`: "@timestamp",
		`{"error":{},"document":"","signal":null}`:            "signal",
		`{"error":{},"document":"","document":""}`:            "document",
		`{"error":{},"error":{},"document":""}`:               "error",
		`[1]`:                                                 "",
	} {
		_, err := ParseDeadLetter([]byte(src))
		var fe *foreignError
		if !errors.Is(err, ErrForeign) || !errors.As(err, &fe) || fe.field != field {
			t.Errorf("ParseDeadLetter(%s) = %v, want ErrForeign on %q", src, err, field)
		}
	}
	for _, src := range []string{``, `{`, `{"error":{},"document":"x"`, `{"error":{},"document":"\q"}`, `{"extra":1,}`, `{"error":{},"document":""} x`} {
		var se *SyntaxError
		if _, err := ParseDeadLetter([]byte(src)); !errors.As(err, &se) {
			t.Errorf("ParseDeadLetter(%s) = %v, want a SyntaxError", src, err)
		}
	}
}

// TestDecodeDeadLetterForeign: a dead-letter document of the other signal,
// or whose document is not ours, is a foreign document, and says why.
func TestDecodeDeadLetterForeign(t *testing.T) {
	rl, sl, lr := typicalLog()
	logDL := AppendDeadLetter(nil, &DeadLetter{Signal: SignalLogs, Document: logDoc(rl, sl, lr)})
	rs, ss, span := typicalSpan()
	spanDL := AppendDeadLetter(nil, &DeadLetter{Signal: SignalTraces, Document: spanDoc(rs, ss, span)})
	if _, _, _, err := trySpan(string(logDL)); !isForeignField(err, "signal") {
		t.Errorf("a logs dead letter as a span: %v", err)
	}
	if _, _, _, err := tryLog(string(spanDL)); !isForeignField(err, "signal") {
		t.Errorf("a traces dead letter as a log: %v", err)
	}
	for _, inner := range []string{`{"@timestamp":"2026-01-01T00:00:00Z","unknown":1}`, `not json`, ``, `{"@timestamp":`} {
		dl := AppendDeadLetter(nil, &DeadLetter{Signal: SignalLogs, Document: []byte(inner)})
		if _, _, _, err := tryLog(string(dl)); !isForeignField(err, "document") {
			t.Errorf("dead letter of %q: %v", inner, err)
		}
		// A dead letter inside a dead letter is not unwrapped twice.
		outer := AppendDeadLetter(nil, &DeadLetter{Signal: SignalLogs, Document: logDL})
		if _, _, _, err := tryLog(string(outer)); !isForeignField(err, "document") {
			t.Errorf("nested dead letter: %v", err)
		}
	}
	// Not a dead letter: the foreign error is the one of the document.
	if _, _, _, err := tryLog(`{"error":"x","document":"{}"}`); !isForeignField(err, "error") {
		t.Errorf("foreign: %v", err)
	}
	// Malformed JSON stays a syntax error.
	var se *SyntaxError
	if _, _, _, err := tryLog(`{"error":{},"document":"{}"`); !errors.As(err, &se) {
		t.Errorf("malformed: %v", err)
	}
}

func isForeignField(err error, field string) bool {
	var fe *foreignError
	return errors.Is(err, ErrForeign) && errors.As(err, &fe) && fe.field == field
}
