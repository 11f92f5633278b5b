package jobsim

import (
	"errors"
	"fmt"
	"time"
)

// QualityShape is the shape of a quality job and the distributions its draws come from.
// Families inject their episodes into a job of this shape; a test that runs the same
// families over other shapes (rank counts, hosts, sampling rates, spike sizes, step
// timing) checks that a mode follows the physics, not one shape's constants.
type QualityShape struct {
	Ranks        int
	RanksPerHost int
	DeviceTotal  int64
	// Duration and Step are uniform ranges: the run length, and the mean step length
	// (every step is that mean ×U(0.95, 1.05)).
	Duration [2]time.Duration
	Step     [2]time.Duration
	// HostOffset is the clock offset of every host but the first, uniform in ±HostOffset
	// (the skew family draws larger ones).
	HostOffset time.Duration
	// BaseHidden is the rank's baseline hidden memory (CUDA context, workspaces, NCCL's
	// communicator buffers); NoiseSigma the per-rank sample noise, both uniform ranges
	// in bytes. Hidden memory is rounded to 2 MiB pages as NVML reports it, so a small
	// sigma leaves the baseline exactly flat.
	BaseHidden [2]int64
	NoiseSigma [2]int64
	// SampleHz is the sampling rate; every sampling interval is ×U(SampleJitter).
	SampleHz     float64
	SampleJitter [2]float64
	// Reserved is the allocator's reservation at start (uniform, bytes); it grows a few
	// times during the run, and device used moves with it.
	Reserved [2]int64
	// CommBaseline is NCCL's own persistent memory per (rank, communicator), part of the
	// baseline hidden memory (capped at 60 % of it).
	CommBaseline [2]int64
	// SpikeBytes is a true collective episode's size; StepUpBytes a lazy buffer step's.
	SpikeBytes  int64
	StepUpBytes int64
	// DecoyBytes and DecoyLength are a non-collective spike's size and length.
	DecoyBytes  [2]int64
	DecoyLength [2]time.Duration
	// EpisodeFraction is the share of steps that carry a true collective episode (at
	// least 3 of them).
	EpisodeFraction float64
	// SingleRankDecoys is the number of unrelated single-rank spikes per job.
	SingleRankDecoys int
	// CommRanksOnMarkers makes markers list the communicator's global ranks
	// (nccl.comm.ranks); without it they carry only nccl.comm.nranks.
	CommRanksOnMarkers bool
}

// DefaultQualityShape is a 16-rank job on 2 hosts × 8 GPUs, 80 GiB devices, 10 Hz
// sampling, 60–120 s of 0.5–1.0 s steps, 1 GiB collective spikes.
func DefaultQualityShape() QualityShape {
	return QualityShape{
		Ranks:            16,
		RanksPerHost:     8,
		DeviceTotal:      80 * gib,
		Duration:         [2]time.Duration{60 * time.Second, 120 * time.Second},
		Step:             [2]time.Duration{500 * time.Millisecond, time.Second},
		HostOffset:       time.Millisecond,
		BaseHidden:       [2]int64{600 * mib, 1500 * mib},
		NoiseSigma:       [2]int64{mib / 2, 2 * mib},
		SampleHz:         10,
		SampleJitter:     [2]float64{0.98, 1.02},
		Reserved:         [2]int64{20 * gib, 50 * gib},
		CommBaseline:     [2]int64{100 * mib, 400 * mib},
		SpikeBytes:       gib,
		StepUpBytes:      2 * gib,
		DecoyBytes:       [2]int64{512 * mib, 1536 * mib},
		DecoyLength:      [2]time.Duration{150 * time.Millisecond, 400 * time.Millisecond},
		EpisodeFraction:  0.10,
		SingleRankDecoys: 5,
	}
}

// Validate reports every unusable field.
func (s QualityShape) Validate() error {
	var errs []error
	if s.Ranks < 2 || s.Ranks > 4096 {
		errs = append(errs, fmt.Errorf("ranks must be in [2, 4096], got %d", s.Ranks))
	}
	if s.RanksPerHost < 1 {
		errs = append(errs, fmt.Errorf("ranks per host must be >= 1, got %d", s.RanksPerHost))
	}
	if s.DeviceTotal <= 0 {
		errs = append(errs, errors.New("device total must be > 0"))
	}
	if s.Step[0] < 200*time.Millisecond || s.Step[1] < s.Step[0] {
		errs = append(errs, fmt.Errorf("step range must be ordered and >= 200ms, got %v", s.Step))
	}
	if s.Duration[1] < s.Duration[0] || s.Duration[0] < 10*s.Step[1] {
		errs = append(errs, fmt.Errorf("duration range must be ordered and hold at least 10 of the longest steps, got %v", s.Duration))
	}
	if s.SampleHz <= 0 || s.SampleHz > 1000 {
		errs = append(errs, fmt.Errorf("sample rate must be in (0, 1000] Hz, got %g", s.SampleHz))
	}
	if s.SampleJitter[0] <= 0 || s.SampleJitter[1] < s.SampleJitter[0] {
		errs = append(errs, fmt.Errorf("sample jitter must be an ordered range above 0, got %v", s.SampleJitter))
	}
	for _, r := range []struct {
		name string
		v    [2]int64
	}{{"base hidden", s.BaseHidden}, {"noise sigma", s.NoiseSigma}, {"reserved", s.Reserved},
		{"comm baseline", s.CommBaseline}, {"decoy bytes", s.DecoyBytes}} {
		if r.v[0] < 0 || r.v[1] < r.v[0] {
			errs = append(errs, fmt.Errorf("%s must be an ordered range >= 0, got %v", r.name, r.v))
		}
	}
	if s.DecoyLength[0] <= 0 || s.DecoyLength[1] < s.DecoyLength[0] {
		errs = append(errs, fmt.Errorf("decoy length must be an ordered range above 0, got %v", s.DecoyLength))
	}
	if s.SpikeBytes <= 0 || s.StepUpBytes <= 0 {
		errs = append(errs, errors.New("spike and step-up bytes must be > 0"))
	}
	if s.EpisodeFraction <= 0 || s.EpisodeFraction > 0.5 {
		errs = append(errs, fmt.Errorf("episode fraction must be in (0, 0.5], got %g", s.EpisodeFraction))
	}
	if s.SingleRankDecoys < 0 {
		errs = append(errs, errors.New("single-rank decoys must be >= 0"))
	}
	return errors.Join(errs...)
}

// QualityShapeNames lists the named shapes of QualityShapeByName.
func QualityShapeNames() []string { return []string{"default", "small", "wide"} }

// QualityShapeByName returns a named shape: "default" (DefaultQualityShape); "small",
// 8 ranks on 2 hosts × 4 of 40 GiB devices sampled at 20 Hz with 512 MiB spikes and
// longer steps; "wide", 32 ranks on 4 hosts × 8 sampled at 5 Hz with 2 GiB spikes, its
// markers listing the communicator's ranks.
func QualityShapeByName(name string) (QualityShape, bool) {
	s := DefaultQualityShape()
	switch name {
	case "default":
	case "small":
		s.Ranks, s.RanksPerHost, s.DeviceTotal = 8, 4, 40*gib
		s.Duration = [2]time.Duration{40 * time.Second, 80 * time.Second}
		s.Step = [2]time.Duration{600 * time.Millisecond, 1200 * time.Millisecond}
		s.BaseHidden = [2]int64{400 * mib, 900 * mib}
		s.SampleHz = 20
		s.Reserved = [2]int64{10 * gib, 25 * gib}
		s.CommBaseline = [2]int64{64 * mib, 256 * mib}
		s.SpikeBytes, s.StepUpBytes = 512*mib, 768*mib
		s.DecoyBytes = [2]int64{256 * mib, 768 * mib}
	case "wide":
		s.Ranks, s.RanksPerHost = 32, 8
		s.Duration = [2]time.Duration{60 * time.Second, 90 * time.Second}
		s.Step = [2]time.Duration{800 * time.Millisecond, 1500 * time.Millisecond}
		s.SampleHz = 5
		s.SampleJitter = [2]float64{0.95, 1.05}
		s.SpikeBytes, s.StepUpBytes = 2*gib, gib
		s.DecoyBytes = [2]int64{gib, 3 * gib}
		s.CommRanksOnMarkers = true
	default:
		return QualityShape{}, false
	}
	return s, true
}
