package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/collectiveattr/collectiveattr/inspector"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// pathList is a flag that may be given more than once.
type pathList []string

func (p *pathList) String() string { return fmt.Sprint([]string(*p)) }

func (p *pathList) Set(v string) error {
	if v == "" {
		return errors.New("empty path")
	}
	*p = append(*p, v)
	return nil
}

// inspectorFiles expands each path: a file is taken as it is, a directory
// gives its *.log files (not recursive), each list sorted by name.
func inspectorFiles(paths []string) ([]string, error) {
	var files []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		logs, err := filepath.Glob(filepath.Join(p, "*.log"))
		if err != nil {
			return nil, err
		}
		slices.Sort(logs)
		files = append(files, logs...)
	}
	return files, nil
}

// addInspectorMarkers reads the NCCL Inspector files under paths, joins
// each record to the rank of events whose host and pid it names, and
// appends the record's marker events as markers gives them (the mode's
// conversion). The whole of events counts as one moment: a host and pid
// that events give to two ranks is ambiguous and its records stay out.
// What is not joined, and lines that do not parse, are counted on stderr.
func addInspectorMarkers(events []telemetry.Event, paths []string, markers inspector.MarkerFunc, stderr io.Writer) ([]telemetry.Event, error) {
	files, err := inspectorFiles(paths)
	if err != nil {
		return nil, fmt.Errorf("--nccl-inspector: %w", err)
	}
	joiner := inspector.NewJoiner(0, 0, func() time.Time { return time.Time{} })
	var last *telemetry.Event
	for i := range events {
		e := &events[i]
		// Records of one rank come in runs: learn each run once.
		if last != nil && e.Host == last.Host && e.PID == last.PID && e.JobID == last.JobID &&
			e.SessionID == last.SessionID && e.Rank == last.Rank && e.WorldSize == last.WorldSize {
			continue
		}
		joiner.LearnEvent(e)
		last = e
	}

	type joinedOp struct {
		op    inspector.Op
		owner inspector.Owner
	}
	var (
		joined                 []joinedOp
		members                inspector.Members
		unknown, ambiguous     int
		malformed, notOpRecord int
		firstBad               string
	)
	for _, name := range files {
		var rd inspector.Reader
		f, err := os.Open(name)
		if err != nil {
			return nil, fmt.Errorf("--nccl-inspector: %w", err)
		}
		err = rd.Read(f, func(op *inspector.Op) {
			owner, err := joiner.Join(op.Host, op.PID)
			var amb *inspector.AmbiguousError
			switch {
			case err == nil:
				joined = append(joined, joinedOp{op: *op, owner: owner})
				members.Learn(owner.Job(), op, owner.Rank)
			case errors.As(err, &amb):
				ambiguous++
			default:
				unknown++
			}
		})
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("--nccl-inspector: %s: %w", name, err)
		}
		malformed += rd.Stats.Malformed
		notOpRecord += rd.Stats.NotOpRecords
		if firstBad == "" && rd.FirstError != nil {
			firstBad = fmt.Sprintf("%s: %v", name, rd.FirstError)
		}
	}

	type commKey struct{ job, id string }
	commRanks := map[commKey][]int64{}
	for i := range joined {
		j := &joined[i]
		key := commKey{j.owner.Job(), j.op.CommID}
		ranks, ok := commRanks[key]
		if !ok {
			ranks = members.Ranks(key.job, &j.op)
			commRanks[key] = ranks
		}
		events = markers(events, &inspector.Joined{Op: &j.op, Owner: j.owner, CommRanks: ranks})
	}

	if n := unknown + ambiguous; n > 0 {
		fmt.Fprintf(stderr, "collectiveattr: --nccl-inspector: %d of %d records not joined to a rank (%d name a host and pid that no record of FILE has, %d one that several ranks have)\n",
			n, n+len(joined), unknown, ambiguous)
	}
	if malformed > 0 {
		fmt.Fprintf(stderr, "collectiveattr: --nccl-inspector: %d lines skipped as unreadable (first: %s)\n", malformed, firstBad)
	}
	if notOpRecord > 0 {
		fmt.Fprintf(stderr, "collectiveattr: --nccl-inspector: %d lines skipped as not op records\n", notOpRecord)
	}
	return events, nil
}
