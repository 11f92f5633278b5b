package e2e

import (
	"io"

	"github.com/golang/snappy"
	"github.com/klauspost/compress/zstd"
	"google.golang.org/grpc/encoding"
)

// The pipeline's sink reads what the exporter compressed with any of its
// compression settings (COLLECTIVEATTR_PIPELINE_E2E_COMPRESSION): gzip is
// grpc's own; zstd and snappy are registered here as the collector's
// configgrpc registers them (the exporter names them "zstd" and "snappy").
func init() {
	encoding.RegisterCompressor(sinkZstd{})
	encoding.RegisterCompressor(sinkSnappy{})
}

type sinkZstd struct{}

func (sinkZstd) Name() string { return "zstd" }

func (sinkZstd) Compress(w io.Writer) (io.WriteCloser, error) { return zstd.NewWriter(w) }

func (sinkZstd) Decompress(r io.Reader) (io.Reader, error) {
	d, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	return d.IOReadCloser(), nil
}

type sinkSnappy struct{}

func (sinkSnappy) Name() string { return "snappy" }

func (sinkSnappy) Compress(w io.Writer) (io.WriteCloser, error) {
	return snappy.NewBufferedWriter(w), nil
}

func (sinkSnappy) Decompress(r io.Reader) (io.Reader, error) { return snappy.NewReader(r), nil }
