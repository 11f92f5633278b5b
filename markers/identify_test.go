package markers

import (
	"reflect"
	"testing"
)

// A bare, well-timed marker takes the identity of the loosely timed
// marker of the same rank and op whose interval holds it; the identified
// markers neither used nor naming an op already named are returned.
func TestIdentify(t *testing.T) {
	timed := []Marker{
		{Rank: 1, StartNs: 1_050, EndNs: 1_200, Op: "all_reduce"},
		{Rank: 1, StartNs: 5_000, EndNs: 5_100, Op: "all_reduce", CommID: "0"},
		{Rank: 1, StartNs: 9_000, EndNs: 9_100, Op: "broadcast"},
		{Rank: 1, StartNs: 12_000, EndNs: 12_100, Op: "all_reduce", CommID: "0", Seq: 9, HasSeq: true},
	}
	identified := []Marker{
		{Rank: 1, StartNs: 1_000, EndNs: 1_300, Op: "all_reduce", CommID: "0", Seq: 7, HasSeq: true, NRanks: 4, MessageBytes: 64, Approximate: true},
		{Rank: 1, StartNs: 4_000, EndNs: 4_950, Op: "all_reduce", CommID: "0", Seq: 8, HasSeq: true, NRanks: 4, Approximate: true},
		{Rank: 2, StartNs: 9_000, EndNs: 9_200, Op: "broadcast", CommID: "0", Seq: 1, HasSeq: true, Approximate: true},
		{Rank: 1, StartNs: 12_000, EndNs: 12_100, Op: "all_reduce", CommID: "0", Seq: 9, HasSeq: true, Approximate: true},
	}
	rest := Identify(timed, identified, 100)
	if !timed[0].HasSeq || timed[0].Seq != 7 || timed[0].CommID != "0" || timed[0].NRanks != 4 || timed[0].MessageBytes != 64 || timed[0].StartNs != 1_050 || timed[0].Approximate {
		t.Errorf("first: %+v", timed[0])
	}
	if !timed[1].HasSeq || timed[1].Seq != 8 {
		t.Errorf("second (50 ns past the interval, within tolerance): %+v", timed[1])
	}
	if timed[2].HasSeq {
		t.Errorf("third took another rank's identity: %+v", timed[2])
	}
	want := []Marker{identified[2]} // the last names the op timed[3] names
	if !reflect.DeepEqual(rest, want) {
		t.Errorf("rest %+v, want %+v", rest, want)
	}
}
