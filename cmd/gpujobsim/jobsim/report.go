package jobsim

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/collectiveattr/collectiveattr/attribution"
)

// Result is one collective attribution result as the collector emitted it.
type Result struct {
	JobID          string
	Rank           int64
	StartNs, EndNs int64
	Classification string
	Confidence     float64
	Reasons        []string
	Phase          string
	// Kind is evidence mode's transient or persistent ("" in the reference mode).
	Kind string
	// Accounted tells that evidence mode had NCCL's accounting for the result
	// (nccl_accounted_bytes present).
	Accounted bool
}

// Result attribute names (processor contract §5.1).
const (
	resultSpanName      = "collective_attribution"
	attrClassification  = "collective_attribution.classification"
	attrConfidence      = "collective_attribution.confidence"
	attrReasons         = "collective_attribution.reason_codes"
	attrPhasePath       = "collective_attribution.phase.path"
	attrPhaseSummary    = "collective_attribution.phase.summary"
	attrPhasePaths      = "collective_attribution.phase.paths"
	attrPhaseResolution = "collective_attribution.phase.resolution"
	attrKind            = "collective_attribution.kind"
	attrAccountedBytes  = "collective_attribution.evidence.nccl_accounted_bytes"
)

// ReadResults reads the file exporter's output (OTLP JSON, one request per line) and
// returns the attribution results it holds: result log records when there are any (they
// are the exact serialisation), else result spans. Other telemetry in the files is ignored.
func ReadResults(paths ...string) ([]Result, error) {
	var fromLogs, fromSpans []Result
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		l, s, err := readResultLines(f)
		_ = f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		fromLogs = append(fromLogs, l...)
		fromSpans = append(fromSpans, s...)
	}
	out := fromLogs
	if len(out) == 0 {
		out = fromSpans
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.JobID != b.JobID {
			return a.JobID < b.JobID
		}
		if a.StartNs != b.StartNs {
			return a.StartNs < b.StartNs
		}
		return a.Rank < b.Rank
	})
	return out, nil
}

func readResultLines(r io.Reader) (logs, spans []Result, err error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 256<<20)
	var lu plog.JSONUnmarshaler
	var tu ptrace.JSONUnmarshaler
	for line := 1; sc.Scan(); line++ {
		b := bytes.TrimSpace(sc.Bytes())
		switch {
		case len(b) == 0:
		case bytes.Contains(b, []byte(`"resourceLogs"`)):
			ld, err := lu.UnmarshalLogs(b)
			if err != nil {
				return nil, nil, fmt.Errorf("line %d: %w", line, err)
			}
			logs = append(logs, resultsFromLogs(ld)...)
		case bytes.Contains(b, []byte(`"resourceSpans"`)):
			td, err := tu.UnmarshalTraces(b)
			if err != nil {
				return nil, nil, fmt.Errorf("line %d: %w", line, err)
			}
			spans = append(spans, resultsFromSpans(td)...)
		}
	}
	return logs, spans, sc.Err()
}

// resultBody is the reference serialisation plus job_id (contract §5.3).
type resultBody struct {
	JobID            string          `json:"job_id"`
	Rank             int64           `json:"rank"`
	IntervalStartNs  int64           `json:"interval_start_ns"`
	IntervalEndNs    uint64          `json:"interval_end_ns"` // may pass int64
	Classification   string          `json:"classification"`
	Confidence       float64         `json:"confidence"`
	ReasonCodes      []string        `json:"reason_codes"`
	PhaseAttribution *phasePayload   `json:"phase_attribution"`
	Evidence         json.RawMessage `json:"evidence"`
	Kind             string          `json:"kind"`
	AccountedBytes   *int64          `json:"nccl_accounted_bytes"`
}

type phasePayload struct {
	Resolution string   `json:"phase_resolution"`
	Paths      []string `json:"phase_paths"`
	Path       string   `json:"phase_path"`
	Summary    *struct {
		Path   string `json:"phase_path"`
		Source string `json:"source"`
	} `json:"phase_summary"`
}

// summary mirrors the reference's summarize_phase_attribution display string.
func (p *phasePayload) summary() string {
	switch {
	case p == nil:
		return ""
	case p.Summary != nil && p.Summary.Source == "heuristic":
		return "(likely) " + p.Summary.Path
	case p.Summary != nil:
		return p.Summary.Path
	case p.Resolution == "unique" && p.Path != "":
		return p.Path
	case len(p.Paths) == 1:
		return p.Paths[0]
	case len(p.Paths) > 1:
		return "(ambiguous) " + strings.Join(p.Paths, " | ")
	}
	return ""
}

func resultsFromLogs(ld plog.Logs) []Result {
	var out []Result
	for _, rl := range ld.ResourceLogs().All() {
		for _, sl := range rl.ScopeLogs().All() {
			for _, lr := range sl.LogRecords().All() {
				if _, ok := lr.Attributes().Get(attrClassification); !ok {
					continue
				}
				var body resultBody
				if err := json.Unmarshal([]byte(lr.Body().AsString()), &body); err != nil {
					continue
				}
				out = append(out, Result{
					JobID: body.JobID, Rank: body.Rank, StartNs: body.IntervalStartNs, EndNs: saturatedNs(body.IntervalEndNs),
					Classification: body.Classification, Confidence: body.Confidence, Reasons: body.ReasonCodes,
					Phase: body.PhaseAttribution.summary(), Kind: body.Kind, Accounted: body.AccountedBytes != nil,
				})
			}
		}
	}
	return out
}

// saturatedNs is an unsigned time as an int64, saturated: a result's end
// passes int64 when a large interval_padding_ns carries it there, and no
// injection this report compares it with lies that late.
func saturatedNs(ns uint64) int64 {
	return int64(min(ns, math.MaxInt64))
}

func resultsFromSpans(td ptrace.Traces) []Result {
	var out []Result
	for _, rs := range td.ResourceSpans().All() {
		job := ""
		if v, ok := rs.Resource().Attributes().Get("training.job.id"); ok {
			job = v.AsString()
		}
		for _, ss := range rs.ScopeSpans().All() {
			for _, sp := range ss.Spans().All() {
				if sp.Name() != resultSpanName {
					continue
				}
				a := sp.Attributes()
				res := Result{JobID: job, StartNs: saturatedNs(uint64(sp.StartTimestamp())), EndNs: saturatedNs(uint64(sp.EndTimestamp()))}
				if v, ok := a.Get("training.rank"); ok {
					res.Rank = v.Int()
				}
				if v, ok := a.Get(attrClassification); ok {
					res.Classification = v.Str()
				}
				if v, ok := a.Get(attrConfidence); ok {
					res.Confidence = v.Double()
				}
				if v, ok := a.Get(attrReasons); ok && v.Type() == pcommon.ValueTypeSlice {
					for _, r := range v.Slice().All() {
						res.Reasons = append(res.Reasons, r.AsString())
					}
				}
				res.Phase = spanPhase(a)
				if v, ok := a.Get(attrKind); ok {
					res.Kind = v.Str()
				}
				_, res.Accounted = a.Get(attrAccountedBytes)
				out = append(out, res)
			}
		}
	}
	return out
}

func spanPhase(a pcommon.Map) string {
	if v, ok := a.Get(attrPhaseSummary); ok && v.Str() != "" {
		return v.Str()
	}
	if v, ok := a.Get(attrPhasePath); ok && v.Str() != "" {
		return v.Str()
	}
	if v, ok := a.Get(attrPhasePaths); ok && v.Type() == pcommon.ValueTypeSlice {
		var ps []string
		for _, p := range v.Slice().All() {
			ps = append(ps, p.AsString())
		}
		if res, _ := a.Get(attrPhaseResolution); res.Str() == "ambiguous" && len(ps) > 1 {
			return "(ambiguous) " + strings.Join(ps, " | ")
		}
		return strings.Join(ps, " | ")
	}
	return ""
}

// InjectionVerdict says how the results matched one injection.
type InjectionVerdict struct {
	Injection TruthInjection
	// Found maps each affected rank to the strongest classification that overlapped it.
	Found map[int]string
	// OK tells that the results are what the reference mode is expected to give
	// (ReferenceExpectation); Why says how they are not.
	OK  bool
	Why string
	// Right tells that they are what happened (Right); Wrong says how they are not.
	Right bool
	Wrong string
}

// Verdict is the comparison of a run's results with its ground truth.
type Verdict struct {
	Injections []InjectionVerdict
	// Unmatched are results (of the truth's job) that overlap no injection.
	Unmatched []Result
	OK        bool
}

// Compare matches results against the truth: a result explains an injection on a rank
// when it is of the same job and rank and its interval overlaps the rank's raised window.
// Collective spikes must be found on every rank they hit with at least the expected
// classification; unrelated spikes and unmatched results must not be called likely or
// confident collective.
func Compare(t Truth, results []Result) Verdict {
	v := Verdict{OK: true}
	matched := make([]bool, len(results))
	for _, in := range t.Injections {
		iv := InjectionVerdict{Injection: in, Found: map[int]string{}, OK: true}
		for _, w := range in.PerRank {
			for i, r := range results {
				if r.JobID != t.JobID || r.Rank != int64(w.Rank) || r.EndNs < w.StartNs || r.StartNs > w.EndNs {
					continue
				}
				matched[i] = true
				if attribution.ClassificationRank(r.Classification) > attribution.ClassificationRank(iv.Found[w.Rank]) {
					iv.Found[w.Rank] = r.Classification
				}
			}
		}
		if iv.Why = ReferenceExpectation(in).Misses(in, iv.Found, nil); iv.Why != "" {
			iv.OK = false
		}
		iv.Right, iv.Wrong = Right(in, iv.Found)
		v.OK = v.OK && iv.OK
		v.Injections = append(v.Injections, iv)
	}
	for i, r := range results {
		if r.JobID != t.JobID || matched[i] {
			continue
		}
		v.Unmatched = append(v.Unmatched, r)
		if attribution.ClassificationRank(r.Classification) >= attribution.ClassificationRank(attribution.CollectiveLikely) {
			v.OK = false
		}
	}
	return v
}

// WriteResultsTable prints one row per result, times relative to epochNs (0 for
// absolute).
func WriteResultsTable(w io.Writer, results []Result, epochNs int64) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "job\trank\tinterval (s)\tclassification\tconfidence\tphase\treasons\n")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%d\t%.3f–%.3f\t%s\t%.3f\t%s\t%s\n", r.JobID, r.Rank,
			float64(r.StartNs-epochNs)/1e9, float64(r.EndNs-epochNs)/1e9, r.Classification, r.Confidence,
			dash(r.Phase), strings.Join(r.Reasons, ","))
	}
	return tw.Flush()
}

// resultGroup is the results of one job that overlap in time and agree on
// classification, confidence and reasons: typically one collective seen by many ranks.
type resultGroup struct {
	job            string
	start, end     int64
	classification string
	confidence     float64
	reasons        string
	ranks          []int
	phases         map[string]int
}

// WriteGroupedResultsTable prints one row per group of results that overlap in time and
// agree on classification, confidence and reasons, with their ranks and phases counted.
func WriteGroupedResultsTable(w io.Writer, results []Result, epochNs int64) error {
	sorted := slices.Clone(results)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].JobID != sorted[j].JobID {
			return sorted[i].JobID < sorted[j].JobID
		}
		return sorted[i].StartNs < sorted[j].StartNs
	})
	var groups []*resultGroup
	for _, r := range sorted {
		reasons := strings.Join(r.Reasons, ",")
		var g *resultGroup
		for _, cand := range groups {
			if cand.job == r.JobID && cand.classification == r.Classification && cand.confidence == r.Confidence &&
				cand.reasons == reasons && r.StartNs <= cand.end && r.EndNs >= cand.start {
				g = cand
				break
			}
		}
		if g == nil {
			g = &resultGroup{job: r.JobID, start: r.StartNs, end: r.EndNs, classification: r.Classification,
				confidence: r.Confidence, reasons: reasons, phases: map[string]int{}}
			groups = append(groups, g)
		}
		g.start, g.end = min(g.start, r.StartNs), max(g.end, r.EndNs)
		g.ranks = append(g.ranks, int(r.Rank))
		g.phases[dash(r.Phase)]++
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "job\tranks\tinterval (s)\tclassification\tconfidence\tphase (ranks)\treasons\n")
	for _, g := range groups {
		slices.Sort(g.ranks)
		fmt.Fprintf(tw, "%s\t%s\t%.3f–%.3f\t%s\t%.3f\t%s\t%s\n", g.job, RankList(g.ranks),
			float64(g.start-epochNs)/1e9, float64(g.end-epochNs)/1e9, g.classification, g.confidence,
			phaseCounts(g.phases), g.reasons)
	}
	return tw.Flush()
}

func phaseCounts(phases map[string]int) string {
	names := make([]string, 0, len(phases))
	for p := range phases {
		names = append(names, p)
	}
	sort.Slice(names, func(i, j int) bool {
		if phases[names[i]] != phases[names[j]] {
			return phases[names[i]] > phases[names[j]]
		}
		return names[i] < names[j]
	})
	parts := make([]string, len(names))
	for i, p := range names {
		parts[i] = fmt.Sprintf("%s (%d)", p, phases[p])
	}
	return strings.Join(parts, "; ")
}

// WriteVerdict prints, per injection, what was found next to what was injected: whether
// it is what the reference mode is expected to answer, and whether it is right.
func (v Verdict) WriteVerdict(w io.Writer, t Truth) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "#\tinjected\tt (s)\tranks\tNCCL's?\texpected\tfound\tas expected?\tright?\n")
	for _, iv := range v.Injections {
		in := iv.Injection
		what := in.Kind
		if in.Collective != "" {
			what += " @ " + in.Collective
		}
		fmt.Fprintf(tw, "%d\t%s\t%.3f\t%s\t%s\t%s\t%s\t%s\t%s\n", in.ID, what, float64(in.StartNs-t.EpochNs)/1e9,
			RankList(in.Ranks), yesNo(IsCollectiveCaused(in.Kind)), ReferenceExpectation(in), foundSummary(iv.Found),
			verdictWord(iv.OK, iv.Why), yesNO(iv.Right))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(v.Unmatched) > 0 {
		fmt.Fprintf(w, "%d result(s) overlap no injection:\n", len(v.Unmatched))
		if err := WriteResultsTable(w, v.Unmatched, t.EpochNs); err != nil {
			return err
		}
	}
	return nil
}

// Summary is the verdict in one line: whether the results are what the reference mode
// is expected to give, and how many injections they get right.
func (v Verdict) Summary() string {
	right, wrong := 0, []string{}
	for _, iv := range v.Injections {
		if iv.Right {
			right++
		} else {
			wrong = append(wrong, fmt.Sprintf("#%d %s: %s", iv.Injection.ID, iv.Injection.Kind, iv.Wrong))
		}
	}
	s := "as the reference mode is expected to answer"
	if !v.OK {
		s = "NOT as the reference mode is expected to answer"
	}
	s += fmt.Sprintf("; right on %d of %d injected events", right, len(v.Injections))
	if len(wrong) > 0 {
		s += " (wrong on " + strings.Join(wrong, "; ") + ")"
	}
	return s
}

func yesNO(ok bool) string {
	if ok {
		return "yes"
	}
	return "NO"
}

func verdictWord(ok bool, why string) string {
	if ok {
		return "yes"
	}
	return "NO: " + why
}

func foundSummary(found map[int]string) string {
	if len(found) == 0 {
		return "not reported"
	}
	byClass := map[string][]int{}
	for r, c := range found {
		byClass[c] = append(byClass[c], r)
	}
	classes := make([]string, 0, len(byClass))
	for c := range byClass {
		classes = append(classes, c)
	}
	sort.Slice(classes, func(i, j int) bool {
		return attribution.ClassificationRank(classes[i]) > attribution.ClassificationRank(classes[j])
	})
	var parts []string
	for _, c := range classes {
		ranks := byClass[c]
		slices.Sort(ranks)
		parts = append(parts, fmt.Sprintf("%s on %s", c, RankList(ranks)))
	}
	return strings.Join(parts, "; ")
}
