package telemetry

import (
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// memberList is the JSON text of a member list of ranks from..to-1.
func memberList(from, to int) string {
	var b strings.Builder
	b.WriteByte('[')
	for r := from; r < to; r++ {
		if r > from {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(r))
	}
	b.WriteByte(']')
	return b.String()
}

// withMetadata is a record whose metadata object is the text md.
func withMetadata(md string) []byte {
	return []byte(strings.Replace(record(1, 0), `"metadata":{}`, `"metadata":`+md, 1))
}

// TestSharedMemberListsReadAsTheirText: a metadata object whose member
// list the decoder recognises from an earlier record (and so holds apart,
// shared) reads, through every accessor, as the built map of the same
// record: the list first, in the middle, last, with spaces around it, given
// twice under one key, next to a second list, and lists that are not kept
// (short, nested, with strings).
func TestSharedMemberListsReadAsTheirText(t *testing.T) {
	world, tp := memberList(0, 40), memberList(100, 140)
	for _, md := range []string{
		`{"nccl.comm.ranks":` + world + `,"nccl.seq":1,"nccl.op":"all_reduce"}`,
		`{"nccl.op":"all_reduce","nccl.comm.ranks":` + world + `,"nccl.seq":1}`,
		`{"nccl.op":"all_reduce","nccl.seq":1,"nccl.comm.ranks":` + world + `}`,
		`{ "nccl.op" : "all_reduce" , "nccl.comm.ranks" : ` + world + ` , "nccl.seq" : 1 }`,
		`{"nccl.comm.ranks":` + world + `,"nccl.comm.ranks":` + tp + `,"x":1}`,
		`{"nccl.comm.ranks":` + tp + `,"peers":` + world + `,"nested":{"ranks":` + world + `}}`,
		`{"nccl.comm.ranks":[0,1,2],"nccl.seq":1}`,
		`{"nccl.comm.ranks":[[0,1],[2,3],[4,5],[6,7],[8,9],[10,11],[12,13],[14,15],[16,17],[18,19]],"y":"nccl"}`,
		`{"hosts":["node-a","node-b","node-c","node-d","node-e","node-f","node-g","node-h","node-i"],"y":2}`,
	} {
		want, err := DecodeRecord(withMetadata(md))
		if err != nil {
			t.Fatalf("%s: %v", md, err)
		}
		d := Decoder{lazy: true}
		for pass := range 3 {
			e, err := d.Decode(withMetadata(md))
			if err != nil {
				t.Fatalf("%s, pass %d: %v", md, pass, err)
			}
			if got := e.metadataJSON.whole(); got != md {
				t.Fatalf("pass %d: text %q, want %q", pass, got, md)
			}
			checkMetadataViews(t, md+" pass "+strconv.Itoa(pass), &e, want.Metadata)
		}
	}
}

// TestMarkersShareTheirMemberList: markers of two communicators,
// alternating, each listing its members, hold one copy of each list
// between them: the text each reads for nccl.comm.ranks is the same
// memory from the second marker of a communicator on, and the rest of the
// metadata is their own.
func TestMarkersShareTheirMemberList(t *testing.T) {
	lists := []string{memberList(0, 64), memberList(0, 32)}
	d := Decoder{lazy: true}
	first := map[string]*byte{}
	for i := range 8 {
		list := lists[i%2]
		md := `{"nccl.comm.ranks":` + list + `,"nccl.seq":` + strconv.Itoa(i) + `}`
		e, err := d.Decode(withMetadata(md))
		if err != nil {
			t.Fatal(err)
		}
		v, _ := e.MetadataLookup("nccl.comm.ranks")
		text, _ := v.Built()
		if text != nil {
			t.Fatalf("marker %d: the list is built", i)
		}
		got := v.text
		if got != list {
			t.Fatalf("marker %d: list %q, want %q", i, got, list)
		}
		if seq, _ := e.MetadataLookup("nccl.seq"); seq.text != strconv.Itoa(i) {
			t.Fatalf("marker %d: nccl.seq %q", i, seq.text)
		}
		p := unsafe.StringData(got)
		if was, ok := first[list]; !ok {
			first[list] = p
		} else if was != p {
			t.Errorf("marker %d: its list is a copy of its own", i)
		}
	}
}

// TestMemberListsThatOnlyBeginLikeAKeptOne: a list that shares a kept
// list's opening but goes on differently is validated in full (an error
// after the shared part is the error a decoder that kept nothing reports),
// and decodes whole.
func TestMemberListsThatOnlyBeginLikeAKeptOne(t *testing.T) {
	d := Decoder{lazy: true}
	list := memberList(0, 40)
	if _, err := d.Decode(withMetadata(`{"r":` + list + `}`)); err != nil {
		t.Fatal(err)
	}
	longer := strings.TrimSuffix(list, "]")
	for _, tc := range []struct {
		md  string
		bad bool
	}{
		{`{"r":` + longer + `,x]}`, true},
		{`{"r":` + longer + `,]}`, true},
		{`{"r":` + list + `]}`, true},
		{`{"r":` + list + `,"s":` + longer + `,"x"}`, true},
		{`{"r":` + longer + `,40]}`, false},
		{`{"r":` + list + `,"s":` + longer + `,41]}`, false},
	} {
		e, err := d.Decode(withMetadata(tc.md))
		if tc.bad {
			fresh := Decoder{lazy: true}
			_, want := fresh.Decode(withMetadata(tc.md))
			if err == nil || want == nil || err.Error() != want.Error() {
				t.Errorf("%s: error %v, want %v", tc.md, err, want)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.md, err)
		}
		if got := e.metadataJSON.whole(); got != tc.md {
			t.Errorf("text %q, want %q", got, tc.md)
		}
	}
}
