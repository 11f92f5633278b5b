package inspector

import (
	"math"
	"strconv"
)

// RecordWriter formats ops as the plugin writes them (compact JSON in its key
// order, doubles with six decimals, NaN as "nan", '/' escaped as "\/"): the
// inverse of Parse, for the simulator and for tests. The verbose layout
// gets one kernel channel whose stop is the op's end.
type RecordWriter struct {
	// GitRev is metadata.git_rev ("unknown" when empty).
	GitRev string
	// Verbose writes event_trace_sn and event_trace_ts.
	Verbose bool
}

// Append appends op's record and a newline to dst. Times are written in
// µs, rounded down.
func (w RecordWriter) Append(dst []byte, op *Op) []byte {
	gitRev := w.GitRev
	if gitRev == "" {
		gitRev = "unknown"
	}
	version := op.Version
	if version == "" {
		version = "v4.0"
	}
	dst = append(dst, `{"header":{"id":`...)
	dst = appendString(dst, op.CommID)
	dst = append(dst, `,"comm_name":`...)
	dst = appendString(dst, op.CommName)
	dst = append(dst, `,"rank":`...)
	dst = strconv.AppendInt(dst, op.CommRank, 10)
	dst = append(dst, `,"n_ranks":`...)
	dst = strconv.AppendInt(dst, op.NRanks, 10)
	dst = append(dst, `,"nnodes":`...)
	dst = strconv.AppendInt(dst, op.NNodes, 10)
	dst = append(dst, `},"metadata":{"inspector_output_format_version":`...)
	dst = appendString(dst, version)
	dst = append(dst, `,"git_rev":`...)
	dst = appendString(dst, gitRev)
	dst = append(dst, `,"rec_mechanism":"nccl_profiler_interface","dump_timestamp_us":`...)
	dst = strconv.AppendInt(dst, op.DumpTimestampUs, 10)
	dst = append(dst, `,"hostname":`...)
	dst = appendString(dst, op.Host)
	dst = append(dst, `,"pid":`...)
	dst = strconv.AppendInt(dst, op.PID, 10)
	prefix := "coll"
	if op.Kind == P2P {
		prefix = "p2p"
	}
	dst = append(dst, `},"`...)
	dst = append(dst, prefix...)
	dst = append(dst, `_perf":{"`...)
	dst = append(dst, prefix...)
	dst = append(dst, `":`...)
	dst = appendString(dst, op.Name)
	key := func(k string) {
		dst = append(dst, `,"`...)
		dst = append(dst, prefix...)
		dst = append(dst, '_')
		dst = append(dst, k...)
		dst = append(dst, `":`...)
	}
	size := uint64(op.MessageBytes)
	if op.Flags&FlagWrappedSize != 0 {
		size = -size
	}
	if op.Kind == P2P {
		key("sn")
		dst = strconv.AppendInt(dst, op.P2PSeq, 10)
		key("peer")
		dst = strconv.AppendInt(dst, op.Peer, 10)
	} else {
		key("sn")
		dst = strconv.AppendInt(dst, op.Seq, 10)
	}
	key("msg_size_bytes")
	dst = strconv.AppendUint(dst, size, 10)
	key("exec_time_us")
	dst = strconv.AppendInt(dst, op.ExecTimeUs, 10)
	key("timing_source")
	source := op.TimingSource
	if source == "" {
		source = "kernel_gpu"
	}
	dst = appendString(dst, source)
	key("algobw_gbs")
	dst = appendDouble(dst, op.AlgoBWGBs)
	key("busbw_gbs")
	dst = appendDouble(dst, op.BusBWGBs)
	if w.Verbose {
		// Collectives number their events from 1, P2P ops from p2p_sn + 1.
		sn := int64(1)
		if op.Kind == P2P {
			sn = op.P2PSeq + 1
		}
		start, end := op.StartNs/1000, op.EndNs/1000
		dst = append(dst, `,"event_trace_sn":{"`...)
		dst = append(dst, prefix...)
		dst = append(dst, `_start_sn":`...)
		dst = strconv.AppendInt(dst, sn, 10)
		dst = append(dst, `,"`...)
		dst = append(dst, prefix...)
		dst = append(dst, `_stop_sn":`...)
		dst = strconv.AppendInt(dst, sn+1, 10)
		dst = append(dst, `,"kernel_events":[{"channel_id":0,"kernel_start_sn":`...)
		dst = strconv.AppendInt(dst, sn+2, 10)
		dst = append(dst, `,"kernel_stop_sn":`...)
		dst = strconv.AppendInt(dst, sn+4, 10)
		dst = append(dst, `,"kernel_record_sn":`...)
		dst = strconv.AppendInt(dst, sn+3, 10)
		dst = append(dst, `}]},"event_trace_ts":{"`...)
		dst = append(dst, prefix...)
		dst = append(dst, `_start_ts":`...)
		dst = strconv.AppendInt(dst, start, 10)
		dst = append(dst, `,"`...)
		dst = append(dst, prefix...)
		dst = append(dst, `_stop_ts":`...)
		dst = strconv.AppendInt(dst, start, 10)
		dst = append(dst, `,"kernel_events":[{"channel_id":0,"kernel_start_ts":`...)
		dst = strconv.AppendInt(dst, start, 10)
		dst = append(dst, `,"kernel_stop_ts":`...)
		dst = strconv.AppendInt(dst, end, 10)
		dst = append(dst, `,"kernel_record_ts":`...)
		dst = strconv.AppendInt(dst, end, 10)
		dst = append(dst, `}]}`...)
	}
	return append(dst, "}}\n"...)
}

// appendDouble is printf("%lf") with the plugin's "nan".
func appendDouble(dst []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(dst, `"nan"`...)
	case math.IsInf(v, 1):
		return append(dst, "inf"...)
	case math.IsInf(v, -1):
		return append(dst, "-inf"...)
	}
	return strconv.AppendFloat(dst, v, 'f', 6, 64)
}

// appendString writes s as the plugin's sanitiser does for printable
// text: '"', '\\' and '/' escaped, control characters as \uXXXX.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\' || c == '/':
			dst = append(dst, '\\', c)
		case c < 0x20:
			dst = append(dst, `\u00`...)
			dst = append(dst, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}
