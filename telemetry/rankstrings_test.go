package telemetry

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"unsafe"
)

// rankRecord is a v3 sample record of rank (its JSON text: "rank":<rank>)
// with the given session id and host, also as JSON texts.
func rankRecord(session, host, rank string) string {
	return `{"schema_version":3,"session_id":` + session + `,"timestamp_ns":1,"event_type":"sample",` +
		`"collector":"c","sampling_interval_ms":100,"pid":1,"host":` + host + `,"job_id":"j","rank":` + rank +
		`,"world_size":100000,"device_id":0,"allocator_allocated_bytes":1,"allocator_reserved_bytes":2,` +
		`"allocator_active_bytes":null,"allocator_inactive_bytes":null,"allocator_change_bytes":0,` +
		`"device_used_bytes":3,"device_free_bytes":null,"device_total_bytes":null,"context":null,"metadata":{}}`
}

// TestStringsByRankAgainstTheOracle: the session ids and hosts the stream
// takes from its ranks' strings are what the oracle decodes, whatever the
// rank's earlier records carried: a rank's new process, two jobs' ranks of
// one number interleaved, escapes and non-ASCII text, repeated keys, ranks
// the table does not keep (absent, not an integer, past its size) and
// records that fail after the strings.
func TestStringsByRankAgainstTheOracle(t *testing.T) {
	lines := []string{
		rankRecord(`"a-rank1"`, `"h1"`, `1`),
		rankRecord(`"a-rank2"`, `"h1"`, `2`),
		rankRecord(`"a-rank1"`, `"h1"`, `1`),
		rankRecord(`"b-rank1"`, `"h9"`, `1`), // another job's rank 1
		rankRecord(`"a-rank1"`, `"h1"`, `1`),
		rankRecord(`"a-rank1"`, `"h2"`, `1`), // moved host
		rankRecord(`"a-rank1"`, `"h2"`, `1`),
		rankRecord(`"a-r\u0061nk1"`, `"h\u0032"`, `1`), // the same values escaped
		rankRecord(`"a-rank1"`, `"hé"`, `1`),
		rankRecord(`"a-rank1"`, "\"h\xff\"", `1`), // invalid UTF-8: replaced
		rankRecord(`"a-rank1"`, `"h1"`, `70000`),
		rankRecord(`"a-rank7"`, `"h7"`, `70000`),
		rankRecord(`"a-rank1"`, `"h1"`, `1.0`),
		rankRecord(`"a-rank1"`, `"h1","session_id":"c-rank1","host":"h3"`, `1`),
		rankRecord(`"a-rank1"`, `"h1"`, `1`),
		rankRecord(`"a-rank1"`, `"h1","session_id":null`, `1`),
		rankRecord(`"a-rank1"`, `"h1","host":"  "`, `1`),
		rankRecord(`"z-rank1"`, `"h1"`, `-1`),
		rankRecord(`"a-rank1"`, `"h1"`, `1`),
	}
	without := func(drop string) string {
		return strings.Replace(rankRecord(`"x-rank3"`, `"h3"`, `3`), drop, "", 1)
	}
	lines = append(lines, without(`"rank":3,`), without(`,"host":"h3"`), rankRecord(`"x-rank3"`, `"h3"`, `3`))
	// Each line alone (errors included), and the valid ones together.
	var valid []string
	for i, l := range lines {
		checkAgainstOracle(t, fmt.Sprintf("line %d", i), []byte(l+"\n"))
		if _, err := DecodeRecord([]byte(l)); err == nil {
			valid = append(valid, l)
		}
	}
	checkAgainstOracle(t, "all", []byte(strings.Join(valid, "\n")+"\n"))
	checkAgainstOracle(t, "all, twice", []byte(strings.Repeat(strings.Join(valid, "\n")+"\n", 2)))
}

// TestStreamSharesARanksStrings: the records of one rank carry one session
// id and one host string, whichever of the stream's decoders read them, so
// the window compares them by pointer.
func TestStreamSharesARanksStrings(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	const ranks = 64
	var in bytes.Buffer
	for in.Len() < 8*blockBytes {
		for r := range ranks {
			in.WriteString(rankRecord(fmt.Sprintf(`"job-rank%d"`, r), fmt.Sprintf(`"host-%d"`, r/8), fmt.Sprint(r)))
			in.WriteByte('\n')
		}
	}
	sessions, hosts := map[int64]*byte{}, map[int64]*byte{}
	records := 0
	err := Stream(&in, func(chunk []Event) error {
		for _, e := range chunk {
			records++
			if e.SessionID != fmt.Sprintf("job-rank%d", e.Rank) || e.Host != fmt.Sprintf("host-%d", e.Rank/8) {
				return fmt.Errorf("rank %d: session %q host %q", e.Rank, e.SessionID, e.Host)
			}
			for _, c := range []struct {
				seen map[int64]*byte
				s    string
			}{{sessions, e.SessionID}, {hosts, e.Host}} {
				p := unsafe.StringData(c.s)
				if was, ok := c.seen[e.Rank]; ok && was != p {
					return fmt.Errorf("rank %d: %q in two copies", e.Rank, c.s)
				}
				c.seen[e.Rank] = p
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if records < 8*ranks {
		t.Fatalf("%d records", records)
	}
}
