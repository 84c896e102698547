package main

import (
	"net"
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

func TestHelpExitsZero(t *testing.T) {
	var out, errOut strings.Builder
	if code := run([]string{"-help"}, &out, &errOut); code != 0 {
		t.Fatalf("-help: exit %d, want 0; stderr %q", code, errOut.String())
	}
	if !strings.Contains(errOut.String(), "-backend") || !strings.Contains(errOut.String(), "-free-ports") {
		t.Errorf("-help does not list the flags: %q", errOut.String())
	}
}

// A port in use fails the demo before the build, which can take minutes.
func TestPortInUseFailsBeforeBuilding(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var out, errOut strings.Builder
	code := run([]string{"-otlp", l.Addr().String()}, &out, &errOut)
	if code != 1 {
		t.Fatalf("exit %d, want 1; stderr %q", code, errOut.String())
	}
	if !strings.Contains(errOut.String(), l.Addr().String()+" is in use") || !strings.Contains(errOut.String(), "-free-ports") {
		t.Errorf("stderr does not name the port and the way out: %q", errOut.String())
	}
	if strings.Contains(errOut.String(), "building") {
		t.Errorf("the build started before the ports were checked: %q", errOut.String())
	}
}
