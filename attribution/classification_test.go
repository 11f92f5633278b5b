package attribution

import "testing"

func TestClassificationRank(t *testing.T) {
	tests := []struct {
		class string
		want  int
	}{
		{"collective_suspect", 0},
		{"collective_likely", 1},
		{"collective_confident", 2},
		{"", -1},
		{"collective_confirmed", 3},
		{"Collective_Confident", -1},
	}
	for _, tc := range tests {
		if got := ClassificationRank(tc.class); got != tc.want {
			t.Errorf("ClassificationRank(%q) = %d, want %d", tc.class, got, tc.want)
		}
	}
	for i, c := range Classifications() {
		if ClassificationRank(c) != i {
			t.Errorf("Classifications()[%d] = %q ranks %d: the list is not weakest first", i, c, ClassificationRank(c))
		}
	}
}

// TestClassifyUsesTheList checks that every value S10 produces is in the list.
func TestClassifyUsesTheList(t *testing.T) {
	for _, conf := range []float64{0, 0.59, 0.6, 0.79, 0.8, 1} {
		if ClassificationRank(classify(conf)) < 0 {
			t.Errorf("classify(%v) = %q is not a listed classification", conf, classify(conf))
		}
	}
}
