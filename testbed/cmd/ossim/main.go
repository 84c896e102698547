// Command ossim runs the multi-node OpenSearch emulator until interrupted.
//
//	go run ./testbed/cmd/ossim --nodes 3 --port 9200
//
// It prints one line per node ("node-0 http://127.0.0.1:9200 zone=a") and
// serves until SIGINT or SIGTERM. Faults and counters: /_ossim/... on any
// node (see package ossim).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/opensearchrouted/opensearchrouted/testbed/ossim"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, nil))
}

// run starts the cluster and blocks until a signal arrives (or stop is
// closed, for tests). It returns the exit code.
func run(args []string, stdout, stderr io.Writer, stop <-chan struct{}) int {
	fs := flag.NewFlagSet("ossim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o ossim.Options
	var zones string
	fs.IntVar(&o.Nodes, "nodes", 3, "number of nodes")
	fs.IntVar(&o.BasePort, "port", 9200, "port of node 0; node i listens on port+i (0: free ports)")
	fs.StringVar(&zones, "zones", "", "comma-separated zone attributes, assigned round-robin")
	fs.DurationVar(&o.HopLatency, "hop-latency", 0, "one-way latency of a same-zone internal hop (0: 250µs)")
	fs.DurationVar(&o.CrossZoneHopLatency, "cross-zone-latency", 0, "one-way latency across zones (0: 1ms)")
	fs.BoolVar(&o.NoHopLatency, "no-hop-latency", false, "make internal hops free")
	fs.IntVar(&o.WriteThreads, "write-threads", 0, "write thread pool size per node (0: number of CPUs)")
	fs.IntVar(&o.WriteQueue, "write-queue", 0, "write queue size per node (0: 10000)")
	fs.DurationVar(&o.ServiceBase, "service-base", 0, "service time per shard-level write")
	fs.DurationVar(&o.ServicePerItem, "service-per-item", 0, "service time per item of a shard-level write")
	fs.Int64Var(&o.MaxContentLength, "max-content-length", 0, "http.max_content_length in bytes (0: 100mb)")
	fs.IntVar(&o.DefaultReplicas, "default-replicas", 0, "replicas of auto-created indices (0: 1; negative: none)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "ossim: unexpected arguments %q\n", fs.Args())
		return 2
	}
	if zones != "" {
		o.Zones = strings.Split(zones, ",")
	}
	c, err := ossim.Start(o)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	defer c.Close()
	for i := 0; i < c.Len(); i++ {
		n := c.Node(i)
		line := n.Name() + " " + n.URL()
		if n.Zone() != "" {
			line += " zone=" + n.Zone()
		}
		fmt.Fprintln(stdout, line)
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	select {
	case s := <-sig:
		fmt.Fprintf(stderr, "ossim: %v, stopping\n", s)
	case <-stop:
	}
	done := make(chan struct{})
	go func() { c.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		fmt.Fprintln(stderr, "ossim: close timed out")
		return 1
	}
	return 0
}
