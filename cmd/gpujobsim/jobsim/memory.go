package jobsim

import "time"

// Sample is one rank's memory reading at one instant, as an in-process exporter (PyTorch
// allocator statistics plus NVML) reports it.
type Sample struct {
	Rank        int
	Time        time.Duration // job time, before clock skew
	Reserved    int64
	Allocated   int64
	Active      int64
	Inactive    int64
	DeviceUsed  int64
	DeviceFree  int64
	DeviceTotal int64
}

// Hidden is device used minus allocator reserved (the reference's gap before clamping).
func (s Sample) Hidden() int64 { return s.DeviceUsed - s.Reserved }

// SampleAt computes rank r's memory at job time t (any t, not only sampler ticks: the DCGM
// page reads it at scrape time).
func (s *Scenario) SampleAt(r int, t time.Duration) Sample {
	rk := &s.Ranks[r]
	hidden := rk.baselineHidden + s.injectedAt(r, t, false)
	// NVML's used memory moves in 2 MiB pages and mostly holds still between readings.
	if h := hash3(uint64(s.Config.Seed)^0x5eed, uint64(r), uint64(t/time.Millisecond)); h%10 == 0 {
		hidden += 2 * mib * int64(1-2*int64(h>>32&1))
	}

	// The caching allocator warms up during the first forward pass, then holds its
	// reservation; live tensors grow through forward and are freed through backward.
	reserved := rk.reserved
	if warm := s.Config.StepPeriod / 2; t < warm {
		reserved = rk.reserved * 3 / 4
		reserved += (rk.reserved / 4) * int64(t) / int64(warm)
		reserved = reserved / (2 * mib) * (2 * mib)
	}
	inStep := t % s.Config.StepPeriod
	var act float64 // activation fraction: 0 at step start, 1 at the end of forward
	switch {
	case inStep < forwardEnd:
		act = float64(inStep) / float64(forwardEnd)
	case inStep < backwardEnd:
		act = 1 - float64(inStep-forwardEnd)/float64(backwardEnd-forwardEnd)
	}
	allocated := int64(float64(reserved) * (0.62 + 0.3*act))
	used := reserved + hidden
	return Sample{
		Rank:        r,
		Time:        t,
		Reserved:    reserved,
		Allocated:   allocated,
		Active:      allocated,
		Inactive:    reserved - allocated,
		DeviceUsed:  used,
		DeviceFree:  max(0, deviceTotalBytes-driverReservedBytes-used),
		DeviceTotal: deviceTotalBytes,
	}
}
