package main

import (
	"fmt"
	"io"
	"runtime/debug"
)

// shortUsage is what a mistyped command line gets: the synopsis and where
// the full help is, not the full help.
const shortUsage = `Usage: collectiveattr attribute [flags] FILE|-
       collectiveattr report [flags] FILE|- -o REPORT.html
       collectiveattr ledger [flags] FILE|-
Run "collectiveattr --help" (or "collectiveattr report|ledger --help") for the flags.
`

// usageError prints a flag or argument error in two lines, the error (which
// names the bad flag or argument) and where the help is, and returns the
// usage exit code.
func usageError(stderr io.Writer, prog, command string, err error) int {
	fmt.Fprintf(stderr, "%s: %v\nRun \"collectiveattr %s --help\" for usage.\n", prog, err, command)
	return exitConfig
}

// version is set at link time (-ldflags "-X main.version=v1.2.3"); without
// it the module version and VCS revision the binary was built from are shown.
var version = ""

func versionLine() string {
	v := version
	info, ok := debug.ReadBuildInfo()
	if v == "" && ok {
		v = info.Main.Version
	}
	if v == "" {
		v = "(devel)"
	}
	line := "collectiveattr " + v
	if !ok {
		return line
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+modified"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" {
		line += " (commit " + rev + modified + ")"
	}
	return line + " " + info.GoVersion
}
