package conformance

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
)

// unpacked returns a folder holding the contents of the tar.gz archive at
// archivePath. The folder is named by the archive's SHA-256 under the
// system's temporary directory, so every test binary of one run (and later
// runs) unpacks a given archive once; it is written under a private name and
// renamed into place, so a reader never sees a half-written folder.
func unpacked(archivePath string) (string, error) {
	data, err := os.ReadFile(archivePath)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("conformance cases: %s is missing: the golden cases are part of the repository", archivePath)
		}
		return "", fmt.Errorf("conformance cases: %w", err)
	}
	sum := sha256.Sum256(data)
	dir := filepath.Join(os.TempDir(), "collectiveattr-conformance-"+hex.EncodeToString(sum[:8]))
	if info, err := os.Stat(dir); err == nil && info.IsDir() {
		return dir, nil
	}
	tmp, err := os.MkdirTemp(os.TempDir(), "collectiveattr-conformance-unpack-")
	if err != nil {
		return "", err
	}
	if err := extract(data, tmp); err != nil {
		os.RemoveAll(tmp)
		return "", fmt.Errorf("conformance cases: %s: %w", archivePath, err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		os.RemoveAll(tmp)
		// Another test binary renamed its copy into place first.
		if info, statErr := os.Stat(dir); statErr == nil && info.IsDir() {
			return dir, nil
		}
		return "", err
	}
	return dir, nil
}

// extract writes the regular files and folders of a tar.gz archive under
// dir. Entry names must be relative paths that stay inside dir; any other
// entry type is refused.
func extract(archive []byte, dir string) error {
	zr, err := gzip.NewReader(bytes.NewReader(archive))
	if err != nil {
		return err
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := path.Clean(h.Name)
		if !fs.ValidPath(name) || name == "." {
			return fmt.Errorf("entry %q: not a relative path inside the archive", h.Name)
		}
		target := filepath.Join(dir, filepath.FromSlash(name))
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		default:
			return fmt.Errorf("entry %q: type %q is neither a file nor a folder", h.Name, h.Typeflag)
		}
	}
}
