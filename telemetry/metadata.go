package telemetry

import (
	"encoding/json"
	"iter"
	"strings"
	"unsafe"
)

// An Event's metadata is held one of two ways: built (Event.Metadata, a map,
// as code that constructs events sets it and DecodeRecord decodes it) or as
// the object's JSON text, which Stream's decoders keep instead of building a
// map per record: consumers read a few top-level keys of a few records, and
// a map per record costs more than decoding the rest of the record. The
// methods below read either; consumers of streamed events must use them.

// MetadataValue is one metadata value: a built value, or the JSON text of a
// value of a streamed event's metadata, decoded on demand.
type MetadataValue struct {
	text  string // JSON text (streamed events)
	built any    // the value (built metadata)
}

// MetadataValueOf wraps a built metadata value (string, json.Number, bool,
// nil, []any, map[string]any, or a number type code put there).
func MetadataValueOf(v any) MetadataValue { return MetadataValue{built: v} }

// AsString returns the value when it is a string.
func (v MetadataValue) AsString() (string, bool) {
	if v.text == "" {
		s, ok := v.built.(string)
		return s, ok
	}
	if v.text[0] != '"' {
		return "", false
	}
	if s, ok := plainString(v.text); ok {
		return s, true
	}
	sc := scanner{data: bytesOf(v.text)}
	b, err := sc.stringBytes()
	return string(b), err == nil
}

// AsNumber returns the value's lexeme when it is a JSON number (a json.Number
// when built).
func (v MetadataValue) AsNumber() (json.Number, bool) {
	if v.text == "" {
		n, ok := v.built.(json.Number)
		return n, ok
	}
	if c := v.text[0]; c == '-' || (c >= '0' && c <= '9') {
		return json.Number(v.text), true
	}
	return "", false
}

// AsBool returns the value when it is a boolean.
func (v MetadataValue) AsBool() (bool, bool) {
	if v.text == "" {
		b, ok := v.built.(bool)
		return b, ok
	}
	switch v.text {
	case "true":
		return true, true
	case "false":
		return false, true
	}
	return false, false
}

// Value returns the value as Event.Metadata holds values: string,
// json.Number, bool, nil, []any or map[string]any (decoded anew on each
// call for a streamed event).
func (v MetadataValue) Value() any {
	if v.text == "" {
		return v.built
	}
	sc := scanner{data: bytesOf(v.text)}
	x, err := sc.value()
	if err != nil {
		return nil // the text was checked when the record was decoded
	}
	return x
}

// AsInt returns the value as IntValue reads it: an integer lexeme within
// int64, a boolean (true is 1), or a Go integer.
func (v MetadataValue) AsInt() (int64, bool) {
	if v.text == "" {
		return IntValue(v.built)
	}
	if n, ok := v.AsNumber(); ok {
		return intLexeme(string(n))
	}
	b, ok := v.AsBool()
	if b {
		return 1, ok
	}
	return 0, ok
}

// IsNull reports whether the value is null (or absent: the zero
// MetadataValue).
func (v MetadataValue) IsNull() bool {
	return (v.text == "" && v.built == nil) || v.text == "null"
}

// IsObject reports whether the value is an object (a map[string]any when
// built).
func (v MetadataValue) IsObject() bool {
	if v.text == "" {
		_, ok := v.built.(map[string]any)
		return ok
	}
	return v.text[0] == '{'
}

// IsArray reports whether the value is an array (an []any when built).
func (v MetadataValue) IsArray() bool {
	if v.text == "" {
		_, ok := v.built.([]any)
		return ok
	}
	return v.text[0] == '['
}

// Members yields the members of an object value as
// Event.MetadataMembers does; nothing for another value.
func (v MetadataValue) Members() iter.Seq2[string, MetadataValue] {
	return func(yield func(string, MetadataValue) bool) {
		if v.text == "" {
			m, _ := v.built.(map[string]any)
			for k, x := range m {
				if !yield(k, MetadataValue{built: x}) {
					return
				}
			}
			return
		}
		walkMembers(metadataText{text: v.text}, yield)
	}
}

// Elements yields the elements of an array value in order; nothing for
// another value.
func (v MetadataValue) Elements() iter.Seq[MetadataValue] {
	return func(yield func(MetadataValue) bool) {
		if v.text == "" {
			list, _ := v.built.([]any)
			for _, x := range list {
				if !yield(MetadataValue{built: x}) {
					return
				}
			}
			return
		}
		walkElements(v.text, yield)
	}
}

// Text returns a streamed event's value as its JSON text; false for a
// built value. A member list the decoder shares between markers is one
// string for all of them.
func (v MetadataValue) Text() (string, bool) { return v.text, v.text != "" }

// Built returns the value when it was built (Event.Metadata), false when
// it is a streamed event's text.
func (v MetadataValue) Built() (any, bool) { return v.built, v.text == "" }

// metadataText is a streamed event's metadata object text. A member list
// the decoder recognised (a communicator's members, repeated on every
// marker of the communicator) is not copied into it: text is the object
// without the list, which list, shared by the markers, stands for at
// text[at:]. Readers walking the members take the list as one value
// without reading it.
type metadataText struct {
	text string
	list string // "" when text is the whole object
	at   int
}

// whole returns the object's text (built anew when it holds a list).
func (m metadataText) whole() string {
	if m.list == "" {
		return m.text
	}
	return m.text[:m.at] + m.list + m.text[m.at:]
}

// prefixLen returns the length of the object's text when data begins with
// it, 0 otherwise. The list is compared last: markers of one communicator
// list the same members and differ in the members after the list (the
// sequence number).
func (m metadataText) prefixLen(data []byte) int {
	n := len(m.text) + len(m.list)
	if n == 0 || len(data) < n {
		return 0
	}
	head, list := m.at, m.at+len(m.list)
	if string(data[:head]) != m.text[:m.at] || string(data[list:n]) != m.text[m.at:] || string(data[head:list]) != m.list {
		return 0
	}
	return n
}

// HasMetadata reports whether the event's metadata object has a member.
func (e *Event) HasMetadata() bool {
	return e.metadataJSON.text != "" || len(e.Metadata) > 0
}

// MetadataMembers yields the top-level members of the event's metadata:
// for streamed events in text order, a key given twice yielded twice (the
// later one is the value, as in Event.Metadata: a consumer that keeps the
// last value it sees reads what the map would hold).
func (e *Event) MetadataMembers() iter.Seq2[string, MetadataValue] {
	return func(yield func(string, MetadataValue) bool) {
		if e.metadataJSON.text == "" {
			for k, v := range e.Metadata {
				if !yield(k, MetadataValue{built: v}) {
					return
				}
			}
			return
		}
		walkMembers(e.metadataJSON, yield)
	}
}

// MetadataLookup returns the value of the top-level metadata key, as
// Event.Metadata[key] would.
func (e *Event) MetadataLookup(key string) (MetadataValue, bool) {
	if e.metadataJSON.text == "" {
		v, ok := e.Metadata[key]
		return MetadataValue{built: v}, ok
	}
	var found MetadataValue
	ok := false
	walkMembers(e.metadataJSON, func(k string, v MetadataValue) bool {
		if k == key {
			found, ok = v, true
		}
		return true
	})
	return found, ok
}

// MetadataMap returns the metadata object as a map (nil when empty): the
// event's own Metadata, or for a streamed event one decoded from its text
// on each call.
func (e *Event) MetadataMap() map[string]any {
	if e.metadataJSON.text == "" {
		return e.Metadata
	}
	sc := scanner{data: bytesOf(e.metadataJSON.whole())}
	m, err := sc.object()
	if err != nil || len(m) == 0 {
		return nil
	}
	return m
}

// AnyMetadataString reports whether match holds for some string value
// nested anywhere in the metadata (object keys not included), as a walk of
// MetadataMap would find. For a streamed event the text's strings are
// tested first (a member list held apart has none); a string shadowed by a
// later duplicate key is not in the map, so a match there is confirmed on
// the map.
func (e *Event) AnyMetadataString(match func(string) bool) bool {
	if e.metadataJSON.text == "" {
		return anyString(e.Metadata, match)
	}
	if !anyTextString(e.metadataJSON.text, match) {
		return false
	}
	return anyString(e.MetadataMap(), match)
}

func anyString(v any, match func(string) bool) bool {
	switch x := v.(type) {
	case string:
		return match(x)
	case map[string]any:
		for _, it := range x {
			if anyString(it, match) {
				return true
			}
		}
	case []any:
		for _, it := range x {
			if anyString(it, match) {
				return true
			}
		}
	case []string:
		for _, it := range x {
			if match(it) {
				return true
			}
		}
	}
	return false
}

// The walkers below read metadata text the decoder has checked: they track
// only strings and brackets, and stop (without a panic) on anything else.

// bytesOf is the bytes of s, for the scanner, which never writes its data.
// Without it every metadata read copies the record's metadata text first:
// evidence mode reads several keys of every NCCL record, and measured
// 1.10× the CPU of `collectiveattr attribute --mode evidence` end to end
// with the copy (docs/benchmarks.md, "What unsafe bought").
func bytesOf(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// plainString returns the content of the JSON string text when it is the
// value itself: no escapes and only ASCII (other bytes may be invalid UTF-8,
// which decoding replaces).
func plainString(text string) (string, bool) {
	for i := 1; i < len(text)-1; i++ {
		if c := text[i]; c == '\\' || c >= 0x80 {
			return "", false
		}
	}
	return text[1 : len(text)-1], true
}

func skipSpace(t string, i int) int {
	for i < len(t) {
		switch t[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// endOfString returns the index after the string starting at t[i] ('"').
func endOfString(t string, i int) int {
	for i++; i < len(t); i++ {
		switch t[i] {
		case '"':
			return i + 1
		case '\\':
			i++
		}
	}
	return len(t)
}

// endOfValue returns the index after the value starting at t[i].
func endOfValue(t string, i int) int {
	switch t[i] {
	case '"':
		return endOfString(t, i)
	case '[':
		// A flat array without strings (a member list) ends at the first
		// ']': found with byte searches rather than a walk over each byte.
		if j := strings.IndexByte(t[i:], ']'); j > 0 {
			inner := t[i+1 : i+j]
			if strings.IndexByte(inner, '[') < 0 && strings.IndexByte(inner, '{') < 0 && strings.IndexByte(inner, '"') < 0 {
				return i + j + 1
			}
		}
		return endOfNested(t, i)
	case '{':
		return endOfNested(t, i)
	}
	for i < len(t) {
		switch t[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i
		}
		i++
	}
	return i
}

// endOfNested is endOfValue of the array or object at t[i].
func endOfNested(t string, i int) int {
	depth := 0
	for i < len(t) {
		switch t[i] {
		case '"':
			i = endOfString(t, i)
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
		i++
	}
	return len(t)
}

// walkMembers yields the members of the object text m in order.
func walkMembers(m metadataText, yield func(string, MetadataValue) bool) {
	t := m.text
	i := skipSpace(t, 0)
	if i >= len(t) || t[i] != '{' {
		return
	}
	i++
	for {
		i = skipSpace(t, i)
		if i >= len(t) || t[i] != '"' {
			return
		}
		end := endOfString(t, i)
		key, ok := plainString(t[i:end])
		if !ok {
			key, _ = MetadataValue{text: t[i:end]}.AsString()
		}
		i = skipSpace(t, end)
		if i >= len(t) || t[i] != ':' {
			return
		}
		colon := i
		i = skipSpace(t, i+1)
		// The list held apart stands where its member's value starts;
		// the spaces around it meet there.
		value := m.list
		if end = m.at; m.list == "" || m.at <= colon || m.at > i {
			if i >= len(t) {
				return
			}
			end = endOfValue(t, i)
			value = t[i:end]
		}
		if !yield(key, MetadataValue{text: value}) {
			return
		}
		i = skipSpace(t, end)
		if i >= len(t) || t[i] != ',' {
			return
		}
		i++
	}
}

// walkElements yields the elements of the array text t in order.
func walkElements(t string, yield func(MetadataValue) bool) {
	i := skipSpace(t, 0)
	if i >= len(t) || t[i] != '[' {
		return
	}
	i = skipSpace(t, i+1)
	if i < len(t) && t[i] == ']' {
		return
	}
	for i < len(t) {
		end := endOfValue(t, i)
		if !yield(MetadataValue{text: t[i:end]}) {
			return
		}
		i = skipSpace(t, end)
		if i >= len(t) || t[i] != ',' {
			return
		}
		i = skipSpace(t, i+1)
	}
}

// anyTextString reports whether match holds for a string value (not an
// object key) anywhere in the JSON text t.
func anyTextString(t string, match func(string) bool) bool {
	// valueNext: the next string follows a ':' (a member's value); stack
	// tells, per open bracket, whether it is an array (whose strings are
	// all values). Deeper than stack tracks, every string is tested: a
	// false match is confirmed on the map, a miss is not possible.
	var stack [64]bool // true: array
	depth := 0
	valueNext := false
	for i := 0; i < len(t); {
		switch c := t[i]; c {
		case '"':
			end := endOfString(t, i)
			isValue := valueNext || (depth > 0 && depth <= len(stack) && stack[depth-1])
			if depth > len(stack) {
				isValue = true
			}
			if isValue {
				if s, ok := (MetadataValue{text: t[i:end]}).AsString(); ok && match(s) {
					return true
				}
			}
			valueNext = false
			i = end
			continue
		case ':':
			valueNext = true
		case ',':
			valueNext = false
		case '{', '[':
			if depth < len(stack) {
				stack[depth] = c == '['
			}
			depth++
			valueNext = false
		case '}', ']':
			depth--
			valueNext = false
		}
		i++
	}
	return false
}
