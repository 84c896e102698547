package ossim

import (
	"encoding/json"
	"strings"
	"testing"
)

// validObjectRef is what validObject must answer.
func validObjectRef(src []byte) bool {
	i := skipWS(src, 0)
	return i < len(src) && src[i] == '{' && json.Valid(src)
}

var validObjectSeeds = []string{
	`{}`, ` {"a":1} `, `{"a":[1,2,{"b":null}],"c":"x\"y\\u00e9\n"}`, `{"a":-0.5e+10,"b":true,"c":false}`,
	`{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":1e}`, `{"a":-}`, `{"a":tru}`, `{"a":"\x01"}`, `{"a":"\q"}`,
	`{"a":"\u12"}`, `{"a":1,}`, `{"a" 1}`, `{,}`, `{"a":1}x`, `[1]`, `"s"`, ``, `{`, `{"a":"`, `{"a":[}`,
	`{"a":"` + "\xff\xfe" + `"}`, `{"a":1}{"b":2}`, `{"a":[1 2]}`, `{"a":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`,
	`{"a":` + strings.Repeat("[", 9998) + strings.Repeat("]", 9998) + `}`,
	`{"a":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}`,
	`{"a":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`,
}

func TestValidObjectMatchesEncodingJSON(t *testing.T) {
	for _, s := range validObjectSeeds {
		if got, want := validObject([]byte(s)), validObjectRef([]byte(s)); got != want {
			t.Errorf("validObject(%.60q) = %v, encoding/json %v", s, got, want)
		}
	}
}

func FuzzValidObject(f *testing.F) {
	for _, s := range validObjectSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validObject(b), validObjectRef(b); got != want {
			t.Fatalf("validObject(%q) = %v, encoding/json %v", b, got, want)
		}
	})
}
