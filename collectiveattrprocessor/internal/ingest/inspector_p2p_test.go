package ingest

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/inspector"
)

// p2pLine is a verbose P2P record of comm rank commRank (2 ranks) of host/pid:
// a Send to the other rank or a Recv from it, at startUs.
func p2pLine(host string, pid, commRank int64, name string, startUs int64) string {
	op := inspector.Op{
		Host: host, PID: pid, CommID: "0xabc", CommName: "PP",
		CommRank: commRank, NRanks: 2, NNodes: 1,
		Kind: inspector.P2P, Name: name, Op: strings.ToLower(name), P2PSeq: startUs % 97,
		Peer: 1 - commRank, HasPeer: true,
		MessageBytes: 1 << 20, StartNs: startUs * 1000, EndNs: (startUs + 500) * 1000,
		ExecTimeUs: 400, TimingSource: "kernel_gpu", AlgoBWGBs: 1, BusBWGBs: 1,
		DumpTimestampUs: startUs + 1000,
	}
	return inspectorLine(op)
}

// markerIdentity is the collective identity an evidence marker record carries.
func markerIdentity(t *testing.T, r *Record) string {
	t.Helper()
	md := r.Event.MetadataMap()
	seq, ok := evidence.MetadataInt(md[evidence.KeySeq])
	require.True(t, ok, "no nccl.seq in %v", md)
	return fmt.Sprintf("%v#%d", md[evidence.KeyCommID], seq)
}

// The processor numbers each file's transfers as the CLI's reader does,
// whatever order the two files' records arrive in and whether a record waits
// for its rank's telemetry: the k-th send from comm rank 0 to 1 (rank 0's
// file) and the k-th recv at 1 from 0 (rank 1's file) carry one identity.
func TestInspectorP2PIdentityPerFile(t *testing.T) {
	const fileA, fileB = "/d/node01-pid100.log", "/d/node02-pid200.log"
	linesA := []string{ // comm rank 0, global rank 0
		p2pLine("node01", 100, 0, "Send", t0Us),
		p2pLine("node01", 100, 0, "Recv", t0Us+10000),
		p2pLine("node01", 100, 0, "Send", t0Us+20000),
	}
	linesB := []string{ // comm rank 1, global rank 1
		p2pLine("node02", 200, 1, "Recv", t0Us+200),
		p2pLine("node02", 200, 1, "Send", t0Us+9900),
		p2pLine("node02", 200, 1, "Recv", t0Us+20100),
	}
	want := map[string][]string{ // per file, in line order
		fileA: {"0xabc/0->1#0", "0xabc/1->0#0", "0xabc/0->1#1"},
		fileB: {"0xabc/0->1#0", "0xabc/1->0#0", "0xabc/0->1#1"},
	}

	c, _ := newTestConverter(Config{Inspector: InspectorConfig{Markers: inspector.EvidenceMarker, CommRanks: true}})
	c.Metrics(rankMetrics("job-a", 0, "node01", 100))(func(Read) bool { return true })
	var got collected
	// Rank 1's records come first, before its telemetry: they wait.
	got.collect(c.Logs(inspectorLogs(fileB, linesB[0], linesB[1])))
	got.collect(c.Logs(inspectorLogs(fileA, linesA[0])))
	c.Metrics(rankMetrics("job-a", 1, "node02", 200))(func(Read) bool { return true })
	got.collect(c.RetryInspector())
	got.collect(c.Logs(inspectorLogs(fileA, linesA[1], linesA[2])))
	got.collect(c.Logs(inspectorLogs(fileB, linesB[2])))
	require.Empty(t, got.skips)
	require.Len(t, got.records, 6)

	byRank := map[int64][]string{}
	for i := range got.records {
		r := &got.records[i]
		byRank[r.Rank] = append(byRank[r.Rank], fmt.Sprintf("%d:%s", r.TimestampNs/1000, markerIdentity(t, r)))
	}
	for rank, file := range []string{fileA, fileB} {
		lines := [][]string{linesA, linesB}[rank]
		var rankWant []string
		for i, id := range want[file] {
			op, err := inspector.Parse([]byte(lines[i]))
			require.NoError(t, err)
			rankWant = append(rankWant, fmt.Sprintf("%d:%s", op.StartNs/1000, id))
		}
		assert.ElementsMatch(t, rankWant, byRank[int64(rank)], "rank %d", rank)
	}

	// The CLI reads each file with its own Reader: the same identities.
	for _, file := range []string{fileA, fileB} {
		lines := linesA
		if file == fileB {
			lines = linesB
		}
		var rd inspector.Reader
		var ids []string
		require.NoError(t, rd.Read(bytes.NewReader([]byte(strings.Join(lines, "\n"))), func(op *inspector.Op) {
			ids = append(ids, fmt.Sprintf("%s#%d", op.PairCommID(), op.PairSeq))
		}))
		assert.Equal(t, want[file], ids, file)
	}
}
