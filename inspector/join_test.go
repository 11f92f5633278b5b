package inspector

import (
	"errors"
	"testing"
	"time"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newTestJoiner(ttl time.Duration) (*Joiner, *fakeClock) {
	clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
	return NewJoiner(ttl, 0, clk.now), clk
}

func TestJoinerJoinsTheOwner(t *testing.T) {
	j, _ := newTestJoiner(time.Minute)
	a := Owner{JobID: "job-a", Rank: 3, LocalRank: 3, WorldSize: 8}
	j.Learn("node01", 100, a)
	got, err := j.Join("node01", 100)
	if err != nil || got != a {
		t.Fatalf("got %+v, %v; want %+v", got, err, a)
	}
	for _, probe := range []Process{{"node01", 101}, {"node02", 100}} {
		if _, err := j.Join(probe.Host, probe.PID); !errors.Is(err, ErrUnknownProcess) {
			t.Fatalf("%v: err %v, want ErrUnknownProcess", probe, err)
		}
	}
}

func TestJoinerIgnoresUnknownHostOrPID(t *testing.T) {
	j, _ := newTestJoiner(time.Minute)
	j.Learn("", 100, Owner{JobID: "a"})
	j.Learn("node01", -1, Owner{JobID: "a"})
	if j.Processes() != 0 {
		t.Fatalf("%d processes learned from records without host or pid", j.Processes())
	}
}

func TestJoinerExpiresWhenTheOwnerFallsSilent(t *testing.T) {
	j, clk := newTestJoiner(time.Minute)
	a := Owner{JobID: "job-a", Rank: 1, WorldSize: 2}
	j.Learn("node01", 100, a)

	// Joining does not keep a mapping alive: only the owner's telemetry does.
	for range 5 {
		clk.advance(20 * time.Second)
		_, _ = j.Join("node01", 100)
	}
	if _, err := j.Join("node01", 100); !errors.Is(err, ErrUnknownProcess) {
		t.Fatalf("after 100 s without the owner's telemetry: err %v, want ErrUnknownProcess", err)
	}

	// The owner's own telemetry refreshes it.
	j.Learn("node01", 100, a)
	clk.advance(50 * time.Second)
	j.Learn("node01", 100, a)
	clk.advance(50 * time.Second)
	if _, err := j.Join("node01", 100); err != nil {
		t.Fatalf("50 s after the owner's last telemetry: %v", err)
	}
	clk.advance(11 * time.Second)
	if _, err := j.Join("node01", 100); !errors.Is(err, ErrUnknownProcess) {
		t.Fatalf("61 s after: err %v", err)
	}
	if n := j.Expire(); n != 1 || j.Processes() != 0 {
		t.Fatalf("Expire dropped %d, %d processes left", n, j.Processes())
	}
}

func TestJoinerNeverMovesAProcessToAnotherJob(t *testing.T) {
	j, clk := newTestJoiner(time.Minute)
	a := Owner{JobID: "job-a", Rank: 0, WorldSize: 2}
	b := Owner{JobID: "job-b", Rank: 0, WorldSize: 2}
	j.Learn("node01", 7, a)
	clk.advance(10 * time.Second)
	// Another job's process with the same host and pid (a pid namespace, or
	// a reused pid while a's mapping lives): neither gets the records.
	j.Learn("node01", 7, b)
	var amb *AmbiguousError
	if _, err := j.Join("node01", 7); !errors.As(err, &amb) || len(amb.Owners) != 2 {
		t.Fatalf("err %v, want an AmbiguousError naming both owners", err)
	}
	// a keeps reporting: still ambiguous however often b reports.
	for range 3 {
		clk.advance(30 * time.Second)
		j.Learn("node01", 7, a)
		j.Learn("node01", 7, b)
		if _, err := j.Join("node01", 7); !errors.As(err, &amb) {
			t.Fatalf("err %v, want ambiguous while both report", err)
		}
	}
	// a falls silent: after the TTL the process is b's.
	clk.advance(30 * time.Second)
	j.Learn("node01", 7, b)
	clk.advance(31 * time.Second)
	j.Learn("node01", 7, b)
	got, err := j.Join("node01", 7)
	if err != nil || got.JobID != "job-b" {
		t.Fatalf("got %+v, %v; want job-b once job-a's mapping expired", got, err)
	}
}

func TestJoinerSameJobAnotherRankIsAmbiguous(t *testing.T) {
	j, _ := newTestJoiner(time.Minute)
	j.Learn("pod", 1, Owner{JobID: "a", Rank: 0, WorldSize: 2})
	j.Learn("pod", 1, Owner{JobID: "a", Rank: 1, WorldSize: 2})
	var amb *AmbiguousError
	if _, err := j.Join("pod", 1); !errors.As(err, &amb) {
		t.Fatalf("err %v, want ambiguous", err)
	}
}

func TestJoinerOwnerUpdatesItsOwnMapping(t *testing.T) {
	j, _ := newTestJoiner(time.Minute)
	j.Learn("n", 1, Owner{JobID: "a", Rank: 0, WorldSize: 2, DeviceID: 0})
	j.Learn("n", 1, Owner{JobID: "a", Rank: 0, WorldSize: 4, DeviceID: 1})
	got, err := j.Join("n", 1)
	if err != nil || got.WorldSize != 4 || got.DeviceID != 1 {
		t.Fatalf("got %+v, %v", got, err)
	}
}

func TestJoinerJobFallsBackToSession(t *testing.T) {
	// A record with no job_id belongs to its session's job: two sessions
	// are two jobs.
	j, _ := newTestJoiner(time.Minute)
	j.Learn("n", 1, Owner{SessionID: "s1"})
	j.Learn("n", 1, Owner{SessionID: "s2"})
	var amb *AmbiguousError
	if _, err := j.Join("n", 1); !errors.As(err, &amb) {
		t.Fatalf("err %v, want ambiguous", err)
	}
}

func TestJoinerBound(t *testing.T) {
	clk := &fakeClock{t: time.Unix(0, 0)}
	j := NewJoiner(time.Minute, 2, clk.now)
	j.Learn("n", 1, Owner{JobID: "a"})
	j.Learn("n", 2, Owner{JobID: "a", Rank: 1})
	j.Learn("n", 3, Owner{JobID: "a", Rank: 2})
	j.Learn("n", 1, Owner{JobID: "a"}) // a known process is refreshed
	if j.Processes() != 2 || j.Full != 1 {
		t.Fatalf("%d processes, %d refused", j.Processes(), j.Full)
	}
	if _, err := j.Join("n", 3); !errors.Is(err, ErrUnknownProcess) {
		t.Fatalf("err %v", err)
	}
}
