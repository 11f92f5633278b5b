package kineto

import (
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/collectiveattr/collectiveattr/markers"
)

const base = int64(1767225600000000000)

func readFile(t *testing.T, path string) *Trace {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, err := Read(f)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestReadKinetoTrace(t *testing.T) {
	tr := readFile(t, "testdata/rank1.json")
	if !tr.HasRank || tr.Rank != 1 || tr.Legacy {
		t.Fatalf("rank %d (%v), legacy %v", tr.Rank, tr.HasRank, tr.Legacy)
	}
	want := []markers.Marker{
		{Rank: 1, StartNs: base + 1_200_100_000, EndNs: base + 1_350_100_000, Op: "all_reduce", Name: "allreduce",
			CommID: "0", Seq: 12, HasSeq: true, NRanks: 4, Ranks: []int64{0, 1, 2, 3}, MessageBytes: 64 << 20},
		// A send: no identity (c10d numbers P2P ops on another counter);
		// its kernel carries no External id, so the CPU op times it.
		{Rank: 1, StartNs: base + 1_300_000_000, EndNs: base + 1_300_020_000, Op: "send", Name: "send",
			CommID: "0", NRanks: 4, Ranks: []int64{0, 1, 2, 3}, MessageBytes: 2 << 20},
		{Rank: 1, StartNs: base + 1_450_000_000, EndNs: base + 1_452_000_000, Op: "send_recv",
			Name: "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"},
	}
	if !reflect.DeepEqual(tr.Markers, want) {
		t.Fatalf("markers\n got %+v\nwant %+v", tr.Markers, want)
	}
	if !tr.Markers[0].Identity() || tr.Markers[1].Identity() {
		t.Fatal("identity: the all_reduce has one, the send none")
	}
	wantPhases := []Phase{
		{Name: "ProfilerStep#7", Path: []string{"ProfilerStep#7"}, ThreadID: 4242, StartNs: base + 1_000_000_000, EndNs: base + 1_500_000_000},
		{Name: "backward", Path: []string{"ProfilerStep#7", "backward"}, ThreadID: 4242, StartNs: base + 1_100_000_000, EndNs: base + 1_400_000_000},
	}
	if !reflect.DeepEqual(tr.Phases, wantPhases) {
		t.Fatalf("phases\n got %+v\nwant %+v", tr.Phases, wantPhases)
	}
	wantMem := []MemorySample{{TimeNs: base + 1_200_000_100, DeviceID: 0, ReservedBytes: 10 << 30, AllocatedBytes: 8 << 30}}
	if !reflect.DeepEqual(tr.Memory, wantMem) {
		t.Fatalf("memory %+v, want %+v", tr.Memory, wantMem)
	}
	if tr.Stats.Events != 9 || tr.Stats.Kernels != 2 || tr.Stats.CPUOps != 2 || tr.Stats.Skipped != 0 {
		t.Fatalf("stats %+v", tr.Stats)
	}
}

func TestReadTimes(t *testing.T) {
	for _, tc := range []struct {
		name, trace string
		wantStart   int64
		wantErr     error
	}{
		{"relative to baseTimeNanoseconds", `{"baseTimeNanoseconds": 1767225600000000000, "traceEvents": [` + allReduceAt("5.125") + `]}`, base + 5125, nil},
		{"base after the events", `{"traceEvents": [` + allReduceAt("5.125") + `], "baseTimeNanoseconds": 1767225600000000000}`, base + 5125, nil},
		{"older trace: absolute µs", `{"traceEvents": [` + allReduceAt("1767225600000005.125") + `]}`, base + 5125, nil},
		{"µs with an exponent", `{"baseTimeNanoseconds": 1767225600000000000, "traceEvents": [` + allReduceAt("5.125e3") + `]}`, base + 5_125_000, nil},
		{"legacy format: times from the profiler start", `[{"name": "gloo:all_reduce", "ph": "X", "ts": 12.5, "dur": 3, "tid": 1, "pid": "CPU functions", "args": {}}]`, 0, ErrRelativeTimes},
		{"no base and small times", `{"traceEvents": [` + allReduceAt("5.125") + `]}`, 0, ErrRelativeTimes},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := Read(strings.NewReader(tc.trace))
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if len(tr.Markers) != 1 || tr.Markers[0].StartNs != tc.wantStart {
				t.Fatalf("markers %+v, want one at %d", tr.Markers, tc.wantStart)
			}
		})
	}
}

func allReduceAt(ts string) string {
	return `{"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": ` + ts + `, "dur": 1.000,
    "args": {"Collective name": "allreduce", "Process Group Name": "0", "Seq": 3, "Group size": 2, "dtype": "Float", "In msg nelems": 4, "Out msg nelems": 4}}`
}

// The legacy format (PyTorch without Kineto) gives bare markers: the
// backends' execution ranges when it has them.
func TestReadLegacyArray(t *testing.T) {
	trace := `[
{"name": "c10d::allreduce_", "ph": "X", "ts": 1767225600000001.000, "dur": 5.0, "tid": 1, "pid": "CPU functions", "args": {}},
{"name": "gloo:all_reduce", "ph": "X", "ts": 1767225600000002.000, "dur": 40.5, "tid": 7, "pid": "CPU functions", "args": {}},
{"name": "aten::add", "ph": "X", "ts": 1767225600000003.000, "dur": 1.0, "tid": 1, "pid": "CPU functions", "args": {}}
]`
	tr, err := Read(strings.NewReader(trace))
	if err != nil {
		t.Fatal(err)
	}
	want := []markers.Marker{{StartNs: base + 2000, EndNs: base + 42500, Op: "all_reduce", Name: "gloo:all_reduce"}}
	if !tr.Legacy || tr.HasRank || !reflect.DeepEqual(tr.Markers, want) {
		t.Fatalf("legacy %v rank %v markers %+v", tr.Legacy, tr.HasRank, tr.Markers)
	}
}

func TestReadBadInput(t *testing.T) {
	good := `{"baseTimeNanoseconds": 1767225600000000000, "traceEvents": [` + allReduceAt("5.125") + `]}`
	var syntax *SyntaxError
	for _, tc := range []struct {
		name, trace string
		syntax      bool
		skipped     int
	}{
		{"torn", good[:len(good)/2], true, 0},
		{"not JSON", `hello`, true, 0},
		{"a string", `"trace"`, true, 0},
		{"trailing data", good + `{}`, true, 0},
		{"ts a boolean", strings.Replace(good, `"ts": 5.125`, `"ts": true`, 1), false, 1},
		{"Seq a string", strings.Replace(good, `"Seq": 3`, `"Seq": "x"`, 1), false, 1},
		{"args not an object", strings.Replace(good, `"dur": 1.000,
    "args": {`, `"dur": 1.000, "args": [1], "x": {`, 1), false, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tr, err := Read(strings.NewReader(tc.trace))
			if tc.syntax {
				if !errors.As(err, &syntax) {
					t.Fatalf("error %v, want a SyntaxError", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tr.Stats.Skipped != tc.skipped || (tc.skipped > 0 && tr.Stats.FirstSkip == "") {
				t.Fatalf("stats %+v, want %d skipped", tr.Stats, tc.skipped)
			}
		})
	}
}
