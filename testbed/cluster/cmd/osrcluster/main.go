// Command osrcluster starts and stops a real OpenSearch cluster on 127.0.0.1
// for manual work (make opensearch-up / opensearch-down) and pre-builds the
// launcher (.ci/run).
//
//	osrcluster up    -dir DIR [-nodes 3] [-version 2.19.6] [-heap 512m] [-write-queue N] [-zones a,b,c] [-secure]
//	osrcluster down  -dir DIR
//	osrcluster build [-version 2.19.6] [-secure]
//	osrcluster java  [-version 2.19.6]   (the JDK a cluster would use; exit 1 if none fits)
//	osrcluster check                     (exit 1 if a cluster of `up` holds the machine lock: make test runs it first)
//
// `up -secure` runs the security plugin (TLS on HTTP and transport, the
// internal user database) and prints the admin user's credentials and the CA
// file; -version defaults to the newest release whose plugin Maven Central
// serves (cluster.SecureVersion).
//
// `up` leaves the nodes running after it exits (they hold the machine-wide
// real-cluster lock, so tests needing a real cluster wait until `down`).
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/opensearchrouted/opensearchrouted/testbed/cluster"
)

func main() {
	log.SetFlags(0)
	if len(os.Args) < 2 {
		usage()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	dir := fs.String("dir", "", "cluster directory (node data, logs, cluster.json)")
	nodes := fs.Int("nodes", 3, "number of nodes")
	version := fs.String("version", cluster.DefaultVersion(), "OpenSearch version")
	heap := fs.String("heap", "512m", "JVM heap per node")
	writeQueue := fs.Int("write-queue", 0, "thread_pool.write.queue_size (0: server default)")
	writeThreads := fs.Int("write-threads", 0, "thread_pool.write.size (0: server default)")
	zones := fs.String("zones", "", "comma-separated zones, assigned round-robin (node.attr.zone)")
	secure := fs.Bool("secure", false, "run the security plugin: TLS, users (prints the admin credentials and CA file)")
	wait := fs.Duration("wait", 10*time.Minute, "how long to wait for the machine-wide cluster lock")
	_ = fs.Parse(os.Args[2:])

	switch os.Args[1] {
	case "build":
		d, err := cluster.BuildLauncher(ctx, *version, "")
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println("launcher for OpenSearch", *version, "in", d)
		if *secure {
			d, err := cluster.FetchSecurityPlugin(ctx, *version)
			if err != nil {
				log.Fatal(err)
			}
			fmt.Println("security plugin for OpenSearch", *version, "in", d)
		}
	case "check":
		msg, err := cluster.CheckMachineLock()
		if err != nil {
			log.Fatalf("osrcluster check: %v", err)
		}
		fmt.Println(msg)
	case "java":
		java, major, err := cluster.JavaFor(*version)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("OpenSearch %s runs on %s (Java %d)\n", *version, java, major)
	case "up":
		if *dir == "" {
			log.Fatal("osrcluster up: -dir is required")
		}
		if _, err := cluster.ReadState(*dir); err == nil {
			log.Fatalf("osrcluster up: a cluster is already recorded in %s: run `osrcluster down -dir %s` first", *dir, *dir)
		}
		var zs []string
		if *zones != "" {
			zs = strings.Split(*zones, ",")
		}
		var sec *cluster.Security
		if *secure {
			sec = &cluster.Security{}
			versionSet := false
			fs.Visit(func(f *flag.Flag) { versionSet = versionSet || f.Name == "version" })
			if !versionSet {
				*version = cluster.SecureVersion()
			}
		}
		wctx, cancel := context.WithTimeout(ctx, *wait)
		defer cancel()
		c, err := cluster.StartProcess(wctx, cluster.Options{
			Nodes: *nodes, Version: *version, Heap: *heap, WriteQueueSize: *writeQueue,
			WriteThreads: *writeThreads, Zones: zs, Dir: *dir, Detached: true, Logf: log.Printf, Security: sec,
		})
		if err != nil {
			log.Fatal(err)
		}
		for i := 0; i < c.Len(); i++ {
			fmt.Printf("%s %s (transport %s, pid %d, log %s)\n", c.NodeName(i), c.Addr(i), c.TransportAddr(i), c.PID(i), c.LogPath(i))
		}
		fmt.Printf("OPENSEARCH_URLS=%s\n", strings.Join(c.Addrs(), ","))
		if s := c.Security(); s != nil {
			fmt.Printf("OPENSEARCH_USER=%s\nOPENSEARCH_PASSWORD=%s\nOPENSEARCH_CA=%s\n", s.AdminUser, s.AdminPassword, s.CAFile)
			fmt.Printf("OPENSEARCH_ADMIN_CERT=%s\nOPENSEARCH_ADMIN_KEY=%s\n", s.AdminCertFile, s.AdminKeyFile)
		}
	case "down":
		if *dir == "" {
			log.Fatal("osrcluster down: -dir is required")
		}
		if err := cluster.StopDir(*dir, 20*time.Second); err != nil {
			log.Fatal(err)
		}
		fmt.Println("stopped the cluster in", *dir)
	default:
		usage()
	}
}

func usage() {
	fmt.Fprintln(os.Stderr, "usage: osrcluster up|down|build|java|check [flags] (see go doc)")
	os.Exit(2)
}
