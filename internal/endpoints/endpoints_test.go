package endpoints

import (
	"errors"
	"strings"
	"testing"
)

func TestValidate(t *testing.T) {
	cases := []struct {
		endpoint  string
		endpoints []string
		want      string // "" = valid
	}{
		{"http://a:9200", nil, ""},
		{"", []string{"https://a:9200", "https://b:9200"}, ""},
		{"", nil, "endpoints: at least one endpoint is required"},
		{"http://a:1", []string{"http://b:2"}, "endpoint and endpoints: set one of them, not both"},
		{"", []string{"localhost:9200"}, `endpoints: "localhost:9200" is not an http:// or https:// URL`},
		{"", []string{"ftp://x"}, `endpoints: "ftp://x" is not an http:// or https:// URL`},
		{"", []string{"http://user:secret@h:9200"}, `endpoints: "http://h:9200" carries credentials in the URL`},
		{"", []string{"http://a:1", "https://b:2"}, "all endpoints must use the same scheme (found http and https)"},
	}
	for _, c := range cases {
		err := errors.Join(Validate(c.endpoint, c.endpoints)...)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q %v: %v", c.endpoint, c.endpoints, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q %v: %v, want %q", c.endpoint, c.endpoints, err, c.want)
		case err != nil && strings.Contains(err.Error(), "secret"):
			t.Errorf("credentials in the error: %v", err)
		}
	}
	if s := Seeds("http://x:1", nil); len(s) != 1 || s[0] != "http://x:1" {
		t.Fatal(s)
	}
	if s := Seeds("http://x:1", []string{"http://y:2"}); s[0] != "http://y:2" {
		t.Fatal(s)
	}
}
