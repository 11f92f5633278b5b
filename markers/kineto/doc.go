// Package kineto reads PyTorch profiler traces (the Chrome-trace JSON that
// torch.profiler's export_chrome_trace and tensorboard_trace_handler write
// through Kineto) into collective markers, phases and allocator samples of
// the trace's rank (docs/torch-sources.md).
//
// What it reads:
//
//   - record_param_comms CPU ops and NCCL kernels: a marker per collective,
//     timed by its kernels when the trace has them (GPU execution, on the
//     host clock as Kineto converts it) and by the CPU op otherwise, with
//     identity (process-group name and Seq) where the trace has both;
//   - ProfilerStep#N and record_function ranges (user annotations): phases;
//   - [memory] instant events of CUDA devices: the allocator's Total
//     Reserved and Total Allocated bytes;
//   - distributedInfo.rank: the rank.
//
// Times are ts (µs, written "µs.ns") after baseTimeNanoseconds; traces
// without it (older Kineto) hold absolute µs. The legacy format of
// PyTorch builds without Kineto (a bare JSON array, times from the
// profiler's start) is read where its times are absolute, as bare markers.
//
// The package imports nothing from the OpenTelemetry Collector.
package kineto
