// Command opensearch-shard prints the shard a document lands in, computed
// with OpenSearch's own routing formula, with the layout it used:
//
//	$ opensearch-shard -shards 5 hello
//	shard 4 of 5 for id "hello" (routing_num_shards 640, routing_partition_size 1)
//
//	opensearch-shard -shards N [-routing-shards R] [-partition-size P] ID [ROUTING]
//	opensearch-shard -tsv < rows   # id<TAB>routing<TAB>N<TAB>R<TAB>p per line
//
// R defaults to what OpenSearch gives a new index with N shards; an index
// made by _split or _shrink keeps its source's R, so pass the real one (from
// GET /_cluster/state/metadata/<index>, routing_num_shards).
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/opensearchrouted/opensearchrouted/internal/routing"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("opensearch-shard", flag.ContinueOnError)
	fs.SetOutput(stderr)
	shards := fs.Int("shards", 0, "number_of_shards of the index (N)")
	routingShards := fs.Int("routing-shards", 0, "routing_num_shards of the index (R); 0 = OpenSearch's default for N")
	partition := fs.Int("partition-size", 1, "routing_partition_size of the index (p)")
	tsv := fs.Bool("tsv", false, "read rows id<TAB>routing<TAB>N<TAB>R<TAB>p from stdin (empty routing = none) and print one shard per line")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: opensearch-shard -shards N [-routing-shards R] [-partition-size P] ID [ROUTING]")
		fmt.Fprintln(stderr, "       opensearch-shard -tsv < rows")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *tsv {
		if err := runTSV(stdin, stdout); err != nil {
			fmt.Fprintln(stderr, "opensearch-shard:", err)
			return 1
		}
		return 0
	}
	if fs.NArg() < 1 || fs.NArg() > 2 || *shards == 0 {
		fs.Usage()
		return 2
	}
	id, rt := fs.Arg(0), fs.Arg(1)
	shard, err := routing.ShardFor(id, rt, *shards, *routingShards, *partition)
	if err != nil {
		fmt.Fprintln(stderr, "opensearch-shard:", err)
		return 1
	}
	r := *routingShards
	if r == 0 {
		r = routing.DefaultRoutingShards(*shards)
	}
	what := fmt.Sprintf("id %q", id)
	if rt != "" {
		what += fmt.Sprintf(", routing %q", rt)
	}
	fmt.Fprintf(stdout, "shard %d of %d for %s (routing_num_shards %d, routing_partition_size %d)\n", shard, *shards, what, r, *partition)
	return 0
}

// runTSV answers one line per input row: the shard, or "error: ..." for a
// row whose layout is impossible or malformed. Only I/O errors stop it.
func runTSV(stdin io.Reader, stdout io.Writer) error {
	sc := bufio.NewScanner(stdin)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024)
	w := bufio.NewWriter(stdout)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSuffix(sc.Text(), "\r")
		shard, err := tsvRow(text)
		if err != nil {
			fmt.Fprintf(w, "error: line %d: %v\n", line, err)
			continue
		}
		fmt.Fprintln(w, shard)
	}
	if err := sc.Err(); err != nil {
		return err
	}
	return w.Flush()
}

func tsvRow(text string) (int, error) {
	cols := strings.Split(text, "\t")
	if len(cols) != 5 {
		return 0, fmt.Errorf("want 5 tab-separated columns id, routing, N, R, p; got %d", len(cols))
	}
	var nums [3]int
	for i, name := range []string{"N", "R", "p"} {
		v, err := strconv.Atoi(cols[2+i])
		if err != nil {
			return 0, fmt.Errorf("%s %q is not an integer", name, cols[2+i])
		}
		nums[i] = v
	}
	if nums[1] == 0 {
		return 0, errors.New("R must be given in -tsv rows (routing_num_shards of the index)")
	}
	return routing.ShardFor(cols[0], cols[1], nums[0], nums[1], nums[2])
}
