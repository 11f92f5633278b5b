package telemetry

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode"
)

// The reference is Python; these helpers reproduce the few Python semantics
// its rules depend on, so every package applies them the same way.

// IsSpace reports whether Python's str.isspace() holds for r: Unicode
// White_Space plus the ASCII information separators U+001C..U+001F, which
// Python counts as whitespace and Go's unicode.IsSpace does not.
func IsSpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// TrimSpace is Python's str.strip() without arguments.
func TrimSpace(s string) string { return strings.TrimFunc(s, IsSpace) }

// IsBlank reports whether Python's `not s.strip()` holds.
func IsBlank(s string) bool {
	for _, r := range s {
		if !IsSpace(r) {
			return false
		}
	}
	return true
}

// IntValue reports whether a metadata value is a Python int and returns it:
// an integer json.Number lexeme (no fraction or exponent), a bool (Python's
// bool is an int: true is 1), or a Go integer. Integers outside int64 are
// reported as not representable.
func IntValue(v any) (int64, bool) {
	switch x := v.(type) {
	case json.Number:
		return intLexeme(string(x))
	case bool:
		if x {
			return 1, true
		}
		return 0, true
	case int64:
		return x, true
	case int:
		return int64(x), true
	case int32:
		return int64(x), true
	}
	return 0, false
}

// intLexeme is IntValue of a JSON number lexeme.
func intLexeme(x string) (int64, bool) {
	if strings.ContainsAny(x, ".eE") {
		return 0, false
	}
	n, err := strconv.ParseInt(x, 10, 64)
	return n, err == nil
}
