package report

import (
	"slices"

	"github.com/collectiveattr/collectiveattr/attribution"
)

// knownClasses are the classifications the page colours, strongest first
// (attribution's one list, reversed); any other value is drawn in the
// neutral colour under its own name.
var knownClasses = func() []string {
	c := attribution.Classifications()
	slices.Reverse(c)
	return c
}()

// classRank orders classifications for "strongest": known ones by
// strength, unknown ones below all.
func classRank(c string) int {
	if i := slices.Index(knownClasses, c); i >= 0 {
		return len(knownClasses) - i
	}
	return 0
}

// classCSS is the CSS class of a classification: its own for a known one,
// "c-other" otherwise (a result's text never becomes a class name).
func classCSS(c string) string {
	if slices.Contains(knownClasses, c) {
		return "c-" + c
	}
	return "c-other"
}
