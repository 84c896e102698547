package opensearchrouted

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/opensearchrouted/opensearchrouted/internal/routing"
	"github.com/opensearchrouted/opensearchrouted/testbed/ossim"
)

// TestSteeringSkipsCustomRoutingEmulator: with a node degraded, content-id
// records that carry a routing value (routing_attribute) are never given a
// steered id (their routing, not the id, places them); the others of the
// same call are steered as usual. Every record stored once.
func TestSteeringSkipsCustomRoutingEmulator(t *testing.T) {
	sim := ossim.StartT(t, ossim.Options{Nodes: 6, NoHopLatency: true, DefaultShards: 6, DefaultReplicas: 1})
	const index = "steer-routed"
	cfg := testConfig(sim.Addrs())
	cfg.LogsIndex = index
	cfg.RoutingAttribute = "tenant"
	e, _, _ := degradedExporter(t, sim, cfg, signalLogs, index)
	ld := steerLogs(0, 600, time.Now())
	lrs := ld.ResourceLogs().At(0).ScopeLogs().At(0).LogRecords()
	for i := 0; i < lrs.Len(); i += 2 { // even seq: routed
		lrs.At(i).Attributes().PutStr("tenant", recordTenant(i))
	}
	if err := e.pushLogs(context.Background(), ld); err != nil {
		t.Fatal(err)
	}
	bySeq, ids := storedSeqs(t, sim.Addr(0), index)
	checkOnceIn(t, bySeq, 0, 600)
	steeredOdd := 0
	for id, seq := range ids {
		if strings.IndexByte(id, routing.SaltSep) < 0 || seq < 0 {
			continue
		}
		if seq%2 == 0 {
			t.Fatalf("record %d has a routing value and a steered id %s", seq, id)
		}
		steeredOdd++
	}
	if steeredOdd == 0 {
		t.Fatal("no record without a routing value was steered: the test proves nothing")
	}
}
