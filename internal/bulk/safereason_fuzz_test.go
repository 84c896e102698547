package bulk

import (
	"strings"
	"testing"
)

// reasonTemplates are server reasons that quote document contents, with
// slot where the server puts the content. They are the reasons 2.19.6 and
// 3.9.0 wrote (testdata/reasons-*.json), and the Jackson location of older
// versions, which quoted the document.
var reasonTemplates = []string{
	"Validation Failed: 1: id [\x00] is too long, must be no longer than 512 bytes but was: 600;",
	"Validation Failed: 1: id [\x00] is too long, must be no longer than 512 bytes but was: 600;2: id [\x00] is too long, must be no longer than 512 bytes but was: 513;",
	"failed to parse field [n] of type [long] in document with id '\x00'. Preview of field's value: '\x00'",
	"failed to parse field [o] of type [text] in document with id '\x00'. Preview of field's value: '{x=\x00}'",
	`For input string: "` + "\x00" + `"`,
	"Failed to parse value [\x00] as only [true] or [false] are allowed.",
	"failed to parse date field [\x00] with format [strict_date_optional_time||epoch_millis]",
	"Numeric value (\x00) out of range of long (-9223372036854775808 - 9223372036854775807)\n at [Source: REDACTED (`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION` disabled); line: 1, column: 37]",
	"Numeric value (\x00) out of range of `long` (-9223372036854775808 - 9223372036854775807)\n at [Source: REDACTED (`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION` disabled); byte offset: #36]",
	"Unrecognized token '\x00': was expecting (JSON String, Number, Array, Object or token 'null', 'true' or 'false')\n at [Source: REDACTED (`StreamReadFeature.INCLUDE_SOURCE_IN_LOCATION` disabled); byte offset: #6]",
	"Unexpected character ('x' (code 120)): was expecting comma to separate Object entries\n at [Source: (byte[])\"\x00\"; line: 1, column: 12]",
	"Document contains at least one immense term in field=\"k\" (whose UTF8 encoding is longer than the max length 32766), all of which were skipped.  Please correct the analyzer to not produce such terms.  The prefix of the first immense term is: '[\x00]...', original message: bytes can be at most 32766 in length; got 39000",
	"[\x00]: version conflict, document already exists (current version [1])",
}

const slot = "\x00"

// fillTemplate puts a in a template's first slot and b in the others.
func fillTemplate(tmpl, a, b string) string {
	parts := strings.Split(tmpl, slot)
	var sb strings.Builder
	for i, p := range parts {
		if i == 1 {
			sb.WriteString(a)
		} else if i > 1 {
			sb.WriteString(b)
		}
		sb.WriteString(p)
	}
	return sb.String()
}

// FuzzSafeReason builds server reasons from the templates with arbitrary
// content and checks that SafeReason's result does not depend on the
// content (so none of it survives, and the template's "why" is kept the
// same whatever the document held), and, directly, that content of 4 bytes
// or more that the template itself does not hold is not in the result (in
// any of its parts between SafeReason's "…" marks), nor its first 8 bytes.
func FuzzSafeReason(f *testing.F) {
	hostile := []string{
		"secret",
		"] is too long, must be no longer than 512 bytes but was: 1;id [secret",
		"]: version conflict, secret",
		"secret] with format [x",
		`se"cret`,
		"1) out of range of long (secret",
		"secret': was expecting 'x",
		"secret] as only [true] or [false] are allowed.",
		"\n at [Source: secret",
		" in document with id 'x'. Preview of field's value: 'secret'",
		"value [secret",
		"\xff\xfe\xfdsecret\x80",
		strings.Repeat("é", 200) + "secret",
		"[]'\"(){}…secret",
		"",
	}
	for i := range reasonTemplates {
		for j, h := range hostile {
			f.Add(uint8(i), h, hostile[(j+1)%len(hostile)])
		}
	}
	f.Fuzz(func(t *testing.T, n uint8, a, b string) {
		tmpl := reasonTemplates[int(n)%len(reasonTemplates)]
		reason := fillTemplate(tmpl, a, b)
		got := SafeReason(reason)
		want := SafeReason(fillTemplate(tmpl, "v", "v"))
		if got != want {
			t.Fatalf("SafeReason(%q)\n = %q\nwith plain content %q", reason, got, want)
		}
		// The pieces of the result between SafeReason's own "…" marks.
		text := strings.ReplaceAll(tmpl, slot, "")
		pieces := strings.Split(got, "…")
		for _, c := range []string{a, b} {
			for _, part := range []string{c, c[:min(len(c), 8)]} {
				if len(part) < 4 || strings.Contains(text, part) {
					continue
				}
				for _, p := range pieces {
					if strings.Contains(p, part) {
						t.Fatalf("SafeReason(%q) = %q keeps %q", reason, got, part)
					}
				}
			}
		}
		if len(got) > maxReason+len("…") {
			t.Fatalf("%d bytes", len(got))
		}
	})
}
