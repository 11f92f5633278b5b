package phase

import (
	"slices"
	"strconv"
	"strings"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

// Resolution values.
const (
	Unique    = "unique"
	Ambiguous = "ambiguous"
)

// Source values.
const (
	SourceExact       = "exact"
	SourceThreadLocal = "thread_local"
	SourceHeuristic   = "heuristic"
)

// FormatPath joins the non-empty parts of a phase path with " / ".
func FormatPath(path []string) string {
	n := 0
	for _, p := range path {
		if p != "" {
			n++
		}
	}
	if n == len(path) {
		return strings.Join(path, " / ")
	}
	parts := make([]string, 0, n)
	for _, p := range path {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, " / ")
}

// Merge is merge_phase_attributions (§3.4), used when two results of a rank
// merge: nil with x gives x (unchanged, summary included); if either side has
// no paths the other is returned; when both sides are the same unique scope
// (one common path, same scope and thread) a is returned; otherwise the
// result is ambiguous over the sorted union of paths, with no source and no
// summary.
func Merge(a, b *Attribution) *Attribution {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	pa, pb := a.effectivePaths(), b.effectivePaths()
	if len(pa) == 0 {
		return b
	}
	if len(pb) == 0 {
		return a
	}
	union := append(slices.Clone(pa), pb...)
	slices.Sort(union)
	union = slices.Compact(union)
	if len(union) == 1 && sameUniqueScope(a, b) {
		return a
	}
	return &Attribution{Resolution: Ambiguous, Paths: union}
}

// effectivePaths is _phase_paths: the non-empty phase_paths, else
// [phase_path] when set and non-empty, else none.
func (a *Attribution) effectivePaths() []string {
	if len(a.Paths) > 0 {
		out := make([]string, 0, len(a.Paths))
		for _, p := range a.Paths {
			if p != "" {
				out = append(out, p)
			}
		}
		return out
	}
	if a.Path != nil && *a.Path != "" {
		return []string{*a.Path}
	}
	return nil
}

func sameUniqueScope(a, b *Attribution) bool {
	return a.Resolution == Unique && b.Resolution == Unique &&
		eqPtr(a.Path, b.Path) && eqPtr(a.ScopeID, b.ScopeID) && eqPtr(a.ThreadID, b.ThreadID)
}

func eqPtr[T comparable](a, b *T) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// Summarize is summarize_phase_attribution: the display string of an
// attribution, or nil. A heuristic summary reads "(likely) <path>"; a unique
// attribution its path; an ambiguous one "(ambiguous) p1 | p2".
func Summarize(a *Attribution) *string {
	if a == nil {
		return nil
	}
	if a.Summary != nil {
		s := a.Summary.PhasePath
		if a.Summary.Source == SourceHeuristic {
			s = "(likely) " + s
		}
		return &s
	}
	var labels []string
	for _, p := range a.Paths {
		if p != "" {
			labels = append(labels, p)
		}
	}
	switch {
	case a.Resolution == Unique && a.Path != nil && *a.Path != "":
		s := *a.Path
		return &s
	case a.Resolution == Unique && len(labels) == 1:
		return &labels[0]
	case a.Resolution == Ambiguous && len(labels) > 0:
		s := "(ambiguous) " + strings.Join(labels, " | ")
		return &s
	}
	return nil
}

// AppendJSON appends the phase_attribution_to_payload object (null for a nil
// attribution): phase_resolution, phase_paths (non-empty ones), then only the
// fields that are set: phase_source, phase_path, scope_id, thread_id,
// thread_name, phase_summary {phase_path, source}.
func (a *Attribution) AppendJSON(dst []byte) []byte {
	if a == nil {
		return append(dst, "null"...)
	}
	dst = append(dst, `{"phase_resolution":`...)
	dst = telemetry.AppendString(dst, a.Resolution)
	dst = append(dst, `,"phase_paths":[`...)
	first := true
	for _, p := range a.Paths {
		if p == "" {
			continue
		}
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = telemetry.AppendString(dst, p)
	}
	dst = append(dst, ']')
	if a.Source != nil {
		dst = append(dst, `,"phase_source":`...)
		dst = telemetry.AppendString(dst, *a.Source)
	}
	if a.Path != nil {
		dst = append(dst, `,"phase_path":`...)
		dst = telemetry.AppendString(dst, *a.Path)
	}
	if a.ScopeID != nil {
		dst = append(dst, `,"scope_id":`...)
		dst = telemetry.AppendString(dst, *a.ScopeID)
	}
	if a.ThreadID != nil {
		dst = append(dst, `,"thread_id":`...)
		if a.ThreadIDBool {
			dst = strconv.AppendBool(dst, *a.ThreadID != 0)
		} else {
			dst = strconv.AppendInt(dst, *a.ThreadID, 10)
		}
	}
	if a.ThreadName != nil {
		dst = append(dst, `,"thread_name":`...)
		dst = telemetry.AppendString(dst, *a.ThreadName)
	}
	if a.Summary != nil {
		dst = append(dst, `,"phase_summary":{"phase_path":`...)
		dst = telemetry.AppendString(dst, a.Summary.PhasePath)
		dst = append(dst, `,"source":`...)
		dst = telemetry.AppendString(dst, a.Summary.Source)
		dst = append(dst, '}')
	}
	return append(dst, '}')
}

// MarshalJSON encodes the attribution as phase_attribution_to_payload does.
func (a *Attribution) MarshalJSON() ([]byte, error) { return a.AppendJSON(nil), nil }
