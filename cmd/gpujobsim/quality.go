package main

import (
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
	shape := jobsim.DefaultQualityShape()
	fs.IntVar(&shape.Ranks, "ranks", shape.Ranks, "world size")
	fs.IntVar(&shape.RanksPerHost, "gpus-per-host", shape.RanksPerHost, "ranks per host")
	fs.Float64Var(&shape.SampleHz, "rate", shape.SampleHz, "memory samples per second per rank")
	fs.BoolVar(&shape.CommRanksOnMarkers, "comm-ranks", shape.CommRanksOnMarkers, "markers list the communicator's ranks (nccl.comm.ranks)")
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
