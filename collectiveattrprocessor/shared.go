package collectiveattrprocessor // import "github.com/collectiveattr/collectiveattr/collectiveattrprocessor"

import (
	"sync"

	"go.opentelemetry.io/collector/processor"
)

// cores holds one core per component ID. The service creates one processor
// per pipeline that names a component, and hands each of those Create calls
// the same *Config: keying on the pointer gives traces, metrics and logs
// pipelines of one `collectiveattr/<name>` a single shared state
// (contract §6). The entry lives from the first Create to the last Shutdown.
var cores = struct {
	sync.Mutex
	m map[*Config]*core
}{m: map[*Config]*core{}}

// acquireCore returns the core of cfg, creating it on first use, and takes a
// reference that the caller gives back with releaseCore.
func acquireCore(cfg *Config, set processor.Settings, clk clock) (*core, error) {
	cores.Lock()
	defer cores.Unlock()
	if c, ok := cores.m[cfg]; ok {
		c.refs++
		return c, nil
	}
	c, err := newCore(cfg, set, clk)
	if err != nil {
		return nil, err
	}
	c.refs = 1
	cores.m[cfg] = c
	return c, nil
}

// releaseCore gives back one reference; it reports whether it was the last,
// in which case the core is no longer reachable by new Create calls.
func releaseCore(c *core) (last bool) {
	cores.Lock()
	defer cores.Unlock()
	c.refs--
	if c.refs > 0 {
		return false
	}
	if cores.m[c.cfg] == c {
		delete(cores.m, c.cfg)
	}
	return true
}
