package main

import (
	"context"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/service/telemetry"
)

// telemetryConfig is the demo collector's `service.telemetry`: only the log level.
type telemetryConfig struct {
	Logs struct {
		Level zapcore.Level `mapstructure:"level"`
	} `mapstructure:"logs"`
}

// demoTelemetryFactory is the demo collector's own telemetry: a console logger on stderr, as
// otelconftelemetry's default one, and no meter or tracer (the service's no-op defaults).
// otelconftelemetry would also compile the OTLP and Prometheus exporters of the collector's
// own metrics, cloud resource detectors and a Kubernetes client: about a quarter of the
// packages of a first `make demo`, for telemetry the demo does not read.
func demoTelemetryFactory() telemetry.Factory {
	return telemetry.NewFactory(
		func() component.Config {
			cfg := &telemetryConfig{}
			cfg.Logs.Level = zapcore.InfoLevel
			return cfg
		},
		telemetry.WithCreateLogger(createLogger),
	)
}

func createLogger(_ context.Context, set telemetry.LoggerSettings, cfg component.Config) (*zap.Logger, component.ShutdownFunc, error) {
	ec := zap.NewProductionEncoderConfig()
	ec.EncodeTime = zapcore.ISO8601TimeEncoder
	zc := zap.Config{
		Level:            zap.NewAtomicLevelAt(cfg.(*telemetryConfig).Logs.Level),
		Encoding:         "console",
		EncoderConfig:    ec,
		OutputPaths:      []string{"stderr"},
		ErrorOutputPaths: []string{"stderr"},
	}
	build := set.BuildZapLogger
	if build == nil {
		build = zap.Config.Build
	}
	logger, err := build(zc)
	if err != nil {
		return nil, nil, err
	}
	return logger, nil, nil
}
