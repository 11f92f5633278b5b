package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/ledger"
)

const ledgerUsage = `Usage: collectiveattr ledger [--mode M] [--preset P] [--overrides JSON]
                           [--evidence JSON] [--nccl-inspector PATH]...
                           [--torch-profiler PATH]... [--flight-recorder PATH]...
                           [--job ID] [--strict] [-q] FILE|-

Split every sample's hidden memory (device used minus allocator reserved,
unclamped) into NCCL's part, the rank's context level and the unexplained
rest, so that hidden_bytes = nccl_bytes + context_bytes + unexplained_bytes
exactly (docs/evidence-mode.md §6). NCCL's part is NCCL's own accounting
(comm_memory_stats records) where the rank reports it, else the excess of
the collective changes the attribution found while they last (classified
collective_confident or above, or persistent steps classified
collective_likely).

Flags:
  --mode M          attribution mode for the attributed part: evidence (the
                    default: its results carry each change's excess and
                    whether it is a lasting step) or reference.
  --preset P, --overrides JSON, --evidence JSON, --nccl-inspector PATH,
  --torch-profiler PATH, --flight-recorder PATH, --job ID, --strict
                    as for "collectiveattr attribute".
  -q, --quiet       no summary line on stderr (warnings still go there).
  -h, --help        print this help.

Output: JSON Lines on stdout, one object per sample per rank in time order
(ties by rank): rank, timestamp_ns, device_used_bytes,
allocator_reserved_bytes (null when the sample has none), hidden_bytes,
nccl_bytes, nccl_source (accounting, attributed or none), context_bytes,
unexplained_bytes, then nccl_by_comm (communicator id to bytes) where some
communicator's part is known and flags where the sample was unusual
(no_allocator_reserved, negative_hidden, accounting_above_hidden). The
summary on stderr counts the rows and the flags.

Exit status: 0 success; 1 unreadable input, invalid record, unwritable
output or a skipped line with --strict; 2 usage or configuration error, or
several jobs without --job.
`

func parseLedgerArgs(args []string) (attributeOptions, error) {
	o := attributeOptions{mode: attribution.ModeEvidence}
	fs := flag.NewFlagSet("ledger", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.preset, "preset", "", "")
	fs.StringVar(&o.overrides, "overrides", "", "")
	fs.StringVar(&o.mode, "mode", o.mode, "")
	fs.StringVar(&o.evidence, "evidence", "", "")
	fs.Var(&o.inspector, "nccl-inspector", "")
	o.sources.register(fs)
	addRunFlags(fs, &o)
	fs.BoolVar(&o.quiet, "q", false, "")
	fs.BoolVar(&o.quiet, "quiet", false, "")
	files, err := parseInterspersed(fs, args)
	if err != nil {
		return o, err
	}
	if err := checkMode(&o); err != nil {
		return o, err
	}
	o.file, err = oneFile(files)
	return o, err
}

func runLedger(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	const prog = "collectiveattr ledger"
	opts, err := parseLedgerArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, ledgerUsage)
		return exitOK
	}
	if err != nil {
		return usageError(stderr, prog, "ledger", err)
	}
	overrides, evidenceKeys, ok := parseTuning(prog, opts.overrides, opts.evidence, stderr)
	if !ok {
		return exitConfig
	}
	opts.ledger = true
	runIn, code := readInput(prog, opts, stdin, stderr)
	if code != exitOK {
		return code
	}
	padding, err := intervalPadding(opts, overrides, evidenceKeys)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitConfig
	}
	results, err := runIn.attribute(opts.preset, overrides, evidenceKeys)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return exitConfig
	}
	in := ledger.Input{Ranks: runIn.window.LedgerRanks(), Results: results, PaddingNs: padding}
	runIn = nil // only the ledger's columns are read from here on
	l := ledger.New(&in)
	w := bufio.NewWriterSize(stdout, 64<<10)
	var (
		row ledger.Row
		buf []byte
	)
	for l.Next(&row) {
		buf = ledger.AppendRowJSON(buf[:0], &row)
		buf = append(buf, '\n')
		if _, err := w.Write(buf); err != nil {
			break
		}
	}
	if err := w.Flush(); err != nil {
		fmt.Fprintf(stderr, "%s: writing rows: %v\n", prog, err)
		return exitInput
	}
	if !opts.quiet {
		fmt.Fprintln(stderr, ledgerSummary(l.Stats(), len(in.Ranks)))
	}
	return exitOK
}

// intervalPadding is the interval_padding_ns of the mode's configuration:
// the ledger reads a result's samples inside its padded interval.
func intervalPadding(opts attributeOptions, overrides, evidenceKeys map[string]any) (int64, error) {
	if opts.mode == attribution.ModeEvidence {
		cfg, err := evidence.ResolveConfig(opts.preset, overrides, evidenceKeys)
		return cfg.IntervalPaddingNs, err
	}
	cfg, err := attribution.ResolveConfig(opts.preset, overrides)
	return cfg.IntervalPaddingNs, err
}

// ledgerSummary says in one line what the ledger wrote, e.g.
// "collectiveattr ledger: 9600 rows, 16 ranks (16 with NCCL accounting); flags: 2 negative_hidden".
func ledgerSummary(st ledger.Stats, ranks int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "collectiveattr ledger: %s, %s (%d with NCCL accounting", plural(st.Rows, "row"), plural(ranks, "rank"), st.TrackedRanks)
	if st.UntrackedRanks > 0 {
		fmt.Fprintf(&b, ", %d whose accounting never leaves 0, not used", st.UntrackedRanks)
	}
	if st.SharedComms > 0 {
		fmt.Fprintf(&b, ", %d communicators sharing another's memory counted once", st.SharedComms)
	}
	b.WriteString(")")
	sep := "; flags: "
	for _, f := range []struct {
		n    int
		name string
	}{{st.NoReserved, ledger.FlagNames[0]}, {st.NegativeHidden, ledger.FlagNames[1]}, {st.AccountingAboveHidden, ledger.FlagNames[2]}} {
		if f.n > 0 {
			fmt.Fprintf(&b, "%s%d %s", sep, f.n, f.name)
			sep = ", "
		}
	}
	return b.String()
}
