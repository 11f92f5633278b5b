package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// collectorConfig is a collector configuration on loopback. Every test's
// collector has a health_check extension on healthPort (startCollector waits
// for it) and, with telemetryPort set, serves its own metrics there (scrape);
// the blocks are each test's own YAML, written from column 0 and indented here.
type collectorConfig struct {
	healthPort int
	// telemetryPort serves the collector's own metrics; 0 turns them off.
	telemetryPort int
	// extensions are further extension blocks ("file_storage:\n  directory: …"),
	// listed in service.extensions after health_check by their first key.
	extensions []string
	receivers  string
	processors string
	exporters  string
	// pipelines is the body of service.pipelines ("logs:\n  receivers: …").
	pipelines string
}

// yaml is the configuration's text.
func (c collectorConfig) yaml() string {
	var b strings.Builder
	names := []string{"health_check"}
	fmt.Fprintf(&b, "extensions:\n  health_check:\n    endpoint: 127.0.0.1:%d\n", c.healthPort)
	for _, ext := range c.extensions {
		b.WriteString(indent(ext, "  "))
		names = append(names, strings.TrimSpace(strings.SplitN(ext, ":", 2)[0]))
	}
	for _, s := range []struct{ key, body string }{{"receivers", c.receivers}, {"processors", c.processors}, {"exporters", c.exporters}} {
		b.WriteString(s.key + ":\n" + indent(s.body, "  "))
	}
	fmt.Fprintf(&b, "service:\n  extensions: [%s]\n  telemetry:\n    metrics:\n", strings.Join(names, ", "))
	if c.telemetryPort == 0 {
		b.WriteString("      level: none\n")
	} else {
		fmt.Fprintf(&b, "      readers:\n        - pull:\n            exporter:\n              prometheus:\n                host: 127.0.0.1\n                port: %d\n", c.telemetryPort)
	}
	b.WriteString("  pipelines:\n" + indent(c.pipelines, "    "))
	return b.String()
}

// write saves the configuration as dir/name and returns its path.
func (c collectorConfig) write(t *testing.T, dir, name string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	require.NoError(t, os.WriteFile(path, []byte(c.yaml()), 0o644))
	return path
}

// telemetryURL is the page the collector serves its own metrics on.
func (c collectorConfig) telemetryURL() string {
	return "http://127.0.0.1:" + itoa(c.telemetryPort) + "/metrics"
}

// otlpHTTPReceiver is an OTLP/HTTP receiver block on port.
func otlpHTTPReceiver(name string, port int) string {
	return fmt.Sprintf("%s:\n  protocols:\n    http:\n      endpoint: 127.0.0.1:%d\n", name, port)
}

// pipeline is one service pipeline block.
func pipeline(name, receivers, processors, exporters string) string {
	return fmt.Sprintf("%s:\n  receivers: [%s]\n  processors: [%s]\n  exporters: [%s]\n", name, receivers, processors, exporters)
}

// indent prefixes every non-empty line of block with prefix and ends it with
// a newline.
func indent(block, prefix string) string {
	var b strings.Builder
	for line := range strings.Lines(strings.TrimSuffix(block, "\n") + "\n") {
		if strings.TrimSpace(line) != "" {
			b.WriteString(prefix)
		}
		b.WriteString(line)
	}
	return b.String()
}

func TestCollectorConfigYAML(t *testing.T) {
	got := collectorConfig{
		healthPort:    1,
		telemetryPort: 2,
		extensions:    []string{"file_storage:\n  directory: /s"},
		receivers:     otlpHTTPReceiver("otlp", 3),
		processors:    "collectiveattr:\n    emit: on_job_end\n",
		exporters:     "debug: {}",
		pipelines:     pipeline("logs", "otlp", "collectiveattr", "debug"),
	}.yaml()
	want := `extensions:
  health_check:
    endpoint: 127.0.0.1:1
  file_storage:
    directory: /s
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:3
processors:
  collectiveattr:
      emit: on_job_end
exporters:
  debug: {}
service:
  extensions: [health_check, file_storage]
  telemetry:
    metrics:
      readers:
        - pull:
            exporter:
              prometheus:
                host: 127.0.0.1
                port: 2
  pipelines:
    logs:
      receivers: [otlp]
      processors: [collectiveattr]
      exporters: [debug]
`
	require.Equal(t, want, got)
	off := collectorConfig{healthPort: 1, pipelines: pipeline("logs", "otlp", "p", "e")}.yaml()
	require.Contains(t, off, "  telemetry:\n    metrics:\n      level: none\n  pipelines:\n")
}
