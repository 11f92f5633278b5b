package report

import "slices"

// Classifications the page colours, strongest first. collective_confirmed is
// evidence mode's (NCCL's accounting covers the spike); any other value is
// drawn in the neutral colour under its own name.
var knownClasses = []string{
	"collective_confirmed",
	"collective_confident",
	"collective_likely",
	"collective_suspect",
}

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
