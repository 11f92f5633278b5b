package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

// jobFlag is --job: which job of the input to attribute. set tells
// `--job ""` (the records without a job_id) from no --job at all.
type jobFlag struct {
	id  string
	set bool
}

func (j *jobFlag) String() string { return j.id }

func (j *jobFlag) Set(v string) error {
	j.id, j.set = v, true
	return nil
}

// jobStats is what the summary and the several-jobs error say of one job.
type jobStats struct {
	records        int
	ranks          rankSet
	firstNs, endNs int64
}

// jobTally counts the records and ranks of every job of the input as it
// streams in. A run attributes one job: the records of several would be
// judged as one run (their ranks mixed, a rank of one job synchronous with
// another's), so several jobs without --job is an error that lists them.
type jobTally struct {
	jobs map[string]*jobStats
	// last is the job and rank of the previous record: consecutive records
	// nearly always come from the same rank.
	lastJob  string
	lastRank int64
	last     *jobStats
}

func newJobTally() *jobTally { return &jobTally{jobs: map[string]*jobStats{}} }

// add counts e in its job; records without a job_id form the job ""
// (select it with --job "").
func (t *jobTally) add(e *telemetry.Event) {
	s := t.last
	if s == nil || e.JobID != t.lastJob {
		s = t.jobs[e.JobID]
		if s == nil {
			s = &jobStats{firstNs: e.TimestampNs, endNs: e.TimestampNs}
			t.jobs[e.JobID] = s
		}
		t.last, t.lastJob = s, e.JobID
		t.lastRank = e.Rank
		s.ranks.add(e.Rank)
	} else if e.Rank != t.lastRank {
		s.ranks.add(e.Rank)
		t.lastRank = e.Rank
	}
	s.records++
	s.firstNs = min(s.firstNs, e.TimestampNs)
	s.endNs = max(s.endNs, e.TimestampNs)
}

// ids returns the jobs seen, sorted.
func (t *jobTally) ids() []string {
	ids := make([]string, 0, len(t.jobs))
	for id := range t.jobs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// severalJobsError lists the jobs of an input that holds more than one.
func (t *jobTally) severalJobsError(file string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s holds %d jobs; attribute one at a time with --job ID:", file, len(t.jobs))
	for _, id := range t.ids() {
		s := t.jobs[id]
		fmt.Fprintf(&b, "\n  --job %-24s %d records, %d ranks", quoteJob(id), s.records, s.ranks.len())
	}
	return errors.New(b.String())
}

// missingJobError says that --job names no job of the input.
func (t *jobTally) missingJobError(file, id string) error {
	names := make([]string, 0, len(t.jobs))
	for _, j := range t.ids() {
		names = append(names, quoteJob(j))
	}
	return fmt.Errorf("--job %s: no record of %s has that job_id (its jobs: %s)", quoteJob(id), file, strings.Join(names, ", "))
}

// quoteJob writes a job id as a shell argument would need it.
func quoteJob(id string) string {
	if id == "" || strings.ContainsAny(id, " \t\n'\"\\$`*?[]{}()<>|&;#~") {
		return "'" + strings.ReplaceAll(id, "'", `'\''`) + "'"
	}
	return id
}
