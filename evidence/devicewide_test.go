package evidence

import (
	"slices"
	"testing"
)

// TestDeviceWideMemoryReasonCode: a result of a rank whose samples up to
// some time were known to be device-wide (other processes' memory on the
// GPU included) says so when its interval starts by then, and only then;
// the other codes, the classification and the numbers do not change, and
// ranks without such samples never carry the code.
func TestDeviceWideMemoryReasonCode(t *testing.T) {
	j := trainingJob(4, 100*ms)
	j.worldAllReduces()
	j.collectiveSpike([]int{0, 1, 2, 3}, 10, gib)
	j.collectiveSpike([]int{0, 1, 2, 3}, 30, gib)
	cfg := withMinConfidence(t, 0)
	plain := Attribute(j.input(), cfg, nil)

	in := j.input()
	in.Ranks[0].DeviceWideThroughNs = t0 + 20*sec // rank 0's samples are device-wide until 20 s
	in.Ranks[1].DeviceWideThroughNs = t0 + 40*sec // rank 1's all along
	got := Attribute(in, cfg, nil)
	if len(got) != len(plain) || len(got) < 8 {
		t.Fatalf("%d results, want the %d (≥ 8) without device-wide samples", len(got), len(plain))
	}
	for i, r := range got {
		p := plain[i]
		wide := r.Rank == 1 || r.Rank == 0 && r.IntervalStartNs <= t0+20*sec
		if hasCode(r, ReasonDeviceWideMemory) != wide {
			t.Errorf("rank %d at %d ms: codes %v, device_wide_memory expected %v", r.Rank, (r.IntervalStartNs-t0)/ms, r.ReasonCodes, wide)
		}
		re, pe := r.Evidence, p.Evidence
		if (re.PeakGapRatio == nil) != (pe.PeakGapRatio == nil) || re.PeakGapRatio != nil && *re.PeakGapRatio != *pe.PeakGapRatio {
			t.Errorf("rank %d: peak gap ratio differs", r.Rank)
		}
		re.PeakGapRatio, pe.PeakGapRatio = nil, nil
		codes := slices.DeleteFunc(slices.Clone(r.ReasonCodes), func(c string) bool { return c == ReasonDeviceWideMemory })
		if !slices.IsSorted(r.ReasonCodes) || !slices.Equal(codes, p.ReasonCodes) || r.Classification != p.Classification ||
			r.Confidence != p.Confidence || re != pe || r.ExcessBytes != p.ExcessBytes {
			t.Errorf("rank %d at %d ms: %+v, want %+v but for the code", r.Rank, (r.IntervalStartNs-t0)/ms, r, p)
		}
	}
	for _, r := range []int{0, 1} {
		for _, at := range []int64{10*sec + 700*ms, 30*sec + 700*ms} {
			one(t, j, got, r, at)
		}
	}
	if !slices.Contains(AllReasonCodes, ReasonDeviceWideMemory) {
		t.Error("AllReasonCodes lacks device_wide_memory")
	}
}
