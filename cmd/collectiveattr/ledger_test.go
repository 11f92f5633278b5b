package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
)

// ledgerRow is one line of `collectiveattr ledger`.
type ledgerRow struct {
	Rank        int64            `json:"rank"`
	TimestampNs int64            `json:"timestamp_ns"`
	Used        int64            `json:"device_used_bytes"`
	Reserved    *int64           `json:"allocator_reserved_bytes"`
	Hidden      int64            `json:"hidden_bytes"`
	NCCL        int64            `json:"nccl_bytes"`
	Source      string           `json:"nccl_source"`
	Context     int64            `json:"context_bytes"`
	Unexplained int64            `json:"unexplained_bytes"`
	ByComm      map[string]int64 `json:"nccl_by_comm"`
	Flags       []string         `json:"flags"`
}

func ledgerRun(t *testing.T, stdin []byte, args ...string) ([]ledgerRow, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(append([]string{"ledger"}, args...), bytes.NewReader(stdin), &out, &errb)
	var rows []ledgerRow
	sc := bufio.NewScanner(&out)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r ledgerRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		rows = append(rows, r)
	}
	return rows, errb.String(), code
}

func TestLedgerCommand(t *testing.T) {
	shape, _ := jobsim.QualityShapeByName("small")
	c, err := jobsim.GenerateQualityCase("easy", 1, shape, true)
	if err != nil {
		t.Fatal(err)
	}
	path := tempPath(t, "run.jsonl")
	writeEvents(t, path, c.Events)
	samples := 0
	for i := range c.Events {
		if c.Events[i].EventType == "sample" {
			samples++
		}
	}
	comms := map[string]bool{}
	for _, cm := range c.Truth.Comms {
		comms[cm.ID] = true
	}

	rows, stderr, code := ledgerRun(t, nil, path)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if len(rows) != samples {
		t.Fatalf("%d rows, want one per sample (%d)", len(rows), samples)
	}
	if !strings.Contains(stderr, "rows, 8 ranks (8 with NCCL accounting)") {
		t.Errorf("summary %q", stderr)
	}
	sources := map[string]int{}
	for i, r := range rows {
		if i > 0 && (r.TimestampNs < rows[i-1].TimestampNs || r.TimestampNs == rows[i-1].TimestampNs && r.Rank <= rows[i-1].Rank) {
			t.Fatalf("row %d (rank %d, t %d) out of time order", i, r.Rank, r.TimestampNs)
		}
		if r.Reserved == nil || r.Hidden != r.Used-*r.Reserved || r.Hidden != r.NCCL+r.Context+r.Unexplained {
			t.Fatalf("row %d does not add up: %+v", i, r)
		}
		var byComm int64
		for id, b := range r.ByComm {
			if !comms[id] {
				t.Fatalf("row %d: unknown communicator %q", i, id)
			}
			byComm += b
		}
		if r.Source == "accounting" && byComm != r.NCCL {
			t.Fatalf("row %d: communicators' parts %d, nccl %d", i, byComm, r.NCCL)
		}
		sources[r.Source]++
	}
	if sources["accounting"] < len(rows)*95/100 || sources["attributed"] > 0 {
		t.Errorf("sources %v, want accounting nearly everywhere", sources)
	}

	// Standard input gives the same rows; without accounting NCCL comes from
	// the results, in either mode.
	input, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fromStdin, _, code := ledgerRun(t, input, "-q", "-")
	if code != 0 || !slices.EqualFunc(rows, fromStdin, func(a, b ledgerRow) bool { return a.TimestampNs == b.TimestampNs && a.NCCL == b.NCCL }) {
		t.Errorf("stdin: exit %d, rows differ", code)
	}
	c, err = jobsim.GenerateQualityCase("lazy_stepup", 1, shape, false)
	if err != nil {
		t.Fatal(err)
	}
	writeEvents(t, path, c.Events)
	for _, mode := range []string{"evidence", "reference"} {
		rows, stderr, code := ledgerRun(t, nil, "--mode", mode, path)
		if code != 0 {
			t.Fatalf("--mode %s: exit %d: %s", mode, code, stderr)
		}
		attributed := 0
		for _, r := range rows {
			if r.Source == "accounting" {
				t.Fatalf("--mode %s: accounting without accounting records: %+v", mode, r)
			}
			if r.Source == "attributed" {
				attributed++
			}
		}
		if attributed == 0 {
			t.Errorf("--mode %s: no attributed row", mode)
		}
	}
}

func TestLedgerCommandErrors(t *testing.T) {
	path := tempPath(t, "run.jsonl")
	writeEvents(t, path, nil)
	rows, stderr, code := ledgerRun(t, nil, path)
	if code != 0 || len(rows) != 0 || !strings.Contains(stderr, "0 rows") {
		t.Errorf("empty input: exit %d, %d rows, %q", code, len(rows), stderr)
	}
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"--mode", "guess", path}, exitConfig, "unknown --mode"},
		{[]string{}, exitConfig, "missing FILE"},
		{[]string{path, path}, exitConfig, "expected one FILE"},
		{[]string{"--preset", "loud", path}, exitConfig, "preset"},
		{[]string{tempPath(t, "absent.jsonl")}, exitInput, "no such file"},
	} {
		_, stderr, code := ledgerRun(t, nil, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, tc.code, tc.stderr)
		}
	}
	var out bytes.Buffer
	if code := run([]string{"ledger", "--help"}, nil, &out, &out); code != 0 {
		t.Fatalf("--help: exit %d", code)
	}
	for _, flagName := range []string{"--mode", "--preset", "--nccl-inspector", "--job", "--strict", "--quiet", "FILE|-", "nccl_by_comm"} {
		if !strings.Contains(out.String(), flagName) {
			t.Errorf("help does not mention %s", flagName)
		}
	}
}
