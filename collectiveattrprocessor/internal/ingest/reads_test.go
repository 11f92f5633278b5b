package ingest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReadsStopEarly: a consumer that stops early gets nothing more, and
// the conversion still runs to its end: a second converter fed the same
// batches in full reads the same afterwards.
func TestReadsStopEarly(t *testing.T) {
	ld := readLogs(t, "stormlog.yaml")
	stopped, _ := newTestConverter(Config{})
	full, _ := newTestConverter(Config{})
	n := 0
	for range stopped.Logs(ld) {
		n++
		break
	}
	assert.Equal(t, 1, n)
	var whole collected
	whole.collect(full.Logs(ld))
	require.NotEmpty(t, whole.records)

	var again, againFull collected
	again.collect(stopped.Logs(ld))
	againFull.collect(full.Logs(ld))
	assert.Equal(t, againFull, again)
}
