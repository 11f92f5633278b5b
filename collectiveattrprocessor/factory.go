package collectiveattrprocessor // import "github.com/collectiveattr/collectiveattr/collectiveattrprocessor"

import (
	"context"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/processor"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/metadata"
)

// NewFactory returns the factory of the collectiveattr processor.
func NewFactory() processor.Factory {
	return processor.NewFactory(
		metadata.Type,
		createDefaultConfig,
		processor.WithTraces(createTraces, metadata.TracesStability),
		processor.WithMetrics(createMetrics, metadata.MetricsStability),
		processor.WithLogs(createLogs, metadata.LogsStability),
	)
}

func createTraces(_ context.Context, set processor.Settings, cfg component.Config, next consumer.Traces) (processor.Traces, error) {
	h, err := acquireCore(cfg.(*Config), set, defaultClock())
	if err != nil {
		return nil, err
	}
	return newTracesProcessor(h, next), nil
}

func createMetrics(_ context.Context, set processor.Settings, cfg component.Config, next consumer.Metrics) (processor.Metrics, error) {
	h, err := acquireCore(cfg.(*Config), set, defaultClock())
	if err != nil {
		return nil, err
	}
	return newMetricsProcessor(h, next), nil
}

func createLogs(_ context.Context, set processor.Settings, cfg component.Config, next consumer.Logs) (processor.Logs, error) {
	h, err := acquireCore(cfg.(*Config), set, defaultClock())
	if err != nil {
		return nil, err
	}
	return newLogsProcessor(h, next), nil
}
