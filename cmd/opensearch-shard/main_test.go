package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

func TestSingle(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"-shards", "5", "hello"}, nil, &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	// hash("hello") = -675079799; floorMod(.., 640) = 521; 521/128 = 4.
	if out.String() != "shard 4 of 5 for id \"hello\" (routing_num_shards 640, routing_partition_size 1)\n" {
		t.Fatalf("got %q", out.String())
	}
	out.Reset()
	if code := run([]string{"-shards", "4", "-routing-shards", "8", "-partition-size", "3", "a_1", "a"}, nil, &out, &errb); code != 0 ||
		out.String() != "shard 2 of 4 for id \"a_1\", routing \"a\" (routing_num_shards 8, routing_partition_size 3)\n" {
		t.Fatalf("partitioned: exit %d, %q %s", code, out.String(), errb.String())
	}
	errb.Reset()
	if code := run([]string{"-shards", "3", "-routing-shards", "10", "x"}, nil, &out, &errb); code != 1 || !strings.Contains(errb.String(), "routing_num_shards 10 must be a multiple of number_of_shards 3") {
		t.Fatalf("invalid layout: exit %d, %s", code, errb.String())
	}
	if code := run([]string{"x"}, nil, &out, &errb); code != 2 {
		t.Fatalf("missing -shards: exit %d", code)
	}
	errb.Reset()
	if code := run([]string{"-help"}, nil, &out, &errb); code != 0 || !strings.Contains(errb.String(), "usage: opensearch-shard") {
		t.Fatalf("-help: exit %d, %q", code, errb.String())
	}
}

func TestTSVVectors(t *testing.T) {
	data, err := os.ReadFile("../../internal/routing/testdata/routing_vectors.tsv")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")[1:]
	var in, want strings.Builder
	for _, l := range lines {
		c := strings.Split(l, "\t")
		in.WriteString(strings.Join(c[:5], "\t") + "\n")
		want.WriteString(c[6] + "\n")
	}
	in.WriteString("x\t\t3\t10\t1\n")
	in.WriteString("x\t\t4\t8\t3\n")
	in.WriteString("bad row\n")
	want.WriteString("error: line 43: routing: routing_num_shards 10 must be a multiple of number_of_shards 3\n")
	want.WriteString("error: line 44: routing: routing_partition_size 3 requires a routing value on every document\n")
	want.WriteString("error: line 45: want 5 tab-separated columns id, routing, N, R, p; got 1\n")
	var out, errb bytes.Buffer
	if code := run([]string{"-tsv"}, strings.NewReader(in.String()), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if out.String() != want.String() {
		t.Fatalf("got:\n%s\nwant:\n%s", out.String(), want.String())
	}
}
