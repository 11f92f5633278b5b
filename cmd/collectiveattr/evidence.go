package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/collectiveattr/collectiveattr/attribution"
)

// checkMode normalises --mode (case and surrounding spaces ignored) and
// refuses --evidence outside evidence mode.
func checkMode(o *attributeOptions) error {
	switch strings.ToLower(strings.TrimSpace(o.mode)) {
	case attribution.ModeReference:
		o.mode = attribution.ModeReference
		if strings.TrimSpace(o.evidence) != "" {
			return errors.New("--evidence needs --mode evidence")
		}
	case attribution.ModeEvidence:
		o.mode = attribution.ModeEvidence
	default:
		return fmt.Errorf("unknown --mode %q (known: reference, evidence)", o.mode)
	}
	return nil
}
