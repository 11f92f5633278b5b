package conformance

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestArchiveEqualsShared checks that the in-repository golden cases are
// byte for byte the upstream ones in ../shared/conformance, when that folder
// exists beside the repository (on a clone without it there is nothing to
// compare against, and the test passes without a word).
func TestArchiveEqualsShared(t *testing.T) {
	shared, ok := SharedRoot()
	if !ok {
		return
	}
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	want := readTree(t, shared)
	got := readTree(t, root)
	for name, content := range want {
		have, ok := got[name]
		switch {
		case !ok:
			t.Errorf("%s is in %s but not in %s: refresh the archive (testdata/conformance/README.md)", name, shared, ArchivePath)
		case !bytes.Equal(have, content):
			t.Errorf("%s differs between %s and %s: refresh the archive (testdata/conformance/README.md)", name, shared, ArchivePath)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s is in %s but not in %s", name, ArchivePath, shared)
		}
	}
}

// readTree maps the slash-separated path of every regular file under dir to
// its content.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		b, err := os.ReadFile(p)
		files[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func TestRootNamesBothSets(t *testing.T) {
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range []string{"attribution", "phases"} {
		cases, err := Load(set)
		if err != nil {
			t.Fatal(err)
		}
		if len(cases) == 0 {
			t.Fatalf("set %s has no cases", set)
		}
		for _, c := range cases {
			if !strings.HasPrefix(c.Dir, root) {
				t.Fatalf("case %s is outside %s", c.Dir, root)
			}
			if _, err := os.Stat(c.EventsPath()); err != nil {
				t.Fatalf("case %s: %v", c.Name, err)
			}
		}
	}
}

func TestUnpackedMissingArchive(t *testing.T) {
	_, err := unpacked(filepath.Join(t.TempDir(), "cases.tar.gz"))
	if err == nil || !strings.Contains(err.Error(), "is missing") {
		t.Fatalf("want a missing-archive error, got %v", err)
	}
}

func tarGz(t *testing.T, entries ...*tar.Header) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, h := range entries {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(bytes.Repeat([]byte("x"), int(h.Size))); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestExtract(t *testing.T) {
	tests := []struct {
		name  string
		entry *tar.Header
		err   string // "" when the entry is written
	}{
		{"file in a folder", &tar.Header{Name: "attribution/a/case.json", Typeflag: tar.TypeReg, Size: 3, Mode: 0o644}, ""},
		{"folder", &tar.Header{Name: "phases/", Typeflag: tar.TypeDir, Mode: 0o755}, ""},
		{"parent escape", &tar.Header{Name: "../evil", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}, "not a relative path"},
		{"absolute", &tar.Header{Name: "/etc/evil", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644}, "not a relative path"},
		{"symlink", &tar.Header{Name: "link", Typeflag: tar.TypeSymlink, Linkname: "/etc", Mode: 0o777}, "neither a file nor a folder"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			err := extract(tarGz(t, tc.entry), dir)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("want an error containing %q, got %v", tc.err, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			info, err := os.Stat(filepath.Join(dir, filepath.FromSlash(tc.entry.Name)))
			if err != nil {
				t.Fatal(err)
			}
			if info.IsDir() != (tc.entry.Typeflag == tar.TypeDir) || (!info.IsDir() && info.Size() != tc.entry.Size) {
				t.Fatalf("written entry: dir %v size %d", info.IsDir(), info.Size())
			}
		})
	}
}
