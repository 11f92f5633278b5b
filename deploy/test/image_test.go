package deploytest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// dockerArchive is what the tests read of a `docker save` tarball.
type dockerArchive struct {
	manifest []struct {
		Config   string   `json:"Config"`
		RepoTags []string `json:"RepoTags"`
		Layers   []string `json:"Layers"`
	}
	config struct {
		Architecture string `json:"architecture"`
		OS           string `json:"os"`
		Config       struct {
			User       string            `json:"User"`
			Entrypoint []string          `json:"Entrypoint"`
			Labels     map[string]string `json:"Labels"`
		} `json:"config"`
		RootFS struct {
			Type    string   `json:"type"`
			DiffIDs []string `json:"diff_ids"`
		} `json:"rootfs"`
	}
	// files of the (only) layer: name -> header and content.
	headers map[string]*tar.Header
	content map[string][]byte
}

// readDockerArchive reads the manifest and config of an image tarball,
// checks every layer's uncompressed digest against the config's diff_ids
// (what docker load and ctr import verify), and unpacks the layers.
func readDockerArchive(path string) (*dockerArchive, error) {
	entries := map[string][]byte{}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if entries[h.Name], err = io.ReadAll(tr); err != nil {
			return nil, err
		}
	}
	a := &dockerArchive{headers: map[string]*tar.Header{}, content: map[string][]byte{}}
	if err := json.Unmarshal(entries["manifest.json"], &a.manifest); err != nil {
		return nil, fmt.Errorf("manifest.json: %w", err)
	}
	if len(a.manifest) != 1 {
		return nil, fmt.Errorf("manifest.json: %d images, want 1", len(a.manifest))
	}
	m := a.manifest[0]
	if err := json.Unmarshal(entries[m.Config], &a.config); err != nil {
		return nil, fmt.Errorf("config %s: %w", m.Config, err)
	}
	if sum := sha256.Sum256(entries[m.Config]); "sha256:"+hex.EncodeToString(sum[:]) != m.Config {
		return nil, fmt.Errorf("config %s is not named by its digest", m.Config)
	}
	if a.config.RootFS.Type != "layers" || len(a.config.RootFS.DiffIDs) != len(m.Layers) {
		return nil, fmt.Errorf("config rootfs %+v for %d layers", a.config.RootFS, len(m.Layers))
	}
	for i, name := range m.Layers {
		zr, err := gzip.NewReader(bytes.NewReader(entries[name]))
		if err != nil {
			return nil, fmt.Errorf("layer %s: %w", name, err)
		}
		h := sha256.New()
		ltr := tar.NewReader(io.TeeReader(zr, h))
		for {
			hdr, err := ltr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("layer %s: %w", name, err)
			}
			if a.content[hdr.Name], err = io.ReadAll(ltr); err != nil {
				return nil, err
			}
			a.headers[hdr.Name] = hdr
		}
		if _, err := io.Copy(h, zr); err != nil { // the tar's padding after its end marker
			return nil, err
		}
		if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != a.config.RootFS.DiffIDs[i] {
			return nil, fmt.Errorf("layer %s: uncompressed digest %s, config diff_id %s", name, got, a.config.RootFS.DiffIDs[i])
		}
	}
	return a, nil
}

// TestImages: `make image` wrote each distribution as a docker-archive
// tarball: tagged with the reference the chart pulls, non-root, the
// distribution's static binary as its entrypoint, labelled; the binary
// taken out of the image reports its version and validates the config the
// chart renders for it.
func TestImages(t *testing.T) {
	for _, tc := range []struct {
		name, env, rel, refEnv, ref, entrypoint, title string
		agent                                          bool
	}{
		{"collectiveattr", "COLLECTIVEATTR_IMAGE", "build/otelcol-collectiveattr-image.tar", "COLLECTIVEATTR_IMAGE_REF",
			"collectiveattr/otelcol-collectiveattr:0.1.0", "/otelcol-collectiveattr", "otelcol-collectiveattr", false},
		{"agent", "COLLECTIVEATTR_AGENT_IMAGE", "build/otelcol-collectiveattr-agent-image.tar", "COLLECTIVEATTR_AGENT_IMAGE_REF",
			"collectiveattr/otelcol-collectiveattr-agent:0.1.0", "/otelcol-collectiveattr-agent", "otelcol-collectiveattr-agent", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := readDockerArchive(requireBinary(t, tc.env, tc.rel, "image"))
			require.NoError(t, err)
			ref := tc.ref
			if v := os.Getenv(tc.refEnv); v != "" {
				ref = v
			}
			assert.Equal(t, []string{ref}, a.manifest[0].RepoTags)
			assert.Equal(t, "linux", a.config.OS)
			assert.Equal(t, "amd64", a.config.Architecture)
			assert.Equal(t, "65532:65532", a.config.Config.User, "the chart's runAsUser")
			assert.Equal(t, []string{tc.entrypoint}, a.config.Config.Entrypoint)
			labels := a.config.Config.Labels
			assert.Equal(t, tc.title, labels["org.opencontainers.image.title"])
			assert.Equal(t, "0.1.0", labels["org.opencontainers.image.version"])
			assert.NotEmpty(t, labels["org.opencontainers.image.revision"])
			assert.NotEmpty(t, labels["org.opencontainers.image.source"])
			_, err = time.Parse(time.RFC3339, labels["org.opencontainers.image.created"])
			assert.NoError(t, err)

			name := strings.TrimPrefix(tc.entrypoint, "/")
			require.Contains(t, a.content, name)
			assert.Equal(t, int64(0o755), a.headers[name].Mode)
			assert.Contains(t, string(a.content["etc/passwd"]), ":65532:65532:", "the user has a name (tools that look it up)")
			assert.NotEmpty(t, a.content["etc/ssl/certs/ca-certificates.crt"], "TLS exporters need CA certificates")

			bin := filepath.Join(t.TempDir(), name)
			require.NoError(t, os.WriteFile(bin, a.content[name], 0o755))
			info, err := buildinfo.ReadFile(bin)
			require.NoError(t, err)
			static := false
			for _, s := range info.Settings {
				static = static || (s.Key == "CGO_ENABLED" && s.Value == "0")
			}
			assert.True(t, static, "no libc in the image: the binary must be static")
			assert.Contains(t, run(t, time.Minute, bin, "--version"), "version 0.1.0")

			// The binary validates what the chart gives it.
			values := map[string]any{}
			if tc.agent {
				values["topology"] = "multiNode"
			}
			r := index(t, renderAndDecode(t, values))
			validated := 0
			for _, w := range r.workloads() {
				if w.agent != tc.agent {
					continue
				}
				args, env := podConfig(t, r, w.pod)
				out, err := runValidate(bin, args, env)
				require.NoError(t, err, "%s: %s", w.name, out)
				validated++
			}
			assert.Positive(t, validated)
		})
	}
}

// The archive reader must catch a layer that is not the one the config
// names: replaced by another valid layer (an empty one).
func TestImageReaderCatchesAWrongLayer(t *testing.T) {
	path := requireBinary(t, "COLLECTIVEATTR_IMAGE", "build/otelcol-collectiveattr-image.tar", "image")
	in, err := os.Open(path)
	require.NoError(t, err)
	defer in.Close()
	var empty bytes.Buffer
	zw := gzip.NewWriter(&empty)
	require.NoError(t, tar.NewWriter(zw).Close())
	require.NoError(t, zw.Close())

	broken := filepath.Join(t.TempDir(), "broken.tar")
	out, err := os.Create(broken)
	require.NoError(t, err)
	tr, tw := tar.NewReader(in), tar.NewWriter(out)
	replaced := 0
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		b, err := io.ReadAll(tr)
		require.NoError(t, err)
		if strings.HasSuffix(h.Name, ".tar.gz") {
			b, h.Size = empty.Bytes(), int64(empty.Len())
			replaced++
		}
		require.NoError(t, tw.WriteHeader(h))
		_, err = tw.Write(b)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, out.Close())
	require.Equal(t, 1, replaced)
	_, err = readDockerArchive(broken)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "config diff_id")
}
