package main

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/collectiveattr/collectiveattr/attribution"
)

// Output formats of attribute.
const (
	formatJSON  = "json"
	formatTable = "table"
)

// checkFormat normalises --format (case and surrounding spaces ignored).
func checkFormat(o *attributeOptions) error {
	switch f := strings.ToLower(strings.TrimSpace(o.format)); f {
	case formatJSON, formatTable:
		o.format = f
		return nil
	}
	return fmt.Errorf("unknown --format %q (known: json, table)", o.format)
}

// summaryLine says in one line what the run read and found, e.g.
// "collectiveattr: job j1: 4800 records, 16 ranks, 30.0 s; 18 results: 16 collective_confident, 2 non_collective".
func summaryLine(results []attribution.Result, ri *runInput) string {
	var b strings.Builder
	b.WriteString("collectiveattr: ")
	if id, s, ok := ri.selectedJob(); ok {
		if id == "" {
			b.WriteString("records without job_id: ")
		} else {
			fmt.Fprintf(&b, "job %s: ", id)
		}
		fmt.Fprintf(&b, "%d records, %s, %.1f s; ", s.records, plural(s.ranks.len(), "rank"), float64(s.endNs-s.firstNs)/1e9)
	} else {
		b.WriteString("no records; ")
	}
	b.WriteString(plural(len(results), "result"))
	counts := map[string]int{}
	for i := range results {
		counts[results[i].Classification]++
	}
	classes := make([]string, 0, len(counts))
	for c := range counts {
		classes = append(classes, c)
	}
	slices.Sort(classes)
	for i, c := range classes {
		sep := ", "
		if i == 0 {
			sep = ": "
		}
		fmt.Fprintf(&b, "%s%d %s", sep, counts[c], c)
	}
	return b.String()
}

// selectedJob returns the job the run attributed and its counts.
func (ri *runInput) selectedJob() (string, *jobStats, bool) {
	if ri.job.set {
		s, ok := ri.jobs.jobs[ri.job.id]
		return ri.job.id, s, ok
	}
	for id, s := range ri.jobs.jobs { // at most one (checkJobs)
		return id, s, true
	}
	return "", nil, false
}

// writeTable prints the results for a person: one row per result, times
// in seconds from the job's first record, sizes in MiB, then the summary.
func writeTable(results []attribution.Result, ri *runInput, stdout, stderr io.Writer) int {
	w := bufio.NewWriter(stdout)
	var startNs int64
	if _, s, ok := ri.selectedJob(); ok {
		startNs = s.firstNs
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	if len(results) > 0 {
		fmt.Fprintln(tw, "RANK\tSTART s\tEND s\tCLASSIFICATION\tCONFIDENCE\tPEAK HIDDEN\tCOLLECTIVE\tREASONS")
	}
	for i := range results {
		r := &results[i]
		peak := r.Evidence.PeakGapBytes
		if r.Mode == attribution.ModeEvidence {
			peak = r.ExcessBytes
		}
		coll := "-"
		if r.Collective != nil {
			coll = fmt.Sprintf("%s #%d", r.Collective.Op, r.Collective.Seq)
		}
		fmt.Fprintf(tw, "%d\t%.3f\t%.3f\t%s\t%.2f\t%s\t%s\t%s\n", r.Rank,
			float64(r.IntervalStartNs-startNs)/1e9, float64(r.EndNs()-startNs)/1e9,
			r.Classification, r.Confidence, humanBytes(peak), coll, strings.Join(r.ReasonCodes, ","))
	}
	err := tw.Flush()
	if err == nil {
		_, err = fmt.Fprintln(w, strings.TrimPrefix(summaryLine(results, ri), "collectiveattr: "))
	}
	if err == nil {
		err = w.Flush()
	}
	if err != nil {
		fmt.Fprintf(stderr, "collectiveattr: writing results: %v\n", err)
		return exitInput
	}
	return exitOK
}

// humanBytes writes a byte count in binary units: 1.5 GiB, 48.0 MiB.
func humanBytes(n int64) string {
	v, neg := float64(n), n < 0
	if neg {
		v = -v
	}
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	i := 0
	for v >= 1024 && i < len(units)-1 {
		v /= 1024
		i++
	}
	sign := ""
	if neg {
		sign = "-"
	}
	if i == 0 {
		return fmt.Sprintf("%s%d B", sign, int64(v))
	}
	return fmt.Sprintf("%s%.1f %s", sign, v, units[i])
}

// plural writes "1 rank", "2 ranks".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
