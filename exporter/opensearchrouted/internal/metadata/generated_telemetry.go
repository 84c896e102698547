package metadata

import (
	"errors"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/metric"
)

// Meter returns the exporter's meter.
func Meter(settings component.TelemetrySettings) metric.Meter {
	return settings.MeterProvider.Meter(ScopeName)
}

// TelemetryBuilder holds every instrument of the exporter's own telemetry.
type TelemetryBuilder struct {
	meter metric.Meter

	// OtelcolOpensearchroutedDocuments counts documents by final outcome.
	OtelcolOpensearchroutedDocuments metric.Int64Counter
	// OtelcolOpensearchroutedDocumentsFallback counts records written
	// otherwise than usual.
	OtelcolOpensearchroutedDocumentsFallback metric.Int64Counter
	// OtelcolOpensearchroutedDocumentsSteered counts documents given a
	// steered id.
	OtelcolOpensearchroutedDocumentsSteered metric.Int64Counter
	// OtelcolOpensearchroutedSteeringAtRisk counts content-id records whose
	// steering another attempt could decide otherwise.
	OtelcolOpensearchroutedSteeringAtRisk metric.Int64Counter
	// OtelcolOpensearchroutedDocumentsRouted counts documents by path.
	OtelcolOpensearchroutedDocumentsRouted metric.Int64Counter
	// OtelcolOpensearchroutedBulkRequests counts sub-bulk requests.
	OtelcolOpensearchroutedBulkRequests metric.Int64Counter
	// OtelcolOpensearchroutedBulkRequestDuration is sub-bulk latency.
	OtelcolOpensearchroutedBulkRequestDuration metric.Float64Histogram
	// OtelcolOpensearchroutedBulkRequestBytes counts body bytes sent.
	OtelcolOpensearchroutedBulkRequestBytes metric.Int64Counter
	// OtelcolOpensearchroutedNodeWindow is each node's congestion window.
	OtelcolOpensearchroutedNodeWindow metric.Int64ObservableGauge
	// OtelcolOpensearchroutedNodeInflight is each node's requests in flight.
	OtelcolOpensearchroutedNodeInflight metric.Int64ObservableGauge
	// OtelcolOpensearchroutedNodeState is each node's health.
	OtelcolOpensearchroutedNodeState metric.Int64ObservableGauge
	// OtelcolOpensearchroutedTopologyRefreshes counts topology refreshes.
	OtelcolOpensearchroutedTopologyRefreshes metric.Int64Counter
	// OtelcolOpensearchroutedTraceGroups counts otel-v1 spans by how they
	// got their trace group.
	OtelcolOpensearchroutedTraceGroups metric.Int64Counter
	// OtelcolOpensearchroutedServiceMapEdges counts service map edges.
	OtelcolOpensearchroutedServiceMapEdges metric.Int64Counter
}

// NewTelemetryBuilder creates every instrument.
func NewTelemetryBuilder(settings component.TelemetrySettings) (*TelemetryBuilder, error) {
	b := &TelemetryBuilder{meter: Meter(settings)}
	var err, errs error
	b.OtelcolOpensearchroutedDocuments, err = b.meter.Int64Counter(
		"otelcol.opensearchrouted.documents",
		metric.WithDescription("Documents by final outcome of an export call: indexed, duplicate (already stored by an earlier attempt), dead_lettered (refused by the server, written to the dead-letter index), retried (handed back to the collector for retry), failed (permanent: neither stored nor dead-lettered)."),
		metric.WithUnit("{document}"),
	)
	errs = errors.Join(errs, err)
	b.OtelcolOpensearchroutedDocumentsFallback, err = b.meter.Int64Counter(
		"otelcol.opensearchrouted.documents.fallback",
		metric.WithDescription("Records written otherwise than usual, by why: a content id instead of an invalid one, the unmapped shape after a refusal for the document's shape, no routing value instead of an invalid one, or the dead-letter index after a refusal for the routing."),
		metric.WithUnit("{document}"),
	)
	errs = errors.Join(errs, err)
	b.OtelcolOpensearchroutedDocumentsSteered, err = b.meter.Int64Counter(
		"otelcol.opensearchrouted.documents.steered",
		metric.WithDescription("Documents given a steered id (their content id and a salt) at encoding, so that they land in a shard without a copy on a degraded node; counted at every attempt."),
		metric.WithUnit("{document}"),
	)
	errs = errors.Join(errs, err)
	b.OtelcolOpensearchroutedSteeringAtRisk, err = b.meter.Int64Counter(
		"otelcol.opensearchrouted.steering.at_risk",
		metric.WithDescription("Content-id records encoded while steering is on whose id another attempt could choose otherwise (so a resend could store them twice), by risk: future_dated (timestamp after now), before_start (timestamp before the exporter started: an earlier instance may have steered them), forgotten (timestamp where the steering history was forgotten); counted at every attempt. An upper bound: most of them were not steered and never will be."),
		metric.WithUnit("{document}"),
	)
	errs = errors.Join(errs, err)
	b.OtelcolOpensearchroutedDocumentsRouted, err = b.meter.Int64Counter(
		"otelcol.opensearchrouted.documents.routed",
		metric.WithDescription("Documents sent straight to their primary's node (path direct) or to a chosen node (path unrouted, with the reason)."),
		metric.WithUnit("{document}"),
	)
	errs = errors.Join(errs, err)
	b.OtelcolOpensearchroutedBulkRequests, err = b.meter.Int64Counter(
		"otelcol.opensearchrouted.bulk_requests",
		metric.WithDescription("Per-node sub-bulk requests by outcome."),
		metric.WithUnit("{request}"),
	)
	errs = errors.Join(errs, err)
	b.OtelcolOpensearchroutedBulkRequestDuration, err = b.meter.Float64Histogram(
		"otelcol.opensearchrouted.bulk_request.duration",
		metric.WithDescription("Duration of per-node sub-bulk requests, from send to parsed response."),
		metric.WithUnit("s"),
		metric.WithExplicitBucketBoundaries(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
	)
	errs = errors.Join(errs, err)
	b.OtelcolOpensearchroutedBulkRequestBytes, err = b.meter.Int64Counter(
		"otelcol.opensearchrouted.bulk_request.bytes",
		metric.WithDescription("Uncompressed body bytes of per-node sub-bulk requests."),
		metric.WithUnit("By"),
	)
	errs = errors.Join(errs, err)
	b.OtelcolOpensearchroutedNodeWindow, err = b.meter.Int64ObservableGauge(
		"otelcol.opensearchrouted.node.window",
		metric.WithDescription("Congestion window of each node: the most write requests the exporter keeps in flight to it."),
		metric.WithUnit("{request}"),
	)
	errs = errors.Join(errs, err)
	b.OtelcolOpensearchroutedNodeInflight, err = b.meter.Int64ObservableGauge(
		"otelcol.opensearchrouted.node.inflight",
		metric.WithDescription("Write requests in flight to each node."),
		metric.WithUnit("{request}"),
	)
	errs = errors.Join(errs, err)
	b.OtelcolOpensearchroutedNodeState, err = b.meter.Int64ObservableGauge(
		"otelcol.opensearchrouted.node.state",
		metric.WithDescription("Health of each node: 0 alive, 1 overloaded, 2 dead, 3 degraded."),
		metric.WithUnit("1"),
	)
	errs = errors.Join(errs, err)
	b.OtelcolOpensearchroutedTopologyRefreshes, err = b.meter.Int64Counter(
		"otelcol.opensearchrouted.topology.refreshes",
		metric.WithDescription("Topology refreshes by trigger and outcome."),
		metric.WithUnit("{refresh}"),
	)
	errs = errors.Join(errs, err)
	b.OtelcolOpensearchroutedTraceGroups, err = b.meter.Int64Counter(
		"otelcol.opensearchrouted.trace_groups",
		metric.WithDescription("otel-v1 spans stored, by how they got their trace group: inline (root in the same call), cache (root in an earlier call), fixed_up (stored without, updated once the root came), unresolved (stored without and never updated: no root within the ttl, more waiting than max_pending, or the update failed)."),
		metric.WithUnit("{span}"),
	)
	errs = errors.Join(errs, err)
	b.OtelcolOpensearchroutedServiceMapEdges, err = b.meter.Int64Counter(
		"otelcol.opensearchrouted.service_map.edges",
		metric.WithDescription("otel-v1 service map edges by outcome: indexed, duplicate (stored already), failed (refused, or still failing after fixup_attempts passes), dropped (more pending than the bound)."),
		metric.WithUnit("{edge}"),
	)
	errs = errors.Join(errs, err)
	return b, errs
}

// RegisterCallback registers cb to observe the node gauges.
func (b *TelemetryBuilder) RegisterCallback(cb metric.Callback) (metric.Registration, error) {
	return b.meter.RegisterCallback(cb, b.OtelcolOpensearchroutedNodeWindow, b.OtelcolOpensearchroutedNodeInflight, b.OtelcolOpensearchroutedNodeState)
}
