package inspector

import (
	"bytes"
	"math"
	"reflect"
	"testing"
)

func TestRecordWriterWritesThePluginsBytes(t *testing.T) {
	line := specExamples(t)[0] // the default layout: every byte comes from the Op
	op := mustParse(t, line)
	got := RecordWriter{GitRev: "v2.30.7-1"}.Append(nil, op)
	if want := append(bytes.Clone(line), '\n'); !bytes.Equal(got, want) {
		t.Fatalf("\n got %s\nwant %s", got, want)
	}
}

func TestRecordWriterRoundTrip(t *testing.T) {
	ops := []*Op{}
	for _, line := range specExamples(t) {
		ops = append(ops, mustParse(t, line))
	}
	ops = append(ops,
		mustParse(t, variant(t, false, `"DP Group 0"`, `"DP\/TP \"0\""`, `"coll_busbw_gbs":366.134533`, `"coll_busbw_gbs":"nan"`)),
		mustParse(t, variant(t, true, `"p2p_msg_size_bytes":33554432`, `"p2p_msg_size_bytes":18446744073709551615`, `"Send"`, `"Recv"`)),
	)
	for i, op := range ops {
		line := RecordWriter{Verbose: !op.Approximate()}.Append(nil, op)
		back, err := Parse(line)
		if err != nil {
			t.Fatalf("op %d: %v\n%s", i, err, line)
		}
		// NaN != NaN: compare bandwidths apart.
		if math.IsNaN(op.BusBWGBs) != math.IsNaN(back.BusBWGBs) {
			t.Fatalf("op %d: busbw %v back as %v", i, op.BusBWGBs, back.BusBWGBs)
		}
		a, b := *op, back
		a.BusBWGBs, b.BusBWGBs = 0, 0
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("op %d:\n got %+v\nwant %+v\n%s", i, b, a, line)
		}
	}
}
