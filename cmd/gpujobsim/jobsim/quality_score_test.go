package jobsim

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func seq(v int64) *int64 { return &v }

// scoringTruth is one rank with a transient collective episode at [1000, 2000], a
// persistent step at 5000 (recall window up to 5500, level up to 9000) and a decoy at
// [3000, 3500]; rank 1 has only a decoy at [1000, 1500].
func scoringTruth() QualityTruth {
	return QualityTruth{
		Ranks: map[string]QualityRankInfo{"0": {FirstSampleNs: 0, LastSampleNs: 10000}, "1": {FirstSampleNs: 0, LastSampleNs: 10000}},
		Collective: []QualityEpisode{
			{Episode: "c1", Rank: 0, StartNs: 1000, EndNs: 2000, Kind: KindTransientAllReduce, Seq: seq(3), SamplesObserved: 2},
			{Episode: "p1", Rank: 0, StartNs: 5000, EndNs: 9000, RecallEndNs: 5500, Persistent: true, Kind: KindPersistentStepUp, SamplesObserved: 40},
		},
		Decoys: []QualityEpisode{
			{Episode: "d1", Rank: 0, StartNs: 3000, EndNs: 3500, Kind: KindDDPDecoy},
			{Episode: "d2", Rank: 1, StartNs: 1000, EndNs: 1500, Kind: KindDDPDecoy},
		},
	}
}

func TestScoreQualityMatchingRules(t *testing.T) {
	res := func(rank int64, a, b int64, class, kind string) QualityResult {
		return QualityResult{Rank: rank, StartNs: a, EndNs: b, Classification: class, Kind: kind}
	}
	tests := []struct {
		name    string
		results []QualityResult
		want    QualityScore
	}{
		{"nothing", nil, QualityScore{Episodes: 2, Decoys: 2, PersistentEpisodes: 1}},
		{"touching the transient's end counts (inclusive)", []QualityResult{res(0, 2000, 2100, ClassLikely, "")},
			QualityScore{Results: 1, Claims: 1, TP: 1, Episodes: 2, Found: 1, FoundSampled: 1, Decoys: 2, PersistentEpisodes: 1}},
		{"a suspect is no claim, but is counted", []QualityResult{res(0, 1000, 2000, ClassSuspect, "")},
			QualityScore{Results: 1, Suspects: 1, Episodes: 2, Decoys: 2, PersistentEpisodes: 1}},
		{"the step found at its onset, kind right, confirmed", []QualityResult{res(0, 5400, 5600, ClassConfirmed, ResultPersistent)},
			QualityScore{Results: 1, Claims: 1, TP: 1, ConfidentClaims: 1, ConfidentTP: 1, Episodes: 2, Found: 1, FoundSampled: 1, FoundConfirmed: 1,
				Decoys: 2, PersistentEpisodes: 1, StepsFound: 1, StepKindRight: 1, HasKind: true}},
		{"a claim on the raised level is a level FP", []QualityResult{res(0, 7000, 7100, ClassConfident, ResultTransient)},
			QualityScore{Results: 1, Claims: 1, FP: 1, FPLevel: 1, ConfidentClaims: 1, Episodes: 2, Decoys: 2, PersistentEpisodes: 1, HasKind: true}},
		{"a persistent claim away from a step onset", []QualityResult{res(0, 1500, 1600, ClassLikely, ResultPersistent)},
			QualityScore{Results: 1, Claims: 1, TP: 1, Episodes: 2, Found: 1, FoundSampled: 1, Decoys: 2, PersistentEpisodes: 1,
				PersistentClaimsOffStep: 1, HasKind: true}},
		{"a confident decoy, and a suspect one", []QualityResult{res(0, 3100, 3200, ClassConfident, ""), res(1, 1200, 1300, ClassSuspect, "")},
			QualityScore{Results: 2, Claims: 1, Suspects: 1, FP: 1, FPDecoy: 1, ConfidentClaims: 1, Episodes: 2, Decoys: 2,
				DecoysClaimed: 1, DecoysConfident: 1, PersistentEpisodes: 1}},
		{"another rank's episode does not count", []QualityResult{res(1, 1600, 1900, ClassLikely, "")},
			QualityScore{Results: 1, Claims: 1, FP: 1, FPNoTruth: 1, Episodes: 2, Decoys: 2, PersistentEpisodes: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ScoreQuality(scoringTruth(), tt.results)
			tt.want.Cases, tt.want.SampledNs = 1, 20000
			tt.want.FlaggedShare = got.FlaggedShare
			assert.Equal(t, tt.want, got)
		})
	}
}

// Recall of sampled episodes leaves out what no sample saw; a restart's or another
// tenant's level called confident is counted apart from other decoys.
func TestScoreQualitySampledRecallAndLevelDecoys(t *testing.T) {
	tr := scoringTruth()
	tr.Collective[1].SamplesObserved = 0
	tr.Decoys[1].Kind = KindOtherTenant
	got := ScoreQuality(tr, []QualityResult{
		{Rank: 0, StartNs: 1500, EndNs: 1600, Classification: ClassLikely},
		{Rank: 1, StartNs: 1200, EndNs: 1300, Classification: ClassConfident},
		{Rank: 0, StartNs: 3100, EndNs: 3200, Classification: ClassConfirmed},
	})
	assert.Equal(t, Ratio{Value: 1, Defined: true}, got.RecallSampled(), "the unsampled step is left out")
	assert.Equal(t, Ratio{Value: 0.5, Defined: true}, got.Recall())
	assert.Equal(t, 2, got.DecoysConfident)
	assert.Equal(t, 1, got.LevelDecoysConfident, "only the other tenant's level")
	assert.False(t, QualityScore{}.RecallSampled().Defined)
}

func TestScoreQualityFlaggedAndRates(t *testing.T) {
	got := ScoreQuality(scoringTruth(), []QualityResult{
		{Rank: 0, StartNs: 1000, EndNs: 3000, Classification: ClassLikely},
		{Rank: 0, StartNs: 2000, EndNs: 4000, Classification: ClassLikely},   // overlaps the first: union 3000
		{Rank: 0, StartNs: 9500, EndNs: 20000, Classification: ClassSuspect}, // not a claim
		{Rank: 1, StartNs: -500, EndNs: 500, Classification: ClassLikely},    // clipped to 500
	})
	assert.InDelta(t, (3000.0/10000+500.0/10000)/2, got.FlaggedShare, 1e-12)
	assert.InDelta(t, 3/(20000.0/3.6e12), got.ClaimsPerRankHour().Value, 1e-3)
	assert.Equal(t, Ratio{Value: 0.5, Defined: true}, got.Recall())
	assert.False(t, QualityScore{}.Precision().Defined, "no claims: precision undefined")

	var sum QualityScore
	sum.Add(got)
	sum.Add(got)
	assert.Equal(t, 2*got.Claims, sum.Claims)
	assert.Equal(t, got.Flagged(), sum.Flagged(), "flagged is a mean over cases")
}
