package telemetry

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// SinkManifest is the file that marks a stormlog sink directory.
const SinkManifest = "manifest.json"

// SinkSegments lists the segments of a stormlog sink directory (R2's
// append-only telemetry sink: a manifest.json and segment-*.jsonl files of
// records written with sorted keys) in the order they were written: by the
// number after "segment-", then by name. Each segment is read as a JSON
// Lines file (a truncated last line of a segment being written is dropped,
// as Stream does). A directory without a manifest, or whose manifest is not
// a JSON object, is an error: it is no sink directory.
func SinkSegments(dir string) ([]string, error) {
	manifest, err := os.ReadFile(filepath.Join(dir, SinkManifest))
	if err != nil {
		return nil, fmt.Errorf("%s is a directory but no stormlog sink directory: %w", dir, err)
	}
	var m map[string]any
	if err := json.Unmarshal(manifest, &m); err != nil || m == nil {
		return nil, fmt.Errorf("%s: not a JSON object", filepath.Join(dir, SinkManifest))
	}
	segments, err := filepath.Glob(filepath.Join(dir, "segment-*.jsonl"))
	if err != nil {
		return nil, err
	}
	slices.SortFunc(segments, func(a, b string) int {
		if c := cmp.Compare(segmentNumber(a), segmentNumber(b)); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return segments, nil
}

// segmentNumber is the number of segment-<n>.jsonl (-1 when the name has
// none), so that unpadded numbers sort as numbers.
func segmentNumber(path string) int64 {
	s := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(path), "segment-"), ".jsonl")
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return -1
	}
	return n
}
