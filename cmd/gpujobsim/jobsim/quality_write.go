package jobsim

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path/filepath"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

// WriteEvents writes events as stormlog TelemetryEvent JSON Lines.
func WriteEvents(w io.Writer, events []telemetry.Event) error {
	bw := bufio.NewWriterSize(w, 1<<20)
	var line []byte
	for i := range events {
		line = append(telemetry.AppendJSON(line[:0], &events[i]), '\n')
		if _, err := bw.Write(line); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// WriteQualityCase writes c as dir/events.jsonl and dir/truth.json, the layout of the
// shared quality benchmark's cases.
func WriteQualityCase(dir string, c *QualityCase) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		return err
	}
	if err := WriteEvents(f, c.Events); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	b, err := json.MarshalIndent(c.Truth, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "truth.json"), append(b, '\n'), 0o644)
}
