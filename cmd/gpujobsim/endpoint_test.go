package main

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// closedPort returns an address where nothing listens.
func closedPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// gpujobsim alone: no collector at the default endpoint is a note on
// stderr, not an error, and the files are written; an endpoint given
// explicitly must listen; a listening default endpoint is sent to.
func TestSimulateWithoutCollector(t *testing.T) {
	dir := t.TempDir()
	base := []string{"-fast", "-duration", "4s", "-ranks", "2", "-quiet", "-epoch", "2026-01-01T00:00:00Z"}

	old := defaultOTLPEndpoint
	t.Cleanup(func() { defaultOTLPEndpoint = old })
	defaultOTLPEndpoint = closedPort(t)
	var stdout, stderr strings.Builder
	stormlog := filepath.Join(dir, "s.jsonl")
	if err := simulate(context.Background(), append(base, "-stormlog", stormlog), &stdout, &stderr); err != nil {
		t.Fatalf("no collector, no -otlp-endpoint: %v", err)
	}
	if !strings.Contains(stderr.String(), "no collector at "+defaultOTLPEndpoint) || strings.Contains(stderr.String(), "refused") {
		t.Errorf("stderr %q: want one note naming the endpoint", stderr.String())
	}
	if info, err := os.Stat(stormlog); err != nil || info.Size() == 0 {
		t.Errorf("stormlog not written: %v", err)
	}

	stderr.Reset()
	err := simulate(context.Background(), append(base, "-otlp-endpoint", defaultOTLPEndpoint), &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "-otlp-endpoint "+defaultOTLPEndpoint+": no collector there") || !strings.Contains(err.Error(), `-otlp-endpoint ""`) {
		t.Errorf("explicit endpoint without collector: %v", err)
	}

	if err := simulate(context.Background(), append(base, "-otlp-endpoint", ""), &stdout, &stderr); err != nil {
		t.Errorf(`-otlp-endpoint "": %v`, err)
	}

	var posts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		posts.Add(1)
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	defaultOTLPEndpoint = strings.TrimPrefix(srv.URL, "http://")
	stderr.Reset()
	if err := simulate(context.Background(), base, &stdout, &stderr); err != nil {
		t.Fatalf("collector at the default endpoint: %v", err)
	}
	if posts.Load() == 0 || stderr.Len() > 0 {
		t.Errorf("%d posts, stderr %q; want the job sent", posts.Load(), stderr.String())
	}
}
