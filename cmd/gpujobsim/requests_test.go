package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
)

// -requests-out - writes the requests to stdout (the summary goes to stderr), with the
// timestamps of job time 0 at -epoch, and sends nothing even when a collector listens.
func TestSimulateWritesRequests(t *testing.T) {
	var posts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { posts.Add(1) }))
	defer srv.Close()
	old := defaultOTLPEndpoint
	t.Cleanup(func() { defaultOTLPEndpoint = old })
	defaultOTLPEndpoint = strings.TrimPrefix(srv.URL, "http://")

	var stdout, stderr bytes.Buffer
	args := []string{"-ranks", "16", "-duration", "6s", "-from", "2s", "-ranks-per-request", "8",
		"-requests-out", "-", "-epoch", "2030-01-01T00:00:00Z", "-clock-skew", "0s"}
	if err := simulate(context.Background(), args, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if posts.Load() != 0 {
		t.Errorf("%d posts to the collector; want none", posts.Load())
	}
	if !strings.Contains(stderr.String(), "wrote requests of") {
		t.Errorf("stderr %q: want the summary", stderr.String())
	}
	epoch := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	var metrics int
	var dues []time.Duration
	for {
		r, err := jobsim.ReadRequest(&stdout)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		dues = append(dues, r.Due)
		if r.Signal != jobsim.SignalMetrics {
			continue
		}
		metrics++
		md, err := (&pmetric.ProtoUnmarshaler{}).UnmarshalMetrics(r.Body)
		if err != nil {
			t.Fatal(err)
		}
		if n := md.ResourceMetrics().Len(); n > 8 {
			t.Errorf("a request of %d ranks; want at most 8", n)
		}
		ts := md.ResourceMetrics().At(0).ScopeMetrics().At(0).Metrics().At(0).Gauge().DataPoints().At(0).Timestamp().AsTime()
		if ts.Before(epoch.Add(r.Due-time.Second)) || !ts.Before(epoch.Add(r.Due)) {
			t.Errorf("a sample at %s in the request due at job time %s", ts, r.Due)
		}
	}
	if metrics != 4*2 || dues[0] != 3*time.Second || dues[len(dues)-1] != 6*time.Second {
		t.Errorf("%d metrics requests due from %s to %s; want 8 (4 s of job, 2 requests a second) from 3s to 6s",
			metrics, dues[0], dues[len(dues)-1])
	}
}

func TestRequestsOutUsage(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"-from", "2s"}, "need -requests-out"},
		{[]string{"-ranks-per-request", "8"}, "need -requests-out"},
		{[]string{"-requests-out", "-"}, "needs -epoch"},
		{[]string{"-requests-out", "-", "-epoch", "2030-01-01T00:00:00Z", "-from", "4s", "-to", "2s"}, "-to must be past -from"},
		{[]string{"-requests-out", "-", "-epoch", "2030-01-01T00:00:00Z", "-otlp-endpoint", "127.0.0.1:4318"}, "drop -otlp-endpoint"},
	}
	for _, tt := range tests {
		err := simulate(context.Background(), append([]string{"-ranks", "2", "-duration", "4s"}, tt.args...), io.Discard, io.Discard)
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v; want a usage error containing %q", tt.args, err, tt.want)
		}
	}
}
