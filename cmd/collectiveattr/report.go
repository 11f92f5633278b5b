package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/ledger"
	"github.com/collectiveattr/collectiveattr/report"
)

const reportUsage = `Usage: collectiveattr report [--mode M] [--preset P] [--overrides JSON]
                           [--evidence JSON] [--phases] [--nccl-inspector PATH]...
                           [--torch-profiler PATH]... [--flight-recorder PATH]...
                           [--job ID] [--strict] FILE|- -o REPORT.html

Attribute FILE as "collectiveattr attribute" does and write one self-contained
HTML page (no network needed to view it) that shows, per rank, the hidden
memory (device used minus allocator reserved) on a shared time axis with the
collective markers, the phases (with --phases) and every result's interval
coloured by classification (hover for all its fields), and a job overview:
a ranks x time heat strip, results per classification, the synchronous
episodes across ranks and the configuration used. Drag across a lane to zoom.

Flags:
  -o, --output FILE     the HTML file to write (required; "-" for stdout).
  --mode M              attribution mode: reference (the default) or evidence.
  --preset P, --overrides JSON, --evidence JSON, --phases
                        as for "collectiveattr attribute".
  --nccl-inspector PATH NCCL Inspector logs (a file, or a directory of *.log
                        files; repeatable) whose ops become collective markers
                        of the ranks whose host and pid they name, as for
                        "collectiveattr attribute".
  --job ID, --strict    as for "collectiveattr attribute": the page shows
                        one job.
  --torch-profiler PATH, --flight-recorder PATH
                        PyTorch profiler traces and Flight Recorder dumps
                        (repeatable) whose ops become collective markers of
                        their ranks, as for "collectiveattr attribute".
  --columns N           plot width in pixels, one downsampled column each
                        (default 1200).
  -h, --help            print this help.

Exit status: 0 success; 1 unreadable input, invalid record, unwritable
output or a skipped line with --strict; 2 usage or configuration error, or
several jobs without --job.
`

type reportOptions struct {
	attributeOptions
	output  string
	columns int
}

func parseReportArgs(args []string) (reportOptions, error) {
	o := reportOptions{attributeOptions: attributeOptions{mode: attribution.ModeReference}, columns: report.DefaultColumns}
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.preset, "preset", "", "")
	fs.StringVar(&o.overrides, "overrides", "", "")
	fs.BoolVar(&o.phases, "phases", false, "")
	fs.StringVar(&o.mode, "mode", o.mode, "")
	fs.StringVar(&o.output, "o", "", "")
	fs.StringVar(&o.output, "output", "", "")
	fs.StringVar(&o.evidence, "evidence", "", "")
	fs.Var(&o.inspector, "nccl-inspector", "")
	o.sources.register(fs)
	fs.IntVar(&o.columns, "columns", o.columns, "")
	addRunFlags(fs, &o.attributeOptions)
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return o, err
	}
	if err := checkMode(&o.attributeOptions); err != nil {
		return o, err
	}
	switch {
	case len(files) == 0:
		return o, errors.New("missing FILE (use - for standard input)")
	case len(files) > 1:
		return o, fmt.Errorf("expected one FILE, got %d: %s", len(files), strings.Join(files, " "))
	case o.output == "":
		return o, errors.New("missing -o REPORT.html")
	case o.columns < 100 || o.columns > 20000:
		return o, fmt.Errorf("--columns must be in [100, 20000], got %d", o.columns)
	}
	o.file = files[0]
	return o, nil
}

// parseInterspersed parses flags before and after the positional
// arguments; "--" ends the flags.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var files []string
	rest := args
	for {
		if err := fs.Parse(rest); err != nil {
			return nil, err
		}
		rest = fs.Args()
		if len(rest) == 0 {
			return files, nil
		}
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(files, rest...), nil
		}
		files = append(files, rest[0])
		rest = rest[1:]
	}
}

func runReport(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	const prog = "collectiveattr report"
	opts, err := parseReportArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, reportUsage)
		return exitOK
	}
	if err != nil {
		return usageError(stderr, prog, "report", err)
	}
	overrides, evidenceKeys, ok := parseTuning(prog, opts.overrides, opts.evidence, stderr)
	if !ok {
		return exitConfig
	}

	// The records stream into the attribution's and the page's builders;
	// no slice of every event is kept.
	opts.page, opts.ledger = true, true
	runIn, code := readInput(prog, opts.attributeOptions, stdin, stderr)
	if code != exitOK {
		return code
	}
	// Unlike attribute, an empty input still makes a page, and the page
	// shows the configuration: resolve it whatever the input.
	config, err := reportConfig(opts.attributeOptions, overrides, evidenceKeys)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitConfig
	}
	attributed, err := runIn.attribute(opts.preset, overrides, evidenceKeys)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitConfig
	}

	job := runIn.page.Job()
	padding, err := intervalPadding(opts.attributeOptions, overrides, evidenceKeys)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitConfig
	}
	job.Ledgers = pageLedgers(job, opts.columns, &ledger.Input{Ranks: runIn.window.LedgerRanks(), Results: attributed, PaddingNs: padding})
	runIn = nil // the attribution's input is no longer needed while the page renders
	results := make([]report.Result, len(attributed))
	var buf []byte
	for i := range attributed {
		buf = attribution.AppendResultJSON(buf[:0], &attributed[i], opts.phases)
		if results[i], err = report.ParseResult(buf); err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", prog, err)
			return exitInput
		}
	}
	ropts := report.Options{
		Columns: opts.columns,
		Title:   opts.file,
		Inputs: []report.Field{
			{Key: "input", Value: opts.file},
			{Key: "mode", Value: opts.mode},
			{Key: "phases", Value: strconv.FormatBool(opts.phases)},
		},
		Config: config,
	}
	if opts.job.set {
		ropts.Inputs = append(ropts.Inputs, report.Field{Key: "job", Value: opts.job.id})
	}
	if strings.TrimSpace(opts.overrides) != "" {
		ropts.Inputs = append(ropts.Inputs, report.Field{Key: "overrides", Value: opts.overrides})
	}
	if strings.TrimSpace(opts.evidence) != "" {
		ropts.Inputs = append(ropts.Inputs, report.Field{Key: "evidence", Value: opts.evidence})
	}
	for _, p := range opts.inspector {
		ropts.Inputs = append(ropts.Inputs, report.Field{Key: "nccl_inspector", Value: p})
	}
	for _, p := range opts.sources.torchProfiler {
		ropts.Inputs = append(ropts.Inputs, report.Field{Key: "torch_profiler", Value: p})
	}
	for _, p := range opts.sources.flightRecorder {
		ropts.Inputs = append(ropts.Inputs, report.Field{Key: "flight_recorder", Value: p})
	}
	if err := writeReport(opts.output, stdout, func(w io.Writer) error {
		return report.Render(w, job, results, ropts)
	}); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return exitInput
	}
	return exitOK
}

// pageLedgers is the ranks' hidden-memory ledgers as the page draws them.
func pageLedgers(job *report.Job, columns int, in *ledger.Input) map[int64]*report.LaneLedger {
	b := report.NewLedgerBuilder(job, columns)
	l := ledger.New(in)
	var row ledger.Row
	for ri := range in.Ranks {
		for l.NextOf(ri, &row) {
			b.Add(&row)
		}
	}
	return b.Lanes()
}

// writeReport writes to a temporary file beside path and renames it, so
// that a failed run leaves no half page behind. Its errors name path, the
// file the user asked for, not the temporary one.
func writeReport(path string, stdout io.Writer, render func(io.Writer) error) error {
	if path == "-" {
		return render(stdout)
	}
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		return fmt.Errorf("-o %s: is a directory", path)
	}
	if err := writeViaTemp(path, render); err != nil {
		var pe *os.PathError
		var le *os.LinkError
		switch {
		case errors.As(err, &pe):
			err = pe.Err
		case errors.As(err, &le):
			err = le.Err
		}
		return fmt.Errorf("-o %s: %w", path, err)
	}
	return nil
}

func writeViaTemp(path string, render func(io.Writer) error) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	err = render(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	return err
}

// configFields lists the resolved configuration as the page shows it.
func configFields(c attribution.Config) []report.Field {
	f := func(v float64) string { return string(attribution.AppendFloat(nil, v)) }
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	return []report.Field{
		{Key: "preset", Value: c.Preset},
		{Key: "min_samples_per_rank", Value: i(c.MinSamplesPerRank)},
		{Key: "min_gap_bytes", Value: i(c.MinGapBytes)},
		{Key: "min_gap_ratio", Value: f(c.MinGapRatio)},
		{Key: "robust_zscore_threshold", Value: f(c.RobustZscoreThreshold)},
		{Key: "marker_window_ns", Value: i(c.MarkerWindowNs)},
		{Key: "interval_padding_ns", Value: i(c.IntervalPaddingNs)},
		{Key: "synchrony_window_ns", Value: i(c.SynchronyWindowNs)},
		{Key: "min_synchrony_ratio", Value: f(c.MinSynchronyRatio)},
		{Key: "min_confidence", Value: f(c.MinConfidence)},
	}
}

// reportConfig resolves the mode's configuration as the page lists it.
func reportConfig(opts attributeOptions, overrides, evidenceKeys map[string]any) ([]report.Field, error) {
	if opts.mode != attribution.ModeEvidence {
		cfg, err := attribution.ResolveConfig(opts.preset, overrides)
		if err != nil {
			return nil, err
		}
		return configFields(cfg), nil
	}
	cfg, err := evidence.ResolveConfig(opts.preset, overrides, evidenceKeys)
	if err != nil {
		return nil, err
	}
	return append(configFields(cfg.Config), evidenceConfigFields(cfg.Evidence)...), nil
}

// evidenceConfigFields lists evidence mode's own settings under the key
// the configuration gives them (evidence.*).
func evidenceConfigFields(p evidence.Params) []report.Field {
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	return []report.Field{
		{Key: "evidence.min_excess_bytes", Value: i(p.MinExcessBytes)},
		{Key: "evidence.spread_floor_bytes", Value: i(p.SpreadFloorBytes)},
		{Key: "evidence.baseline_window_ns", Value: i(p.BaselineWindowNs)},
		{Key: "evidence.match_tolerance_ns", Value: i(p.MatchToleranceNs)},
		{Key: "evidence.approximate_tolerance_ns", Value: i(p.ApproximateToleranceNs)},
		{Key: "evidence.resolved_min_samples", Value: string(attribution.AppendFloat(nil, p.ResolvedMinSamples))},
	}
}
