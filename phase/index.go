package phase

import (
	"cmp"
	"slices"
	"strings"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

type groupKey struct {
	session string
	rank    int64
}

// Index is the reference's PhaseReplayIndex: phase spans per (session, rank),
// sorted by (start, end). It is immutable after NewIndex and safe for
// concurrent use.
type Index struct {
	groups map[groupKey][]Span
}

// NewIndex builds an index (PhaseReplayIndex.from_events, §3.2) by replaying
// the boundary events, and adds already-replayed spans (e.g. phase spans that
// arrived as OTLP spans) as they are. Either input may be empty. It is an
// IndexBuilder fed events, then IndexBuilder.Index(spans).
func NewIndex(events []telemetry.Event, spans []Span) *Index {
	var b IndexBuilder
	for i := range events {
		b.Add(&events[i])
	}
	return b.Index(spans)
}

// IndexBuilder builds an Index from events fed one at a time in input
// order, keeping only what the replay reads: the phase boundaries and each
// (session, rank)'s last event time (where a scope still open at the end
// ends). Its zero value is ready to use.
type IndexBuilder struct {
	sessionEnd map[groupKey]int64
	boundaries []boundaryAt
}

// Add records what e contributes to the index: nothing unless it has a
// session. The builder keeps strings and maps of e's boundary (its phase
// scope's attributes), not e.
func (b *IndexBuilder) Add(e *telemetry.Event) {
	if e.SessionID == "" {
		return
	}
	k := groupKey{e.SessionID, e.Rank}
	if b.sessionEnd == nil {
		b.sessionEnd = make(map[groupKey]int64)
	}
	if end, ok := b.sessionEnd[k]; !ok || e.TimestampNs > end {
		b.sessionEnd[k] = e.TimestampNs
	}
	if bd, ok := ParseBoundary(e); ok {
		b.boundaries = append(b.boundaries, boundaryAt{rank: e.Rank, b: bd})
	}
}

// Index replays the boundaries added so far and adds spans, as NewIndex
// does. It takes spans over: it sorts them in place and keeps sub-slices of
// it, so the caller must not modify spans while the index is in use. A
// processor rebuilds its index from hundreds of thousands of buffered phase
// spans every evaluation, so groups are not copied where they need not be:
// spans of one (session, rank) that come one after another become their
// group as they are; a group whose spans are spread out, or that also has
// replayed spans, is copied. Index sorts the builder's boundaries: call it
// once.
func (b *IndexBuilder) Index(spans []Span) *Index {
	ix := &Index{groups: make(map[groupKey][]Span)}
	for _, s := range b.replay() {
		k := groupKey{s.SessionID, s.Rank}
		ix.groups[k] = append(ix.groups[k], s)
	}
	for i := 0; i < len(spans); {
		k := groupKey{spans[i].SessionID, spans[i].Rank}
		j := i + 1
		for j < len(spans) && spans[j].SessionID == k.session && spans[j].Rank == k.rank {
			j++
		}
		if g, ok := ix.groups[k]; ok {
			ix.groups[k] = append(g, spans[i:j]...)
		} else {
			// Full slice expression: a later append to the group copies
			// instead of overwriting the spans after it.
			ix.groups[k] = spans[i:j:j]
		}
		i = j
	}
	for _, g := range ix.groups {
		slices.SortStableFunc(g, func(a, b Span) int {
			return cmp.Or(cmp.Compare(a.StartNs, b.StartNs), cmp.Compare(a.EndNs, b.EndNs))
		})
	}
	return ix
}

type boundaryAt struct {
	rank int64
	b    Boundary
}

type threadKey struct {
	session string
	rank    int64
	thread  int64
}

// replay turns boundaries into spans in the reference's emission order:
// closed scopes as their exits are replayed, then scopes still open (ending
// synthetically at the group's last event) in the order their thread stacks
// were (re)created.
func (b *IndexBuilder) replay() []Span {
	sessionEnd, boundaries := b.sessionEnd, b.boundaries
	if len(boundaries) == 0 {
		return nil
	}
	slices.SortStableFunc(boundaries, func(x, y boundaryAt) int {
		return cmp.Or(
			strings.Compare(x.b.SessionID, y.b.SessionID),
			cmp.Compare(x.rank, y.rank),
			cmp.Compare(x.b.TimestampNs, y.b.TimestampNs),
			cmp.Compare(x.b.Sequence, y.b.Sequence),
			strings.Compare(x.b.ScopeID, y.b.ScopeID),
		)
	})

	type stack struct {
		order  int
		scopes []Boundary
	}
	stacks := make(map[threadKey]*stack)
	created := 0
	var spans []Span
	for _, ba := range boundaries {
		b := &ba.b
		tk := threadKey{b.SessionID, ba.rank, b.ThreadID}
		st := stacks[tk]
		if b.Action == "enter" {
			if st == nil {
				st = &stack{order: created}
				created++
				stacks[tk] = st
			}
			st.scopes = append(st.scopes, *b)
			continue
		}
		if st == nil || len(st.scopes) == 0 || st.scopes[len(st.scopes)-1].ScopeID != b.ScopeID {
			// The reference ignores an exit that does not close the top
			// scope of its thread (but creates the empty stack entry).
			if st == nil {
				stacks[tk] = &stack{order: created}
				created++
			}
			continue
		}
		opened := st.scopes[len(st.scopes)-1]
		st.scopes = st.scopes[:len(st.scopes)-1]
		if len(st.scopes) == 0 {
			delete(stacks, tk)
		}
		spans = append(spans, Span{
			SessionID:    b.SessionID,
			Rank:         ba.rank,
			ThreadID:     b.ThreadID,
			ThreadIDBool: b.ThreadIDBool,
			ThreadName:   b.ThreadName,
			ScopeID:      b.ScopeID,
			Path:         opened.Path,
			StartNs:      opened.TimestampNs,
			EndNs:        b.TimestampNs,
			Sequence:     opened.Sequence,
		})
	}

	type open struct {
		key threadKey
		st  *stack
	}
	var remaining []open
	for k, st := range stacks {
		if len(st.scopes) > 0 {
			remaining = append(remaining, open{k, st})
		}
	}
	slices.SortFunc(remaining, func(a, b open) int { return cmp.Compare(a.st.order, b.st.order) })
	for _, o := range remaining {
		end, ok := sessionEnd[groupKey{o.key.session, o.key.rank}]
		if !ok {
			continue
		}
		for _, s := range o.st.scopes {
			spans = append(spans, Span{
				SessionID:    o.key.session,
				Rank:         o.key.rank,
				ThreadID:     s.ThreadID,
				ThreadIDBool: s.ThreadIDBool,
				ThreadName:   s.ThreadName,
				ScopeID:      s.ScopeID,
				Path:         s.Path,
				StartNs:      s.TimestampNs,
				EndNs:        end,
				Sequence:     s.Sequence,
				SyntheticEnd: true,
			})
		}
	}
	return spans
}

// Spans returns the spans of one session and rank, sorted by (start, end).
// The slice is shared: do not modify it.
func (ix *Index) Spans(sessionID string, rank int64) []Span {
	if ix == nil {
		return nil
	}
	return ix.groups[groupKey{sessionID, rank}]
}

// Active returns the spans of a session and rank active at t (start <= t <=
// end, both inclusive), in index order.
func (ix *Index) Active(t int64, sessionID string, rank int64) []Span {
	var out []Span
	for _, s := range ix.Spans(sessionID, rank) {
		if s.StartNs > t {
			break
		}
		if t <= s.EndNs {
			out = append(out, s)
		}
	}
	return out
}

// Resolve is PhaseReplayIndex.resolve(timestamp_ns, session_id, rank) without
// origin hints, the way collective attribution calls it (§2.3 S11): nil for
// an empty session or when no span is active. A nil *Index resolves nothing.
func (ix *Index) Resolve(timestampNs int64, sessionID string, rank int64) *Attribution {
	if ix == nil || sessionID == "" {
		return nil
	}
	return AttributeActive(ix.Active(timestampNs, sessionID, rank), nil, "")
}

// ResolveForEvent is resolve_phase_for_event: the event's own timestamp,
// session and rank, with the origin hints metadata.origin_thread_id (an int)
// and metadata.origin_phase_scope_id (a non-empty string) when present.
func (ix *Index) ResolveForEvent(e *telemetry.Event) *Attribution {
	if ix == nil || e.SessionID == "" {
		return nil
	}
	var originThread *int64
	var originScope string
	if e.HasMetadata() {
		thread, _ := e.MetadataLookup("origin_thread_id")
		if v, ok := telemetry.IntValue(thread.Value()); ok {
			originThread = &v
		}
		scope, _ := e.MetadataLookup("origin_phase_scope_id")
		originScope, _ = scope.AsString()
	}
	return AttributeActive(ix.Active(e.TimestampNs, e.SessionID, e.Rank), originThread, originScope)
}
