package jobsim

import (
	"bufio"
	"bytes"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/collectiveattr/collectiveattr/attribution"
	"github.com/collectiveattr/collectiveattr/phase"
	"github.com/collectiveattr/collectiveattr/telemetry"
	"github.com/collectiveattr/collectiveattr/window"
)

var testEpoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newScenario(t *testing.T, mutate func(*Config)) *Scenario {
	t.Helper()
	cfg := DefaultConfig()
	if mutate != nil {
		mutate(&cfg)
	}
	s, err := NewScenario(cfg)
	require.NoError(t, err)
	return s
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*Config)
		wantErr string
	}{
		{"default", func(*Config) {}, ""},
		{"no job", func(c *Config) { c.JobID = "" }, "job id"},
		{"no ranks", func(c *Config) { c.Ranks = 0 }, "ranks must be in"},
		{"all missing", func(c *Config) { c.MissingRanks = c.Ranks }, "missing ranks"},
		{"late and missing cover all", func(c *Config) { c.MissingRanks = 8; c.LateRanks = 8 }, "late ranks"},
		{"rate", func(c *Config) { c.SampleRate = 0 }, "sample rate"},
		{"short step", func(c *Config) { c.StepPeriod = time.Second }, "step period"},
		{"short run", func(c *Config) { c.Duration = time.Second }, "duration"},
		{"skew", func(c *Config) { c.ClockSkew = 2 * time.Second }, "clock skew"},
		{"every marker", func(c *Config) { c.MemberLists = MembersOnEveryMarker }, ""},
		{"member lists", func(c *Config) { c.MemberLists = 2 }, "member lists"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := DefaultConfig()
			tt.mutate(&cfg)
			err := cfg.Validate()
			if tt.wantErr == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tt.wantErr)
		})
	}
}

func TestScenarioIsDeterministic(t *testing.T) {
	a, b := newScenario(t, nil), newScenario(t, nil)
	assert.Equal(t, a.Truth(testEpoch), b.Truth(testEpoch))
	var ma, mb pmetric.ProtoMarshaler
	pa, err := ma.MarshalMetrics(a.Metrics(0, a.Config.Duration, testEpoch, DeviceFromOTLP))
	require.NoError(t, err)
	pb, err := mb.MarshalMetrics(b.Metrics(0, b.Config.Duration, testEpoch, DeviceFromOTLP))
	require.NoError(t, err)
	assert.Equal(t, pa, pb, "same seed, same metrics")

	c := newScenario(t, func(c *Config) { c.Seed = 2 })
	assert.NotEqual(t, a.Truth(testEpoch), c.Truth(testEpoch), "another seed, another job")
}

// TestInjectionsFollowTheDesign checks the properties the defaults rely on (DESIGN in
// scenario.go) on several seeds: collective spikes stay within the marker window of their
// collective; unrelated spikes stay far from every collective; skew stays bounded.
func TestInjectionsFollowTheDesign(t *testing.T) {
	for seed := int64(1); seed <= 5; seed++ {
		s := newScenario(t, func(c *Config) { c.Seed = seed })
		kinds := map[string]int{}
		for _, in := range s.Injections {
			kinds[in.Kind]++
			for _, r := range in.Ranks {
				sp := in.perRank[r]
				assert.Greater(t, sp.size, int64(gib), "spike size")
				switch in.Kind {
				case KindCollectiveSpike, KindStepUp:
					call := s.collectiveOn(r, in.Step, collectiveIndex(in.Collective))
					assert.LessOrEqual(t, sp.end-call.End, 150*time.Millisecond, "last spike sample within the marker window of the call's end")
					assert.LessOrEqual(t, call.Start-sp.start, 150*time.Millisecond)
				case KindUnrelatedSpike:
					for c := range stepCollectives {
						for _, step := range []int{in.Step - 1, in.Step, in.Step + 1} {
							if step < 0 {
								continue
							}
							call := s.collectiveOn(r, step, c)
							gap := min(absDur(call.Start-sp.end), absDur(call.End-sp.start), absDur(call.Start-sp.start), absDur(call.End-sp.end))
							assert.Greater(t, gap, 300*time.Millisecond, "unrelated spike of rank %d far from %s of step %d", r, call.Op, step)
						}
					}
				}
			}
		}
		assert.Equal(t, map[string]int{KindStepUp: 1, KindCollectiveSpike: 5, KindUnrelatedSpike: 2}, kinds, "seed %d", seed)
		for _, rk := range s.Ranks {
			assert.LessOrEqual(t, absDur(rk.ClockSkew), s.Config.ClockSkew)
		}
	}
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

func TestExpectedClassification(t *testing.T) {
	mk := func(kind string, k int) *Injection {
		in := &Injection{Kind: kind}
		for r := range k {
			in.Ranks = append(in.Ranks, r)
		}
		return in
	}
	assert.Equal(t, "collective_confident", expectedClassification(mk(KindCollectiveSpike, 16), 16))
	assert.Equal(t, "collective_confident", expectedClassification(mk(KindCollectiveSpike, 8), 16)) // 0.66 + 0.34·7/15 = 0.819
	assert.Equal(t, "collective_likely", expectedClassification(mk(KindCollectiveSpike, 4), 16))    // 0.728
	assert.Equal(t, "collective_suspect", expectedClassification(mk(KindCollectiveSpike, 1), 16))
	assert.Equal(t, "not reported", expectedClassification(mk(KindUnrelatedSpike, 1), 16))
}

func TestSampleAt(t *testing.T) {
	s := newScenario(t, nil)
	for _, in := range s.Injections {
		for _, r := range in.Ranks {
			sp := in.perRank[r]
			during := s.SampleAt(r, (sp.start+sp.end)/2)
			before := s.SampleAt(r, sp.start-50*time.Millisecond)
			// The step up leaves its permanent part behind from the start of its spike on.
			assert.InDelta(t, sp.size+in.PermanentBytes, during.Hidden()-before.Hidden(), float64(4*mib), "injection %d rank %d", in.ID, r)
		}
	}
	smp := s.SampleAt(3, 7*time.Second)
	assert.Equal(t, smp.DeviceUsed-smp.Reserved, smp.Hidden())
	assert.Equal(t, deviceTotalBytes-driverReservedBytes-smp.DeviceUsed, smp.DeviceFree)
	assert.Equal(t, smp.Reserved, smp.Allocated+smp.Inactive)
	assert.Zero(t, smp.Hidden()%(2*mib), "NVML pages")
}

func TestMetricsCarryIdentityAndRoles(t *testing.T) {
	s := newScenario(t, func(c *Config) {
		c.Duration = 6 * time.Second
		c.MissingRanks = 1
		c.LateRanks = 1
		c.LateBy = 2 * time.Second
	})
	md := s.Metrics(0, s.Config.Duration, testEpoch, DeviceFromOTLP)
	perRank := map[int64]int{}
	for _, rm := range md.ResourceMetrics().All() {
		a := rm.Resource().Attributes()
		job, _ := a.Get("training.job.id")
		assert.Equal(t, s.Config.JobID, job.Str())
		rank, _ := a.Get("training.rank")
		world, _ := a.Get("training.world_size")
		assert.Equal(t, int64(16), world.Int())
		host, _ := a.Get("host.name")
		gpu, _ := a.Get("gpu.index")
		assert.Equal(t, s.Ranks[rank.Int()].Host, host.Str())
		assert.Equal(t, int64(s.Ranks[rank.Int()].GPU), gpu.Int())
		var names []string
		for _, m := range rm.ScopeMetrics().At(0).Metrics().All() {
			names = append(names, m.Name())
			assert.Equal(t, "By", m.Unit())
			perRank[rank.Int()] = m.Gauge().DataPoints().Len()
		}
		assert.ElementsMatch(t, []string{MetricAllocatorReserved, MetricAllocatorAllocated, MetricAllocatorActive, MetricAllocatorInactive,
			MetricDeviceUsed, MetricDeviceFree, MetricDeviceTotal}, names)
	}
	assert.Equal(t, 60, perRank[0], "10 Hz for 6 s")
	assert.Equal(t, 40, perRank[14], "the late rank starts 2 s late")
	assert.NotContains(t, perRank, int64(15), "the missing rank never reports")

	dcgm := s.Metrics(0, time.Second, testEpoch, DeviceFromDCGM)
	for _, m := range dcgm.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().All() {
		assert.NotContains(t, []string{MetricDeviceUsed, MetricDeviceFree, MetricDeviceTotal}, m.Name(), "DCGM reports device memory")
	}
}

func TestTracesHaveMarkersAndPhases(t *testing.T) {
	s := newScenario(t, func(c *Config) { c.Duration = 4 * time.Second; c.LateRanks = 0 })
	td := s.Traces(0, s.Config.Duration, testEpoch)
	assert.Equal(t, 16*2*(1+3+5), td.SpanCount(), "per rank and step: train, 3 phases, 5 collectives")
	rs := td.ResourceSpans().At(0)
	byID := map[[8]byte]ptrace.Span{}
	for _, sp := range rs.ScopeSpans().At(0).Spans().All() {
		byID[sp.SpanID()] = sp
	}
	ops := map[string]bool{}
	for _, sp := range byID {
		if !strings.HasPrefix(sp.Name(), "nccl:") {
			path, ok := sp.Attributes().Get("phase.path")
			require.True(t, ok, sp.Name())
			assert.True(t, strings.HasPrefix(path.Str(), "train"), path.Str())
			continue
		}
		op, _ := sp.Attributes().Get("nccl.collective")
		ops[op.Str()] = true
		assert.Equal(t, "nccl:"+op.Str(), sp.Name())
		for _, k := range []string{"nccl.comm.id", "nccl.seq", "nccl.message.size"} {
			_, ok := sp.Attributes().Get(k)
			assert.True(t, ok, k)
		}
		parent, ok := byID[sp.ParentSpanID()]
		require.True(t, ok, "NCCL span has a parent phase span")
		assert.Equal(t, sp.TraceID(), parent.TraceID())
		assert.GreaterOrEqual(t, sp.StartTimestamp(), parent.StartTimestamp())
		assert.LessOrEqual(t, sp.EndTimestamp(), parent.EndTimestamp())
	}
	assert.Equal(t, map[string]bool{AllReduce: true, AllGather: true, ReduceScatter: true, Broadcast: true, Barrier: true}, ops)
}

var dcgmLine = regexp.MustCompile(`^(DCGM_FI_DEV_FB_\w+)\{gpu="(\d+)",UUID="(GPU-[0-9a-f-]+)",pci_bus_id="[^"]+",device="nvidia\d+",modelName="[^"]+",Hostname="([^"]+)"\} (\d+)$`)

func TestDCGMPage(t *testing.T) {
	s := newScenario(t, nil)
	at := 5*time.Second + 440*time.Millisecond // inside the all_reduce spike of step 2
	srv := httptest.NewServer(s.DCGMHandler(func() time.Duration { return at }))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Contains(t, resp.Header.Get("Content-Type"), "text/plain; version=0.0.4")
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)

	used := map[string]int64{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		m := dcgmLine.FindStringSubmatch(line)
		require.NotNil(t, m, "exporter-style line: %q", line)
		v, _ := strconv.ParseInt(m[5], 10, 64)
		if m[1] == DCGMFBUsed {
			used[m[4]+"/"+m[2]] = v
		}
	}
	assert.Len(t, used, 16, "every rank reports at this time (the late one since 4 s)")
	for r := range 16 {
		rk := s.Ranks[r]
		smp := s.SampleAt(r, at)
		assert.Equal(t, smp.DeviceUsed/mib, used[rk.Host+"/"+strconv.Itoa(rk.GPU)], "MiB for rank %d", r)
	}
}

// TestStormlogOutputIsValidAndAttributesAsDesigned decodes the simulator's stormlog
// output with the strict TelemetryEvent decoder, runs the reference attribution with the
// medium preset and phases on it, and checks the result against the ground truth: every
// injected collective spike found on every rank with the expected class, nothing else
// called collective. This is what makes the demo's claim hold.
func TestStormlogOutputIsValidAndAttributesAsDesigned(t *testing.T) {
	for seed := int64(1); seed <= 3; seed++ {
		s := newScenario(t, func(c *Config) { c.Seed = seed })
		var buf bytes.Buffer
		_, err := s.Run(t.Context(), Options{Epoch: testEpoch, Stormlog: &buf})
		require.NoError(t, err)
		events, err := telemetry.ReadJSONL(&buf)
		require.NoError(t, err, "every record passes the reference validation")
		cfg, err := attribution.ResolveConfig("medium", nil)
		require.NoError(t, err)
		results := window.AttributeReference(events, cfg, phase.NewIndex(events, nil))

		var got []Result
		for _, r := range results {
			res := Result{JobID: s.Config.JobID, Rank: r.Rank, StartNs: r.IntervalStartNs, EndNs: r.EndNs(), Classification: r.Classification}
			if p := phase.Summarize(r.PhaseAttribution); p != nil {
				res.Phase = *p
			}
			got = append(got, res)
		}
		truth := s.Truth(testEpoch)
		v := Compare(truth, got)
		if !v.OK {
			var b strings.Builder
			_ = v.WriteVerdict(&b, truth)
			t.Errorf("seed %d:\n%s", seed, b.String())
		}
		assert.Empty(t, v.Unmatched, "seed %d: every result explains an injection", seed)
	}
}

func TestCompare(t *testing.T) {
	s := newScenario(t, nil)
	truth := s.Truth(testEpoch)
	perfect := func() []Result {
		var rs []Result
		for _, in := range truth.Injections {
			if in.Kind == KindUnrelatedSpike {
				continue
			}
			for _, w := range in.PerRank {
				rs = append(rs, Result{JobID: truth.JobID, Rank: int64(w.Rank), StartNs: w.StartNs - 1e8, EndNs: w.EndNs + 1e8, Classification: in.Expected})
			}
		}
		return rs
	}
	assert.True(t, Compare(truth, perfect()).OK)

	missing := perfect()[1:]
	assert.False(t, Compare(truth, missing).OK, "a rank without its result")

	weak := perfect()
	weak[0].Classification = "collective_suspect"
	assert.False(t, Compare(truth, weak).OK, "weaker than expected")

	var unrelated TruthInjection
	for _, in := range truth.Injections {
		if in.Kind == KindUnrelatedSpike {
			unrelated = in
		}
	}
	w := unrelated.PerRank[0]
	calledCollective := append(perfect(), Result{JobID: truth.JobID, Rank: int64(w.Rank), StartNs: w.StartNs, EndNs: w.EndNs, Classification: "collective_likely"})
	assert.False(t, Compare(truth, calledCollective).OK, "an unrelated spike called collective")
	suspect := append(perfect(), Result{JobID: truth.JobID, Rank: int64(w.Rank), StartNs: w.StartNs, EndNs: w.EndNs, Classification: "collective_suspect"})
	assert.True(t, Compare(truth, suspect).OK, "suspect is not a collective call")

	stray := append(perfect(), Result{JobID: truth.JobID, Rank: 3, StartNs: testEpoch.Add(27 * time.Second).UnixNano(), EndNs: testEpoch.Add(28 * time.Second).UnixNano(), Classification: "collective_confident"})
	v := Compare(truth, stray)
	assert.False(t, v.OK, "a confident result that explains nothing")
	assert.Len(t, v.Unmatched, 1)
}

func TestRankList(t *testing.T) {
	assert.Equal(t, "-", RankList(nil))
	assert.Equal(t, "0-7,9,11-12", RankList([]int{0, 1, 2, 3, 4, 5, 6, 7, 9, 11, 12}))
}

func TestGroupedResultsTable(t *testing.T) {
	rs := []Result{
		{JobID: "j", Rank: 1, StartNs: 1_100_000_000, EndNs: 1_500_000_000, Classification: "collective_confident", Confidence: 1, Reasons: []string{"a"}, Phase: "train / backward"},
		{JobID: "j", Rank: 0, StartNs: 1_000_000_000, EndNs: 1_400_000_000, Classification: "collective_confident", Confidence: 1, Reasons: []string{"a"}, Phase: "train / backward"},
		{JobID: "j", Rank: 2, StartNs: 1_000_000_000, EndNs: 1_400_000_000, Classification: "collective_likely", Confidence: 0.7, Reasons: []string{"a"}},
		{JobID: "j", Rank: 3, StartNs: 5_000_000_000, EndNs: 5_400_000_000, Classification: "collective_confident", Confidence: 1, Reasons: []string{"a"}, Phase: "train"},
	}
	var b strings.Builder
	require.NoError(t, WriteGroupedResultsTable(&b, rs, 0))
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	require.Len(t, lines, 4, b.String())
	assert.Regexp(t, `^j\s+0-1\s+1\.000–1\.500\s+collective_confident\s+1\.000\s+train / backward \(2\)\s+a$`, lines[1])
	assert.Regexp(t, `^j\s+2\s+1\.000–1\.400\s+collective_likely\s+0\.700\s+- \(1\)\s+a$`, lines[2])
	assert.Regexp(t, `^j\s+3\s+5\.000–5\.400\s+collective_confident`, lines[3])
}

// TestResultsEndingPastInt64: a large interval_padding_ns carries a
// result's end past int64 (the processor writes it exactly); the report
// reads it from both the log body and the span, saturated.
func TestResultsEndingPastInt64(t *testing.T) {
	r := attribution.Result{Rank: 1, IntervalStartNs: 1_700_000_000_000_000_000, IntervalEndNs: math.MaxInt64 + 120_000_000,
		Classification: "collective_confident", Confidence: 1, ReasonCodes: []string{}}
	body := attribution.AppendResultJSON(nil, &r, false)
	body = append(body[:len(body)-1], `,"job_id":"j"}`...)
	ld := plog.NewLogs()
	lr := ld.ResourceLogs().AppendEmpty().ScopeLogs().AppendEmpty().LogRecords().AppendEmpty()
	lr.Body().SetStr(string(body))
	lr.Attributes().PutStr(attrClassification, r.Classification)
	td := ptrace.NewTraces()
	sp := td.ResourceSpans().AppendEmpty().ScopeSpans().AppendEmpty().Spans().AppendEmpty()
	sp.SetName(resultSpanName)
	sp.SetStartTimestamp(pcommon.Timestamp(r.IntervalStartNs))
	sp.SetEndTimestamp(pcommon.Timestamp(r.IntervalEndNs))
	for name, got := range map[string][]Result{"logs": resultsFromLogs(ld), "spans": resultsFromSpans(td)} {
		require.Len(t, got, 1, name)
		assert.Equal(t, r.IntervalStartNs, got[0].StartNs, name)
		assert.Equal(t, int64(math.MaxInt64), got[0].EndNs, name)
	}
}
