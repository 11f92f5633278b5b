package main

import (
	"cmp"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
)

// quality writes quality cases (events.jsonl + truth.json per family and seed) in the
// layout of the shared quality benchmark, so its scorer can score them too.
func quality(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("gpujobsim quality", flag.ContinueOnError)
	families := fs.String("families", "all", "comma-separated family names, or all")
	seeds := fs.String("seeds", "1,2,3", "comma-separated seeds")
	out := fs.String("out", "", "folder to write DIR/<family>-s<seed>/ into (required)")
	stats := fs.Bool("nccl-stats", false, "also write NCCL's comm_memory_stats records")
	shapeName := fs.String("shape", "default", "job shape: "+strings.Join(jobsim.QualityShapeNames(), ", "))
	var shape jobsim.QualityShape
	ranks := fs.Int("ranks", 0, "world size (0: the shape's)")
	perHost := fs.Int("gpus-per-host", 0, "ranks per host (0: the shape's)")
	rate := fs.Float64("rate", 0, "memory samples per second per rank (0: the shape's)")
	commRanks := fs.Bool("comm-ranks", false, "markers list the communicator's ranks (nccl.comm.ranks; the wide shape always does)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: gpujobsim quality -out DIR [-families a,b] [-seeds 1,2] [-nccl-stats]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if *out == "" || fs.NArg() > 0 {
		fs.Usage()
		return usageError{errors.New("quality needs -out and no arguments")}
	}
	shape, ok := jobsim.QualityShapeByName(*shapeName)
	if !ok {
		return usageError{fmt.Errorf("-shape: unknown shape %q", *shapeName)}
	}
	shape.Ranks = cmp.Or(*ranks, shape.Ranks)
	shape.RanksPerHost = cmp.Or(*perHost, shape.RanksPerHost)
	shape.SampleHz = cmp.Or(*rate, shape.SampleHz)
	shape.CommRanksOnMarkers = shape.CommRanksOnMarkers || *commRanks
	var names []string
	if *families == "all" {
		for _, f := range jobsim.QualityFamilies {
			names = append(names, f.Name)
		}
	} else {
		names = strings.Split(*families, ",")
	}
	for _, s := range strings.Split(*seeds, ",") {
		seed, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
		if err != nil {
			return usageError{fmt.Errorf("-seeds: %w", err)}
		}
		for _, name := range names {
			c, err := jobsim.GenerateQualityCase(strings.TrimSpace(name), seed, shape, *stats)
			if err != nil {
				return usageError{err}
			}
			dir := filepath.Join(*out, fmt.Sprintf("%s-s%d", c.Truth.Family, seed))
			if err := jobsim.WriteQualityCase(dir, c); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "%s: %d records, %d collective rank-episodes, %d decoy rank-episodes (%s)\n",
				dir, len(c.Events), len(c.Truth.Collective), len(c.Truth.Decoys), c.Truth.VariantNote)
		}
	}
	return nil
}
