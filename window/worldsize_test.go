package window

import "testing"

func TestAgreedWorldSize(t *testing.T) {
	for _, tc := range []struct {
		name     string
		declared []int64
		size     int64
		detail   string
	}{
		{"none declared", []int64{0, 0}, 0, ""},
		{"all agree", []int64{4, 4, 4, 4}, 4, ""},
		{"some undeclared", []int64{0, 8, 8}, 8, ""},
		{"one rank bent by one record", []int64{4, 16384, 4, 4}, 4, "4 by 3 ranks, 16384 by 1 rank"},
		{"a tie takes the larger", []int64{8, 16, 16, 8}, 16, "16 by 2 ranks, 8 by 2 ranks"},
		{"majority below the largest", []int64{2, 2, 2, 3, 3}, 2, "2 by 3 ranks, 3 by 2 ranks"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			size, detail := agreedWorldSize(append([]int64(nil), tc.declared...))
			if size != tc.size || detail != tc.detail {
				t.Fatalf("agreedWorldSize(%v) = %d, %q; want %d, %q", tc.declared, size, detail, tc.size, tc.detail)
			}
		})
	}
}
