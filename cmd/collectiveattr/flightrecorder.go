package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"
	"strconv"

	"github.com/collectiveattr/collectiveattr/markers"
	"github.com/collectiveattr/collectiveattr/markers/flightrecorder"
)

// dumpRank finds a dump's global rank at the end of its file name: the
// recorder writes <prefix><rank> (default /tmp/nccl_trace_rank_<rank>).
var dumpRank = regexp.MustCompile(`(\d+)(\.json)?(\.gz)?$`)

// loadFlightRecorder reads the dumps under paths (a directory: every file
// below it), one per rank, into each rank's markers (nil without paths).
func loadFlightRecorder(paths []string, stderr io.Writer) (map[int64][]markers.Marker, error) {
	if len(paths) == 0 {
		return nil, nil
	}
	files, err := inputFiles("--flight-recorder", paths, nil)
	if err != nil {
		return nil, err
	}
	byRank := map[int64][]markers.Marker{}
	seen := map[int64]string{}
	for _, name := range files {
		m := dumpRank.FindStringSubmatch(filepath.Base(name))
		if m == nil {
			return nil, fmt.Errorf("--flight-recorder: %s: the file name does not end with the rank (<prefix><rank>, as the recorder names its dumps)", name)
		}
		rank, _ := strconv.ParseInt(m[1], 10, 64)
		if prev, dup := seen[rank]; dup {
			return nil, fmt.Errorf("--flight-recorder: %s and %s are both dumps of rank %d", prev, name, rank)
		}
		seen[rank] = name
		f, err := openInput(name)
		if err != nil {
			return nil, fmt.Errorf("--flight-recorder: %w", err)
		}
		d, err := flightrecorder.Read(f)
		f.Close()
		var syntax *flightrecorder.SyntaxError
		switch {
		case errors.As(err, &syntax):
			return nil, fmt.Errorf("--flight-recorder: %s: line %d: %v", name, lineAt(name, syntax.Offset), syntax.Err)
		case err != nil:
			return nil, fmt.Errorf("--flight-recorder: %s: %w", name, err)
		}
		if d.Stats.Skipped > 0 {
			fmt.Fprintf(stderr, "collectiveattr: --flight-recorder: %s: %d entries skipped (first: %s)\n", name, d.Stats.Skipped, d.Stats.FirstSkip)
		}
		for i := range d.Markers {
			d.Markers[i].Rank = rank
		}
		byRank[rank] = d.Markers
	}
	return byRank, nil
}
