//go:generate ../.tools/mdatagen metadata.yaml

// Package collectiveattrprocessor attributes hidden GPU memory spikes of
// distributed training jobs to NCCL collective communication, inside an
// OpenTelemetry Collector pipeline (processor type `collectiveattr`).
//
// The component is a thin adapter: internal/ingest turns OTLP items into
// engine records, internal/store buffers them per job and rank, the
// attribution and phase packages decide, internal/output shapes the
// results. The configuration and what the processor decides where its
// contract leaves room (bounds, evaluation, emission, shutdown) are in
// README.md next to this file.
//
// Citations: "contract §N" refers to docs/processor-contract.md;
// "reference §N", bare §N, the steps S0–S12 and the releases R1/R2 to
// docs/reference-semantics.md.
package collectiveattrprocessor // import "github.com/collectiveattr/collectiveattr/collectiveattrprocessor"
