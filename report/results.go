package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Result is one attribution result as the page uses it: the fields it
// places and colours by, and every field of its JSON for the hover.
type Result struct {
	Rank           int64
	StartNs, EndNs int64 // EndNs saturated at the largest int64
	Classification string
	Confidence     float64
	// Op and Comm name the matched collective when the result has one
	// (evidence mode's collective.op and collective.comm_id).
	Op, Comm string
	// PeakGapBytes is evidence.peak_gap_bytes (0 when absent).
	PeakGapBytes int64
	// Fields are the result's JSON fields in document order, nested
	// objects flattened to dotted keys ("evidence.marker_hits"), arrays of
	// scalars joined with ", ", numbers as written.
	Fields []Field
}

// Field is one flattened JSON field.
type Field struct {
	Key, Value string
}

// ParseResult reads one result object as the attribute command writes it
// (rank, interval_start_ns, interval_end_ns and classification required).
func ParseResult(raw []byte) (Result, error) {
	var r Result
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return r, fmt.Errorf("result: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return r, errors.New("result: not a JSON object")
	}
	if err := flattenObject(dec, "", &r.Fields); err != nil {
		return r, fmt.Errorf("result: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return r, errors.New("result: data after the object")
	}
	have := map[string]bool{}
	for _, f := range r.Fields {
		var err error
		switch f.Key {
		case "rank":
			r.Rank, err = strconv.ParseInt(f.Value, 10, 64)
		case "interval_start_ns":
			r.StartNs, err = parseTime(f.Value)
		case "interval_end_ns":
			r.EndNs, err = parseTime(f.Value)
		case "classification":
			r.Classification = f.Value
		case "confidence":
			r.Confidence, err = strconv.ParseFloat(f.Value, 64)
		case "collective.op":
			r.Op = f.Value
		case "collective.comm_id":
			r.Comm = f.Value
		case "evidence.peak_gap_bytes":
			r.PeakGapBytes, _ = strconv.ParseInt(f.Value, 10, 64)
		}
		if err != nil {
			return r, fmt.Errorf("result: %s: %q is not a number of the expected kind", f.Key, f.Value)
		}
		have[f.Key] = true
	}
	for _, k := range []string{"rank", "interval_start_ns", "interval_end_ns", "classification"} {
		if !have[k] {
			return r, fmt.Errorf("result: no %s", k)
		}
	}
	return r, nil
}

// parseTime reads a non-negative integer time, saturating past int64 (an
// interval end can pass it, see attribution.Result).
func parseTime(s string) (int64, error) {
	u, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
			return math.MaxInt64, nil
		}
		return 0, err
	}
	return int64(min(u, math.MaxInt64)), nil
}

// flattenObject reads the members of an object whose '{' was read.
func flattenObject(dec *json.Decoder, prefix string, out *[]Field) error {
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		if prefix != "" {
			key = prefix + "." + key
		}
		if err := flattenValue(dec, key, out); err != nil {
			return err
		}
	}
	_, err := dec.Token() // '}'
	return err
}

func flattenValue(dec *json.Decoder, key string, out *[]Field) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch d := tok.(type) {
	case json.Delim:
		if d == '{' {
			n := len(*out)
			if err := flattenObject(dec, key, out); err != nil {
				return err
			}
			if len(*out) == n {
				*out = append(*out, Field{key, "{}"})
			}
			return nil
		}
		return flattenArray(dec, key, out)
	default:
		*out = append(*out, Field{key, scalarText(tok)})
		return nil
	}
}

// flattenArray joins scalar elements into one field; an element that is an
// object or array gets its own key, key[i].
func flattenArray(dec *json.Decoder, key string, out *[]Field) error {
	var scalars []string
	at := len(*out)
	for i := 0; dec.More(); i++ {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		d, ok := tok.(json.Delim)
		if !ok {
			scalars = append(scalars, scalarText(tok))
			continue
		}
		sub := key + "[" + strconv.Itoa(i) + "]"
		if d == '{' {
			err = flattenObject(dec, sub, out)
		} else {
			err = flattenArray(dec, sub, out)
		}
		if err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // ']'
		return err
	}
	if len(scalars) > 0 || len(*out) == at {
		v := "[]"
		if len(scalars) > 0 {
			v = strings.Join(scalars, ", ")
		}
		*out = append((*out)[:at], append([]Field{{key, v}}, (*out)[at:]...)...)
	}
	return nil
}

func scalarText(tok json.Token) string {
	switch v := tok.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(v)
	case json.Number:
		return v.String()
	case string:
		return v
	}
	return fmt.Sprint(tok)
}
