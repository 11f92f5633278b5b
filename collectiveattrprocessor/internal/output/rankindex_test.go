package output

import (
	"maps"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRankIndex puts, deletes and clears entries of several jobs and ranks
// in and out of the index, then requires the entries All yields, which job
// is indexed with which ranks in its slots, and every (job, rank) the case
// names to be found with its value or not at all (then added).
func TestRankIndex(t *testing.T) {
	type op struct {
		del, clear bool
		job        string
		rank       int64
		v          int
	}
	put := func(job string, rank int64, v int) op { return op{job: job, rank: rank, v: v} }
	del := func(job string, rank int64) op { return op{del: true, job: job, rank: rank} }
	type want struct {
		entries map[RankKey]int
		// absent: (job, rank)s that must not be found.
		absent []RankKey
		// job and slots: the indexed job and its non-empty slots.
		job   string
		slots map[int64]int
	}
	for _, tc := range []struct {
		name string
		ops  []op
		want want
	}{
		{
			name: "one job's ranks are indexed",
			ops:  []op{put("a", 0, 1), put("a", 3, 2), put("a", 1, 3)},
			want: want{
				entries: map[RankKey]int{{"a", 0}: 1, {"a", 3}: 2, {"a", 1}: 3},
				absent:  []RankKey{{"a", 2}, {"a", 4}, {"b", 0}},
				job:     "a", slots: map[int64]int{0: 1, 3: 2, 1: 3},
			},
		},
		{
			name: "another job takes the index, its slots only",
			ops:  []op{put("a", 0, 1), put("a", 5, 2), put("b", 1, 3)},
			want: want{
				entries: map[RankKey]int{{"a", 0}: 1, {"a", 5}: 2, {"b", 1}: 3},
				absent:  []RankKey{{"b", 0}, {"b", 5}},
				job:     "b", slots: map[int64]int{1: 3},
			},
		},
		{
			name: "a put value replaces the old one, in the index too",
			ops:  []op{put("a", 2, 1), put("b", 2, 7), put("a", 2, 9)},
			want: want{
				entries: map[RankKey]int{{"a", 2}: 9, {"b", 2}: 7},
				job:     "a", slots: map[int64]int{2: 9},
			},
		},
		{
			name: "negative ranks are kept by the map and leave the index alone",
			ops:  []op{put("a", 1, 1), put("b", -1, 2), put("a", -3, 3)},
			want: want{
				entries: map[RankKey]int{{"a", 1}: 1, {"b", -1}: 2, {"a", -3}: 3},
				absent:  []RankKey{{"a", -1}, {"b", 1}},
				job:     "a", slots: map[int64]int{1: 1},
			},
		},
		{
			name: "ranks from the bound on are kept by the map and leave the index alone",
			ops: []op{
				put("a", MaxIndexedRank-1, 1), put("b", MaxIndexedRank, 2), put("b", 1<<40, 3),
			},
			want: want{
				entries: map[RankKey]int{{"a", MaxIndexedRank - 1}: 1, {"b", MaxIndexedRank}: 2, {"b", 1 << 40}: 3},
				absent:  []RankKey{{"a", MaxIndexedRank}, {"b", MaxIndexedRank - 1}},
				job:     "a", slots: map[int64]int{MaxIndexedRank - 1: 1},
			},
		},
		{
			// The index starts with no job: the empty job id is a job
			// like any other, not an index that holds nothing.
			name: "the empty job id is a job",
			ops:  []op{put("", 0, 1), put("", 2, 2), put("a", 2, 3), put("", 4, 4)},
			want: want{
				entries: map[RankKey]int{{"", 0}: 1, {"", 2}: 2, {"a", 2}: 3, {"", 4}: 4},
				absent:  []RankKey{{"", 1}, {"a", 0}},
				job:     "", slots: map[int64]int{4: 4},
			},
		},
		{
			name: "the zero value is found through the map",
			ops:  []op{put("a", 1, 0), put("a", 2, 5)},
			want: want{
				entries: map[RankKey]int{{"a", 1}: 0, {"a", 2}: 5},
				job:     "a", slots: map[int64]int{2: 5},
			},
		},
		{
			name: "deleting the indexed job's entries empties their slots",
			ops:  []op{put("b", 0, 9), put("a", 0, 1), put("a", 1, 2), del("a", 0), del("a", 1), put("a", 3, 3)},
			want: want{
				entries: map[RankKey]int{{"b", 0}: 9, {"a", 3}: 3},
				absent:  []RankKey{{"a", 0}, {"a", 1}},
				job:     "a", slots: map[int64]int{3: 3},
			},
		},
		{
			name: "deleting another job's entry leaves the index alone",
			ops:  []op{put("b", 1, 9), put("a", 1, 1), del("b", 1), del("c", 1), del("a", -1), del("a", MaxIndexedRank)},
			want: want{
				entries: map[RankKey]int{{"a", 1}: 1},
				absent:  []RankKey{{"b", 1}, {"c", 1}},
				job:     "a", slots: map[int64]int{1: 1},
			},
		},
		{
			name: "a deleted entry put again is found",
			ops:  []op{put("a", 1, 1), del("a", 1), put("a", 1, 2)},
			want: want{
				entries: map[RankKey]int{{"a", 1}: 2},
				job:     "a", slots: map[int64]int{1: 2},
			},
		},
		{
			name: "clear forgets every entry and the indexed job",
			ops:  []op{put("a", 1, 1), put("b", 2, 2), {clear: true}, put("c", -1, 3)},
			want: want{
				entries: map[RankKey]int{{"c", -1}: 3},
				absent:  []RankKey{{"a", 1}, {"b", 2}, {"", 1}, {"", 2}},
				job:     "", slots: map[int64]int{},
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var x RankIndex[int]
			for _, o := range tc.ops {
				switch {
				case o.clear:
					x.Clear()
				case o.del:
					x.Delete(o.job, o.rank)
				default:
					x.put(o.job, o.rank, o.v)
				}
			}
			assert.Equal(t, tc.want.entries, maps.Collect(x.All()))
			assert.Equal(t, len(tc.want.entries), x.Len())
			assert.Equal(t, tc.want.job, x.job, "indexed job")
			slots := map[int64]int{}
			for r, v := range x.byRank {
				if v != 0 {
					slots[int64(r)] = v
				}
			}
			assert.Equal(t, tc.want.slots, slots, "indexed slots")
			for k, v := range tc.want.entries {
				got, found := x.Indexed(k.Job, k.Rank)
				slot, indexed := tc.want.slots[k.Rank]
				if indexed && k.Job == tc.want.job {
					assert.True(t, found, "%+v is in its slot", k)
					assert.Equal(t, v, got, "%+v", k)
					assert.Equal(t, slot, got, "%+v", k)
				} else {
					assert.False(t, found, "%+v is not in a slot", k)
				}
			}
			for k, v := range tc.want.entries {
				assert.Equal(t, v, get(t, &x, k), "%+v", k)
			}
			for _, k := range tc.want.absent {
				got, found := x.GetOrAdd(k.Job, k.Rank, func(string, int64) int { return -1 })
				assert.False(t, found, "%+v found", k)
				assert.Equal(t, -1, got, "%+v: the value added", k)
				assert.Equal(t, -1, get(t, &x, k), "%+v: the value added is found", k)
			}
		})
	}
}

// get returns k's value, which must be found.
func get(t *testing.T, x *RankIndex[int], k RankKey) int {
	t.Helper()
	v, found := x.GetOrAdd(k.Job, k.Rank, func(string, int64) int {
		t.Errorf("%+v not found", k)
		return 0
	})
	assert.True(t, found, "%+v", k)
	return v
}

// TestRankIndexGetIndexesItsJob: finding an entry of another job through
// the map makes that job the indexed one, so its next ranks are found by
// index; finding a rank the index cannot hold changes nothing.
func TestRankIndexGetIndexesItsJob(t *testing.T) {
	var x RankIndex[int]
	x.put("a", 1, 1)
	x.put("b", 2, 2)
	x.put("a", MaxIndexedRank, 3)
	require.Equal(t, "b", x.job, "a rank past the bound leaves the index alone")

	assert.Equal(t, 3, get(t, &x, RankKey{"a", MaxIndexedRank}))
	assert.Equal(t, "b", x.job, "a rank past the bound leaves the index alone")

	assert.Equal(t, 1, get(t, &x, RankKey{"a", 1}))
	assert.Equal(t, "a", x.job, "found through the map: a is indexed")
	assert.Equal(t, []int{0, 1, 0}, x.byRank, "b's slot emptied, a's filled")

	assert.Equal(t, 2, get(t, &x, RankKey{"b", 2}))
	assert.Equal(t, "b", x.job)
	assert.Equal(t, []int{0, 0, 2}, x.byRank)

	v, found := x.GetOrAdd("c", 1, func(job string, rank int64) int {
		assert.Equal(t, RankKey{"c", 1}, RankKey{job, rank}, "add is given the key")
		return 7
	})
	assert.False(t, found)
	assert.Equal(t, 7, v)
	assert.Equal(t, "c", x.job, "an added entry's job is indexed")
	assert.Equal(t, []int{0, 7, 0}, x.byRank)
}

// TestRankIndexAllLetsTheLoopDelete: HiddenPeaks deletes the series of the
// ending jobs while it goes through them all.
func TestRankIndexAllLetsTheLoopDelete(t *testing.T) {
	var x RankIndex[int]
	for r := range int64(20) {
		x.put("a", r, int(r)+1)
		x.put("b", r, int(r)+100)
	}
	seen := 0
	for k := range x.All() {
		seen++
		if k.Job == "b" {
			x.Delete(k.Job, k.Rank)
		}
	}
	assert.Equal(t, 40, seen, "every entry is yielded once")
	assert.Equal(t, 20, x.Len())
	for r := range int64(20) {
		assert.Equal(t, int(r)+1, get(t, &x, RankKey{"a", r}))
		_, found := x.GetOrAdd("b", r, func(string, int64) int { return -1 })
		assert.False(t, found, "b/%d", r)
	}
}

// TestRankIndexSwitchEmptiesRefilledSlots: slots of one job deleted and
// filled again many times, more often than the slice has slots, are all
// emptied when another job is indexed, and the ranks kept to empty them do
// not outgrow the slice.
func TestRankIndexSwitchEmptiesRefilledSlots(t *testing.T) {
	var x RankIndex[int]
	for r := range int64(4) {
		x.put("a", r, int(r)+1)
	}
	for i := range 10 {
		x.Delete("a", 1)
		x.put("a", 1, 10+i)
		x.Delete("a", 3)
		x.put("a", 3, 20+i)
		assert.LessOrEqual(t, len(x.filled), len(x.byRank), "round %d", i)
	}
	assert.Equal(t, []int{1, 19, 3, 29}, x.byRank)
	x.put("b", 2, 7)
	assert.Equal(t, []int{0, 0, 7, 0}, x.byRank, "a's slots are emptied")
	for r, v := range map[int64]int{0: 1, 1: 19, 2: 3, 3: 29} {
		assert.Equal(t, v, get(t, &x, RankKey{"a", r}))
	}
	x.Clear()
	assert.Equal(t, []int{0, 0, 0, 0}, x.byRank, "Clear empties the slots")
}
