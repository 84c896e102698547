package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOptionsValidate(t *testing.T) {
	bad := []struct {
		name string
		o    Options
		want string
	}{
		{"too many nodes", Options{Nodes: 10}, "Options.Nodes"},
		{"negative nodes", Options{Nodes: -1}, "Options.Nodes"},
		{"per-node past nodes", Options{Nodes: 1, PerNode: make([]NodeOptions, 2)}, "PerNode"},
		{"negative queue", Options{WriteQueueSize: -1}, "WriteQueueSize"},
		{"heap unit", Options{Heap: "512"}, "Options.Heap"},
		{"heap tiny", Options{Heap: "64m"}, "Options.Heap"},
		{"detached without dir", Options{Detached: true}, "Options.Dir"},
		{"bad setting key", Options{Settings: map[string]string{"a=b": "c"}}, "bad key"},
		{"bad publish port", Options{PerNode: []NodeOptions{{HTTPPublishPort: 70000}}}, "PerNode[0]"},
		{"bad bound port", Options{PerNode: []NodeOptions{{}, {TransportPort: -1}}}, "PerNode[1]"},
	}
	for _, tc := range bad {
		err := tc.o.validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: validate() = %v, want an error naming %q", tc.name, err, tc.want)
		}
	}
	if err := (Options{}).validate(); err != nil {
		t.Errorf("zero Options: %v", err)
	}
	if n := (Options{}).nodes(); n != 3 {
		t.Errorf("default nodes = %d, want 3", n)
	}
}

func TestHeapBytes(t *testing.T) {
	for s, want := range map[string]int64{"512m": 512 << 20, "1g": 1 << 30, "2G": 2 << 30, "262144k": 256 << 20} {
		got, err := heapBytes(s)
		if err != nil || got != want {
			t.Errorf("heapBytes(%q) = %d, %v; want %d", s, got, err, want)
		}
	}
}

func TestNodeArgs(t *testing.T) {
	c := &Cluster{opts: Options{
		Zones: []string{"a", "b"}, ZoneAwareness: true, WriteQueueSize: 5,
		PerNode: []NodeOptions{{}, {WriteQueueSize: 1, HTTPPublishPort: 9999}},
	}}
	for i := 0; i < 3; i++ {
		c.nodes = append(c.nodes, &node{name: "node-" + string(rune('0'+i)), home: "/h", httpPort: 100 + i, transportPort: 200 + i})
	}
	a0 := strings.Join(c.nodeArgs(0), " ")
	a1 := strings.Join(c.nodeArgs(1), " ")
	a2 := strings.Join(c.nodeArgs(2), " ")
	for _, want := range []string{"--zone=a", "--awareness=zone", "--write-queue=5", "--seed-hosts=127.0.0.1:200,127.0.0.1:201,127.0.0.1:202",
		"--initial-managers=node-0,node-1,node-2", "--watch-parent=true"} {
		if !strings.Contains(a0, want) {
			t.Errorf("node 0 args %q lack %q", a0, want)
		}
	}
	for _, want := range []string{"--zone=b", "--write-queue=1", "--http-publish-port=9999"} {
		if !strings.Contains(a1, want) {
			t.Errorf("node 1 args %q lack %q", a1, want)
		}
	}
	if !strings.Contains(a2, "--zone=a") || strings.Contains(a2, "publish") {
		t.Errorf("node 2 args %q: want zone a and no publish port", a2)
	}
}

func TestSourceHashChangesWithSourceAndVersion(t *testing.T) {
	dir := t.TempDir()
	write := func(p, s string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("pom.xml", "<project/>")
	write("src/main/java/A.java", "class A {}")
	h1, err := sourceHash(dir, "2.19.6", "")
	if err != nil {
		t.Fatal(err)
	}
	write("target/classes/A.class", "ignored build output")
	if h, _ := sourceHash(dir, "2.19.6", ""); h != h1 {
		t.Errorf("build output changed the hash")
	}
	if h, _ := sourceHash(dir, "3.0.0", ""); h == h1 {
		t.Errorf("version did not change the hash")
	}
	write("src/main/java/A.java", "class A { int x; }")
	if h, _ := sourceHash(dir, "2.19.6", ""); h == h1 {
		t.Errorf("source change did not change the hash")
	}
}

func TestIsMajor3OrLater(t *testing.T) {
	for v, want := range map[string]bool{"2.19.6": false, "1.3.0": false, "3.0.0": true, "3.9.0": true, "": false} {
		if got := isMajor3OrLater(v); got != want {
			t.Errorf("isMajor3OrLater(%q) = %v", v, got)
		}
	}
}

func TestJavaMissingIsAClearError(t *testing.T) {
	t.Setenv("JAVA_HOME", t.TempDir())
	_, _, err := findJava("2.19.6", "")
	if err == nil || !strings.Contains(err.Error(), "JAVA_HOME") || !strings.Contains(err.Error(), "JDK") {
		t.Fatalf("findJava with an empty JAVA_HOME: %v", err)
	}
	t.Setenv("JAVA_HOME", "")
	t.Setenv("PATH", t.TempDir())
	_, _, err = findJava("2.19.6", "")
	if err == nil || !strings.Contains(err.Error(), "java not found") {
		t.Fatalf("findJava without java on PATH: %v", err)
	}
}

func TestNewestJDKReadsReleaseFiles(t *testing.T) {
	dir := t.TempDir()
	mk := func(name, release string, withJava bool) {
		home := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Join(home, "bin"), 0o755); err != nil {
			t.Fatal(err)
		}
		if release != "" {
			os.WriteFile(filepath.Join(home, "release"), []byte(release), 0o644)
		}
		if withJava {
			os.WriteFile(filepath.Join(home, "bin", "java"), []byte("#!/bin/sh\n"), 0o755)
		}
	}
	mk("java-17-openjdk-amd64", "IMPLEMENTOR=x\nJAVA_VERSION=\"17.0.15\"\n", true)
	mk("java-1.8.0", "JAVA_VERSION=\"1.8.0_402\"\n", true)
	mk("temurin-25-jdk-amd64", "JAVA_VERSION=\"25.0.3\"\n", true)
	mk("jdk-26-broken", "JAVA_VERSION=\"26\"\n", false) // no bin/java
	mk("no-release", "", true)
	if got, want := newestJDK(dir, 21), filepath.Join(dir, "temurin-25-jdk-amd64"); got != want {
		t.Errorf("newestJDK(21) = %q, want %q", got, want)
	}
	if got := newestJDK(dir, 27); got != "" {
		t.Errorf("newestJDK(27) = %q, want none", got)
	}
	if got := jdkMajor(filepath.Join(dir, "java-1.8.0")); got != 8 {
		t.Errorf("jdkMajor(1.8.0) = %d, want 8", got)
	}
	t.Setenv("JAVA_HOME", "")
	old := jvmDir
	jvmDir = dir
	defer func() { jvmDir = old }()
	java, home, err := findJava("3.9.0", "")
	if err != nil || home != filepath.Join(dir, "temurin-25-jdk-amd64") || java != filepath.Join(home, "bin", "java") {
		t.Errorf("findJava(3.9.0) = %q, %q, %v", java, home, err)
	}
}
