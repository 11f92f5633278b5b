// Package conformance loads the golden cases kept in the repository
// (testdata/conformance/cases.tar.gz, unpacked once into a temporary folder)
// and compares JSON documents the way the conformance cases require
// (docs/reference-semantics.md §5.4). It is used by the tests of the attribution
// package, the CLI, the processor and the end-to-end suite.
package conformance

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ModulePath is the module whose root holds testdata/conformance.
const ModulePath = "github.com/collectiveattr/collectiveattr"

// ArchivePath is the golden cases' archive, relative to the module root.
const ArchivePath = "testdata/conformance/cases.tar.gz"

// Case is one golden folder <set>/<name>/ holding case.json and events.jsonl.
type Case struct {
	// Dir is the case folder, Set the set it belongs to ("attribution" or
	// "phases"). Neither is read from case.json.
	Dir string `json:"-"`
	Set string `json:"-"`

	Name        string `json:"name"`
	Description string `json:"description"`
	// Preset is nil when case.json has no preset (or a null one).
	Preset *string `json:"preset"`
	// Overrides is decoded with json.Number for every number, so each keeps
	// its lexeme. OverridesJSON is the exact text of the overrides member
	// (nil when absent).
	Overrides     map[string]any  `json:"overrides"`
	OverridesJSON json.RawMessage `json:"-"`
	Expected      json.RawMessage `json:"expected"`
	ExpectedError *string         `json:"expected_error"`
}

// EventsPath is the case's events.jsonl.
func (c Case) EventsPath() string { return filepath.Join(c.Dir, "events.jsonl") }

// ModuleRoot walks up from the working directory to the directory whose
// go.mod declares ModulePath.
func ModuleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if isModuleRoot(dir) {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of module %s above the working directory", ModulePath)
		}
		dir = parent
	}
}

func isModuleRoot(dir string) bool {
	f, err := os.Open(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "module" {
			return strings.Trim(fields[1], `"`) == ModulePath
		}
	}
	return false
}

// Root returns the folder holding the golden sets (attribution/ and
// phases/), unpacked from ArchivePath. A missing or unreadable archive is an
// error: the conformance tests fail without their data, they do not skip.
func Root() (string, error) {
	mod, err := ModuleRoot()
	if err != nil {
		return "", err
	}
	return unpacked(filepath.Join(mod, filepath.FromSlash(ArchivePath)))
}

// SharedRoot returns ../shared/conformance next to the module root, the
// upstream copy the archive was made from, and whether it exists.
func SharedRoot() (string, bool) {
	mod, err := ModuleRoot()
	if err != nil {
		return "", false
	}
	dir := filepath.Join(mod, "..", "shared", "conformance")
	info, err := os.Stat(dir)
	return dir, err == nil && info.IsDir()
}

// Load reads every case of one set ("attribution" or "phases"), sorted by
// folder name. A missing archive (see Root), a missing set folder, an
// unreadable or invalid case.json, or a case with neither expected nor
// expected_error is an error. A present set with no cases returns none and no
// error.
func Load(set string) ([]Case, error) {
	root, err := Root()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(root, set)
	entries, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("conformance set %q: folder %s is absent", set, filepath.Clean(dir))
		}
		return nil, err
	}
	var cases []Case
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		c, err := loadCase(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("conformance set %q: %w", set, err)
		}
		c.Set = set
		cases = append(cases, c)
	}
	slices.SortFunc(cases, func(a, b Case) int {
		return strings.Compare(filepath.Base(a.Dir), filepath.Base(b.Dir))
	})
	return cases, nil
}

func loadCase(dir string) (Case, error) {
	name := filepath.Base(dir)
	raw, err := os.ReadFile(filepath.Join(dir, "case.json"))
	if err != nil {
		return Case{}, err
	}
	var c Case
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&c); err != nil {
		return Case{}, fmt.Errorf("%s: %w", name, err)
	}
	var rawOverrides struct {
		Overrides json.RawMessage `json:"overrides"`
	}
	if err := json.Unmarshal(raw, &rawOverrides); err != nil {
		return Case{}, fmt.Errorf("%s: %w", name, err)
	}
	c.OverridesJSON = rawOverrides.Overrides
	c.Dir = dir
	if c.Expected == nil && c.ExpectedError == nil {
		return Case{}, fmt.Errorf("%s: neither expected nor expected_error", name)
	}
	return c, nil
}

// CompareJSON compares two JSON documents structurally: the same keys present
// and absent (a missing key never equals null), the same array lengths,
// exact strings, booleans, nulls and integers (compared by lexeme), and
// floats within 1e-9. An integer lexeme never equals a float lexeme (1 vs
// 1.0), since the reference serialisation distinguishes them. It returns ""
// when equal, else the path of the first difference and what differs.
func CompareJSON(want, got []byte) string {
	w, err := decode(want)
	if err != nil {
		return "expected is not JSON: " + err.Error()
	}
	g, err := decode(got)
	if err != nil {
		return "output is not JSON: " + err.Error()
	}
	return CompareValues(w, g)
}

// CompareValues is CompareJSON for documents already decoded with
// json.Decoder.UseNumber (numbers as json.Number).
func CompareValues(want, got any) string {
	return compareValue("$", want, got)
}

func decode(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("data after the top-level value")
	}
	return v, nil
}

func isInteger(n json.Number) bool { return !strings.ContainsAny(string(n), ".eE") }

func compareValue(path string, w, g any) string {
	switch wv := w.(type) {
	case map[string]any:
		gv, ok := g.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: want object, got %T", path, g)
		}
		keys := make([]string, 0, len(wv)+len(gv))
		for k := range wv {
			keys = append(keys, k)
		}
		for k := range gv {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range slices.Compact(keys) {
			a, inW := wv[k]
			b, inG := gv[k]
			switch {
			case !inW:
				return fmt.Sprintf("%s.%s: unexpected key", path, k)
			case !inG:
				return fmt.Sprintf("%s.%s: missing key", path, k)
			}
			if d := compareValue(path+"."+k, a, b); d != "" {
				return d
			}
		}
		return ""
	case []any:
		gv, ok := g.([]any)
		if !ok {
			return fmt.Sprintf("%s: want array, got %T", path, g)
		}
		if len(wv) != len(gv) {
			return fmt.Sprintf("%s: want %d elements, got %d", path, len(wv), len(gv))
		}
		for i := range wv {
			if d := compareValue(fmt.Sprintf("%s[%d]", path, i), wv[i], gv[i]); d != "" {
				return d
			}
		}
		return ""
	case json.Number:
		gv, ok := g.(json.Number)
		if !ok {
			return fmt.Sprintf("%s: want number %s, got %v", path, wv, g)
		}
		wInt, gInt := isInteger(wv), isInteger(gv)
		if wInt != gInt {
			return fmt.Sprintf("%s: want %s, got %s (integer vs float)", path, wv, gv)
		}
		if wInt {
			if wv != gv {
				return fmt.Sprintf("%s: want %s, got %s", path, wv, gv)
			}
			return ""
		}
		a, errA := wv.Float64()
		b, errB := gv.Float64()
		if errA != nil || errB != nil || math.Abs(a-b) > 1e-9 {
			return fmt.Sprintf("%s: want %s, got %s", path, wv, gv)
		}
		return ""
	default:
		if w != g {
			return fmt.Sprintf("%s: want %v, got %v", path, w, g)
		}
		return ""
	}
}
