package collectiveattrprocessor

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// numberPerOp renumbers the markers' sequence numbers as NCCL numbers them
// (and the Inspector's coll_sn gives them): one counter per collective
// type of a communicator, the two sides of a send/recv on one, counting
// the instances in the order they first appear. It returns how many
// (communicator, sequence number) pairs then name more than one op.
func numberPerOp(t *testing.T, events []telemetry.Event) (shared int) {
	t.Helper()
	type commOp struct{ comm, op string }
	type commSeq struct {
		comm string
		seq  int64
	}
	renumbered := map[commOp]map[int64]int64{}
	ops := map[commSeq]map[string]bool{}
	for i := range events {
		md := events[i].Metadata
		comm, ok := md[evidence.KeyCommID].(string)
		if !ok || events[i].EventType == evidence.AccountingEventType {
			continue
		}
		seq, ok := evidence.MetadataInt(md[evidence.KeySeq])
		require.True(t, ok)
		op := md[evidence.KeyOp].(string)
		if op == "send" || op == "recv" {
			op = "send/recv"
		}
		k := commOp{comm, op}
		if renumbered[k] == nil {
			renumbered[k] = map[int64]int64{}
		}
		n, ok := renumbered[k][seq]
		if !ok {
			n = int64(len(renumbered[k]))
			renumbered[k][seq] = n
		}
		md[evidence.KeySeq] = json.Number(strconv.FormatInt(n, 10))
		cs := commSeq{comm, n}
		if ops[cs] == nil {
			ops[cs] = map[string]bool{}
		}
		ops[cs][op] = true
	}
	for _, o := range ops {
		if len(o) > 1 {
			shared++
		}
	}
	return shared
}

var seqField = regexp.MustCompile(`"seq":-?[0-9]+`)

// withoutSeq drops the collectives' sequence numbers from result texts.
func withoutSeq(results []string) []string {
	out := make([]string, len(results))
	for i, r := range results {
		out[i] = seqField.ReplaceAllString(r, `"seq":_`)
	}
	slices.Sort(out)
	return out
}

// TestEvidenceOpsSharingSequenceNumbers: NCCL numbers each collective type
// of a communicator on its own counter, so an all_reduce and an all_gather
// of one communicator share sequence numbers. Numbered that way, every
// quality job gives the results of its one-counter numbering (but the seq
// values): the CLI keys a collective by (communicator, op, seq), not by
// (communicator, seq), which would merge the two ops' markers into one
// collective with twice the members. The processor, fed the same job as
// stormlog records and as OTLP spans and gauges, keys them the same way:
// its on_job_end results equal the CLI's.
func TestEvidenceOpsSharingSequenceNumbers(t *testing.T) {
	shape := jobsim.DefaultQualityShape()
	shape.Duration = [2]time.Duration{40 * time.Second, 50 * time.Second}
	sharedJobs := 0
	for _, fam := range equalityFamilies() {
		stats := fam.Name == "lazy_stepup"
		t.Run(fmt.Sprintf("%s/nccl_stats=%v", fam.Name, stats), func(t *testing.T) {
			c, err := jobsim.GenerateQualityCase(fam.Name, 2, shape, stats)
			require.NoError(t, err)
			job := "opseq-" + fam.Name
			for i := range c.Events {
				c.Events[i].JobID = job
			}
			_, _, oneCounter, _ := evidenceOTLP(t, job, c.Events)
			shared := numberPerOp(t, c.Events)
			if shared > 0 {
				sharedJobs++
			}
			md, td, lines, _ := evidenceOTLP(t, job, c.Events)
			want := evidenceBatch(t, lines, "medium")
			assert.Equal(t, withoutSeq(evidenceBatch(t, oneCounter, "medium")), withoutSeq(want),
				"numbered per op, the CLI finds what it finds with one counter (%d seqs shared by two ops)", shared)
			slices.Sort(want)

			cfg := createDefaultConfig().(*Config)
			cfg.Mode, cfg.Emit, cfg.Phases = ModeEvidence, EmitOnJobEnd, false
			cfg.Window = eventSpan(t, lines) + time.Minute
			cfg.Limits.MaxEventsPerRank = len(lines)
			require.NoError(t, cfg.Validate())
			got := processorBodies(t, cfg, lines)
			slices.Sort(got)
			assertSameResults(t, want, got)

			p := runEvidenceOTLP(t, lines, md, td)
			got = loggedResultTexts(p.lsink)
			slices.Sort(got)
			// The gauges are device used: device-wide, and the results say so.
			assertSameResults(t, deviceWideResults(t, want), got)
		})
	}
	require.GreaterOrEqual(t, sharedJobs, 3, "several jobs have ops sharing a sequence number")
}
