package telemetry

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// checkMetadataViews fails unless every accessor of e's metadata reads what
// the map md holds (the oracle's decoded metadata).
func checkMetadataViews(t *testing.T, name string, e *Event, md map[string]any) {
	t.Helper()
	if e.HasMetadata() != (len(md) > 0) {
		t.Fatalf("%s: HasMetadata %v, metadata %v", name, e.HasMetadata(), md)
	}
	if got := e.MetadataMap(); !reflect.DeepEqual(got, md) {
		t.Fatalf("%s: MetadataMap %#v, want %#v", name, got, md)
	}
	members := map[string]any{}
	for k, v := range e.MetadataMembers() {
		members[k] = v.Value() // a repeated key: the last value stays
	}
	if len(md) > 0 && !reflect.DeepEqual(members, md) {
		t.Fatalf("%s: members %#v, want %#v", name, members, md)
	}
	if _, ok := e.MetadataLookup("\x00absent"); ok {
		t.Fatalf("%s: an absent key found", name)
	}
	for k, want := range md {
		v, ok := e.MetadataLookup(k)
		if !ok || !reflect.DeepEqual(v.Value(), want) {
			t.Fatalf("%s: lookup %q = %#v, %v; want %#v", name, k, v.Value(), ok, want)
		}
		s, okS := v.AsString()
		wantS, wantOkS := want.(string)
		n, okN := v.AsNumber()
		wantN, wantOkN := want.(json.Number)
		b, okB := v.AsBool()
		wantB, wantOkB := want.(bool)
		if s != wantS || okS != wantOkS || n != wantN || okN != wantOkN || b != wantB || okB != wantOkB {
			t.Fatalf("%s: %q as string %q %v, number %q %v, bool %v %v; want %#v", name, k, s, okS, n, okN, b, okB, want)
		}
		if _, built := v.Built(); built != (e.metadataJSON.text == "") {
			t.Fatalf("%s: %q Built %v for text %q", name, k, built, e.metadataJSON.whole())
		}
	}
	// Every string of the map, and every key (which are not values), as
	// the one a predicate matches; and a predicate over all strings.
	var preds []func(string) bool
	collect := func(s string) bool {
		preds = append(preds, func(x string) bool { return x == s })
		return false
	}
	anyString(md, collect)
	for k := range md {
		collect(k)
	}
	preds = append(preds, func(string) bool { return true }, func(x string) bool { return strings.Contains(x, "all_reduce") })
	for i, p := range preds {
		if got, want := e.AnyMetadataString(p), anyString(md, p); got != want {
			t.Fatalf("%s: predicate %d: AnyMetadataString %v, want %v", name, i, got, want)
		}
	}
}

// TestMetadataViewsOfDecodedText covers what the corpus does not: keys
// given twice (a shadowed string is not in the map), escaped keys that
// decode equal to another key, invalid UTF-8, nesting, and values of
// every type.
func TestMetadataViewsOfDecodedText(t *testing.T) {
	for _, md := range []string{
		`{}`, ` { } `,
		`{"a":"all_reduce","a":1}`,
		`{"a":1,"a":"all_reduce"}`,
		`{"k":{"x":"all_reduce","x":null}}`,
		`{"k":[{"x":"all_reduce","x":null}]}`,
		`{"a\u0062":1,"ab":"two"}`,
		`{"ab":"two","a\u0062":1}`,
		"{\"s\":\"\xff\xfe\",\"\xffk\":\"v\"}",
		`{"s":"esc\"aped\\\u00e9\ud83d\ude00\ud800","n":-12.5e-3,"t":true,"f":false,"z":null,"arr":[1,"x",[],{}],"obj":{"in":{"deep":["all_reduce"]}}}`,
		`{ "spaced" : [ 1 , 2 ] , "x" : "y" }`,
		`{"big":123456789012345678901234567890,"i":7}`,
		`{"r":[0,1,2,3],"op":"all_reduce"}`, `{"r":[ ],"op":1}`,
		`{"r":["a]b",1],"op":"x"}`, `{"r":[1,[2],3],"op":"x"}`, `{"r":[1,{"k":"]"}],"op":"x"}`,
	} {
		line := strings.Replace(record(1, 0), `"metadata":{}`, `"metadata":`+md, 1)
		want, err := DecodeRecord([]byte(line))
		if err != nil {
			t.Fatalf("%s: %v", md, err)
		}
		lazy := Decoder{lazy: true}
		got, err := lazy.Decode([]byte(line))
		if err != nil {
			t.Fatalf("%s: lazy: %v", md, err)
		}
		if got.Metadata != nil {
			t.Fatalf("%s: the lazy decoder built a map", md)
		}
		checkMetadataViews(t, md, &got, want.Metadata)
		if string(AppendJSON(nil, &got)) != string(AppendJSON(nil, &want)) {
			t.Fatalf("%s: encoded %s, want %s", md, AppendJSON(nil, &got), AppendJSON(nil, &want))
		}
	}
}

// TestStreamedStringsOutliveTheirBlock: the strings of events kept from
// early chunks are unchanged after the decoders have gone on through many
// more blocks (arena blocks are never written where a string points).
func TestStreamedStringsOutliveTheirBlock(t *testing.T) {
	var lines []string
	for i := range 20000 {
		l := strings.Replace(record(i, i%4), `"context":null`, `"context":"ctx `+strings.Repeat("c", i%50)+`"`, 1)
		l = strings.Replace(l, `"metadata":{}`, `"metadata":{"i":`+strings.Repeat("1", 1+i%9)+`,"s":"`+strings.Repeat("m", i%70)+`"}`, 1)
		lines = append(lines, l)
	}
	var kept []Event
	err := Stream(strings.NewReader(strings.Join(lines, "\n")), func(chunk []Event) error {
		kept = append(kept, chunk...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != len(lines) {
		t.Fatalf("%d events", len(kept))
	}
	for i := range kept {
		want, err := DecodeRecord([]byte(lines[i]))
		if err != nil {
			t.Fatal(err)
		}
		if kept[i].Context != want.Context || !reflect.DeepEqual(kept[i].MetadataMap(), want.Metadata) {
			t.Fatalf("event %d: context %q metadata %v, want %q %v", i, kept[i].Context, kept[i].MetadataMap(), want.Context, want.Metadata)
		}
	}
}
