package main

import "runtime/debug"

// heldHeapGCPercent is the CLI's GOGC when the environment sets none. The
// CLI holds what it reads until the run ends (a time and a gap per sample:
// docs/sizing.md § The CLI), so its live heap only grows, and at Go's
// default of 100 the heap reaches up to twice what is held before it is
// collected. Nearly all of it is columns without pointers, which a
// collection does not scan, so collecting four times as often costs little
// CPU and cuts the peak resident memory by a fifth on a 2 048-rank job.
const heldHeapGCPercent = 25

// gcFloorBytes is the least heap the collector's goal is counted from.
// What a collection scans is the ranks' buffers (a few objects with
// pointers per rank), not the columns: on a small heap of many ranks, at
// 25 % the collector ran every few MB allocated and its work per record
// grew with the ranks (measured in docs/sizing.md § The CLI). With this
// floor a collection waits for at least a quarter of it to be allocated;
// on the large heaps the percentage is for, it changes nothing.
const gcFloorBytes = 64 << 20

// gcFloor is gcFloorBytes of heap the CLI never writes or reads: the
// collector counts it in the heap it measures its goal from, but it holds
// no pointers (a collection does not scan it) and its pages, never
// touched, are never resident.
var gcFloor []byte

// setGCPercent sets heldHeapGCPercent, and the floor, unless
// getenv("GOGC") chooses.
func setGCPercent(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(heldHeapGCPercent)
		gcFloor = make([]byte, gcFloorBytes)
	}
}
