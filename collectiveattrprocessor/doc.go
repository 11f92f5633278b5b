//go:generate ../.tools/mdatagen metadata.yaml

// Package collectiveattrprocessor attributes hidden GPU memory spikes of
// distributed training jobs to NCCL collective communication, inside an
// OpenTelemetry Collector pipeline (processor type `collectiveattr`).
//
// The component is a thin adapter: internal/ingest turns OTLP items into
// engine records, internal/store buffers them per job and rank, the
// attribution and phase packages decide, internal/output shapes the
// results. What this package decides, where the contract leaves room:
//
//   - One state per component ID. Traces, metrics and logs pipelines naming
//     the same `collectiveattr/<name>` share one core, held by the factory.
//     Each processor is built with processorhelper. Results go to every
//     signal that has a pipeline (result spans, result metrics, result log
//     records); a component named in two pipelines of the same signal merges
//     their inputs and reports each result once, to the first of them.
//   - Pass-through. Each batch is read into the buffers first and then handed,
//     unchanged, to the next consumer, whose error is returned. Reading comes
//     first because a batch belongs to the next consumer once handed on.
//   - Bounds. A record older than the job's newest event minus `window` is
//     skipped as stale; a new job beyond `limits.max_jobs` or a new rank beyond
//     `limits.max_ranks_per_job` is skipped as over_limit; a rank at
//     `limits.max_events_per_rank` (samples, markers, phase boundaries and
//     other stormlog records together) drops its oldest entry. Evictions are
//     counted by bound (`window`, `max_events_per_rank`). Skipped items still
//     pass through. Entries that fall out of the window are dropped from a
//     rank once they are window/32 behind it (a run at a time, cheaper than
//     one per record; checked once per batch of a rank's samples or marker
//     spans) and from every rank at each evaluation, which sees exactly the
//     window; between ticks the buffered-events gauge may count up to ~3%
//     more than the window holds.
//   - Evaluation. Every `evaluation_interval` each job with new data is
//     evaluated over its buffers (with `emit: on_job_end`, which emits nothing
//     before the job ends, only jobs that end are evaluated). A job idle for
//     `job_idle_timeout` (wall clock) is evaluated a last time, emitted in
//     full and forgotten, in both modes. Shutdown does the same for every job.
//     The buffers' lock is held only while a job is copied out, never while
//     the attribution runs or results are emitted.
//   - Interval identity (`emit: on_settle`). A result is emitted once the
//     job's newest event is more than `settle_delay` past its end. Once a rank
//     has emitted an interval ending at E, a later result of that rank that
//     starts at or before E is the same interval, grown or re-scored by newer
//     data, and is never emitted again (the reference merges touching
//     intervals the same way). Results may therefore differ from a batch run
//     on the whole job; `emit: on_job_end` gives exactly the batch result.
//   - Stormlog records are buffered the way the reference reads them: a usable
//     sample feeds the samples, any record whose text matches a collective
//     token is a marker, phase boundaries feed the phase index, and every
//     record counts for the trace start; so a job fed only stormlog records
//     is attributed exactly as stormlog attributes its events. A record's job
//     is its job_id, else its session_id (contract §3.4).
//   - Metrics and spans. Metrics-derived samples have no stormlog session: the
//     job id stands in, which is also the session of phase spans from traces,
//     so traces' phase spans give those spikes their phase. The expected world
//     size is the largest declared one, else the number of ranks seen.
//   - Shutdown. The first pipeline to shut down evaluates every job and emits
//     to every pipeline still running; later ones flush what arrived since.
//   - Emission. Result batches are delivered off the evaluation goroutine,
//     one bounded queue per signal, each send with a deadline
//     (emit_timeout); shutdown waits for the downstream at most emit_timeout
//     in all. A batch refused, timed out, finding its queue full or still
//     pending at that deadline is logged and counted
//     (otelcol_processor_collectiveattr_emit_failures, by reason); it is not
//     an error of Shutdown.
//   - gpu.memory.hidden reports device used − allocator reserved (signed) of
//     every sample since the previous tick, at most 65 536 points per tick
//     (the rest counted in hidden_points_dropped).
//   - Skipped items are counted by signal and reason and logged at most once
//     per reason per minute, with the number suppressed since.
package collectiveattrprocessor // import "github.com/collectiveattr/collectiveattr/collectiveattrprocessor"
