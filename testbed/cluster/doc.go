// Package cluster runs real OpenSearch clusters on 127.0.0.1 for integration
// tests and tools: one JVM per node, started by the launcher in
// testbed/opensearch (a Maven project assembling the server and its Netty4
// module from Maven Central).
//
// Start(t, Options{}) builds the launcher once per source+version+JDK (cached
// under CacheDir, guarded by a file lock), takes the machine-wide lock at
// MachineLockPath (only one real cluster runs at a time; the nodes inherit it),
// starts the nodes and waits for green health. Kill crashes a node (SIGKILL),
// Stop stops it gracefully, Restart brings it back with the same ports and
// data. Nothing outlives the test: each node has its own process group that
// Close kills, and the launcher exits by itself when its stdin (a pipe from
// this process) closes or its parent process changes.
//
// Java is required: without a JDK, Start fails the test (never skips).
// OpenSearch 2.x runs on Java 17; 3.x needs Java 21+ (JAVA_HOME, or the
// newest Java 21+ JDK installed in the system's JVM directory).
// $OSR_OPENSEARCH_VERSION changes the default version.
package cluster
