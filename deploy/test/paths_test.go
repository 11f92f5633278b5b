package deploytest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// repoRoot is the repository root, found from this file's location so the
// tests run the same from `make`, from an IDE and from a fresh CI clone.
func repoRoot(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the test source")
	}
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

func chartDir(t testing.TB) string {
	return filepath.Join(repoRoot(t), "deploy", "helm", "collectiveattr")
}

// requireBinary returns the path of a built binary: the environment variable
// env if set, else rel under the repository root. A missing binary fails the
// test with the make target that builds it: these tests exist to check the
// real binaries, so they never pass without them.
func requireBinary(t testing.TB, env, rel, makeTarget string) string {
	t.Helper()
	p := os.Getenv(env)
	if p == "" {
		p = filepath.Join(repoRoot(t), rel)
	}
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("%s not found (%v): run `make %s` first, or set %s", p, err, makeTarget, env)
	}
	return p
}

func collectorBinary(t testing.TB) string {
	return requireBinary(t, "COLLECTIVEATTR_COLLECTOR", "build/otelcol-collectiveattr", "build")
}

func agentBinary(t testing.TB) string {
	return requireBinary(t, "COLLECTIVEATTR_AGENT", "build/otelcol-collectiveattr-agent", "build-agent")
}
