package flightrecorder

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/collectiveattr/collectiveattr/markers"
)

// Dump is what one Flight Recorder dump says.
type Dump struct {
	// Version is the dump's version ("2.10").
	Version string
	// Markers are the entries that ran (state started or completed), in
	// dump order, approximate, with identity where the entry has it.
	Markers []markers.Marker
	Stats   Stats
}

// Stats counts a dump's entries.
type Stats struct {
	Entries int
	// Scheduled counts entries that had not started when the dump was
	// taken: no marker.
	Scheduled int
	// Skipped counts entries with unusable fields; FirstSkip says why.
	Skipped   int
	FirstSkip string
}

// ErrPickle: the file is a pickle, Flight Recorder's default dump format.
var ErrPickle = errors.New("a pickle (Flight Recorder's default dump format), not JSON: dump JSON with torch._C._distributed_c10d._dump_nccl_trace_json(), or convert the pickle (docs/torch-sources.md)")

// SyntaxError is a dump that is not well-formed JSON.
type SyntaxError struct {
	Offset int64
	Err    error
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("malformed JSON at byte %d: %v", e.Offset, e.Err)
}
func (e *SyntaxError) Unwrap() error { return e.Err }

type pgConfig struct {
	Name  string `json:"name"`
	Desc  string `json:"desc"`
	Ranks string `json:"ranks"`
}

type dumpJSON struct {
	Version  string              `json:"version"`
	PGConfig map[string]pgConfig `json:"pg_config"`
	Entries  []json.RawMessage   `json:"entries"`
}

type entry struct {
	ProcessGroup    []string  `json:"process_group"`
	CollectiveSeqID *int64    `json:"collective_seq_id"`
	ProfilingName   string    `json:"profiling_name"`
	TimeCreatedNs   int64     `json:"time_created_ns"`
	DurationMs      *float64  `json:"duration_ms"`
	InputSizes      [][]int64 `json:"input_sizes"`
	OutputSizes     [][]int64 `json:"output_sizes"`
	InputDtypes     []string  `json:"input_dtypes"`
	State           string    `json:"state"`
	StartedNs       *int64    `json:"time_discovered_started_ns"`
	CompletedNs     *int64    `json:"time_discovered_completed_ns"`
	IsP2P           bool      `json:"is_p2p"`
}

// Read reads one dump. A pickle is ErrPickle, malformed JSON a
// *SyntaxError; an entry with fields of the wrong type is skipped and
// counted.
func Read(r io.Reader) (*Dump, error) {
	br := bufio.NewReader(r)
	if b, err := br.Peek(1); err == nil && b[0] == 0x80 {
		return nil, ErrPickle // pickle protocol 2 and later start with PROTO
	}
	dec := json.NewDecoder(br)
	dec.UseNumber()
	var raw dumpJSON
	if err := dec.Decode(&raw); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, fmt.Errorf("%s is not of a Flight Recorder dump's type: %v", te.Field, err)
		}
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return nil, &SyntaxError{Offset: dec.InputOffset(), Err: err}
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, &SyntaxError{Offset: dec.InputOffset(), Err: errors.New("unexpected data after the dump")}
	}
	d := &Dump{Version: raw.Version}
	for i, text := range raw.Entries {
		d.Stats.Entries++
		var e entry
		if err := json.Unmarshal(text, &e); err != nil {
			d.skip(fmt.Sprintf("entry %d: %v", i, err))
			continue
		}
		m, ok, err := markerOf(&e, raw.PGConfig)
		switch {
		case err != nil:
			d.skip(fmt.Sprintf("entry %d: %v", i, err))
		case !ok:
			d.Stats.Scheduled++
		default:
			d.Markers = append(d.Markers, m)
		}
	}
	return d, nil
}

func (d *Dump) skip(why string) {
	if d.Stats.Skipped == 0 {
		d.Stats.FirstSkip = why
	}
	d.Stats.Skipped++
}

// markerOf is the marker of an entry that ran; ok is false for one that
// had not started.
func markerOf(e *entry, pgs map[string]pgConfig) (markers.Marker, bool, error) {
	if e.State == "scheduled" {
		return markers.Marker{}, false, nil
	}
	if e.ProfilingName == "" || e.TimeCreatedNs <= 0 {
		return markers.Marker{}, false, errors.New("profiling_name and time_created_ns are required")
	}
	op := markers.OpName(e.ProfilingName)
	m := markers.Marker{Op: op, Name: e.ProfilingName, Approximate: true}
	if len(e.ProcessGroup) > 0 {
		m.CommID = e.ProcessGroup[0]
	}
	if e.CollectiveSeqID != nil && *e.CollectiveSeqID >= 0 && !e.IsP2P && !markers.IsP2P(op) {
		m.Seq, m.HasSeq = *e.CollectiveSeqID, true
	}
	if pg, ok := pgs[m.CommID]; ok {
		m.Ranks = markers.ParseRanks(pg.Ranks)
		m.NRanks = int64(len(m.Ranks))
	}
	if len(e.InputDtypes) > 0 {
		size := markers.DTypeSize(e.InputDtypes[0])
		in, out := elements(e.InputSizes), elements(e.OutputSizes)
		n := in
		if out > 0 && (n == 0 || out < n) {
			n = out
		}
		if size > 0 && n > 0 && n <= math.MaxInt64/size {
			m.MessageBytes = n * size
		}
	}
	// The op ran after it was enqueued and had ended when the watchdog
	// saw it complete; GPU timing, when enabled, gives its duration.
	start := e.TimeCreatedNs
	if e.StartedNs != nil && *e.StartedNs > start {
		start = *e.StartedNs
	}
	end := start
	switch {
	case e.CompletedNs != nil && *e.CompletedNs > start:
		end = *e.CompletedNs
	case e.DurationMs != nil && *e.DurationMs > 0 && *e.DurationMs < 1e9:
		end = start + int64(*e.DurationMs*1e6)
	}
	m.StartNs, m.EndNs = start, end
	return m, true, nil
}

// elements is the number of elements of a dump's first tensor.
func elements(sizes [][]int64) int64 {
	if len(sizes) == 0 {
		return 0
	}
	n := int64(1)
	for _, d := range sizes[0] {
		if d < 0 || (d > 0 && n > math.MaxInt64/d) {
			return 0
		}
		n *= d
	}
	return n
}
