package main

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// gzipSuffix marks a gzip-compressed input file; the file is read as the
// name without it.
const gzipSuffix = ".gz"

// inputFiles expands each path of a marker-source flag: a file is taken
// as it is, a directory gives every file below it (subdirectories
// included, as NVIDIA's own exporter reads an Inspector directory) whose
// name ends in one of suffixes, plain or with .gz. Files are sorted by
// their name without .gz, then by path, so a directory of compressed or
// per-node files is read in the order of the plain one. No suffixes means
// every file. A directory with no such file is an error naming what was
// looked for: an empty result is more likely a wrong path than a run
// without records.
func inputFiles(flag string, paths []string, suffixes []string) ([]string, error) {
	var files []string
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", flag, err)
		}
		if !info.IsDir() {
			files = append(files, p)
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && hasInputSuffix(d.Name(), suffixes) {
				found = append(found, path)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", flag, err)
		}
		if len(found) == 0 && len(suffixes) == 0 {
			return nil, fmt.Errorf("%s: %s holds no file (subdirectories included)", flag, p)
		}
		if len(found) == 0 {
			var want []string
			for _, s := range suffixes {
				want = append(want, "*"+s, "*"+s+gzipSuffix)
			}
			return nil, fmt.Errorf("%s: %s holds no %s file (subdirectories included)", flag, p, strings.Join(want, ", "))
		}
		slices.SortFunc(found, func(a, b string) int {
			if c := strings.Compare(plainName(a), plainName(b)); c != 0 {
				return c
			}
			return strings.Compare(a, b)
		})
		files = append(files, found...)
	}
	return files, nil
}

func hasInputSuffix(name string, suffixes []string) bool {
	if len(suffixes) == 0 {
		return true
	}
	name = strings.TrimSuffix(name, gzipSuffix)
	for _, s := range suffixes {
		if strings.HasSuffix(name, s) {
			return true
		}
	}
	return false
}

func plainName(path string) string { return strings.TrimSuffix(filepath.Base(path), gzipSuffix) }

// openInput opens a marker-source file, decompressing it when it starts
// with gzip's magic bytes (whatever its name).
func openInput(path string) (io.ReadCloser, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(f, 64<<10)
	magic, _ := br.Peek(2)
	if len(magic) == 2 && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return readCloser{Reader: zr, close: func() error { zr.Close(); return f.Close() }}, nil
	}
	return readCloser{Reader: br, close: f.Close}, nil
}

type readCloser struct {
	io.Reader
	close func() error
}

func (r readCloser) Close() error { return r.close() }
