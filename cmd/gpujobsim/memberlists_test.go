package main

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// -member-lists chooses which markers list the members: by default a rank's
// first marker only (in 4 s of a 2-rank job: 2 of 20 launch records), with
// "every" all of them; any other value is a usage error.
func TestSimulateMemberLists(t *testing.T) {
	dir := t.TempDir()
	base := []string{"-fast", "-duration", "4s", "-ranks", "2", "-late-ranks", "0", "-quiet", "-epoch", "2026-01-01T00:00:00Z", "-otlp-endpoint", ""}
	for _, tt := range []struct {
		flags       []string
		launches    int
		withMembers int
	}{
		{nil, 20, 2},
		{[]string{"-member-lists", "declared"}, 20, 2},
		{[]string{"-member-lists", "every"}, 20, 20},
	} {
		path := filepath.Join(dir, "s.jsonl")
		var stdout, stderr strings.Builder
		args := append(append(append([]string(nil), base...), tt.flags...), "-stormlog", path)
		if err := simulate(context.Background(), args, &stdout, &stderr); err != nil {
			t.Fatalf("%v: %v", tt.flags, err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		launches, withMembers := 0, 0
		for line := range strings.Lines(string(data)) {
			if strings.Contains(line, `"nccl.seq"`) {
				launches++
				if strings.Contains(line, `"nccl.comm.ranks":[0,1]`) {
					withMembers++
				}
			}
		}
		if launches != tt.launches || withMembers != tt.withMembers {
			t.Errorf("%v: %d launch records, %d listing the members; want %d, %d", tt.flags, launches, withMembers, tt.launches, tt.withMembers)
		}
	}
	var stdout, stderr strings.Builder
	err := simulate(context.Background(), append(base, "-member-lists", "some"), &stdout, &stderr)
	var ue usageError
	if !errors.As(err, &ue) || !strings.Contains(err.Error(), "-member-lists must be declared or every") {
		t.Errorf("-member-lists some: %v; want a usage error", err)
	}
}
