package main

import (
	"regexp"
	"strings"
	"testing"
)

// summaryRE is the one line attribute prints on stderr in JSON mode.
var summaryRE = regexp.MustCompile(`^collectiveattr: (?:job \S+: |records without job_id: |no records; )(?:\d+ records, \d+ ranks?, \d+\.\d s; )?(\d+) results?(?:: .*)?$`)

// withoutSummary returns stderr without its last line when that line is
// the JSON mode's summary, and the summary's result count (-1: none).
func withoutSummary(stderr string) (rest string, results int) {
	body := strings.TrimSuffix(stderr, "\n")
	i := strings.LastIndexByte(body, '\n')
	last := body[i+1:]
	m := summaryRE.FindStringSubmatch(last)
	if m == nil {
		return stderr, -1
	}
	n := 0
	for _, c := range m[1] {
		n = n*10 + int(c-'0')
	}
	if i < 0 {
		return "", n
	}
	return body[:i+1], n
}

// nonSummary is stderr without the summary line.
func nonSummary(stderr string) string {
	rest, _ := withoutSummary(stderr)
	return rest
}

func TestSummaryLine(t *testing.T) {
	bin := buildCLI(t)
	dir := t.TempDir()
	job := jobsFile(t, dir, "j1")
	res := runCLI(t, bin, nil, "attribute", job)
	if res.code != 0 {
		t.Fatalf("exit %d: %s", res.code, res.stderr)
	}
	rest, n := withoutSummary(res.stderr)
	if rest != "" || n < 0 {
		t.Fatalf("stderr %q: want one summary line", res.stderr)
	}
	if want := "collectiveattr: job j1: "; !strings.HasPrefix(res.stderr, want) {
		t.Errorf("summary %q does not start with %q", res.stderr, want)
	}
	if got := strings.Count(res.stdout, `"rank"`); got != n {
		t.Errorf("summary says %d results, stdout has %d", n, got)
	}
	for _, q := range []string{"-q", "--quiet"} {
		if res := runCLI(t, bin, nil, "attribute", q, job); res.code != 0 || res.stderr != "" {
			t.Errorf("%s: exit %d, stderr %q; want no summary", q, res.code, res.stderr)
		}
	}
}
