package ingest

import (
	"errors"
	"math"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"

	"github.com/collectiveattr/collectiveattr/inspector"
)

// The per-operation metrics of NCCL Inspector's OTLP export
// (NCCL_INSPECTOR_OTEL_EXPORT=1 with NCCL_INSPECTOR_OTEL_VERBOSE=1): one
// gauge point per completed op, at the op's completion time, its value the
// GPU execution time in µs (docs/nccl-inspector.md §8). The op's bandwidth
// points carry the same attributes and are not read: one op, one marker.
const (
	inspectorCollExecMetric = "nccl_collective_exec_time_microseconds"
	inspectorP2PExecMetric  = "nccl_p2p_exec_time_microseconds"
)

// errNoInspectorOwner: a point's resource names neither its rank nor its
// process, so nothing joins it.
var errNoInspectorOwner = errors.New("its resource names neither the rank (job and rank attributes) nor the process (process.pid): add them through OTEL_RESOURCE_ATTRIBUTES in the training process's environment")

// convertInspectorMetrics reads the per-operation points of Inspector's
// OTLP export in md as Inspector ops and hands their markers to emit, as
// convertInspector does for its log records. A point joins its rank by the
// rank identity its resource carries (the processor's identity keys), else
// by (host, pid): the point's node attribute (the process's hostname, as
// in the plugin's files) and the resource's pid keys. Aggregated points
// (no coll_sn or p2p_sn) name no op and are not read.
func (c *inspectorConverter) convertInspectorMetrics(md pmetric.Metrics, emit func(*Record), skip func(Skip)) {
	nowNs := c.now().UnixNano()
	rms := md.ResourceMetrics()
	for i := 0; i < rms.Len(); i++ {
		res := rms.At(i).Resource().Attributes()
		var rid resourceOwner
		sms := rms.At(i).ScopeMetrics()
		for j := 0; j < sms.Len(); j++ {
			ms := sms.At(j).Metrics()
			for k := 0; k < ms.Len(); k++ {
				m := ms.At(k)
				kind := inspector.Collective
				switch m.Name() {
				case inspectorCollExecMetric:
				case inspectorP2PExecMetric:
					kind = inspector.P2P
				default:
					continue
				}
				if m.Type() != pmetric.MetricTypeGauge {
					continue
				}
				dps := m.Gauge().DataPoints()
				if !rid.read {
					rid = c.inspectorResourceOwner(res)
				}
				for l := 0; l < dps.Len(); l++ {
					c.convertInspectorPoint(&rid, dps.At(l), kind, nowNs, emit, skip)
				}
			}
		}
	}
}

// resourceOwner is what a resource says of the rank its points belong
// to: the rank itself, or the process's pid (-1: none).
type resourceOwner struct {
	read     bool
	owner    inspector.Owner
	hasOwner bool
	pid      int64
}

// inspectorResourceOwner reads a resource's rank identity (the
// processor's identity keys) and pid (nccl_inspector.pid_keys).
func (c *inspectorConverter) inspectorResourceOwner(res pcommon.Map) resourceOwner {
	ro := resourceOwner{read: true, pid: -1}
	var raw, none rawIdentity
	raw.scan(c.ids.keys, res)
	var id identity
	if resolve(&none, &raw, &id) == "" && id.hasRank && id.job != "" {
		ro.owner = inspector.Owner{JobID: id.job, Rank: id.rank, LocalRank: id.localRank, WorldSize: id.worldSize, DeviceID: id.devIndex}
		ro.hasOwner = true
	}
	for _, k := range c.cfg.PIDKeys {
		if v, found := res.Get(k); found {
			if pid, ok := intValue(v); ok && pid >= 0 {
				ro.pid = pid
			}
			break
		}
	}
	return ro
}

func (c *inspectorConverter) convertInspectorPoint(ro *resourceOwner, dp pmetric.NumberDataPoint, kind inspector.Kind, nowNs int64, emit func(*Record), skip func(Skip)) {
	problem, perOp := inspectorOpOfPoint(&c.op, dp.Attributes(), dp, kind)
	if !perOp {
		return // an aggregated bucket
	}
	if problem != "" {
		c.stats.Invalid++
		skip(Skip{Reason: SkipInvalidValue, Detail: "NCCL Inspector OTLP point: " + problem})
		return
	}
	op := &c.op
	op.PID = ro.pid
	c.stats.Read++
	if op.Flags&inspector.FlagInvalidOp != 0 {
		c.stats.InvalidOps++
	}
	if op.EndNs > c.futureLimit(nowNs) {
		c.stats.Invalid++
		skip(Skip{Reason: SkipInvalidValue, Detail: "NCCL Inspector OTLP point time is too far in the future"})
		return
	}
	if ro.hasOwner {
		c.emitInspector(op, ro.owner, emit)
		return
	}
	if op.PID < 0 {
		c.giveUpInspector(op, errNoInspectorOwner, skip)
		return
	}
	owner, err := c.joiner.Join(op.Host, op.PID)
	if err != nil {
		c.pending.Add(op, func(old *inspector.Op, err error) { c.giveUpInspector(old, err, skip) })
		return
	}
	c.emitInspector(op, owner, emit)
}

// inspectorOpOfPoint fills op from one per-operation point: the plugin's
// attributes (all strings) node, comm_id, comm_name, nranks, n_nodes and
// collective, coll_sn, coll_msg_size_bytes, or p2p_operation, p2p_sn,
// p2p_peer, p2p_msg_size_bytes; the value is the execution time in µs and
// the time the op's completion. The points carry no rank within the
// communicator (CommRank is -1), so a P2P op gets no transfer number; nor
// a pid (PID is -1: the resource's, if any, is the caller's to set).
// problem says why the point is unusable ("" when it is not); perOp is
// false for a point without a sequence number, an aggregated bucket.
func inspectorOpOfPoint(op *inspector.Op, attrs pcommon.Map, dp pmetric.NumberDataPoint, kind inspector.Kind) (problem string, perOp bool) {
	*op = inspector.Op{Kind: kind, CommRank: -1, PID: -1, Peer: -1}
	nameKey, snKey, sizeKey := "collective", "coll_sn", "coll_msg_size_bytes"
	if kind == inspector.P2P {
		nameKey, snKey, sizeKey = "p2p_operation", "p2p_sn", "p2p_msg_size_bytes"
	}
	sn, size := int64(-1), int64(-1)
	for k, v := range attrs.All() {
		if v.Type() != pcommon.ValueTypeStr {
			perOp = perOp || k == snKey
			continue
		}
		str := v.Str()
		switch k {
		case "node":
			op.Host = str
		case "comm_id":
			op.CommID = str
		case "comm_name":
			op.CommName = str
		case "nranks":
			op.NRanks, _ = parseDecimal(str)
		case "n_nodes":
			op.NNodes, _ = parseDecimal(str)
		case nameKey:
			op.Name = str
		case snKey:
			perOp = true
			if n, ok := parseDecimal(str); ok {
				sn = n
			}
		case sizeKey:
			if n, ok := parseDecimal(str); ok {
				size = n
			}
		case "p2p_peer":
			if kind == inspector.P2P {
				op.Peer, op.HasPeer = -1, true
				if n, ok := parseDecimal(str); ok {
					op.Peer = n
				}
			}
		case "version":
			op.Version = str
		case "algo_proto":
			op.Algo = str
		}
	}
	switch {
	case op.Host == "":
		return "the node attribute is missing", perOp
	case op.CommID == "" || op.CommID == "unknown":
		return "the comm_id attribute is missing", perOp
	case op.NRanks < 1:
		return "the nranks attribute is missing or not a positive integer", perOp
	case op.Name == "":
		return "the " + nameKey + " attribute is missing", perOp
	case sn < 0:
		return "the " + snKey + " attribute is not an integer >= 0", perOp
	case size < 0:
		return "the " + sizeKey + " attribute is not an integer >= 0", perOp
	case kind == inspector.P2P && (!op.HasPeer || op.Peer < 0 || op.Peer >= op.NRanks):
		return "the p2p_peer attribute is not a rank of the communicator", perOp
	}
	op.Op = inspector.OpName(op.Name)
	if op.Name == "Invalid" {
		op.Flags |= inspector.FlagInvalidOp
	}
	if kind == inspector.Collective {
		op.Seq, op.HasSeq = sn, true
	} else {
		op.P2PSeq = sn
	}
	op.MessageBytes = size
	var exec float64
	switch dp.ValueType() {
	case pmetric.NumberDataPointValueTypeDouble:
		exec = dp.DoubleValue()
	case pmetric.NumberDataPointValueTypeInt:
		exec = float64(dp.IntValue())
	default:
		return "the point has no value", perOp
	}
	end := int64(dp.Timestamp())
	if math.IsNaN(exec) || exec < 0 || end <= 0 || exec > float64(end)/1000 {
		return "the execution time or the point's time is out of range", perOp
	}
	op.ExecTimeUs = int64(exec)
	op.EndNs = end
	op.StartNs = end - op.ExecTimeUs*1000
	op.DumpTimestampUs = end / 1000
	op.TimingSource = "kernel_gpu"
	return "", perOp
}
