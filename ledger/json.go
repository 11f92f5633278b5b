package ledger

import (
	"encoding/json"
	"strconv"
)

// AppendRowJSON appends r as one JSON object (no newline) with the keys of
// `collectiveattr ledger` (docs/cli.md): rank, timestamp_ns,
// device_used_bytes, allocator_reserved_bytes (null when the sample has
// none), hidden_bytes, nccl_bytes, nccl_source, context_bytes,
// unexplained_bytes, then nccl_by_comm (communicator id → bytes) when some
// communicator's part is known and flags (their names) when any is set.
func AppendRowJSON(dst []byte, r *Row) []byte {
	dst = append(dst, `{"rank":`...)
	dst = strconv.AppendInt(dst, r.Rank, 10)
	dst = append(dst, `,"timestamp_ns":`...)
	dst = strconv.AppendInt(dst, r.TimestampNs, 10)
	dst = append(dst, `,"device_used_bytes":`...)
	dst = strconv.AppendInt(dst, r.DeviceUsedBytes, 10)
	dst = append(dst, `,"allocator_reserved_bytes":`...)
	if r.Flags&FlagNoReserved != 0 {
		dst = append(dst, "null"...)
	} else {
		dst = strconv.AppendInt(dst, r.AllocatorReservedBytes, 10)
	}
	dst = append(dst, `,"hidden_bytes":`...)
	dst = strconv.AppendInt(dst, r.HiddenBytes, 10)
	dst = append(dst, `,"nccl_bytes":`...)
	dst = strconv.AppendInt(dst, r.NCCLBytes, 10)
	dst = append(dst, `,"nccl_source":"`...)
	dst = append(dst, r.NCCLSource.String()...)
	dst = append(dst, `","context_bytes":`...)
	dst = strconv.AppendInt(dst, r.ContextBytes, 10)
	dst = append(dst, `,"unexplained_bytes":`...)
	dst = strconv.AppendInt(dst, r.UnexplainedBytes, 10)
	if len(r.ByComm) > 0 {
		dst = append(dst, `,"nccl_by_comm":{`...)
		for i, c := range r.ByComm {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, c.CommID)
			dst = append(dst, ':')
			dst = strconv.AppendInt(dst, c.Bytes, 10)
		}
		dst = append(dst, '}')
	}
	if r.Flags != 0 {
		dst = append(dst, `,"flags":[`...)
		first := true
		for bit, name := range FlagNames {
			if r.Flags&(1<<bit) == 0 {
				continue
			}
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = appendString(dst, name)
		}
		dst = append(dst, ']')
	}
	return append(dst, '}')
}

// appendString appends s as a JSON string: plain ASCII directly, anything
// else through encoding/json.
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s)
			return append(dst, q...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
