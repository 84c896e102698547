package metadata

import (
	"errors"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/otel/metric"
)

// Meter returns the receiver's meter.
func Meter(settings component.TelemetrySettings) metric.Meter {
	return settings.MeterProvider.Meter(ScopeName)
}

// TelemetryBuilder holds every instrument of the receiver's own telemetry.
// The asynchronous ones (the paginator counters) are observed by the
// callback given to RegisterCallback.
type TelemetryBuilder struct {
	meter metric.Meter

	OtelcolOpensearchbackfillPitsOpened       metric.Int64ObservableCounter
	OtelcolOpensearchbackfillPitsRecreated    metric.Int64ObservableCounter
	OtelcolOpensearchbackfillPitsClosed       metric.Int64ObservableCounter
	OtelcolOpensearchbackfillHits             metric.Int64ObservableCounter
	OtelcolOpensearchbackfillHitsDeduplicated metric.Int64ObservableCounter
	OtelcolOpensearchbackfillHitsOutOfOrder   metric.Int64ObservableCounter
	OtelcolOpensearchbackfillPages            metric.Int64ObservableCounter
	OtelcolOpensearchbackfillSearchRetries    metric.Int64ObservableCounter
	OtelcolOpensearchbackfillShardFailures    metric.Int64ObservableCounter
	OtelcolOpensearchbackfillDocumentsSkipped metric.Int64Counter
	OtelcolOpensearchbackfillConsumerRetries  metric.Int64Counter
	OtelcolOpensearchbackfillCheckpoints      metric.Int64Counter
}

// NewTelemetryBuilder creates every instrument.
func NewTelemetryBuilder(settings component.TelemetrySettings) (*TelemetryBuilder, error) {
	b := &TelemetryBuilder{meter: Meter(settings)}
	var err, errs error
	obs := func(name, desc, unit string) metric.Int64ObservableCounter {
		c, err := b.meter.Int64ObservableCounter(name, metric.WithDescription(desc), metric.WithUnit(unit))
		errs = errors.Join(errs, err)
		return c
	}
	b.OtelcolOpensearchbackfillPitsOpened = obs("otelcol.opensearchbackfill.pits.opened",
		"Points in time opened, first ones and recreations.", "{pit}")
	b.OtelcolOpensearchbackfillPitsRecreated = obs("otelcol.opensearchbackfill.pits.recreated",
		"Points in time recreated after their search contexts were lost (snapshot breaks).", "{pit}")
	b.OtelcolOpensearchbackfillPitsClosed = obs("otelcol.opensearchbackfill.pits.closed",
		"Points in time deleted (or found already gone).", "{pit}")
	b.OtelcolOpensearchbackfillHits = obs("otelcol.opensearchbackfill.hits",
		"Search hits emitted by the paginators (after deduplication).", "{document}")
	b.OtelcolOpensearchbackfillHitsDeduplicated = obs("otelcol.opensearchbackfill.hits.deduplicated",
		"Hits skipped after a snapshot break because they had already been emitted.", "{document}")
	b.OtelcolOpensearchbackfillHitsOutOfOrder = obs("otelcol.opensearchbackfill.hits.out_of_order",
		"Hits emitted again after a snapshot break because their version changed.", "{document}")
	b.OtelcolOpensearchbackfillPages = obs("otelcol.opensearchbackfill.pages",
		"Pages emitted by the paginators.", "{page}")
	b.OtelcolOpensearchbackfillSearchRetries = obs("otelcol.opensearchbackfill.search.retries",
		"Search, open or delete requests retried after a transport error, 429 or 5xx.", "{request}")
	b.OtelcolOpensearchbackfillShardFailures = obs("otelcol.opensearchbackfill.shard_failures",
		"Failed shards in search responses, by the server's reason type.", "{shard}")
	b.OtelcolOpensearchbackfillDocumentsSkipped, err = b.meter.Int64Counter("otelcol.opensearchbackfill.documents.skipped",
		metric.WithDescription("Documents read but not delivered, by reason."), metric.WithUnit("{document}"))
	errs = errors.Join(errs, err)
	b.OtelcolOpensearchbackfillConsumerRetries, err = b.meter.Int64Counter("otelcol.opensearchbackfill.consumer.retries",
		metric.WithDescription("Pages handed to the pipeline again after it returned a retryable error."), metric.WithUnit("{page}"))
	errs = errors.Join(errs, err)
	b.OtelcolOpensearchbackfillCheckpoints, err = b.meter.Int64Counter("otelcol.opensearchbackfill.checkpoints",
		metric.WithDescription("Slice cursors written to the storage extension, by outcome."), metric.WithUnit("{checkpoint}"))
	errs = errors.Join(errs, err)
	return b, errs
}

// RegisterCallback registers cb to observe every asynchronous instrument.
func (b *TelemetryBuilder) RegisterCallback(cb metric.Callback) (metric.Registration, error) {
	return b.meter.RegisterCallback(cb,
		b.OtelcolOpensearchbackfillPitsOpened, b.OtelcolOpensearchbackfillPitsRecreated,
		b.OtelcolOpensearchbackfillPitsClosed, b.OtelcolOpensearchbackfillHits,
		b.OtelcolOpensearchbackfillHitsDeduplicated, b.OtelcolOpensearchbackfillHitsOutOfOrder,
		b.OtelcolOpensearchbackfillPages, b.OtelcolOpensearchbackfillSearchRetries,
		b.OtelcolOpensearchbackfillShardFailures)
}
