package otelv1

import (
	"testing"

	"github.com/opensearchrouted/opensearchrouted/testbed/cluster"
)

// TestRealClusterTemplates proves the templates on real OpenSearch 2.19.6
// and 3.9.0 (one single-node cluster each): every span document the
// encoder writes, hostile ones included, is taken and reads back exactly;
// Trace Analytics' kinds of queries find them; edges are idempotent;
// Data Prepper's mappings as they are refuse what the template's additions
// let through. It
// needs Java: without it the test fails (testbed/cluster never skips).
func TestRealClusterTemplates(t *testing.T) {
	for _, version := range []string{"2.19.6", "3.9.0"} {
		t.Run(version, func(t *testing.T) {
			c := cluster.Start(t, cluster.Options{Nodes: 1, Version: version})
			acceptance(t, c.Addr(0))
			traceAnalyticsQueries(t, c.Addr(0))
			refusedWithoutAdditions(t, c.Addr(0))
		})
	}
}
