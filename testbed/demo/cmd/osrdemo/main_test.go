package main

import (
	"strings"
	"testing"
)

func TestFlagErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-backend", "elastic"}, `-backend "elastic": must be emulator or opensearch`},
		{[]string{"-logs", "0", "-spans", "0"}, "not both 0"},
		{[]string{"-batch", "0"}, "-batch, -workers and -shards must be positive"},
		{[]string{"-nosuchflag"}, "flag provided but not defined"},
	} {
		var out, errOut strings.Builder
		if code := run(c.args, &out, &errOut); code != 2 {
			t.Errorf("%v: exit %d, want 2", c.args, code)
		}
		if !strings.Contains(errOut.String(), c.want) {
			t.Errorf("%v: stderr %q does not say %q", c.args, errOut.String(), c.want)
		}
		if out.Len() != 0 {
			t.Errorf("%v: printed a report: %q", c.args, out.String())
		}
	}
}
