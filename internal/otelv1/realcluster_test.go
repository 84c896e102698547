package otelv1

import (
	"testing"

	"github.com/opensearchrouted/opensearchrouted/testbed/cluster"
)

// TestRealClusterTemplates proves the templates on real OpenSearch (one
// single-node cluster of cluster.DefaultVersion(): 2.19.6 in make test,
// 3.9.0 in .ci/run's 3.x pass): every span document the encoder writes,
// hostile ones included, is taken and reads back exactly; Trace
// Analytics' kinds of queries find them; edges are idempotent; Data
// Prepper's mappings as they are refuse what the template's additions let
// through. It needs Java: without it the test fails (testbed/cluster never
// skips).
func TestRealClusterTemplates(t *testing.T) {
	c := cluster.Start(t, cluster.Options{Nodes: 1})
	acceptance(t, c.Addr(0))
	traceAnalyticsQueries(t, c.Addr(0))
	refusedWithoutAdditions(t, c.Addr(0))
}
