// Command osrdemo is `make demo` (and `make demo-opensearch`): it builds the
// collector with ocb into ./dist if needed, starts a 3-node cluster (the
// emulator, or real OpenSearch with -backend opensearch), runs the shipped
// collector configuration twice with the same load (routing on, then
// routing off) and prints both runs side by side. Everything listens on
// 127.0.0.1; everything it starts is stopped when it ends, on Ctrl-C too.
//
//	go run ./testbed/demo/cmd/osrdemo [-backend emulator|opensearch] [-logs N] [-spans N]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/opensearchrouted/opensearchrouted/testbed/demo"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("osrdemo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	backend := fs.String("backend", "emulator", "cluster to write to: emulator (ossim, in-process) or opensearch (real nodes; needs Java)")
	logs := fs.Int("logs", 40000, "log records per run")
	spans := fs.Int("spans", 20000, "spans per run")
	batch := fs.Int("batch", 500, "records per OTLP export request")
	workers := fs.Int("workers", 4, "concurrent OTLP senders per signal")
	otlp := fs.String("otlp", "127.0.0.1:4317", "collector's OTLP gRPC address")
	metricsPort := fs.Int("metrics-port", 8888, "collector's Prometheus metrics port on 127.0.0.1")
	healthPort := fs.Int("health-port", 13133, "collector's health_check port on 127.0.0.1")
	osPort := fs.Int("port", 9200, "emulator: HTTP port of node 0 (node i: port+i)")
	shards := fs.Int("shards", 3, "emulator: primary shards per index")
	freePorts := fs.Bool("free-ports", false, "pick free ports instead of -otlp, -metrics-port, -health-port, -port")
	config := fs.String("config", "testbed/demo/collector.yaml", "collector configuration, relative to the repository root")
	storeTimeout := fs.Duration("store-timeout", 60*time.Second, "how long to wait for every record to be stored")
	buildOnly := fs.Bool("build-only", false, "build ./dist/otelcol-opensearchrouted (as make build does) and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *backend != "emulator" && *backend != "opensearch" {
		fmt.Fprintf(stderr, "osrdemo: -backend %q: must be emulator or opensearch\n", *backend)
		return 2
	}
	if *logs < 0 || *spans < 0 || *logs+*spans == 0 || *batch <= 0 || *workers <= 0 || *shards <= 0 {
		fmt.Fprintln(stderr, "osrdemo: -logs and -spans must not be negative and not both 0; -batch, -workers and -shards must be positive")
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	root, err := demo.FindRoot()
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	if *freePorts {
		*osPort = 0
	} else if !*buildOnly {
		// Before the build, which can take minutes: a port in use fails now.
		addrs := []string{*otlp, fmt.Sprintf("127.0.0.1:%d", *metricsPort), fmt.Sprintf("127.0.0.1:%d", *healthPort)}
		if *backend == "emulator" {
			for i := 0; i < 3; i++ {
				addrs = append(addrs, fmt.Sprintf("127.0.0.1:%d", *osPort+i))
			}
		}
		if err := demo.CheckFree(addrs...); err != nil {
			fmt.Fprintf(stderr, "osrdemo: %v\n", err)
			return 1
		}
	}
	start := time.Now()
	fmt.Fprintln(stderr, "osrdemo: building the collector (./dist)...")
	bin, err := demo.EnsureCollector(ctx, root, stderr)
	if err != nil {
		fmt.Fprintln(stderr, err)
		if ctx.Err() != nil {
			return 130
		}
		return 1
	}
	fmt.Fprintf(stderr, "osrdemo: %s is built (%s)\n", bin, time.Since(start).Round(100*time.Millisecond))
	if *buildOnly {
		return 0
	}

	o := demo.Options{
		Collector:    bin,
		Config:       filepath.Join(root, *config),
		Load:         demo.Load{Logs: *logs, Spans: *spans, Batch: *batch, Workers: *workers},
		OTLPAddr:     *otlp,
		MetricsPort:  *metricsPort,
		HealthPort:   *healthPort,
		StoreTimeout: *storeTimeout,
		Progress:     stderr,
	}
	if *freePorts {
		ports := make([]int, 3)
		for i := range ports {
			if ports[i], err = demo.FreePort(); err != nil {
				fmt.Fprintln(stderr, err)
				return 1
			}
		}
		o.OTLPAddr = fmt.Sprintf("127.0.0.1:%d", ports[0])
		o.MetricsPort, o.HealthPort = ports[1], ports[2]
	}
	dir, err := os.MkdirTemp("", "osrdemo-")
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	o.LogDir = dir

	var b demo.Backend
	switch *backend {
	case "emulator":
		fmt.Fprintln(stderr, "osrdemo: starting a 3-node emulated cluster...")
		b, err = demo.StartEmulator(3, *osPort, *shards)
	case "opensearch":
		fmt.Fprintln(stderr, "osrdemo: starting a 3-node OpenSearch cluster (Java; the first start downloads OpenSearch from Maven Central)...")
		b, err = demo.StartOpenSearch(ctx, 3, func(f string, a ...any) { fmt.Fprintf(stderr, "  "+f+"\n", a...) })
	}
	if err != nil {
		fmt.Fprintf(stderr, "osrdemo: starting the cluster: %v\n", err)
		if ctx.Err() != nil {
			return 130
		}
		return 1
	}
	defer b.Close()

	var runs []demo.Run
	for _, r := range []struct {
		routing bool
		dataset string
	}{{true, "routed"}, {false, "roundrobin"}} {
		res, err := demo.RunOnce(ctx, b, o, r.routing, r.dataset)
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, context.Canceled) {
				fmt.Fprintln(stderr, "osrdemo: interrupted; everything stopped")
				return 130
			}
			fmt.Fprintf(stderr, "osrdemo: %s: %v\n", res.Label, err)
			return 1
		}
		runs = append(runs, res)
	}
	title := fmt.Sprintf("opensearchrouted demo: %s\nload per run: %d logs + %d spans over OTLP gRPC (%d per request, %d senders per signal), after a warm-up that lets the exporter learn the new data streams (sent/stored include it; server counters, B/doc and rec/s do not)\ncollector logs in %s",
		b.Describe(), *logs, *spans, *batch, *workers, dir)
	fmt.Fprintln(stdout)
	if err := demo.Format(stdout, title, runs...); err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	for _, r := range runs {
		if !r.Ok() {
			fmt.Fprintf(stderr, "osrdemo: %s: not every record was stored exactly once\n", r.Label)
			return 1
		}
	}
	return 0
}
