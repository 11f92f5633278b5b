package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// A truncated last line (a writer still appending) is skipped with a
// warning naming the file and line; --strict makes it exit 1.
func TestTruncatedLastLine(t *testing.T) {
	bin := buildCLI(t)
	dir := t.TempDir()
	full := simJob(t, "j1", 1)
	lines := strings.SplitAfter(strings.TrimSuffix(string(full), "\n"), "\n")
	truncated := filepath.Join(dir, "truncated.jsonl")
	body := strings.Join(lines[:len(lines)-1], "") + lines[len(lines)-1][:50]
	if err := os.WriteFile(truncated, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	complete := filepath.Join(dir, "complete.jsonl")
	if err := os.WriteFile(complete, []byte(strings.Join(lines[:len(lines)-1], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	want := runCLI(t, bin, nil, "attribute", "-q", complete)

	res := runCLI(t, bin, nil, "attribute", truncated)
	warning := "collectiveattr: warning: " + truncated + ": line " + itoa(len(lines)) + ": truncated last line (50 bytes, no newline) skipped"
	if res.code != 0 || !strings.Contains(res.stderr, warning) {
		t.Fatalf("exit %d, stderr %q; want exit 0 and %q", res.code, res.stderr, warning)
	}
	if res.stdout != want.stdout {
		t.Errorf("results differ from the file without the truncated line")
	}
	if clean := runCLI(t, bin, nil, "attribute", complete); strings.Contains(clean.stderr, "warning") {
		t.Errorf("complete file: stderr %q", clean.stderr)
	}

	for _, args := range [][]string{
		{"attribute", "--strict", truncated},
		{"report", "--strict", truncated, "-o", filepath.Join(dir, "r.html")},
	} {
		res := runCLI(t, bin, nil, args...)
		if res.code != exitInput || res.stdout != "" || !strings.Contains(res.stderr, "line "+itoa(len(lines))+": truncated last line") {
			t.Errorf("%v: exit %d, stdout %d bytes, stderr %q; want exit 1 naming the line", args, res.code, len(res.stdout), res.stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "r.html")); err == nil {
		t.Error("report --strict wrote a page")
	}
}

// Unreadable NCCL Inspector lines are counted on stderr; --strict makes
// them exit 1.
func TestStrictInspectorLines(t *testing.T) {
	dir := t.TempDir()
	job, logs, _ := inspectorJob(t, dir, false)
	entries, err := filepath.Glob(filepath.Join(logs, "*.log"))
	if err != nil || len(entries) == 0 {
		t.Fatalf("no Inspector logs: %v", err)
	}
	f, err := os.OpenFile(entries[0], os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("{not json\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var stdout, stderr strings.Builder
	if code := run([]string{"attribute", "--nccl-inspector", logs, job}, nil, &stdout, &stderr); code != 0 || !strings.Contains(stderr.String(), "1 lines skipped as unreadable") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"attribute", "--strict", "--nccl-inspector", logs, job}, nil, &stdout, &stderr); code != exitInput || stdout.Len() > 0 || !strings.Contains(stderr.String(), "1 unreadable lines (--strict)") {
		t.Fatalf("--strict: exit %d, stdout %q, stderr %q", code, stdout.String(), stderr.String())
	}
}

// --format table: one row per result with times from the job's start and
// sizes in binary units, then the summary; nothing on stderr.
func TestTableFormat(t *testing.T) {
	bin := buildCLI(t)
	dir := t.TempDir()
	job := jobsFile(t, dir, "j1")
	js := runCLI(t, bin, nil, "attribute", job)
	_, n := withoutSummary(js.stderr)
	if n <= 0 {
		t.Fatalf("the job has no results (stderr %q)", js.stderr)
	}
	res := runCLI(t, bin, nil, "attribute", "--format", "TABLE", job)
	if res.code != 0 || res.stderr != "" {
		t.Fatalf("exit %d, stderr %q", res.code, res.stderr)
	}
	lines := strings.Split(strings.TrimSuffix(res.stdout, "\n"), "\n")
	if len(lines) != n+2 {
		t.Fatalf("%d lines, want a header, %d rows and the summary:\n%s", len(lines), n, res.stdout)
	}
	header := strings.Fields(lines[0])
	if header[0] != "RANK" || !strings.Contains(lines[0], "CLASSIFICATION") {
		t.Errorf("header %q", lines[0])
	}
	row := regexp.MustCompile(`^\d+ +\d+\.\d{3} +\d+\.\d{3} +collective_\w+ +[01]\.\d\d +\d+\.\d (B|KiB|MiB|GiB) +`)
	for _, l := range lines[1 : n+1] {
		if !row.MatchString(l) {
			t.Errorf("row %q is not rank, start s, end s, classification, confidence, size", l)
		}
	}
	if want := "job j1: "; !strings.HasPrefix(lines[n+1], want) || !strings.Contains(lines[n+1], itoa(n)+" results") {
		t.Errorf("last line %q: want the summary", lines[n+1])
	}
	empty := filepath.Join(dir, "empty.jsonl")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if res := runCLI(t, bin, nil, "attribute", "--format", "table", empty); res.code != 0 || res.stdout != "no records; 0 results\n" {
		t.Errorf("empty input: exit %d, stdout %q", res.code, res.stdout)
	}
	if res := runCLI(t, bin, nil, "attribute", "--format", "yaml", job); res.code != exitConfig || !strings.Contains(res.stderr, `unknown --format "yaml"`) {
		t.Errorf("--format yaml: exit %d, stderr %q", res.code, res.stderr)
	}
}

func TestVersion(t *testing.T) {
	bin := buildCLI(t)
	for _, arg := range []string{"--version", "-version", "version"} {
		res := runCLI(t, bin, nil, arg)
		if res.code != 0 || !regexp.MustCompile(`^collectiveattr \S+.* go1\.\d+`).MatchString(res.stdout) || strings.Count(res.stdout, "\n") != 1 {
			t.Errorf("%s: exit %d, stdout %q", arg, res.code, res.stdout)
		}
	}
}

// A usage error is two lines: the error naming the bad flag or argument,
// and where the help is; never the help itself.
func TestShortUsageErrors(t *testing.T) {
	bin := buildCLI(t)
	dir := t.TempDir()
	job := jobsFile(t, dir, "j1")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"attribute", "--bogus", job}, "flag provided but not defined: -bogus"},
		{[]string{"attribute", "--preset"}, "flag needs an argument: -preset"},
		{[]string{"attribute", "--mode", "fast", job}, `unknown --mode "fast"`},
		{[]string{"attribute"}, "missing FILE"},
		{[]string{"attribute", job, job}, "expected one FILE, got 2"},
		{[]string{"report", job}, "missing -o REPORT.html"},
		{[]string{"report", "--columns", "many", job, "-o", "x.html"}, `invalid value "many" for flag -columns`},
		{[]string{"report", "--wide", job, "-o", "x.html"}, "flag provided but not defined: -wide"},
		{[]string{"frobnicate"}, `unknown command "frobnicate"`},
		{[]string{"ledger", "--format", "table", job}, "flag provided but not defined: -format"},
	}
	for _, tc := range tests {
		res := runCLI(t, bin, nil, tc.args...)
		if res.code != exitConfig || res.stdout != "" || !strings.Contains(res.stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", tc.args, res.code, res.stderr, tc.want)
		}
		if n := strings.Count(res.stderr, "\n"); n > 5 || strings.Contains(res.stderr, "Flags:") {
			t.Errorf("%v: %d lines of stderr, the help is not for errors:\n%s", tc.args, n, res.stderr)
		}
		if !strings.Contains(res.stderr, "--help") {
			t.Errorf("%v: stderr %q does not say where the help is", tc.args, res.stderr)
		}
	}
}

// -o errors name the path the user gave, not the temporary file beside it.
func TestReportOutputErrorsNameThePath(t *testing.T) {
	dir := t.TempDir()
	job := jobsFile(t, dir, "j1")
	for _, out := range []string{
		filepath.Join(dir, "no-such-dir", "r.html"),
		filepath.Join(job, "r.html"), // under a file
		dir,                          // a directory
	} {
		var stdout, stderr strings.Builder
		code := run([]string{"report", job, "-o", out}, nil, &stdout, &stderr)
		msg := stderr.String()
		if code != exitInput || !strings.HasPrefix(msg, "collectiveattr report: -o "+out+": ") {
			t.Errorf("-o %s: exit %d, stderr %q; want exit 1 naming the path", out, code, msg)
		}
		if out == dir && !strings.HasSuffix(msg, ": is a directory\n") {
			t.Errorf("-o %s: stderr %q; want is a directory", out, msg)
		}
		if strings.Contains(msg, ".r.html.") || strings.Contains(msg, "."+filepath.Base(dir)+".") {
			t.Errorf("-o %s: stderr %q names the temporary file", out, msg)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
