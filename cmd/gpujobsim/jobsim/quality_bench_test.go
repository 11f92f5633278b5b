package jobsim

import "testing"

// One 16-rank, 60–120 s job: the quality test generates dozens of them.
func BenchmarkGenerateQualityCase(b *testing.B) {
	shape := DefaultQualityShape()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := GenerateQualityCase("ddp_decoy", 1, shape, true); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkScoreQuality(b *testing.B) {
	c, err := GenerateQualityCase("ddp_decoy", 1, DefaultQualityShape(), false)
	if err != nil {
		b.Fatal(err)
	}
	// Claim every episode and every decoy: the scorer's worst case.
	var results []QualityResult
	for _, e := range append(append([]QualityEpisode{}, c.Truth.Collective...), c.Truth.Decoys...) {
		results = append(results, QualityResult{Rank: int64(e.Rank), StartNs: e.StartNs, EndNs: e.EndNs, Classification: ClassConfident})
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = ScoreQuality(c.Truth, results)
	}
}
