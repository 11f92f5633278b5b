package inspector

import (
	"errors"
	"math/rand/v2"
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

// TestLearnWhenNotCurrentEqualsLearnAlways drives two joiners with the same
// random statements (owners that share a process, conflict over one job
// and rank with other details, fill the bound), one learning every
// statement, the other only the statements whose last Learned is not
// Current. The clock moves in small steps that together stay below 3/4 of
// the TTL, then jumps past it, so that both expire the same claims; after
// every step both must hold the same claims, owners and order, join
// alike, refuse alike, and the skipping one's last-seen times may lag by
// less than the refresh interval only.
func TestLearnWhenNotCurrentEqualsLearnAlways(t *testing.T) {
	const ttl = 80 * time.Second
	type statement struct {
		host  string
		pid   int64
		owner Owner
	}
	var pool []statement
	for _, host := range []string{"n0", "n1"} {
		for pid := int64(1); pid <= 3; pid++ {
			for rank := int64(0); rank < 2; rank++ {
				for _, local := range []int64{0, 1} {
					pool = append(pool, statement{host, pid, Owner{JobID: "j", Rank: rank, LocalRank: local, WorldSize: 2}})
				}
				pool = append(pool, statement{host, pid, Owner{SessionID: "s", Rank: rank}})
			}
		}
	}
	for seed := range int64(200) {
		rng := rand.New(rand.NewPCG(uint64(seed), 7))
		clk := &fakeClock{t: time.Unix(1_700_000_000, 0)}
		maxProcs := rng.IntN(5)
		always, skipping := NewJoiner(ttl, maxProcs, clk.now), NewJoiner(ttl, maxProcs, clk.now)
		learned := make([]Learned, len(pool))
		var sinceJump time.Duration
		for step := range 300 {
			switch r := rng.IntN(20); {
			case r < 14:
				k := rng.IntN(len(pool))
				if rng.IntN(4) == 0 {
					k = rng.IntN(3) // a few statements come often
				}
				s := pool[k]
				always.Learn(s.host, s.pid, s.owner)
				if !skipping.Current(learned[k], clk.now()) {
					learned[k] = skipping.Learn(s.host, s.pid, s.owner)
				}
			case r < 16:
				always.Expire()
				skipping.Expire()
			case r < 19:
				if d := time.Duration(rng.Int64N(int64(ttl / 16))); sinceJump+d < ttl*3/4 {
					clk.advance(d)
					sinceJump += d
				}
			default:
				clk.advance(ttl + time.Duration(rng.Int64N(int64(ttl))))
				sinceJump = 0
			}
			if always.Full != skipping.Full || len(always.procs) != len(skipping.procs) {
				t.Fatalf("seed %d step %d: full %d/%d, processes %d/%d", seed, step, always.Full, skipping.Full, len(always.procs), len(skipping.procs))
			}
			for key, want := range always.procs {
				got := skipping.procs[key]
				if len(got) != len(want) {
					t.Fatalf("seed %d step %d: %v: %d claims, want %d", seed, step, key, len(got), len(want))
				}
				for i := range want {
					lag := want[i].lastSeen.Sub(got[i].lastSeen)
					if got[i].owner != want[i].owner || lag < 0 || lag >= ttl/RefreshFraction {
						t.Fatalf("seed %d step %d: %v claim %d: %+v seen %v, want %+v seen %v", seed, step, key, i, got[i].owner, got[i].lastSeen, want[i].owner, want[i].lastSeen)
					}
				}
				o1, err1 := always.Join(key.Host, key.PID)
				o2, err2 := skipping.Join(key.Host, key.PID)
				if o1 != o2 || (err1 == nil) != (err2 == nil) {
					t.Fatalf("seed %d step %d: %v joins %+v, %v; want %+v, %v", seed, step, key, o2, err2, o1, err1)
				}
			}
		}
	}
}

// TestCurrentLearnKeepsTheMappingWithinTheTTL: an owner that learns only
// when not Current, sending every second, keeps its mapping alive at
// least TTL − TTL/RefreshFraction after its last telemetry, and it is gone
// once the TTL has passed.
func TestCurrentLearnKeepsTheMappingWithinTheTTL(t *testing.T) {
	const ttl = 80 * time.Second
	j, clk := newTestJoiner(ttl)
	o := Owner{JobID: "j", Rank: 1}
	var l Learned
	learns := 0
	for range 100 {
		if !j.Current(l, clk.now()) {
			l = j.Learn("n", 7, o)
			learns++
		}
		clk.advance(time.Second)
	}
	if learns > 100/int(ttl/RefreshFraction/time.Second)+1 {
		t.Fatalf("learned %d times in 100 s with a TTL of %v", learns, ttl)
	}
	last := clk.now().Add(-time.Second)
	clk.t = last.Add(ttl - ttl/RefreshFraction)
	if _, err := j.Join("n", 7); err != nil {
		t.Fatalf("TTL − TTL/%d after the last telemetry: %v", RefreshFraction, err)
	}
	clk.t = last.Add(ttl + time.Nanosecond)
	if _, err := j.Join("n", 7); !errors.Is(err, ErrUnknownProcess) {
		t.Fatalf("past the TTL after the last telemetry: err %v, want ErrUnknownProcess", err)
	}
}
