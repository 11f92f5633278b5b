// Package phase replays stormlog phase boundaries into phase spans and resolves
// a timestamp to the active phase (reference §3).
//
// Citations: "reference §N", bare §N, the steps S0–S12 and the releases R1/R2
// refer to docs/reference-semantics.md.
package phase

// Attribution is the reference's PhaseAttribution. Optional fields are nil
// when the reference has None; JSON follows phase_attribution_to_payload.
type Attribution struct {
	Resolution string   // "unique" or "ambiguous"
	Paths      []string // phase_paths
	Source     *string  // "exact", "thread_local", "heuristic"
	Path       *string
	ScopeID    *string
	ThreadID   *int64
	// ThreadIDBool says the span's thread_id was a boolean (see Span).
	ThreadIDBool bool
	ThreadName   *string
	Summary      *Summary
}

// Summary is phase_summary.
type Summary struct {
	PhasePath string
	Source    string
}

// Span is a replayed phase scope (the reference's PhaseSpan).
type Span struct {
	SessionID string
	Rank      int64
	ThreadID  int64
	// ThreadIDBool says the boundary's thread_id was a boolean: Python
	// groups it with the int (true == 1) and serialises it as the boolean.
	ThreadIDBool bool
	ThreadName   string
	ScopeID      string
	Path         []string
	StartNs      int64
	EndNs        int64
	Sequence     int64
	SyntheticEnd bool
}
