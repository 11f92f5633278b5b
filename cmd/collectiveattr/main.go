// Command collectiveattr runs the collective attribution engine outside a
// collector (docs/processor-contract.md §7):
//
//	collectiveattr attribute [--mode reference|evidence] [--preset P] [--overrides JSON] [--evidence JSON] [--phases] [--nccl-inspector PATH]... [--torch-profiler PATH]... [--flight-recorder PATH]... [--job ID] [--format json|table] [--strict] [-q] FILE|-
//
// and `collectiveattr ledger` (ledger.go) splits every sample's hidden
// memory into NCCL, context and unexplained bytes, as JSON Lines.
//
// It reads stormlog TelemetryEvent records of one job, attributes all of
// them as one run exactly as stormlog's attribute_collective_memory does,
// and writes the results to stdout as one JSON array in the reference
// serialisation (and a one-line summary to stderr), or as a table.
//
// Exit status: 0 on success (including no results, printed as []); 1 when the
// input cannot be read or a record is invalid (the message names its line,
// and its index in a JSON array), or with --strict a line was skipped; 2 on a
// usage error, an invalid configuration (the message is the reference's, e.g.
// "min_samples_per_rank must be >= 3") or an input of several jobs without
// --job.
//
// As in the reference, the input is loaded before the configuration is
// resolved, and an empty input prints [] whatever the preset or overrides
// (the reference returns [] for no events before resolving its
// configuration); an invalid record wins over an invalid configuration.
// Records are decoded in parallel as they stream in and kept only as the
// per-rank columns attribution reads (read.go); a JSON document's text is
// read whole.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/collectiveattr/collectiveattr/attribution"
)

const (
	exitOK     = 0
	exitInput  = 1
	exitConfig = 2
)

const usage = `Usage: collectiveattr attribute [--mode M] [--preset P] [--overrides JSON]
                                [--evidence JSON] [--phases] [--nccl-inspector PATH]...
                                [--job ID] [--format F] [--strict] [-q] FILE|-
       collectiveattr report [flags] FILE|- -o REPORT.html   (see report --help)
       collectiveattr ledger [flags] FILE|-   (see ledger --help)
       collectiveattr --version

Attribute hidden GPU-memory spikes (device used minus allocator reserved) to
NCCL collective communication, exactly as stormlog's collective attribution
does, treating every record of FILE's job as one run.

FILE holds stormlog TelemetryEvent records (schema_version 2, 3 or 4), either
as JSON Lines (one object per line) or as one JSON array (or an object with an
"events" array). "-" reads standard input. Flags may come before or after FILE.

Flags:
  --mode M          reference (default): stormlog's heuristic, bit-exact;
                    evidence: judge spikes by collective identity, member
                    synchrony, each rank's own baseline and NCCL's memory
                    accounting (see "Attribution modes" in the README).
  --preset P        sensitivity preset: low, medium or high (default medium;
                    case and surrounding spaces are ignored).
  --overrides JSON  JSON object replacing preset fields, e.g.
                    '{"min_confidence": 0.6, "synchrony_window_ns": 200000000}'.
                    Keys: min_samples_per_rank, min_gap_bytes, min_gap_ratio,
                    robust_zscore_threshold, marker_window_ns,
                    interval_padding_ns, synchrony_window_ns,
                    min_synchrony_ratio, min_confidence. Values compare as
                    Python compares them: a fraction in min_samples_per_rank
                    or min_gap_bytes counts as rounded up, in the two windows
                    as rounded down; interval_padding_ns must be an integer
                    below 2**63.
  --evidence JSON   evidence mode only: JSON object of evidence settings,
                    e.g. '{"min_excess_bytes": 33554432}'. Keys:
                    min_excess_bytes, spread_floor_bytes, baseline_window_ns,
                    match_tolerance_ns, approximate_tolerance_ns,
                    resolved_min_samples.
  --phases          replay the phase_enter/phase_exit boundaries of the input
                    and add "phase_attribution" (null or an object) to every
                    result. Only records with a session_id (v3/v4) have phases.
  --nccl-inspector PATH
                    also read NCCL Inspector logs (the plugin's
                    <host>-pid<pid>.log files): PATH is a file or a directory
                    whose *.log, *.jsonl, *.log.gz and *.jsonl.gz files are
                    read, subdirectories included. Repeat the flag for more paths
                    (--nccl-inspector a --nccl-inspector b). Each record is
                    joined to the rank of FILE whose records carry its
                    hostname and pid, and counts as a collective marker at
                    its op's start and end. Records that join no rank, or a
                    host and pid several ranks share, are left out and
                    counted on stderr, as are unreadable lines.
  --torch-profiler PATH
                    also read PyTorch profiler traces (Kineto JSON, .json or
                    .json.gz): PATH is a trace or a directory of them, one
                    per rank (rank from distributedInfo, else rank<N> in the
                    file name). NCCL collectives become markers of that rank
                    (with identity from the process group and Seq), [memory]
                    events fill the allocator side of samples that lack it,
                    and with --phases ProfilerStep#N/record_function ranges
                    become phases. Repeatable. See docs/torch-sources.md.
  --flight-recorder PATH
                    also read PyTorch Flight Recorder dumps in JSON (not the
                    default pickle): PATH is a dump or a directory of them,
                    one per rank, named <prefix><rank>. Their identity names
                    the bare markers of --torch-profiler traces of the same
                    rank; the other entries are approximate markers of their
                    own. Repeatable.
  --job ID          attribute the records whose job_id is ID ("" selects the
                    records without one). A run is one job: when FILE holds
                    several and --job is not given, the jobs are listed and
                    the exit status is 2.
  --format F        json (default): the results as one JSON array on stdout
                    and a one-line summary on stderr; table: a table for
                    people (times in seconds from the job's first record,
                    sizes in binary units) ending with the summary.
  --strict          exit 1 instead of warning when a line is skipped: FILE's
                    truncated last line (no newline, not valid JSON: a writer
                    still appending) or an unreadable NCCL Inspector line.
  -q, --quiet       no summary line on stderr (warnings still go there).
  --version         print the version and exit.
  -h, --help        print this help.

Output: one JSON array on stdout ([] when nothing is attributed); each result
has rank, interval_start_ns, interval_end_ns, classification, confidence,
reason_codes and evidence, in that order; evidence mode adds mode, kind,
excess_bytes, collective and nccl_accounted_bytes.

Exit status: 0 success; 1 unreadable input or invalid record (the message
names the line, and the index in a JSON array), or a skipped line with
--strict; 2 usage or configuration error, or several jobs without --job.
`

func main() {
	setGCPercent(os.Getenv)
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, shortUsage)
		return exitConfig
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	case "-version", "--version", "version":
		fmt.Fprintln(stdout, versionLine())
		return exitOK
	case "attribute":
	case "report":
		return runReport(args[1:], stdin, stdout, stderr)
	case "ledger":
		return runLedger(args[1:], stdin, stdout, stderr)
	default:
		fmt.Fprintf(stderr, "collectiveattr: unknown command %q\n%s", args[0], shortUsage)
		return exitConfig
	}

	opts, err := parseAttributeArgs(args[1:])
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	if err != nil {
		return usageError(stderr, "collectiveattr", "attribute", err)
	}

	overrides, evidenceKeys, ok := parseTuning("collectiveattr", opts.overrides, opts.evidence, stderr)
	if !ok {
		return exitConfig
	}
	runIn, code := readInput("collectiveattr", opts, stdin, stderr)
	if code != exitOK {
		return code
	}

	// As the reference: records are loaded first (an invalid one is exit 1),
	// an empty run is [] whatever the configuration, then the preset and
	// overrides are resolved (a config error is exit 2).
	results, err := runIn.attribute(opts.preset, overrides, evidenceKeys)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitConfig
	}
	if runIn.worldSizeNote != "" {
		fmt.Fprintln(stderr, "collectiveattr: warning: "+runIn.worldSizeNote)
	}
	if opts.format == formatTable {
		return writeTable(results, runIn, stdout, stderr)
	}
	if code := writeResults(results, opts.phases, stdout, stderr); code != exitOK {
		return code
	}
	if !opts.quiet {
		fmt.Fprintln(stderr, summaryLine(results, runIn))
	}
	return exitOK
}

// resultsPiece is how much of the results writeResults encodes before it
// writes them.
const resultsPiece = 32 << 10

// writeResults prints the results as one JSON array and a newline.
func writeResults(results []attribution.Result, withPhase bool, stdout, stderr io.Writer) int {
	w := bufio.NewWriterSize(stdout, 64<<10)
	// The array is written as it is encoded, a piece at a time: a job of
	// thousands of ranks has megabytes of results, which one slice would
	// be grown to, copied and its new memory touched at each doubling.
	out := append(make([]byte, 0, resultsPiece+4<<10), '[')
	var err error
	for i := range results {
		if i > 0 {
			out = append(out, ',')
		}
		out = attribution.AppendResultJSON(out, &results[i], withPhase)
		if len(out) >= resultsPiece {
			if _, err = w.Write(out); err != nil {
				break
			}
			out = out[:0]
		}
	}
	if err == nil {
		_, err = w.Write(append(out, ']', '\n'))
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

type attributeOptions struct {
	preset    string
	overrides string
	evidence  string
	mode      string
	phases    bool
	inspector pathList
	sources   markerSources
	file      string
	job       jobFlag
	strict    bool
	page      bool   // report: build the page's lanes while reading
	ledger    bool   // ledger: build the ledger's columns while reading
	format    string // attribute: json or table
	quiet     bool   // attribute: no summary line on stderr
}

// parseAttributeArgs parses flags and the one FILE argument in any order.
func parseAttributeArgs(args []string) (attributeOptions, error) {
	var o attributeOptions
	fs := flag.NewFlagSet("attribute", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.preset, "preset", "", "")
	fs.StringVar(&o.overrides, "overrides", "", "")
	fs.BoolVar(&o.phases, "phases", false, "")
	fs.Var(&o.inspector, "nccl-inspector", "")
	o.sources.register(fs)
	fs.StringVar(&o.mode, "mode", attribution.ModeReference, "")
	fs.StringVar(&o.evidence, "evidence", "", "")
	addRunFlags(fs, &o)
	fs.StringVar(&o.format, "format", formatJSON, "")
	fs.BoolVar(&o.quiet, "q", false, "")
	fs.BoolVar(&o.quiet, "quiet", false, "")
	var files []string
	rest := args
	for {
		if err := fs.Parse(rest); err != nil {
			return o, err
		}
		rest = fs.Args()
		if len(rest) == 0 {
			break
		}
		// flag stops at the first non-flag; "--" ends flags for good.
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			files = append(files, rest...)
			break
		}
		files = append(files, rest[0])
		rest = rest[1:]
	}
	if err := checkMode(&o); err != nil {
		return o, err
	}
	if err := checkFormat(&o); err != nil {
		return o, err
	}
	var err error
	o.file, err = oneFile(files)
	return o, err
}

// oneFile is the one FILE argument of a command.
func oneFile(files []string) (string, error) {
	switch len(files) {
	case 0:
		return "", errors.New("missing FILE (use - for standard input)")
	case 1:
		return files[0], nil
	}
	return "", fmt.Errorf("expected one FILE, got %d: %s", len(files), strings.Join(files, " "))
}

// parseTuning reads --overrides and --evidence; it says on stderr which
// one is malformed (ok false: exit 2).
func parseTuning(prog, overridesText, evidenceText string, stderr io.Writer) (overrides, evidenceKeys map[string]any, ok bool) {
	overrides, err := parseOverrides(overridesText)
	if err != nil {
		fmt.Fprintf(stderr, "%s: --overrides: %v\n", prog, err)
		return nil, nil, false
	}
	evidenceKeys, err = parseOverrides(evidenceText)
	if err != nil {
		fmt.Fprintf(stderr, "%s: --evidence: %v\n", prog, err)
		return nil, nil, false
	}
	return overrides, evidenceKeys, true
}

// parseOverrides decodes the --overrides object with json.Number values, the
// form attribution.ResolveConfig type-checks. Empty text and null mean none.
func parseOverrides(text string) (map[string]any, error) {
	if strings.TrimSpace(text) == "" {
		return nil, nil
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	if dec.More() {
		return nil, errors.New("invalid JSON: unexpected data after the object")
	}
	switch m := v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return m, nil
	}
	return nil, errors.New("must be a JSON object")
}
