package main

import (
	"errors"
	"fmt"
	"io"
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

// inspectorSuffixes are the names of Inspector logs in a directory: the
// plugin writes <host>-pid<pid>.log; NVIDIA's exporter also reads .jsonl
// (and both gzip-compressed).
var inspectorSuffixes = []string{".log", ".jsonl"}

// inspectorJoin joins NCCL Inspector records to the ranks of a run: it
// learns each rank's (host, pid) from the run's records as they stream in,
// then reads the Inspector files and converts every joined record.
type inspectorJoin struct {
	paths  []string
	joiner *inspector.Joiner
	// last is the identity of the previous record learned: consecutive
	// records nearly always come from the same rank.
	last    identityKey
	hasLast bool
	// unreadable counts the lines appendMarkers skipped as unreadable.
	unreadable int
}

// identityKey is what a record tells the joiner about its rank.
type identityKey struct {
	host, job, session string
	pid, rank, world   int64
}

func newInspectorJoin(paths []string) *inspectorJoin {
	// The whole run is one moment: no mapping expires while it is read.
	return &inspectorJoin{paths: paths, joiner: inspector.NewJoiner(0, 0, func() time.Time { return time.Time{} })}
}

// learn records the (host, pid) → (job, rank) mapping that e carries.
func (ij *inspectorJoin) learn(e *telemetry.Event) {
	k := identityKey{host: e.Host, job: e.JobID, session: e.SessionID, pid: e.PID, rank: e.Rank, world: e.WorldSize}
	if ij.hasLast && k == ij.last {
		return
	}
	ij.joiner.LearnEvent(e)
	ij.last, ij.hasLast = k, true
}

// appendMarkers reads the Inspector files, joins their records to the ranks
// learned so far and appends the markers that markers makes of each.
func (ij *inspectorJoin) appendMarkers(events []telemetry.Event, markers inspector.MarkerFunc, stderr io.Writer) ([]telemetry.Event, error) {
	files, err := inputFiles("--nccl-inspector", ij.paths, inspectorSuffixes)
	if err != nil {
		return nil, err
	}
	joiner := ij.joiner

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
		f, err := openInput(name)
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
	ij.unreadable = malformed
	if malformed > 0 {
		fmt.Fprintf(stderr, "collectiveattr: --nccl-inspector: %d lines skipped as unreadable (first: %s)\n", malformed, firstBad)
	}
	if notOpRecord > 0 {
		fmt.Fprintf(stderr, "collectiveattr: --nccl-inspector: %d lines skipped as not op records\n", notOpRecord)
	}
	return events, nil
}
