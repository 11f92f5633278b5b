// Command image builds a container image of one static collector binary
// without a container engine, and writes it as a docker-archive tarball
// (the `docker save` format: manifest.json, the config, gzip layers) that
// `docker load`, `podman load`, `kind load image-archive` and
// `ctr images import` all accept.
//
// The image is one layer on nothing: the binary, an /etc/passwd and
// /etc/group that name the non-root user it runs as, and the build host's
// CA bundle (the collector's TLS exporters need one; a static Go binary
// has nothing else to read). Timestamps come from -created, so one commit
// builds the same image twice.
//
//	go run . -binary build/otelcol-collectiveattr -ref collectiveattr/otelcol-collectiveattr:0.1.0 \
//	  -out build/otelcol-collectiveattr-image.tar -label org.opencontainers.image.revision=abc123
package main

import (
	"archive/tar"
	"bytes"
	"debug/buildinfo"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// The non-root user of distroless images: the chart's
// podSecurityContext.runAsUser and the Dockerfiles' USER.
const (
	uid      = 65532
	userName = "nonroot"
)

type labels map[string]string

func (l labels) String() string { return fmt.Sprint(map[string]string(l)) }

func (l labels) Set(s string) error {
	k, v, ok := strings.Cut(s, "=")
	if !ok || k == "" {
		return fmt.Errorf("label %q: want key=value", s)
	}
	l[k] = v
	return nil
}

type options struct {
	binary, ref, out, caBundle, arch string
	created                          time.Time
	labels                           labels
}

func main() {
	o := options{labels: labels{}}
	var created int64
	flag.StringVar(&o.binary, "binary", "", "the static collector binary to put in the image")
	flag.StringVar(&o.ref, "ref", "", "the image reference the tarball names (repository:tag)")
	flag.StringVar(&o.out, "out", "", "the docker-archive tarball to write")
	flag.StringVar(&o.caBundle, "ca-bundle", "/etc/ssl/certs/ca-certificates.crt", "CA certificates to put at /etc/ssl/certs/ca-certificates.crt (empty: none)")
	flag.StringVar(&o.arch, "arch", "amd64", "the binary's architecture (GOARCH)")
	flag.Int64Var(&created, "created", 0, "creation time, Unix seconds (e.g. the commit's): the image's and its files' time")
	flag.Var(o.labels, "label", "an image label key=value (repeatable)")
	flag.Parse()
	o.created = time.Unix(created, 0).UTC()
	if err := build(o); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
}

func build(o options) error {
	if o.binary == "" || o.ref == "" || o.out == "" {
		return errors.New("-binary, -ref and -out are required")
	}
	ref, err := name.NewTag(o.ref)
	if err != nil {
		return err
	}
	if err := requireStatic(o.binary); err != nil {
		return err
	}
	entrypoint := "/" + path.Base(o.binary)
	layerTar, err := rootfs(o, entrypoint)
	if err != nil {
		return err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithCompressedCaching)
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", o.arch
	cf.Created = v1.Time{Time: o.created}
	cf.Config.User = fmt.Sprintf("%d:%d", uid, uid)
	cf.Config.Entrypoint = []string{entrypoint}
	cf.Config.WorkingDir = "/"
	cf.Config.Labels = o.labels
	cf.Config.ExposedPorts = map[string]struct{}{"4317/tcp": {}, "4318/tcp": {}}
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return err
	}
	tmp := o.out + ".tmp"
	if err := tarball.WriteToFile(tmp, ref, img); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, o.out)
}

// requireStatic refuses a binary built with cgo: the image has no libc.
func requireStatic(binary string) error {
	info, err := buildinfo.ReadFile(binary)
	if err != nil {
		return fmt.Errorf("%s: %w", binary, err)
	}
	for _, s := range info.Settings {
		if s.Key == "CGO_ENABLED" && s.Value != "0" {
			return fmt.Errorf("%s is built with CGO_ENABLED=%s: the image has no libc; build it with CGO_ENABLED=0", binary, s.Value)
		}
	}
	return nil
}

// rootfs is the image's one layer, uncompressed.
func rootfs(o options, entrypoint string) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(name string, owner int) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o755, Uid: owner, Gid: owner, ModTime: o.created})
	}
	file := func(name string, mode int64, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: o.created}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	bin, err := os.ReadFile(o.binary)
	if err != nil {
		return nil, err
	}
	home := "/home/" + userName
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:%s:%s:/sbin/nologin\n", userName, uid, uid, userName, home)
	group := fmt.Sprintf("root:x:0:\n%s:x:%d:\n", userName, uid)
	steps := []func() error{
		func() error { return file(strings.TrimPrefix(entrypoint, "/"), 0o755, bin) },
		func() error { return dir("etc", 0) },
		func() error { return file("etc/passwd", 0o644, []byte(passwd)) },
		func() error { return file("etc/group", 0o644, []byte(group)) },
		func() error { return dir("home", 0) },
		func() error { return dir(strings.TrimPrefix(home, "/"), uid) },
		// The collector's scratch space when the root filesystem is
		// writable (the chart mounts it read-only and needs none).
		func() error {
			return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777, ModTime: o.created})
		},
	}
	if o.caBundle != "" {
		ca, err := os.ReadFile(o.caBundle)
		if err != nil {
			return nil, fmt.Errorf("CA bundle: %w (-ca-bundle= to build without one)", err)
		}
		steps = append(steps,
			func() error { return dir("etc/ssl", 0) },
			func() error { return dir("etc/ssl/certs", 0) },
			func() error { return file("etc/ssl/certs/ca-certificates.crt", 0o644, ca) },
		)
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
