package deploytest

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// freePort returns a TCP port on 127.0.0.1 that is free now and that this
// test binary has not handed out before.
//
// Ports come from a block below the kernel's ephemeral range: a port the
// kernel picked for 127.0.0.1:0 and the test released can be taken by any
// outgoing connection on the machine (another package's tests, a collector's
// exporters) before the process under test binds it. Below the range only
// listeners take ports, and the e2e suite draws from a different block.
func freePort(t testing.TB) int {
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
		if ln, err := net.Listen("tcp", addr(port)); err == nil {
			ln.Close()
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

const portBlockStart, portBlockEnd = 20000, 26000

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

func addr(port int) string { return fmt.Sprintf("127.0.0.1:%d", port) }

// process is a real binary started by a test; it is stopped (SIGTERM, then
// SIGKILL after a grace period) when the test ends, and its output is shown
// if the test failed.
type process struct {
	name string
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
	err  error
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// start runs bin with args and exactly env (plus PATH and HOME).
func start(t testing.TB, name, bin string, args []string, env map[string]string) *process {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	p := &process{name: name, cmd: cmd, out: &syncBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.stop(t)
		if t.Failed() {
			t.Logf("---- %s output ----\n%s", name, tail(p.out.String(), 8000))
		}
	})
	return p
}

// stop sends SIGTERM and waits for a clean exit; a collector flushes pending
// results on shutdown.
func (p *process) stop(t testing.TB) {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Errorf("%s did not stop within 30s of SIGTERM", p.name)
	}
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// waitHTTP polls url until it answers 200, the process dies or timeout.
func waitHTTP(t testing.TB, p *process, url string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if p != nil && p.exited() {
			t.Fatalf("%s exited (%v) before %s answered:\n%s", p.name, p.err, url, tail(p.out.String(), 8000))
		}
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s did not answer 200 within %v", url, timeout)
}

// eventually polls check every interval until it returns nil or timeout; it
// fails the test with the last error.
func eventually(t testing.TB, timeout, interval time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var err error
	for {
		if err = check(); err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %v: %v", timeout, err)
		}
		time.Sleep(interval)
	}
}

// run runs a command to completion within timeout and returns its output.
func run(t testing.TB, timeout time.Duration, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	out, err := exec.CommandContext(ctx, bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", filepath.Base(bin), args, err, out)
	}
	return string(out)
}

func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
