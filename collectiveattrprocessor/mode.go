package collectiveattrprocessor // import "github.com/collectiveattr/collectiveattr/collectiveattrprocessor"

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/inspector"
	"github.com/collectiveattr/collectiveattr/internal/parallel"
	"github.com/collectiveattr/collectiveattr/window"
)

// AttributionMode selects the attribution engine (README "Attribution
// modes").
type AttributionMode string

const (
	// ModeReference is stormlog's heuristic, bit-exact (the default).
	ModeReference AttributionMode = attribution.ModeReference
	// ModeEvidence is evidence mode (docs/evidence-mode.md): it reads the
	// markers' collective identity and NCCL's memory accounting.
	ModeEvidence AttributionMode = attribution.ModeEvidence
)

// validateMode checks mode and resolves the evidence configuration. The
// evidence keys are validated in either mode, so that a typo is caught
// before the mode is switched.
func (cfg *Config) validateMode() error {
	if _, err := cfg.strategy(); err != nil {
		return err
	}
	_, err := cfg.evidenceConfig()
	return err
}

// evidenceConfig is the engine configuration of evidence mode: the preset
// and overrides resolved as the reference resolves them, and the
// `evidence` keys over the preset's evidence defaults.
func (cfg *Config) evidenceConfig() (evidence.Config, error) {
	return evidence.ResolveConfig(cfg.Preset, cfg.Overrides, cfg.Evidence)
}

// modeStrategy is an attribution mode as the processor runs it: what
// ingestion reads for the mode's engine, what a job's window buffers, and
// the engine. newCore takes it once from cfg.Mode (modeStrategies) and
// hands each layer its part; nothing past that point asks which mode
// runs. A new mode is a new entry here, with its window.Mode and its
// engine; ingestion and the store change only for an input no mode reads
// yet.
type modeStrategy struct {
	// reads is what ingestion reads for the engine beyond what every
	// engine reads.
	reads ingest.EngineReads
	// inspectorMarkers turns an NCCL Inspector record into the markers
	// the engine reads; inspectorCommRanks looks up the communicator's
	// members for it.
	inspectorMarkers   inspector.MarkerFunc
	inspectorCommRanks bool
	// window is what a job's window buffers for the engine.
	window window.Mode
	// newEngine returns the engine; ref is the reference configuration
	// resolved from the preset and overrides.
	newEngine func(cfg *Config, ref attribution.Config, notes engineNotes) (engine, error)
}

// modeStrategies holds the strategy of each mode.
var modeStrategies = map[AttributionMode]modeStrategy{
	ModeReference: {
		inspectorMarkers: inspector.ReferenceMarkers,
		window:           window.ReferenceMode,
		newEngine: func(_ *Config, ref attribution.Config, _ engineNotes) (engine, error) {
			return &referenceEngine{cfg: ref}, nil
		},
	},
	// Evidence mode reads each marker as the collective it marks (an
	// Inspector record as one marker carrying the collective's identity,
	// members included, as the CLI reads it) and NCCL's accounting.
	ModeEvidence: {
		reads:              ingest.EngineReads{CollectiveMarkers: true, Accounting: true},
		inspectorMarkers:   inspector.EvidenceMarker,
		inspectorCommRanks: true,
		window:             window.EvidenceMode,
		newEngine: func(cfg *Config, _ attribution.Config, notes engineNotes) (engine, error) {
			ec, err := cfg.evidenceConfig()
			if err != nil {
				return nil, err
			}
			return &evidenceEngine{cfg: ec, notes: notes}, nil
		},
	},
}

// strategy is the strategy of cfg.Mode.
func (cfg *Config) strategy() (modeStrategy, error) {
	if m, ok := modeStrategies[cfg.Mode]; ok {
		return m, nil
	}
	names := make([]string, 0, len(modeStrategies))
	for name := range modeStrategies {
		names = append(names, string(name))
	}
	slices.Sort(names)
	return modeStrategy{}, fmt.Errorf("mode must be one of %s, got %q", strings.Join(names, ", "), cfg.Mode)
}

// engine is an attribution mode's engine: what it reads of a job's
// buffers, how it attributes them, and how long a result waits to settle.
type engine interface {
	// read copies what the engine reads of job's buffers (under the
	// store's lock, or of a detached job) and returns the attribution of
	// that copy, to run without the lock. One core's reads and
	// attributions never overlap (evalMu): they share the engine's
	// scratch space, valid until the next read.
	read(job *window.Job) func() []attribution.Result
	// release ends the latest read, once its attribution and the ledger
	// are done, without the lock: it makes room in the job's sample
	// copies for the next read, which then copies under the lock only
	// what arrived in between.
	release()
	// settleDelay is how far past a result's interval end the job's
	// newest event must be before on_settle emits it, given the
	// configured settle_delay.
	settleDelay(configured time.Duration) time.Duration
	// ledgerInput is the evidence input of the latest read with its
	// interval padding, for the hidden-memory ledger; nil where the mode
	// buffers no NCCL accounting (the reference mode).
	ledgerInput() (*evidence.Input, int64)
	// workers is how many goroutines an attribution (and the ledger)
	// spreads a job's ranks over.
	workers() int
}

// roundWorkers is an engine's goroutines per round: n when set (tests),
// else the cores the process may use now (GOMAXPROCS, which the runtime
// adjusts to a container's CPU limit), read at each round.
type roundWorkers struct{ n int }

func (w roundWorkers) workers() int {
	if w.n > 0 {
		return w.n
	}
	return parallel.Workers()
}

// engineNotes are what an engine tells the component about a job's input
// beside its results (each may be nil).
type engineNotes struct {
	// worldSizeDisagreement: the job's ranks declare different world sizes
	// (detail lists them); the engine uses size.
	worldSizeDisagreement func(job, detail string, size int64)
}

// referenceEngine is stormlog's heuristic over the store's columns.
type referenceEngine struct {
	cfg     attribution.Config
	scratch window.Scratch
	roundWorkers
}

func (e *referenceEngine) read(job *window.Job) func() []attribution.Result {
	snap := job.Snapshot(&e.scratch)
	return func() []attribution.Result {
		// The ranks' sorted gaps, updated by what came and left since the
		// last round, make the medians and the spike scan cost the new
		// samples rather than the window (window.Scratch.SortGaps).
		e.scratch.SortGaps(&snap, e.workers())
		return attribution.AttributeColumnsParallel(snap.Input, e.cfg, snap.Resolver, e.workers())
	}
}

func (e *referenceEngine) release() { e.scratch.ReserveReplicas() }

func (e *referenceEngine) settleDelay(configured time.Duration) time.Duration { return configured }

func (e *referenceEngine) ledgerInput() (*evidence.Input, int64) { return nil, 0 }

// evidenceEngine is evidence mode (docs/evidence-mode.md).
type evidenceEngine struct {
	cfg       evidence.Config
	scratch   window.Scratch
	evScratch window.EvidenceScratch
	last      window.EvidenceSnapshot
	notes     engineNotes
	roundWorkers
}

func (e *evidenceEngine) read(job *window.Job) func() []attribution.Result {
	e.last = job.EvidenceRead(&e.scratch, &e.evScratch)
	if d := e.last.WorldSizeDisagreement; d != "" && e.notes.worldSizeDisagreement != nil {
		e.notes.worldSizeDisagreement(job.ID(), d, e.last.Input.ExpectedWorldSize)
	}
	return func() []attribution.Result {
		e.evScratch.ExpandSamples(&e.last)
		return evidence.AttributeParallel(&e.last.Input, e.cfg, e.last.Resolver, e.workers())
	}
}

func (e *evidenceEngine) release() { e.scratch.ReserveReplicas() }

func (e *evidenceEngine) ledgerInput() (*evidence.Input, int64) {
	return &e.last.Input, e.cfg.IntervalPaddingNs
}

// settleDelay is at least evidence.baseline_window_ns: the engine tells a
// persistent step from a transient spike by the level over that span
// after the change, so a rise emitted sooner could be a step reported as
// a transient spike, and the step, which starts at the same onset, would
// then never be emitted.
func (e *evidenceEngine) settleDelay(configured time.Duration) time.Duration {
	return max(configured, time.Duration(e.cfg.Evidence.BaselineWindowNs))
}
