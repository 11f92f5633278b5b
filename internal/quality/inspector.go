package quality

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/collectiveattr/collectiveattr/cmd/gpujobsim/jobsim"
	"github.com/collectiveattr/collectiveattr/evidence"
	"github.com/collectiveattr/collectiveattr/inspector"
	"github.com/collectiveattr/collectiveattr/telemetry"
)

// InspectorLayout says how a case's markers are rewritten as NCCL Inspector
// records before a mode sees them (the path `--nccl-inspector` takes).
type InspectorLayout struct {
	// Verbose writes the verbose layout (op start and last kernel stop);
	// otherwise the default layout, whose only times are the record's write
	// time and the op's execution time.
	Verbose bool
	// DumpInterval is the plugin's dump-thread sleep
	// (NCCL_INSPECTOR_DUMP_THREAD_INTERVAL_MICROSECONDS): a record is
	// written at the first dump after its op ends, each process dumping on
	// its own phase, so it is late by up to this much. 0: written as the op
	// ends.
	DumpInterval time.Duration
	// Seed draws each process's dump phase.
	Seed uint64
	// LostRecvs drops the first LostRecvs Recv records of each process's
	// file, as a reader that resumed the file at a saved offset, or a ring
	// that overwrote them, would: the per-file counts then pair the k-th
	// send with the (k+LostRecvs)-th recv, a wrong transfer.
	LostRecvs int
}

// ViaInspector wraps mode: every marker that carries a collective identity
// (nccl.comm.id) is removed from the events, written as an Inspector record
// of its rank's process (host, pid) in the layout, read back with the
// Inspector parser, joined to its rank by (host, pid) and converted with
// inspector.EvidenceMarker, as `collectiveattr attribute --nccl-inspector`
// does. What the Inspector cannot carry is lost on the way: sub-µs times,
// the sequence number of point-to-point ops (p2p_sn does not line up across
// ranks; the parser numbers each direction's transfers per file instead, as
// inspector.Op.PairSeq), and in the default layout the op's start.
func ViaInspector(mode Mode, layout InspectorLayout) Mode {
	return func(events []telemetry.Event, preset string) ([]jobsim.QualityResult, error) {
		converted, err := InspectorEvents(events, layout)
		if err != nil {
			return nil, err
		}
		return mode(converted, preset)
	}
}

type commMarker struct {
	event int
	comm  string
}

// InspectorEvents is the conversion of ViaInspector.
func InspectorEvents(events []telemetry.Event, layout InspectorLayout) ([]telemetry.Event, error) {
	// Comm-local ranks: a communicator's members in global rank order, as a
	// group communicator built from sorted ranks numbers them.
	members := map[string][]int64{}
	var markers []commMarker
	kept := make([]telemetry.Event, 0, len(events))
	joiner := inspector.NewJoiner(0, 0, func() time.Time { return time.Time{} })
	for i := range events {
		e := &events[i]
		v, _ := e.MetadataLookup(evidence.KeyCommID)
		comm, ok := v.AsString()
		if !ok || e.EventType == evidence.AccountingEventType {
			kept = append(kept, *e)
			joiner.LearnEvent(e)
			continue
		}
		markers = append(markers, commMarker{event: i, comm: comm})
		members[comm] = append(members[comm], e.Rank)
	}
	for c, ranks := range members {
		slices.Sort(ranks)
		members[c] = slices.Compact(ranks)
	}

	rng := rand.New(rand.NewPCG(layout.Seed, 0x1175))
	phase := map[inspector.Process]int64{}
	logs := map[inspector.Process][]byte{}
	lostRecvs := map[inspector.Process]int{}
	w := inspector.RecordWriter{Verbose: layout.Verbose}
	for _, m := range markers {
		e := &events[m.event]
		op, err := inspectorOp(e, m.comm, members[m.comm])
		if err != nil {
			return nil, fmt.Errorf("marker of rank %d at %d: %w", e.Rank, e.TimestampNs, err)
		}
		p := inspector.Process{Host: e.Host, PID: e.PID}
		if _, ok := phase[p]; !ok && layout.DumpInterval > 0 {
			phase[p] = rng.Int64N(int64(layout.DumpInterval))
		}
		op.DumpTimestampUs = nextDump(op.EndNs, phase[p], int64(layout.DumpInterval)) / 1000
		if op.Op == "recv" && lostRecvs[p] < layout.LostRecvs {
			lostRecvs[p]++
			continue
		}
		logs[p] = w.Append(logs[p], &op)
	}

	var comms inspector.Members
	var joined []inspector.Joined
	procs := make([]inspector.Process, 0, len(logs))
	for p := range logs {
		procs = append(procs, p)
	}
	slices.SortFunc(procs, func(a, b inspector.Process) int {
		return cmp.Or(cmp.Compare(a.Host, b.Host), cmp.Compare(a.PID, b.PID))
	})
	for _, p := range procs {
		var rd inspector.Reader
		var joinErr error
		err := rd.Read(bytes.NewReader(logs[p]), func(op *inspector.Op) {
			owner, err := joiner.Join(op.Host, op.PID)
			if err != nil {
				joinErr = cmp.Or(joinErr, err)
				return
			}
			o := *op
			joined = append(joined, inspector.Joined{Op: &o, Owner: owner})
			comms.Learn(owner.Job(), &o, owner.Rank)
		})
		if err = cmp.Or(err, joinErr); err == nil && rd.Stats.Malformed > 0 {
			err = rd.FirstError
		}
		if err != nil {
			return nil, fmt.Errorf("inspector log of %s: %w", p, err)
		}
	}
	for i := range joined {
		j := &joined[i]
		j.CommRanks = comms.Ranks(j.Owner.Job(), j.Op)
		kept = inspector.EvidenceMarker(kept, j)
	}
	return kept, nil
}

// nextDump is the first dump at or after t of a process dumping every
// interval ns from phase (t itself when interval is 0).
func nextDump(t, phase, interval int64) int64 {
	if interval <= 0 {
		return t
	}
	k := (t - phase + interval - 1) / interval
	return phase + k*interval
}

var inspectorNames = map[string]string{
	"all_reduce": "AllReduce", "all_gather": "AllGather", "reduce_scatter": "ReduceScatter",
	"broadcast": "Broadcast", "reduce": "Reduce", "send": "Send", "recv": "Recv",
}

// inspectorOp is the op a marker event describes, on its rank's process.
func inspectorOp(e *telemetry.Event, comm string, ranks []int64) (inspector.Op, error) {
	md := e.MetadataMap()
	opName, _ := md[evidence.KeyOp].(string)
	name, ok := inspectorNames[opName]
	if !ok {
		return inspector.Op{}, fmt.Errorf("op %q has no Inspector name", opName)
	}
	num := func(key string) int64 {
		switch v := md[key].(type) {
		case json.Number:
			n, _ := v.Int64()
			return n
		case int:
			return int64(v)
		case int64:
			return v
		case float64:
			return int64(v)
		}
		return 0
	}
	local := func(global int64) (int64, error) {
		i, ok := slices.BinarySearch(ranks, global)
		if !ok {
			return 0, errors.New("rank is no member of its communicator")
		}
		return int64(i), nil
	}
	commRank, err := local(e.Rank)
	if err != nil {
		return inspector.Op{}, err
	}
	dur := num(evidence.KeyDurationNs)
	// The record holds µs; an op's interval is rounded outwards to them.
	startUs := e.TimestampNs / 1000
	endUs := (e.TimestampNs + dur + 999) / 1000
	op := inspector.Op{
		Host: e.Host, PID: e.PID, CommID: comm, CommName: "quality",
		CommRank: commRank, NRanks: int64(len(ranks)), NNodes: 1,
		Kind: inspector.Collective, Name: name, Op: opName,
		MessageBytes: num(evidence.KeyMessageBytes),
		StartNs:      startUs * 1000, EndNs: endUs * 1000,
		ExecTimeUs: endUs - startUs, TimingSource: "kernel_gpu", Version: "v4.0",
	}
	if opName == "send" || opName == "recv" {
		op.Kind = inspector.P2P
		peer, err := local(num(evidence.KeyPeer))
		if err != nil {
			return inspector.Op{}, err
		}
		op.Peer, op.HasPeer = peer, true
		op.P2PSeq = num(evidence.KeySeq)
	} else {
		op.Seq, op.HasSeq = num(evidence.KeySeq), true
	}
	return op, nil
}
