// Package e2e runs the built collector distribution (build/otelcol-collectiveattr) as a
// real process on free loopback ports and checks what its exporters write. `make test`
// builds the binary and passes its path in COLLECTIVEATTR_OTELCOL; without it the tests
// skip, so `go test ./...` works on a machine that has not built the collector.
//
// Citations: "reference §N", bare §N, the steps S0–S12 and the releases R1/R2
// refer to docs/reference-semantics.md; "contract §N" to
// docs/processor-contract.md.
package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// binaryEnv names the environment variable holding the collector binary's path.
const binaryEnv = "COLLECTIVEATTR_OTELCOL"

// Start-up and shutdown are slow on a loaded 2-core CI machine: be generous, tests still
// end as soon as the collector is ready.
const (
	startTimeout    = 90 * time.Second
	shutdownTimeout = 60 * time.Second
)

func collectorBinary(t *testing.T) string {
	t.Helper()
	p := os.Getenv(binaryEnv)
	if p == "" {
		t.Skipf("%s is not set: end-to-end tests need the built collector (make test builds it and sets it)", binaryEnv)
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(abs); err != nil {
		t.Fatalf("%s=%s: %v", binaryEnv, p, err)
	}
	return abs
}

// repoRoot is the repository root (go test runs in the package directory).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// freePorts returns n loopback ports that are free now and that this test
// binary has not handed out before.
//
// Ports come from a block below the kernel's ephemeral range: a port the
// kernel picked for 127.0.0.1:0 and the test released can be taken by any
// outgoing connection on the machine before the collector binds it. Below
// the range only listeners take ports, and deploy/test draws from another
// block.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	out := make([]int, n)
	for i := range out {
		out[i] = freePort(t)
	}
	return out
}

func freePort(t *testing.T) int {
	t.Helper()
	ports.Lock()
	defer ports.Unlock()
	if ports.next == 0 {
		// Two runs of this suite on one machine start at different places.
		ports.next = 1 + rand.IntN(portBlockEnd-portBlockStart)
	}
	for range portBlockEnd - portBlockStart {
		port := portBlockStart + ports.next%(portBlockEnd-portBlockStart)
		ports.next++
		if port >= ephemeralLow() {
			break
		}
		if ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			_ = ln.Close()
			return port
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

const portBlockStart, portBlockEnd = 26000, 32000

var ports struct {
	sync.Mutex
	next int
}

// ephemeralLow is the first port the kernel hands to outgoing connections.
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	var low, high int
	if _, err := fmt.Sscan(string(b), &low, &high); err != nil {
		return 32768
	}
	return low
}

// collector is one running collector process.
type collector struct {
	t       *testing.T
	cmd     *exec.Cmd
	logPath string
	done    chan error
	exitErr error
	exited  bool
}

// startCollector runs the binary with config and env, and waits until its health_check
// extension answers on healthPort.
func startCollector(t *testing.T, config string, env map[string]string, healthPort int) *collector {
	t.Helper()
	return startCollectorBinary(t, collectorBinary(t), config, env, healthPort)
}

// startCollectorBinary is startCollector of the collector binary bin, with the
// configurations more merged over config (otelcol's --config given again).
func startCollectorBinary(t *testing.T, bin, config string, env map[string]string, healthPort int, more ...string) *collector {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "collector.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--config", config}
	for _, c := range more {
		args = append(args, "--config", c)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &collector{t: t, cmd: cmd, logPath: logPath, done: make(chan error, 1)}
	go func() {
		c.done <- cmd.Wait()
		_ = logFile.Close()
	}()
	t.Cleanup(func() {
		if !c.exited {
			_ = cmd.Process.Kill()
			<-c.done
		}
		if t.Failed() {
			t.Logf("collector log (%s):\n%s", config, c.logTail(80))
		}
	})

	deadline := time.Now().Add(startTimeout)
	url := fmt.Sprintf("http://127.0.0.1:%d/", healthPort)
	client := &http.Client{Timeout: time.Second}
	for {
		select {
		case err := <-c.done:
			c.exited, c.exitErr = true, err
			t.Fatalf("collector exited during start-up (%v):\n%s", err, c.logTail(40))
		default:
		}
		if resp, err := client.Get(url); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return c
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("collector not healthy after %s:\n%s", startTimeout, c.logTail(40))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop sends SIGTERM and waits for a clean exit; it fails the test on a non-zero exit or
// a timeout, and returns how long the shutdown took.
func (c *collector) stop() time.Duration {
	c.t.Helper()
	start := time.Now()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		c.t.Fatal(err)
	}
	select {
	case err := <-c.done:
		c.exited, c.exitErr = true, err
	case <-time.After(shutdownTimeout):
		c.t.Fatalf("collector did not stop within %s:\n%s", shutdownTimeout, c.logTail(40))
	}
	if c.exitErr != nil {
		c.t.Fatalf("collector exited with %v:\n%s", c.exitErr, c.logTail(40))
	}
	return time.Since(start)
}

func (c *collector) log() string {
	b, _ := os.ReadFile(c.logPath)
	return string(b)
}

func (c *collector) logTail(n int) string {
	lines := strings.Split(strings.TrimRight(c.log(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// runCommand runs the collector binary with args and returns its combined output.
func runCommand(t *testing.T, env map[string]string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, collectorBinary(t), args...)
	cmd.Env = os.Environ()
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// eachLine calls fn with every non-empty line of a file exporter output file (OTLP JSON,
// one request per line). A missing file has no lines.
func eachLine(t *testing.T, path string, fn func([]byte) error) {
	t.Helper()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 512<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		if err := fn(line); err != nil {
			t.Fatalf("%s line %d: %v", path, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

func readTraces(t *testing.T, path string) ptrace.Traces {
	t.Helper()
	all := ptrace.NewTraces()
	var u ptrace.JSONUnmarshaler
	eachLine(t, path, func(b []byte) error {
		td, err := u.UnmarshalTraces(b)
		if err != nil {
			return err
		}
		td.ResourceSpans().MoveAndAppendTo(all.ResourceSpans())
		return nil
	})
	return all
}

func readMetrics(t *testing.T, path string) pmetric.Metrics {
	t.Helper()
	all := pmetric.NewMetrics()
	var u pmetric.JSONUnmarshaler
	eachLine(t, path, func(b []byte) error {
		md, err := u.UnmarshalMetrics(b)
		if err != nil {
			return err
		}
		md.ResourceMetrics().MoveAndAppendTo(all.ResourceMetrics())
		return nil
	})
	return all
}

func readLogs(t *testing.T, path string) plog.Logs {
	t.Helper()
	all := plog.NewLogs()
	var u plog.JSONUnmarshaler
	eachLine(t, path, func(b []byte) error {
		ld, err := u.UnmarshalLogs(b)
		if err != nil {
			return err
		}
		ld.ResourceLogs().MoveAndAppendTo(all.ResourceLogs())
		return nil
	})
	return all
}

func itoa(i int) string { return strconv.Itoa(i) }
