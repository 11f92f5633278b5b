// Package quality is the project's own quality test for attribution modes: it runs a
// mode over simulated training jobs whose causes are known (the quality families of
// cmd/gpujobsim/jobsim) and checks, per family, that precision and recall stay within
// goals.
//
// # Pieces
//
//   - jobsim.GenerateQualityCase(family, seed, shape, ncclStats) builds one job: its
//     stormlog events (samples, one marker per collective per member rank with the
//     collective identity of evidence-mode §2.1, step events, and with ncclStats NCCL's
//     comm_memory_stats accounting of §2.2) and its truth (true collective episodes and
//     decoys per (episode, rank), persistent steps with their onset). Deterministic per
//     seed; `gpujobsim quality -out DIR` writes cases as events.jsonl + truth.json.
//   - A Mode is func(events, preset) -> results. ReferenceMode runs the reference;
//     CLIMode(ctx, bin, args...) runs a built `collectiveattr attribute ARGS --preset P -`.
//   - Evaluate(mode, Plan) scores every case of a plan (shape × families × seeds ×
//     presets × with/without accounting) with jobsim.ScoreQuality and sums per row.
//   - Check(table, goals) bounds measures per row: EvidenceGoals (issue 17's table),
//     PhysicsGoals and CadenceGoals (the physics and cadence families of issues 31 and 24,
//     every preset) and ReferenceFindings (the reference mode's measured strengths and
//     weaknesses).
//
// # Matching
//
// A claim is a result classified likely, confident or confirmed. It is true when it
// overlaps (inclusive) a true collective episode of its rank, a persistent step only in
// its first 500 ms; recall counts true (episode, rank) pairs a claim overlaps. Confident
// precision is about confident and confirmed results; decoys confident counts decoy
// rank-episodes such a result overlaps. For a job with no collective episode the
// measure is claims per rank-hour of sampled time.
//
// # Families (variant = seed mod 3)
//
//	easy           spikes of SpikeBytes on every rank at the world all_reduce in ~10 % of steps
//	ddp_decoy      easy + non-collective spikes on every rank starting −40..+60 ms around the
//	               all_reduce launch in half the other steps (decoys)
//	lazy_stepup    easy + a permanent StepUpBytes at the first all_gather; step at
//	               5–30 / 30–60 / 60–90 % of the run
//	skew           easy + every host but the first off by 0–0.15 / 0.15–1 / 1–2 s
//	subset         spikes on one tensor-parallel group (a host / half a host / 2 ranks), markers
//	               on the group only
//	noisy          easy + allocator churn (5–20 % of the baseline), sampling 0.5–2× the rate
//	               with ×0.7–1.3 jitter
//	pipeline       4 stages × ranks/4 replicas, send/recv markers on the pair only; spikes on
//	               one pair; 4 / 6 / 8 micro-batches
//	no_collective  collectives but no collective episode: co-timed decoys in ~20 % of steps
//
// Every family carries SingleRankDecoys unrelated single-rank spikes. Shapes (ranks,
// hosts, device, sampling rate and jitter, spike, step and decoy sizes, step timing) are
// jobsim.QualityShape values; "default" (16 ranks on 2 × 8, 10 Hz, 1 GiB spikes),
// "small" (8 on 2 × 4, 20 Hz, 512 MiB) and "wide" (32 on 4 × 8, 5 Hz, 2 GiB, markers
// listing the communicator's ranks) are named.
//
// # Plugging in evidence mode
//
// EvidenceMode runs evidence mode in process and is what TestEvidenceModeGoals checks;
// the same goals run against a built CLI with:
//
//	COLLECTIVEATTR_QUALITY_CLI=./collectiveattr COLLECTIVEATTR_QUALITY_CLI_ARGS="--mode evidence" \
//	    go test ./internal/quality -run EvidenceModeGoals -v
//
// # Markers from NCCL Inspector logs
//
// ViaInspector(mode, layout) rewrites a case's identified markers as NCCL Inspector
// records (verbose or default layout, with a dump interval) and reads them back as
// `--nccl-inspector` does; TestInspectorLayoutQuality bounds what evidence mode keeps
// with each (COLLECTIVEATTR_QUALITY_INSPECTOR=full: seeds 1–3, the README's figures).
package quality
