package markers

import "strings"

// torchOps maps the collective names PyTorch's c10d writes (record_param_comms'
// "Collective name", Flight Recorder's profiling_name after "nccl:") to the
// operation names of collective identity.
var torchOps = map[string]string{
	"allreduce":                        "all_reduce",
	"all_reduce":                       "all_reduce",
	"allreduce_coalesced":              "all_reduce",
	"all_reduce_coalesced":             "all_reduce",
	"allgather":                        "all_gather",
	"all_gather":                       "all_gather",
	"_allgather_base":                  "all_gather",
	"all_gather_base":                  "all_gather",
	"allgather_coalesced":              "all_gather",
	"allgather_into_tensor_coalesced":  "all_gather",
	"all_gather_into_tensor_coalesced": "all_gather",
	"reduce_scatter":                   "reduce_scatter",
	"_reduce_scatter_base":             "reduce_scatter",
	"reduce_scatter_base":              "reduce_scatter",
	"reduce_scatter_tensor_coalesced":  "reduce_scatter",
	"broadcast":                        "broadcast",
	"_broadcast_oop":                   "broadcast",
	"reduce":                           "reduce",
	"_reduce_oop":                      "reduce",
	"all_to_all":                       "all_to_all",
	"alltoall":                         "all_to_all",
	"alltoall_base":                    "all_to_all",
	"all_to_allv":                      "all_to_all",
	"barrier":                          "barrier",
	"send":                             "send",
	"recv":                             "recv",
	"recvAnySource":                    "recv",
	"gather":                           "gather",
	"scatter":                          "scatter",
}

// OpName normalises a PyTorch collective name: the names c10d writes map
// to all_reduce, all_gather, reduce_scatter, broadcast, reduce, all_to_all,
// barrier, send, recv, gather and scatter; a Flight Recorder profiling
// name's backend prefix ("nccl:") and P2P suffix (" 0->1") are dropped;
// anything else is lower-cased as it is.
func OpName(name string) string {
	if i := strings.IndexByte(name, ':'); i >= 0 {
		name = name[i+1:]
	}
	if i := strings.IndexByte(name, ' '); i >= 0 {
		name = name[:i]
	}
	if op, ok := torchOps[name]; ok {
		return op
	}
	return strings.ToLower(name)
}

// IsP2P reports whether a normalised op is one side of a point-to-point
// transfer.
func IsP2P(op string) bool { return op == "send" || op == "recv" }

// ParseRanks reads a process group's global ranks as PyTorch writes them,
// a string such as "[0, 1, 2, 3]". A list that record_param_comms cut
// short ("[0, 1, ..., 63]", past 30 ranks) or anything unreadable gives
// nil: the ranks are unknown.
func ParseRanks(s string) []int64 {
	s = strings.TrimSpace(s)
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
		return nil
	}
	body := strings.TrimSpace(s[1 : len(s)-1])
	if body == "" {
		return nil
	}
	var ranks []int64
	for part := range strings.SplitSeq(body, ",") {
		part = strings.TrimSpace(part)
		var v int64
		if part == "" || len(part) > 18 {
			return nil
		}
		for i := 0; i < len(part); i++ {
			c := part[i]
			if c < '0' || c > '9' {
				return nil
			}
			v = v*10 + int64(c-'0')
		}
		ranks = append(ranks, v)
	}
	return ranks
}

// dtypeSizes are the element sizes of the dtype names c10 writes
// (c10::toString(ScalarType)).
var dtypeSizes = map[string]int64{
	"Float": 4, "Double": 8, "Half": 2, "BFloat16": 2, "Int": 4, "Long": 8, "Short": 2,
	"Char": 1, "Byte": 1, "Bool": 1, "ComplexHalf": 4, "ComplexFloat": 8, "ComplexDouble": 16,
	"Float8_e4m3fn": 1, "Float8_e5m2": 1, "Float8_e4m3fnuz": 1, "Float8_e5m2fnuz": 1,
	"UInt16": 2, "UInt32": 4, "UInt64": 8,
}

// DTypeSize is the size in bytes of one element of a c10 dtype name, 0
// when unknown.
func DTypeSize(dtype string) int64 { return dtypeSizes[dtype] }
