// Package markers holds what the readers of PyTorch's collective records
// (markers/kineto: profiler traces; markers/flightrecorder: Flight Recorder
// dumps) share: one collective op of one rank as a source saw it (Marker),
// PyTorch's collective names normalised to the operation names of
// collective identity, and the stormlog marker events a mode reads.
//
// The package imports nothing from the OpenTelemetry Collector.
package markers
