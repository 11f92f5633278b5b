package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
)

// modes prints, per injected event, what the reference and the evidence mode said about
// the same job (each mode's file exporter output), and with -check exits 1 when the
// evidence mode's results break what jobsim.ModesComparison.Check holds it to.
func modes(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("gpujobsim modes", flag.ContinueOnError)
	truthPath := fs.String("truth", "", "ground truth JSON written by gpujobsim -truth-json (required)")
	var refFiles, evFiles fileList
	fs.Var(&refFiles, "reference", "the reference mode's results file (file exporter output); repeatable")
	fs.Var(&evFiles, "evidence", "the evidence mode's results file (file exporter output); repeatable")
	check := fs.Bool("check", false, "exit 1 when the evidence mode's results break the demo's expectations")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: gpujobsim modes -truth truth.json -reference FILE... -evidence FILE... [-check]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if *truthPath == "" || len(refFiles) == 0 || len(evFiles) == 0 || fs.NArg() > 0 {
		fs.Usage()
		return usageError{errors.New("modes needs -truth, -reference and -evidence, and no other arguments")}
	}
	b, err := os.ReadFile(*truthPath)
	if err != nil {
		return err
	}
	var truth jobsim.Truth
	if err := json.Unmarshal(b, &truth); err != nil {
		return fmt.Errorf("%s: %w", *truthPath, err)
	}
	reference, err := jobsim.ReadResults(refFiles...)
	if err != nil {
		return err
	}
	evidence, err := jobsim.ReadResults(evFiles...)
	if err != nil {
		return err
	}
	c := jobsim.CompareModes(truth, reference, evidence)
	fmt.Fprintf(stdout, "\nThe two attribution modes on job %s, per injected event (times in seconds from job start;\n", truth.JobID)
	fmt.Fprintf(stdout, "\"NCCL's?\": whether NCCL allocated the memory):\n")
	if err := c.WriteTable(stdout); err != nil {
		return err
	}
	fmt.Fprintln(stdout)
	if err := c.WriteVerdicts(stdout); err != nil {
		return err
	}
	problems := c.Check()
	if len(problems) == 0 {
		return nil
	}
	fmt.Fprintf(stdout, "evidence mode NOT as expected:\n  %s\n", strings.Join(problems, "\n  "))
	if *check {
		return errors.New("the evidence mode's results are not as expected")
	}
	return nil
}

// fileList is a repeatable file flag.
type fileList []string

func (l *fileList) String() string { return strings.Join(*l, ",") }

func (l *fileList) Set(s string) error {
	*l = append(*l, s)
	return nil
}
