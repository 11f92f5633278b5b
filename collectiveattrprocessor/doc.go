//go:generate ../.tools/mdatagen metadata.yaml

// Package collectiveattrprocessor attributes hidden GPU memory spikes of
// distributed training jobs to NCCL collective communication, inside an
// OpenTelemetry Collector pipeline.
package collectiveattrprocessor // import "github.com/collectiveattr/collectiveattr/collectiveattrprocessor"
