package opensearchbackfill

import (
	"context"
	"fmt"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/receiver"

	"github.com/opensearchrouted/opensearchrouted/receiver/opensearchbackfill/internal/metadata"
)

// NewFactory returns the receiver's factory.
func NewFactory() receiver.Factory {
	return receiver.NewFactory(
		metadata.Type,
		func() component.Config { return createDefaultConfig() },
		receiver.WithLogs(createLogs, metadata.LogsStability),
		receiver.WithTraces(createTraces, metadata.TracesStability),
	)
}

func createLogs(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Logs) (receiver.Logs, error) {
	c := cfg.(*Config)
	if c.Signal != SignalLogs {
		return nil, fmt.Errorf("signal: the receiver is configured for %s but is used in a logs pipeline", c.Signal)
	}
	r, err := newReceiver(c, set)
	if err != nil {
		return nil, err
	}
	r.logs = next
	return r, nil
}

func createTraces(_ context.Context, set receiver.Settings, cfg component.Config, next consumer.Traces) (receiver.Traces, error) {
	c := cfg.(*Config)
	if c.Signal != SignalTraces {
		return nil, fmt.Errorf("signal: the receiver is configured for %s but is used in a traces pipeline", c.Signal)
	}
	r, err := newReceiver(c, set)
	if err != nil {
		return nil, err
	}
	r.traces = next
	return r, nil
}
