package flightrecorder

import (
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/collectiveattr/collectiveattr/internal/jsonscan"
	"github.com/collectiveattr/collectiveattr/markers"
)

// Dump is what one Flight Recorder dump says.
type Dump struct {
	// Version is the dump's version ("2.10").
	Version string
	// Markers are the entries that ran (state started or completed), in
	// dump order, approximate, with identity where the entry has it.
	Markers []markers.Marker
	Stats   Stats
}

// Stats counts a dump's entries.
type Stats struct {
	Entries int
	// Scheduled counts entries that had not started when the dump was
	// taken: no marker.
	Scheduled int
	// Skipped counts entries with unusable fields; FirstSkip says why.
	Skipped   int
	FirstSkip string
}

// ErrPickle: the file is a pickle, Flight Recorder's default dump format.
var ErrPickle = errors.New("a pickle (Flight Recorder's default dump format), not JSON: dump JSON with torch._C._distributed_c10d._dump_nccl_trace_json(), or convert the pickle (docs/torch-sources.md)")

// SyntaxError is a dump that is not well-formed JSON.
type SyntaxError struct {
	Offset int64
	Err    error
}

func (e *SyntaxError) Error() string {
	return fmt.Sprintf("malformed JSON at byte %d: %v", e.Offset, e.Err)
}
func (e *SyntaxError) Unwrap() error { return e.Err }

// entry is what a dump entry is read for.
type entry struct {
	pgName        string
	seq           int64
	hasSeq        bool
	profilingName string
	createdNs     int64
	durationMs    float64
	hasDuration   bool
	inElems       int64
	outElems      int64
	dtype         string
	state         string
	startedNs     int64
	completedNs   int64
	isP2P         bool
}

// Read reads one dump. A pickle is ErrPickle, malformed JSON a
// *SyntaxError; an entry with fields of the wrong type is skipped and
// counted. The dump is read whole into memory.
func Read(r io.Reader) (*Dump, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	return ReadBytes(data)
}

// ReadBytes is Read of a dump held in memory.
func ReadBytes(data []byte) (*Dump, error) {
	if len(data) > 0 && data[0] == 0x80 {
		return nil, ErrPickle // pickle protocol 2 and later start with PROTO
	}
	rd := dumpReader{d: &Dump{}, ranks: map[string][]int64{}, size: len(data)}
	s := &rd.s
	s.Reset(data)
	err := s.Object(rd.member)
	if err == nil && !s.AtEnd() {
		err = s.Fail("unexpected data after the dump")
	}
	var se *jsonscan.SyntaxError
	switch {
	case errors.As(err, &se):
		return nil, &SyntaxError{Offset: int64(se.Offset), Err: errors.New(se.Msg)}
	case err != nil:
		return nil, err
	}
	// Entries mostly repeat their predecessor's group: look a group up
	// once per run of entries.
	var group string
	var ranks []int64
	for i := range rd.d.Markers {
		m := &rd.d.Markers[i]
		if i == 0 || m.CommID != group {
			group, ranks = m.CommID, rd.ranks[m.CommID]
		}
		if len(ranks) > 0 {
			m.Ranks, m.NRanks = ranks, int64(len(ranks))
		}
	}
	return rd.d, nil
}

// dumpReader is the state of one ReadBytes.
type dumpReader struct {
	s    jsonscan.Scanner
	size int // of the dump
	d    *Dump
	// ranks are pg_config's members per group name (pg_config may follow
	// the entries).
	ranks map[string][]int64
	// strings holds the short strings that repeat from entry to entry
	// (group names, op names, dtypes, states), each allocated once.
	strings map[string]string
	// e is the entry being read, prev the one before it (whose strings
	// the next entry most often repeats); bad says why e is unusable (""
	// when it is not).
	e, prev entry
	bad     string
	// opOf and sizeOf hold the last op and dtype size looked up (entries
	// mostly repeat them).
	opOf struct {
		name, op string
	}
	sizeOf struct {
		dtype string
		size  int64
	}
	// follows is, per entry key, the key that followed it last.
	follows [numEntryKeys]entryKey
}

// maxInterned bounds the string table against a dump of ever-new values.
const maxInterned = 1024

// intern is b as a string: prev when it is equal (entries repeat their
// predecessor's group, op, dtype and state), else from the table.
func (rd *dumpReader) intern(b []byte, prev string) string {
	if prev == string(b) {
		return prev
	}
	if v, ok := rd.strings[string(b)]; ok {
		return v
	}
	v := string(b)
	if rd.strings == nil || len(rd.strings) >= maxInterned {
		rd.strings = make(map[string]string, 16)
	}
	rd.strings[v] = v
	return v
}

func (rd *dumpReader) member(key []byte) error {
	s := &rd.s
	switch string(key) {
	case "version":
		if s.Peek() == '"' {
			v, err := s.StringBytes()
			rd.d.Version = string(v)
			return err
		}
	case "pg_config":
		if s.Peek() != '{' {
			return s.TypeError("pg_config", "an object")
		}
		return s.Object(func([]byte) error { return rd.pgConfig() })
	case "entries":
		if s.Peek() != '[' {
			return s.TypeError("entries", "an array")
		}
		more, err := s.OpenArray()
		for i := 0; more && err == nil; i++ {
			start := s.Pos()
			if err = rd.entry(i); err == nil {
				more, err = s.NextElement()
			}
			if i == 0 && more {
				rd.reserve(s.Pos() - start)
			}
		}
		return err
	}
	return s.SkipValue()
}

// reserve sizes Markers for the entries that follow one of firstBytes,
// when they are alike (the recorder writes one shape), instead of growing
// it by copies. The estimate is at most one marker per minEntryBytes of
// the dump, so a small first entry cannot reserve much more than the
// dump's own size.
func (rd *dumpReader) reserve(firstBytes int) {
	const minEntryBytes = 200
	n := min((rd.size-rd.s.Pos())/max(firstBytes, 1), rd.size/minEntryBytes) + 1
	if n > cap(rd.d.Markers)-len(rd.d.Markers) {
		rd.d.Markers = append(make([]markers.Marker, 0, len(rd.d.Markers)+n), rd.d.Markers...)
	}
}

// pgConfig reads one group of pg_config: {"name", "desc", "ranks"}.
func (rd *dumpReader) pgConfig() error {
	s := &rd.s
	if s.Peek() != '{' {
		return s.SkipValue()
	}
	var name, ranks string
	err := s.Object(func(key []byte) error {
		k := string(key)
		if (k != "name" && k != "ranks") || s.Peek() != '"' {
			return s.SkipValue()
		}
		v, err := s.StringBytes()
		if k == "name" {
			name = string(v)
		} else {
			ranks = string(v)
		}
		return err
	})
	if err == nil && name != "" {
		rd.ranks[name] = markers.ParseRanks(ranks)
	}
	return err
}

// entry reads entries[i]; an entry with a field of the wrong type is
// skipped and counted.
func (rd *dumpReader) entry(i int) error {
	s := &rd.s
	rd.d.Stats.Entries++
	if s.Peek() != '{' {
		rd.d.skip(fmt.Sprintf("entry %d: not an object", i))
		return s.SkipValue()
	}
	rd.prev, rd.e, rd.bad = rd.e, entry{}, ""
	more, err := s.OpenObject()
	// json.dumps writes `"key": value, "key": value`: the reader expects
	// each key to be the one that followed the previous key last time and
	// checks it, with the separator before it, in one comparison; anything
	// else goes through the Scanner.
	k, known := rd.follows[keyOther], false
	for prev := keyOther; more && err == nil; {
		if !known {
			if r, kc := s.Rest(), keyColon[k]; len(kc) > 0 && len(r) > len(kc) && string(r[:len(kc)]) == kc {
				s.Advance(len(kc))
			} else if !s.SkipKey(quotedEntryKeys[k]) {
				var key []byte
				if key, err = s.Key(); err != nil {
					break
				}
				k = lookupEntryKey(key)
			}
		}
		if k != keyOther {
			rd.follows[prev], prev = k, k
		}
		if k >= keyRecordID {
			err = rd.skipKnown(k)
		} else {
			err = rd.entryMember(k)
		}
		if err != nil {
			break
		}
		k = rd.follows[prev]
		r, ckc := s.Rest(), commaKeyColon[k]
		if known = len(ckc) > 0 && len(r) > len(ckc) && string(r[:len(ckc)]) == ckc; known {
			s.Advance(len(ckc))
		} else if len(r) > 1 && r[0] == ',' && r[1] == ' ' {
			s.Advance(2)
		} else {
			more, err = s.NextMember()
		}
	}
	if err != nil {
		return err
	}
	if rd.bad != "" {
		rd.d.skip(fmt.Sprintf("entry %d: %s", i, rd.bad))
		return nil
	}
	if rd.e.profilingName != rd.opOf.name {
		rd.opOf.name, rd.opOf.op = rd.e.profilingName, markers.OpName(rd.e.profilingName)
	}
	if rd.e.dtype != rd.sizeOf.dtype {
		rd.sizeOf.dtype, rd.sizeOf.size = rd.e.dtype, markers.DTypeSize(rd.e.dtype)
	}
	// The marker is written in place: most entries ran.
	n := len(rd.d.Markers)
	rd.d.Markers = append(rd.d.Markers, markers.Marker{})
	ok, merr := markerOf(&rd.d.Markers[n], &rd.e, rd.opOf.op, rd.sizeOf.size)
	if !ok {
		rd.d.Markers = rd.d.Markers[:n]
	}
	switch {
	case merr != nil:
		rd.d.skip(fmt.Sprintf("entry %d: %v", i, merr))
	case !ok:
		rd.d.Stats.Scheduled++
	}
	return nil
}

// entryMember reads one member of the current entry into rd.e; a value of
// the wrong type sets rd.bad. The members it does not read (thread, ids,
// output dtypes, ...) are skipped without being decoded.
func (rd *dumpReader) entryMember(key entryKey) error {
	s := &rd.s
	e := &rd.e
	switch key {
	case keyProcessGroup:
		if first, _, used := stringList(s.Rest()); used > 0 {
			e.pgName = rd.intern(first, rd.prev.pgName)
			s.Advance(used)
			return nil
		}
		if s.Peek() != '[' {
			return rd.wrong("process_group", "an array")
		}
		more, err := s.OpenArray()
		for first := true; more && err == nil; {
			if !first || s.Peek() != '"' {
				err = rd.skipUnread()
			} else {
				first = false
				var v []byte
				v, err = s.StringBytes()
				e.pgName = rd.intern(v, rd.prev.pgName)
			}
			if err == nil {
				more, err = s.NextElement()
			}
		}
		return err
	case keyCollectiveSeq:
		return rd.optInt(&e.seq, &e.hasSeq, "collective_seq_id")
	case keyProfilingName:
		return rd.str(&e.profilingName, rd.prev.profilingName, "profiling_name")
	case keyCreated:
		return rd.optInt(&e.createdNs, nil, "time_created_ns")
	case keyStarted:
		return rd.optInt(&e.startedNs, nil, "time_discovered_started_ns")
	case keyCompleted:
		return rd.optInt(&e.completedNs, nil, "time_discovered_completed_ns")
	case keyDuration:
		if r := s.Rest(); len(r) > 0 && jsonscan.IsDigit(r[0]) {
			v, err := s.FloatField("duration_ms")
			e.durationMs, e.hasDuration = v, err == nil
			if err != nil {
				return rd.fieldError(err)
			}
			return nil
		}
		if s.SkipNull() {
			return nil // without TORCH_NCCL_ENABLE_TIMING
		}
		v, err := s.FloatField("duration_ms")
		e.durationMs, e.hasDuration = v, err == nil
		return rd.fieldError(err)
	case keyInputSizes:
		return rd.elements(&e.inElems)
	case keyOutputSizes:
		return rd.elements(&e.outElems)
	case keyInputDtypes:
		if _, nonEmpty, used := stringList(s.Rest()); used > 0 {
			if e.dtype == "" && nonEmpty != nil {
				e.dtype = rd.intern(nonEmpty, rd.prev.dtype)
			}
			s.Advance(used)
			return nil
		}
		if s.Peek() != '[' {
			return rd.wrong("input_dtypes", "an array")
		}
		more, err := s.OpenArray()
		for more && err == nil {
			if e.dtype != "" || s.Peek() != '"' {
				err = rd.skipUnread()
			} else {
				var v []byte
				v, err = s.StringBytes()
				e.dtype = rd.intern(v, rd.prev.dtype)
			}
			if err == nil {
				more, err = s.NextElement()
			}
		}
		return err
	case keyState:
		return rd.str(&e.state, rd.prev.state, "state")
	case keyIsP2P:
		if r := s.Rest(); len(r) >= 5 && string(r[:5]) == "false" {
			s.Advance(5)
			return nil
		}
		switch s.Peek() {
		case 't':
			e.isP2P = true
		case 'f':
		default:
			return rd.wrong("is_p2p", "a boolean")
		}
		return s.SkipValue()
	}
	return rd.skipUnread()
}

// skipKnown skips the value of a member the recorder writes and the reader
// does not read, the recorder's own layout of its lists and booleans in one
// step.
func (rd *dumpReader) skipKnown(k entryKey) error {
	s := &rd.s
	switch r := s.Rest(); k {
	case keyOutputDtypes:
		if _, _, used := stringList(r); used > 0 {
			s.Advance(used)
			return nil
		}
	case keyRetired:
		if len(r) >= 4 && string(r[:4]) == "true" {
			s.Advance(4)
			return nil
		}
	}
	return rd.skipUnread()
}

// skipUnread skips a value the reader does not read: an object or array
// by its brackets alone.
func (rd *dumpReader) skipUnread() error {
	s := &rd.s
	c := byte(0)
	if r := s.Rest(); len(r) > 0 && r[0] > ' ' {
		c = r[0]
	} else {
		c = s.Peek()
	}
	switch {
	case c == '{' || c == '[':
		return s.SkipContainer()
	case c == '"':
		_, err := s.StringBytes()
		return err
	case c == '-' || jsonscan.IsDigit(c):
		_, err := s.NumberToken()
		return err
	}
	return s.SkipValue()
}

// wrong notes that key does not hold want and skips its value.
func (rd *dumpReader) wrong(key, want string) error {
	if rd.bad == "" {
		rd.bad = key + " must be " + want
	}
	return rd.skipUnread()
}

// fieldError notes a value of the right type that is out of range; other
// errors (malformed JSON) end the read.
func (rd *dumpReader) fieldError(err error) error {
	if err == nil {
		return nil
	}
	if fe, ok := errors.AsType[*jsonscan.FieldError](err); ok {
		if rd.bad == "" {
			rd.bad = fe.Error()
		}
		return nil
	}
	return err
}

func (rd *dumpReader) str(dst *string, prev, key string) error {
	s := &rd.s
	if r := s.Rest(); (len(r) == 0 || r[0] != '"') && s.Peek() != '"' {
		return rd.wrong(key, "a string")
	}
	v, err := s.StringBytes()
	*dst = rd.intern(v, prev)
	return err
}

// optInt reads an integer that JSON dumps may write as 0 or null.
func (rd *dumpReader) optInt(dst *int64, has *bool, key string) error {
	s := &rd.s
	c := byte(0)
	if r := s.Rest(); len(r) > 0 && r[0] > ' ' {
		c = r[0]
	} else {
		c = s.Peek()
	}
	if c == 'n' && s.SkipNull() {
		return nil
	}
	if c != '-' && !jsonscan.IsDigit(c) {
		return rd.wrong(key, "an integer")
	}
	if v, ok := s.ShortInt(); ok { // a timestamp, in one call
		*dst = v
		if has != nil {
			*has = true
		}
		return nil
	}
	v, err := s.IntField(key)
	*dst = v
	if has != nil {
		*has = err == nil
	}
	if err != nil {
		return rd.fieldError(err)
	}
	return nil
}

// elements reads the element count of a sizes list's first tensor
// ([[4096, 4096], ...] → 16777216); 0 when it has none.
func (rd *dumpReader) elements(dst *int64) error {
	s := &rd.s
	if n, used := oneTensor(s.Rest()); used > 0 {
		*dst = n
		s.Advance(used)
		return nil
	}
	if s.Peek() != '[' {
		if rd.bad == "" {
			rd.bad = "sizes must be a list of lists"
		}
		return rd.skipUnread()
	}
	more, err := s.OpenArray()
	for first := true; more && err == nil; {
		if !first || s.Peek() != '[' {
			err = rd.skipUnread()
		} else {
			first = false
			*dst, err = rd.product()
		}
		if err == nil {
			more, err = s.NextElement()
		}
	}
	return err
}

// stringList reads a non-empty list of strings without escapes as the
// recorder writes it, `["0", "default_pg"]` (", " between them): first is
// its first string and nonEmpty its first non-empty one (nil when none),
// as the element loops that read such lists take them; used is the bytes
// it read, 0 when the text is anything else.
func stringList(b []byte) (first, nonEmpty []byte, used int) {
	if len(b) < 3 || b[0] != '[' {
		return nil, nil, 0
	}
	for i := 1; ; {
		if i >= len(b) || b[i] != '"' {
			return nil, nil, 0
		}
		start := i + 1
		for i = start; i < len(b) && b[i] != '"' && b[i] != '\\' && b[i] >= 0x20; i++ {
		}
		if i+1 >= len(b) || b[i] != '"' {
			return nil, nil, 0
		}
		if first == nil {
			first = b[start:i:i]
		}
		if nonEmpty == nil && i > start {
			nonEmpty = b[start:i:i]
		}
		switch i++; {
		case b[i] == ']':
			return first, nonEmpty, i + 1
		case b[i] == ',' && i+1 < len(b) && b[i+1] == ' ':
			i += 2
		case b[i] == ',':
			i++
		default:
			return nil, nil, 0
		}
	}
}

// oneTensor reads a sizes list of one tensor as the recorder writes it,
// "[[4096, 4096]]" (non-negative integers, ", " between them), into its
// element count as elements would; used is the bytes it read, 0 when the
// text is anything else (elements then reads it).
func oneTensor(b []byte) (n int64, used int) {
	if len(b) < 4 || b[0] != '[' || b[1] != '[' {
		return 0, 0
	}
	n = 1
	for i := 2; ; {
		start := i
		var d uint64
		for ; i < len(b) && jsonscan.IsDigit(b[i]); i++ {
			d = d*10 + uint64(b[i]-'0')
		}
		if i == start || i-start > 18 || (i-start > 1 && b[start] == '0') || i+1 >= len(b) {
			return 0, 0
		}
		if v := int64(d); v > 0 && n > math.MaxInt64/v {
			n = 0
		} else {
			n *= v
		}
		switch {
		case b[i] == ',' && b[i+1] == ' ':
			i += 2
		case b[i] == ',':
			i++
		case b[i] == ']' && b[i+1] == ']':
			return n, i + 2
		default:
			return 0, 0
		}
	}
}

// product reads one tensor's sizes ([4096, 4096] → 16777216); 0 when a
// size is not an integer or the product overflows.
func (rd *dumpReader) product() (int64, error) {
	s := &rd.s
	n := int64(1)
	more, err := s.OpenArray()
	for more && err == nil {
		d, derr := s.IntField("sizes")
		switch {
		case derr != nil:
			if _, ok := errors.AsType[*jsonscan.FieldError](derr); !ok {
				return n, derr
			}
			n = 0
		case d < 0 || (d > 0 && n > math.MaxInt64/d):
			n = 0
		default:
			n *= d
		}
		more, err = s.NextElement()
	}
	return n, err
}

func (d *Dump) skip(why string) {
	if d.Stats.Skipped == 0 {
		d.Stats.FirstSkip = why
	}
	d.Stats.Skipped++
}

// markerOf writes into m (a zero Marker) the marker of an entry that ran,
// whose profiling name is op and dtype dtypeSize bytes; ok is false for one
// that had not started or cannot be a marker (err says why).
func markerOf(m *markers.Marker, e *entry, op string, dtypeSize int64) (ok bool, err error) {
	if e.state == "scheduled" {
		return false, nil
	}
	if e.profilingName == "" || e.createdNs <= 0 {
		return false, errors.New("profiling_name and time_created_ns are required")
	}
	m.Op, m.Name, m.CommID, m.Approximate = op, e.profilingName, e.pgName, true
	if e.hasSeq && e.seq >= 0 && !e.isP2P && !markers.IsP2P(op) {
		m.Seq, m.HasSeq = e.seq, true
	}
	if size := dtypeSize; size > 0 {
		n := e.inElems
		if e.outElems > 0 && (n == 0 || e.outElems < n) {
			n = e.outElems
		}
		if n > 0 && n <= math.MaxInt64/size {
			m.MessageBytes = n * size
		}
	}
	// The op ran after it was enqueued and had ended when the watchdog
	// saw it complete; GPU timing, when enabled, gives its duration.
	start := max(e.createdNs, e.startedNs)
	end := start
	switch {
	case e.completedNs > start:
		end = e.completedNs
	case e.hasDuration && e.durationMs > 0 && e.durationMs < 1e9:
		end = start + int64(e.durationMs*1e6)
	}
	m.StartNs, m.EndNs = start, end
	return true, nil
}
