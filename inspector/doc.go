// Package inspector reads the per-operation records of NVIDIA's NCCL
// Inspector profiler plugin (format v4, docs/nccl-inspector.md), joins them
// to the training ranks that wrote them by (host, pid), and turns them into
// stormlog marker events for the attribution engine.
//
// The plugin writes one JSON object per line and per completed collective or
// P2P operation, one file per process, <dir>/<hostname>-pid<pid>.log. Its
// records know the communicator and the rank within it, not the job or the
// global rank: those come from the rank's own telemetry (Joiner).
//
// The package imports nothing from the OpenTelemetry Collector.
package inspector
