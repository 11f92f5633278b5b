package kineto

import (
	"errors"
	"fmt"
	"io"

	"github.com/collectiveattr/collectiveattr/internal/jsonscan"
)

// reader is the state of one Read.
type reader struct {
	s        jsonscan.Scanner
	args     jsonscan.Scanner // scans one event's args
	t        *Trace
	base     int64
	hasBase  bool
	distRank int64
	hasDist  bool
	b        builder
	// follows is, per event key, the key that followed it last.
	follows [numEventKeys]eventKey
}

// Read reads one trace: a JSON object with traceEvents (Kineto), or a
// bare array of events (the legacy format). The trace is read whole into
// memory. An event whose fields have the wrong type is skipped and
// counted; JSON that is not well formed is a *SyntaxError; times that
// cannot be placed on the epoch are ErrRelativeTimes.
func Read(r io.Reader) (*Trace, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return ReadBytes(data)
}

// ReadBytes is Read of a trace held in memory; the Trace keeps no
// reference to data.
func ReadBytes(data []byte) (*Trace, error) {
	var err error
	rd := &reader{t: &Trace{}}
	rd.s.Reset(data)
	switch rd.s.Peek() {
	case '[':
		rd.t.Legacy = true
		err = rd.events()
	case '{':
		err = rd.object()
	default:
		err = rd.s.Fail("a trace is a JSON object or array")
	}
	if err == nil && !rd.s.AtEnd() {
		err = rd.s.Fail("unexpected data after the trace")
	}
	if err != nil {
		return nil, syntaxOf(err)
	}
	if err := rd.finish(); err != nil {
		return nil, err
	}
	return rd.t, nil
}

// syntaxOf turns the scanner's errors into the package's: malformed JSON
// is a *SyntaxError; a top-level field of the wrong type stays what it is.
func syntaxOf(err error) error {
	var se *jsonscan.SyntaxError
	if errors.As(err, &se) {
		return &SyntaxError{Offset: int64(se.Offset), Err: errors.New(se.Msg)}
	}
	return err
}

// object reads the members of the top-level object.
func (rd *reader) object() error {
	s := &rd.s
	return s.Object(func(key []byte) error {
		switch string(key) {
		case "traceEvents":
			if s.Peek() != '[' {
				return s.TypeError("traceEvents", "an array")
			}
			return rd.events()
		case "baseTimeNanoseconds":
			v, err := s.IntField("baseTimeNanoseconds")
			if err == nil && v < 0 {
				err = &jsonscan.FieldError{Field: "baseTimeNanoseconds", Msg: "must be >= 0"}
			}
			rd.base, rd.hasBase = v, true
			return err
		case "distributedInfo":
			if s.Peek() != '{' {
				return s.SkipValue()
			}
			return s.Object(func(key []byte) error {
				if string(key) != "rank" {
					return s.SkipValue()
				}
				v, ok, err := intOrDigits(s)
				rd.distRank, rd.hasDist = v, ok && v >= 0
				return err
			})
		}
		return s.SkipValue()
	})
}

// events reads an event array.
func (rd *reader) events() error {
	s := &rd.s
	var ev rawEvent
	return s.Array(func() error {
		if s.Peek() != '{' {
			err := s.SkipValue()
			rd.skip("an event that is not an object")
			return err
		}
		ev = rawEvent{}
		if err := rd.event(&ev); err != nil {
			return err
		}
		rd.t.Stats.Events++
		if ev.bad != "" {
			rd.skip(fmt.Sprintf("event %q: %s", ev.name, ev.bad))
			return nil
		}
		if err := rd.b.add(&ev, &rd.args); err != nil {
			rd.skip(fmt.Sprintf("event %q: %v", ev.name, err))
		}
		return nil
	})
}

// rawEvent is what every event is read for; args are scanned only for
// the events that need them.
type rawEvent struct {
	ph, cat, name []byte
	ts, dur       []byte
	tid           int64
	args          []byte
	// bad says why the event is skipped ("" when it is not).
	bad string
}

// eventKey names the members of an event that the reader reads, and pid,
// which it skips: Kineto writes every event's keys in one order (ph, cat,
// name, pid, tid, ts, dur, args), so the reader expects each key to be the
// one that followed the previous key last time and checks it with one
// comparison; any other layout goes through the Scanner.
type eventKey uint8

const (
	keyOther eventKey = iota // a key not listed here; also "before the first key"
	keyPh
	keyCat
	keyName
	keyPid
	keyTid
	keyTs
	keyDur
	keyArgs
	numEventKeys
)

// quotedEventKeys are the keys as they appear in a trace, quotes included.
var quotedEventKeys = [numEventKeys]string{
	keyPh: `"ph"`, keyCat: `"cat"`, keyName: `"name"`, keyPid: `"pid"`,
	keyTid: `"tid"`, keyTs: `"ts"`, keyDur: `"dur"`, keyArgs: `"args"`,
}

func lookupEventKey(key []byte) eventKey {
	for k := keyOther + 1; k < numEventKeys; k++ {
		if q := quotedEventKeys[k]; string(key) == q[1:len(q)-1] {
			return k
		}
	}
	return keyOther
}

// event reads one event object; a field of the wrong type marks the event
// bad (skipped), malformed JSON is returned.
func (rd *reader) event(ev *rawEvent) error {
	s := &rd.s
	more, err := s.OpenObject()
	for prev := keyOther; more && err == nil; {
		k := rd.follows[prev]
		if !s.SkipKey(quotedEventKeys[k]) {
			var key []byte
			if key, err = s.Key(); err != nil {
				return err
			}
			k = lookupEventKey(key)
		}
		if k != keyOther {
			rd.follows[prev], prev = k, k
		}
		if err = rd.eventMember(ev, k); err == nil {
			more, err = s.NextMember()
		}
	}
	return err
}

// eventMember reads the value of the member key into ev.
func (rd *reader) eventMember(ev *rawEvent, key eventKey) error {
	s := &rd.s
	switch key {
	case keyPh:
		return rd.str(ev, &ev.ph, "ph")
	case keyCat:
		return rd.str(ev, &ev.cat, "cat")
	case keyName:
		return rd.str(ev, &ev.name, "name")
	case keyTs:
		return rd.num(ev, &ev.ts, "ts")
	case keyDur:
		return rd.num(ev, &ev.dur, "dur")
	case keyTid:
		v, _, err := intOrDigits(s)
		ev.tid = v
		return err
	case keyPid:
		_, _, err := intOrDigits(s) // not read; a number or a string
		return err
	case keyArgs:
		start := s.Pos()
		if s.Peek() != '{' {
			ev.bad = "args is not an object"
			return s.SkipValue()
		}
		// Most events' args are never read: their brackets are
		// matched, the text is scanned only if the event needs it.
		err := s.SkipContainer()
		ev.args = s.Slice(start)
		return err
	}
	return s.SkipValue()
}

// str reads a string member of ev into dst.
func (rd *reader) str(ev *rawEvent, dst *[]byte, key string) error {
	s := &rd.s
	if s.Peek() != '"' {
		ev.bad = key + " is not a string"
		return s.SkipValue()
	}
	b, err := s.StringBytes()
	if s.Scratch() {
		b = append([]byte(nil), b...) // the next string reuses the scratch buffer
	}
	*dst = b
	return err
}

// num reads a number member of ev into dst, as its text.
func (rd *reader) num(ev *rawEvent, dst *[]byte, key string) error {
	s := &rd.s
	c := s.Peek()
	if c != '-' && !jsonscan.IsDigit(c) {
		ev.bad = key + " is not a number"
		return s.SkipValue()
	}
	b, err := s.NumberToken()
	*dst = b
	return err
}

// intOrDigits reads an integer written as a number or as a string of
// digits; ok is false (and the value consumed) for anything else.
func intOrDigits(s *jsonscan.Scanner) (int64, bool, error) {
	switch c := s.Peek(); {
	case c == '-' || jsonscan.IsDigit(c):
		tok, err := s.NumberToken()
		if err != nil {
			return 0, false, err
		}
		v, ok := parseInt(tok)
		return v, ok, nil
	case c == '"':
		b, err := s.StringBytes()
		if err != nil {
			return 0, false, err
		}
		v, ok := parseInt(b)
		return v, ok, nil
	}
	return 0, false, s.SkipValue()
}

// skip counts the event just read as skipped.
func (rd *reader) skip(why string) {
	if rd.t.Stats.Skipped == 0 {
		rd.t.Stats.FirstSkip, rd.t.Stats.FirstSkipOffset = why, int64(rd.s.Pos())
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
	t.Rank, t.HasRank = rd.distRank, rd.hasDist
	if !t.HasRank {
		t.Rank, t.HasRank = rd.b.defaultPGRank, rd.b.hasDefaultPGRank
	}
	rd.b.build(t, base)
	return nil
}
