package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

// addRunFlags defines the flags attribute and report share about what is
// read: which job, and whether a skipped line fails the run.
func addRunFlags(fs *flag.FlagSet, o *attributeOptions) {
	fs.Var(&o.job, "job", "")
	fs.BoolVar(&o.strict, "strict", false, "")
}

// readInput opens FILE and reads its records (and the Inspector logs) into
// a run of the selected job. It says on stderr what it skipped: FILE's
// truncated last line (a writer still appending: the reference drops it)
// and unreadable Inspector lines, which --strict makes an error. It returns
// the run and exitOK, or nil and the exit code of the error it printed.
func readInput(prog string, opts attributeOptions, stdin io.Reader, stderr io.Writer) (*runInput, int) {
	in := stdin
	if opts.file != "-" {
		f, err := os.Open(opts.file)
		if err != nil {
			fmt.Fprintf(stderr, "%s: %v\n", prog, err)
			return nil, exitInput
		}
		defer f.Close()
		in = f
	}
	if err := opts.sources.load(stderr); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return nil, exitInput
	}
	runIn, err := readRun(in, opts)
	if err != nil {
		var recErr *telemetry.RecordError
		if !errors.As(err, &recErr) {
			err = fmt.Errorf("%s: %s: %w", prog, opts.file, err)
		}
		fmt.Fprintln(stderr, err)
		return nil, exitInput
	}
	if t := runIn.tail; t.Line > 0 {
		if opts.strict {
			fmt.Fprintf(stderr, "%s: %s: line %d: truncated last line (%d bytes, no newline) (--strict)\n", prog, opts.file, t.Line, t.Bytes)
			return nil, exitInput
		}
		fmt.Fprintf(stderr, "%s: warning: %s: line %d: truncated last line (%d bytes, no newline) skipped; --strict makes this an error\n", prog, opts.file, t.Line, t.Bytes)
	}
	if err := runIn.checkJobs(opts.file); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return nil, exitConfig
	}
	if err := runIn.addSourceMarkers(stderr); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
		return nil, exitInput
	}
	if n := runIn.inspectorUnreadable; n > 0 && opts.strict {
		fmt.Fprintf(stderr, "%s: --nccl-inspector: %d unreadable lines (--strict)\n", prog, n)
		return nil, exitInput
	}
	return runIn, exitOK
}
