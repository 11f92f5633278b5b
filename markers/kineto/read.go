package kineto

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// rawEvent is the part of a trace event every event is read for; args are
// decoded only for the events that need them.
type rawEvent struct {
	Ph   string          `json:"ph"`
	Cat  string          `json:"cat"`
	Name string          `json:"name"`
	Tid  json.RawMessage `json:"tid"`
	Ts   json.Number     `json:"ts"`
	Dur  json.Number     `json:"dur"`
	Args json.RawMessage `json:"args"`
}

// distributedInfo is the trace's distributedInfo object.
type distributedInfo struct {
	Rank json.RawMessage `json:"rank"`
}

// reader is the state of one Read.
type reader struct {
	dec      *json.Decoder
	t        *Trace
	base     int64
	hasBase  bool
	distRank json.RawMessage
	b        builder
}

// Read reads one trace: a JSON object with traceEvents (Kineto), or a
// bare array of events (the legacy format). An event whose fields have
// the wrong type is skipped and counted; JSON that is not well formed is a
// *SyntaxError; times that cannot be placed on the epoch are
// ErrRelativeTimes.
func Read(r io.Reader) (*Trace, error) {
	rd := &reader{dec: json.NewDecoder(r), t: &Trace{}}
	rd.dec.UseNumber()
	tok, err := rd.dec.Token()
	if err != nil {
		return nil, rd.syntax(err)
	}
	switch tok {
	case json.Delim('['):
		rd.t.Legacy = true
		if err := rd.events(); err != nil {
			return nil, err
		}
	case json.Delim('{'):
		if err := rd.object(); err != nil {
			return nil, err
		}
	default:
		return nil, &SyntaxError{Offset: rd.dec.InputOffset(), Err: errors.New("a trace is a JSON object or array")}
	}
	if _, err := rd.dec.Token(); err != io.EOF {
		if err == nil {
			err = errors.New("unexpected data after the trace")
		}
		return nil, rd.syntax(err)
	}
	if err := rd.finish(); err != nil {
		return nil, err
	}
	return rd.t, nil
}

func (rd *reader) syntax(err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return &SyntaxError{Offset: rd.dec.InputOffset(), Err: err}
}

// object reads the members of the top-level object.
func (rd *reader) object() error {
	for rd.dec.More() {
		tok, err := rd.dec.Token()
		if err != nil {
			return rd.syntax(err)
		}
		key, _ := tok.(string)
		switch key {
		case "traceEvents":
			tok, err := rd.dec.Token()
			if err != nil {
				return rd.syntax(err)
			}
			if tok != json.Delim('[') {
				return &SyntaxError{Offset: rd.dec.InputOffset(), Err: errors.New("traceEvents is not an array")}
			}
			if err := rd.events(); err != nil {
				return err
			}
		case "baseTimeNanoseconds":
			var n json.Number
			if err := rd.dec.Decode(&n); err != nil {
				return rd.fieldError("baseTimeNanoseconds", err)
			}
			v, err := n.Int64()
			if err != nil || v < 0 {
				return fmt.Errorf("baseTimeNanoseconds: not an integer number of ns: %s", n)
			}
			rd.base, rd.hasBase = v, true
		case "distributedInfo":
			var di distributedInfo
			if err := rd.dec.Decode(&di); err != nil {
				return rd.fieldError("distributedInfo", err)
			}
			rd.distRank = di.Rank
		default:
			var skip json.RawMessage
			if err := rd.dec.Decode(&skip); err != nil {
				return rd.syntax(err)
			}
		}
	}
	if _, err := rd.dec.Token(); err != nil { // '}'
		return rd.syntax(err)
	}
	return nil
}

// fieldError reports a member that is well-formed JSON of the wrong type
// (fatal for the trace's own fields) or malformed JSON.
func (rd *reader) fieldError(field string, err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("%s at byte %d: %v", field, rd.dec.InputOffset(), err)
	}
	return rd.syntax(err)
}

// events reads the elements of an event array up to its closing bracket.
func (rd *reader) events() error {
	var ev rawEvent
	for rd.dec.More() {
		ev = rawEvent{}
		if err := rd.dec.Decode(&ev); err != nil {
			var te *json.UnmarshalTypeError
			if !errors.As(err, &te) {
				return rd.syntax(err)
			}
			rd.skip(fmt.Sprintf("event ending at byte %d: %v", rd.dec.InputOffset(), err))
			continue
		}
		rd.t.Stats.Events++
		if err := rd.b.add(&ev); err != nil {
			rd.skip(fmt.Sprintf("event %q ending at byte %d: %v", ev.Name, rd.dec.InputOffset(), err))
		}
	}
	if _, err := rd.dec.Token(); err != nil { // ']'
		return rd.syntax(err)
	}
	return nil
}

func (rd *reader) skip(why string) {
	if rd.t.Stats.Skipped == 0 {
		rd.t.Stats.FirstSkip = why
	}
	rd.t.Stats.Skipped++
}

// minEpochUs is the smallest time taken for µs since the epoch when a
// trace has no baseTimeNanoseconds (2001-09-09): profiler-relative times
// of any real run are far below it.
const minEpochUs = int64(1_000_000_000_000_000)

// finish places the trace's times on the epoch and builds its markers,
// phases and memory samples.
func (rd *reader) finish() error {
	base := rd.base
	if !rd.hasBase {
		if rd.b.minTs < minEpochUs*1000 && rd.b.seen {
			return ErrRelativeTimes
		}
		base = 0
	}
	t := rd.t
	t.Rank, t.HasRank = rankOf(rd.distRank)
	if !t.HasRank {
		t.Rank, t.HasRank = rd.b.defaultPGRank, rd.b.hasDefaultPGRank
	}
	rd.b.build(t, base)
	return nil
}

// rankOf reads distributedInfo.rank, a number or a numeric string.
func rankOf(raw json.RawMessage) (int64, bool) {
	s := strings.Trim(strings.TrimSpace(string(raw)), `"`)
	if s == "" {
		return 0, false
	}
	var v int64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' || i > 12 {
			return 0, false
		}
		v = v*10 + int64(s[i]-'0')
	}
	return v, true
}
