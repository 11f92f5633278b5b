// Command gpujobsim simulates a distributed GPU training job for collectiveattr and prints
// the ground truth of what it injected; `gpujobsim report` compares a collector's results
// with that truth.
//
//	gpujobsim [flags]                      run a job (real time, OTLP/HTTP to 127.0.0.1:4318 when a collector listens there)
//	gpujobsim -fast -epoch 2026-01-01T00:00:00Z ...   as fast as possible, synthetic timestamps
//	gpujobsim -requests-out FILE -epoch T [-from A -to B] ...   write the OTLP requests to replay at T (e2e TestScaleRealTime)
//	gpujobsim report -truth truth.json results.json...
//	gpujobsim modes -truth truth.json -reference FILE -evidence FILE   the two modes side by side
//	gpujobsim quality -out DIR [-families F,...] [-seeds S,...] [-nccl-stats]   quality cases
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch {
	case len(os.Args) > 1 && os.Args[1] == "report":
		err = report(os.Args[2:], os.Stdout)
	case len(os.Args) > 1 && os.Args[1] == "modes":
		err = modes(os.Args[2:], os.Stdout)
	case len(os.Args) > 1 && os.Args[1] == "quality":
		err = quality(os.Args[2:], os.Stdout)
	default:
		err = simulate(ctx, os.Args[1:], os.Stdout, os.Stderr)
	}
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "gpujobsim:", err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

type usageError struct{ error }

func simulate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg := jobsim.DefaultConfig()
	fs := flag.NewFlagSet("gpujobsim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.JobID, "job-id", cfg.JobID, "training.job.id of the simulated job")
	fs.IntVar(&cfg.Ranks, "ranks", cfg.Ranks, "world size (one rank per GPU)")
	fs.IntVar(&cfg.GPUsPerHost, "gpus-per-host", cfg.GPUsPerHost, "GPUs per host; ranks fill hosts in order")
	fs.IntVar(&cfg.MissingRanks, "missing-ranks", cfg.MissingRanks, "highest ranks that never report (world size still counts them)")
	fs.IntVar(&cfg.LateRanks, "late-ranks", cfg.LateRanks, "ranks (the highest reporting ones) that start reporting late")
	fs.DurationVar(&cfg.LateBy, "late-by", cfg.LateBy, "how late the late ranks start")
	fs.Int64Var(&cfg.Seed, "seed", cfg.Seed, "random seed: the same seed gives the same job")
	fs.DurationVar(&cfg.Duration, "duration", cfg.Duration, "job time to simulate")
	fs.Float64Var(&cfg.SampleRate, "rate", cfg.SampleRate, "memory samples per second per rank")
	fs.DurationVar(&cfg.StepPeriod, "step-period", cfg.StepPeriod, "training step period (>= 1.95s)")
	fs.IntVar(&cfg.CollectiveSpikes, "collective-spikes", cfg.CollectiveSpikes, "hidden-memory spikes injected at collectives")
	fs.IntVar(&cfg.UnrelatedSpikes, "unrelated-spikes", cfg.UnrelatedSpikes, "single-rank spikes injected away from collectives")
	fs.IntVar(&cfg.CotimedDecoys, "cotimed-decoys", cfg.CotimedDecoys, "non-collective spikes injected on every rank during an all_reduce (only NCCL accounting tells them apart)")
	fs.BoolVar(&cfg.StepUp, "step-up", cfg.StepUp, "inject the lazy NCCL buffer step up at the first reduce_scatter")
	fs.DurationVar(&cfg.ClockSkew, "clock-skew", cfg.ClockSkew, "largest per-host clock offset (±)")
	fs.IntVar(&cfg.WarmupSteps, "warmup-steps", cfg.WarmupSteps, "steps without injected collective spikes at the start")
	fs.BoolVar(&cfg.NCCLStats, "nccl-stats", cfg.NCCLStats, "also report NCCL's own communicator memory (comm_memory_stats records, nccl.comm.memory.total gauge)")
	memberLists := fs.String("member-lists", "declared", "which collective markers list the communicator's members (nccl.comm.ranks): declared (each rank's first marker and once a minute, as collectiveattr_torch does) or every (every marker, as plain NCCL instrumentation)")
	endpoint := fs.String("otlp-endpoint", defaultOTLPEndpoint, "OTLP/HTTP endpoint of the collector (empty: send nothing; when not given and no collector listens there, nothing is sent)")
	device := fs.String("device-metrics", "otlp", "who reports device memory: otlp (NVML in process), dcgm (the -dcgm-listen page), both")
	dcgmListen := fs.String("dcgm-listen", "", "serve a DCGM-exporter /metrics page on this address (e.g. 127.0.0.1:9400)")
	stormlogPath := fs.String("stormlog", "", "write stormlog TelemetryEvent v3 JSON Lines to this file")
	truthJSON := fs.String("truth-json", "", "write the ground truth as JSON to this file")
	inspectorDir := fs.String("nccl-inspector", "", "write the collectives as NCCL Inspector logs (<host>-pid<pid>.log) into this directory")
	inspectorVerbose := fs.Bool("nccl-inspector-verbose", false, "write the Inspector's verbose layout (op start and end) instead of the default one")
	fast := fs.Bool("fast", false, "send as fast as possible with synthetic timestamps instead of in real time")
	epochFlag := fs.String("epoch", "", "RFC 3339 time of job time 0 with -fast (default: now minus the duration)")
	flushInterval := fs.Duration("flush-interval", time.Second, "job time covered by one export batch")
	quiet := fs.Bool("quiet", false, "do not print the ground truth table")
	requestsOut := fs.String("requests-out", "", "write the OTLP export requests (protobuf, framed with the job time each is due) to this file, - for stdout, instead of sending them, as fast as possible; needs -epoch (the wall time of job time 0 when they are replayed)")
	ranksPerRequest := fs.Int("ranks-per-request", 0, "with -requests-out: at most this many ranks per request (0: one metrics and one traces request per flush interval)")
	from := fs.Duration("from", 0, "with -requests-out: first job time to write (a multiple of -flush-interval), to generate a job in shards")
	to := fs.Duration("to", 0, "with -requests-out: job time to stop writing at (0: -duration)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	if *requestsOut == "" && (*ranksPerRequest != 0 || *from != 0 || *to != 0) {
		return usageError{errors.New("-ranks-per-request, -from and -to need -requests-out")}
	}
	if *requestsOut != "" {
		if *epochFlag == "" {
			return usageError{errors.New("-requests-out needs -epoch: the requests' timestamps are those of their replay")}
		}
		if *ranksPerRequest < 0 || *from < 0 || *to < 0 || (*to != 0 && *to <= *from) {
			return usageError{errors.New("-ranks-per-request, -from and -to must not be negative, and -to must be past -from")}
		}
		*fast = true
	}
	switch *memberLists {
	case "declared":
		cfg.MemberLists = jobsim.MembersDeclared
	case "every":
		cfg.MemberLists = jobsim.MembersOnEveryMarker
	default:
		return usageError{fmt.Errorf("-member-lists must be declared or every, got %q", *memberLists)}
	}
	s, err := jobsim.NewScenario(cfg)
	if err != nil {
		return usageError{err}
	}
	opts := jobsim.Options{Realtime: !*fast, FlushInterval: *flushInterval, RanksPerRequest: *ranksPerRequest, From: *from, To: *to}
	switch *device {
	case "otlp":
		opts.Device = jobsim.DeviceFromOTLP
	case "dcgm":
		opts.Device = jobsim.DeviceFromDCGM
	case "both":
		opts.Device = jobsim.DeviceFromBoth
	default:
		return usageError{fmt.Errorf("-device-metrics must be otlp, dcgm or both, got %q", *device)}
	}
	if opts.Device != jobsim.DeviceFromOTLP && *dcgmListen == "" {
		return usageError{errors.New("-device-metrics dcgm/both needs -dcgm-listen")}
	}
	switch {
	case *epochFlag != "" && !*fast:
		return usageError{errors.New("-epoch needs -fast: a real-time run starts now")}
	case *epochFlag != "":
		if opts.Epoch, err = time.Parse(time.RFC3339Nano, *epochFlag); err != nil {
			return usageError{fmt.Errorf("-epoch: %w", err)}
		}
	case *fast:
		opts.Epoch = time.Now().Add(-cfg.Duration).Truncate(time.Second)
	default:
		opts.Epoch = time.Now()
	}
	explicit := false
	fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "otlp-endpoint" })
	var requests *bufio.Writer
	if *requestsOut != "" {
		if explicit {
			return usageError{errors.New("-requests-out writes the requests instead of sending them: drop -otlp-endpoint")}
		}
		var w io.Writer = stdout
		if *requestsOut == "-" {
			stdout = stderr // the stream is the requests
		} else {
			f, err := os.Create(*requestsOut)
			if err != nil {
				return err
			}
			defer f.Close()
			w = f
		}
		requests = bufio.NewWriterSize(w, 1<<20)
		opts.Requests = requests
		*endpoint = ""
	}
	target, err := otlpTarget(*endpoint, explicit, stderr)
	if err != nil {
		return err
	}
	if target != "" {
		opts.OTLP = jobsim.NewOTLPSender(target)
	}
	if *stormlogPath != "" {
		f, err := os.Create(*stormlogPath)
		if err != nil {
			return err
		}
		defer f.Close()
		opts.Stormlog = f
	}
	if *inspectorVerbose && *inspectorDir == "" {
		return usageError{errors.New("-nccl-inspector-verbose needs -nccl-inspector")}
	}
	if *inspectorDir != "" {
		logs, err := s.NewInspectorLogs(*inspectorDir, *inspectorVerbose, opts.Epoch)
		if err != nil {
			return err
		}
		defer logs.Close()
		opts.Inspector = logs
	}
	if *dcgmListen != "" {
		ln, err := net.Listen("tcp", *dcgmListen)
		if err != nil {
			return err
		}
		mux := http.NewServeMux()
		epoch := opts.Epoch
		mux.Handle("/metrics", s.DCGMHandler(func() time.Duration { return time.Since(epoch) }))
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		go func() { _ = srv.Serve(ln) }()
		defer srv.Close()
	}

	start := time.Now()
	stats, runErr := s.Run(ctx, opts)
	if requests != nil && runErr == nil {
		runErr = requests.Flush()
	}
	if !*quiet {
		verb := "sent"
		if requests != nil {
			verb = "wrote requests of"
		}
		fmt.Fprintf(stdout, "%s %d data points and %d spans in %d batches", verb, stats.DataPoints, stats.Spans, stats.Batches)
		if opts.Stormlog != nil {
			fmt.Fprintf(stdout, ", wrote %d stormlog events", stats.StormlogEvents)
		}
		if opts.Inspector != nil {
			fmt.Fprintf(stdout, ", wrote %d NCCL Inspector records", opts.Inspector.Records)
		}
		fmt.Fprintf(stdout, " (%.1fs)\n", time.Since(start).Seconds())
	}
	truth := s.Truth(opts.Epoch)
	if *truthJSON != "" {
		b, err := json.MarshalIndent(truth, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(*truthJSON, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	if !*quiet {
		if err := truth.WriteTable(stdout); err != nil {
			return err
		}
	}
	return runErr
}

func report(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("gpujobsim report", flag.ContinueOnError)
	truthPath := fs.String("truth", "", "ground truth JSON written by gpujobsim -truth-json (required)")
	check := fs.Bool("check", false, "exit 1 when the results are not what the reference mode is expected to give")
	perRank := fs.Bool("per-rank", false, "one row per result instead of one per group of ranks that agree")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "usage: gpujobsim report -truth truth.json [-check] FILE... (file exporter output: result logs or spans)")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err}
	}
	if *truthPath == "" || fs.NArg() == 0 {
		fs.Usage()
		return usageError{errors.New("report needs -truth and at least one results file")}
	}
	b, err := os.ReadFile(*truthPath)
	if err != nil {
		return err
	}
	var truth jobsim.Truth
	if err := json.Unmarshal(b, &truth); err != nil {
		return fmt.Errorf("%s: %w", *truthPath, err)
	}
	results, err := jobsim.ReadResults(fs.Args()...)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nAttribution results for job %s: %d (times in seconds from job start)\n", truth.JobID, len(results))
	write := jobsim.WriteGroupedResultsTable
	if *perRank {
		write = jobsim.WriteResultsTable
	}
	if err := write(stdout, results, truth.EpochNs); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "\nInjected vs found (\"expected\": what the reference mode is built to say; \"right?\": whether that is what happened):")
	v := jobsim.Compare(truth, results)
	if err := v.WriteVerdict(stdout, truth); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nverdict: %s\n", v.Summary())
	if v.OK {
		return nil
	}
	if *check {
		return errors.New("the results are not what the reference mode is expected to give")
	}
	return nil
}
