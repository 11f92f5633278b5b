// Package flightrecorder reads PyTorch Flight Recorder dumps in their JSON
// form (torch._C._distributed_c10d._dump_nccl_trace_json, or the HTTP
// handler) into collective markers with identity (docs/torch-sources.md).
//
// A dump is one rank's ring of recent collectives: each entry names its
// process group, its collective_seq_id (the group's counter, equal on all
// members for one op), the op and sizes, with weak timing: when it was
// enqueued (time_created_ns), and when the watchdog saw it start and
// complete (time_discovered_*_ns, late by up to its polling interval).
// Markers read from it are therefore approximate.
//
// The dumps NCCL's process group writes on a timeout are pickle, not
// JSON; Read recognises them and says so.
//
// The package imports nothing from the OpenTelemetry Collector.
package flightrecorder
