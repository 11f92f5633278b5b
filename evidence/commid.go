package evidence

// inspectorHexDigits is how many hex digits of a communicator hash NCCL
// Inspector writes: it prints "0x%lx" into a 17-byte buffer, so the hash
// loses its low digits past 14 (docs/nccl-inspector.md §2).
const inspectorHexDigits = 14

// CanonicalCommID is the form in which communicator ids from different
// sources compare: an NCCL communicator hash written as hex ("0x" and up to
// 16 digits, or exactly 16 digits without the prefix, in any case and with
// or without leading zeros) becomes "0x" and its lowercase digits without
// leading zeros, cut to the first 14 as Inspector writes it; any other id
// (a process-group name) is left as it is. Two sources that saw one
// communicator give the same canonical id, and the Inspector's own ids are
// already canonical.
func CanonicalCommID(id string) string {
	digits := id
	switch {
	case len(id) > 2 && id[0] == '0' && (id[1] == 'x' || id[1] == 'X'):
		digits = id[2:]
		if len(digits) > 16 {
			return id
		}
	case len(id) == 16:
	default:
		return id
	}
	canonical := digits[0] != '0' || len(digits) == 1
	for i := 0; i < len(digits); i++ {
		c := digits[i]
		switch {
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f':
		case 'A' <= c && c <= 'F':
			canonical = false
		default:
			return id
		}
	}
	if canonical && len(id) > len(digits) && id[1] == 'x' {
		return id[:min(len(id), 2+inspectorHexDigits)]
	}
	b := make([]byte, 0, 2+inspectorHexDigits)
	b = append(b, "0x"...)
	i := 0
	for i < len(digits)-1 && digits[i] == '0' {
		i++
	}
	for ; i < len(digits) && len(b) < 2+inspectorHexDigits; i++ {
		c := digits[i]
		if 'A' <= c && c <= 'F' {
			c += 'a' - 'A'
		}
		b = append(b, c)
	}
	return string(b)
}

// fullerCommID reports whether a, an id of the same communicator as b
// (equal canonical forms), says more of it: the longer text, and of two
// of one length the smaller, so that the id a collective shows does not
// depend on which source's marker came first.
func fullerCommID(a, b string) bool {
	if len(a) != len(b) {
		return len(a) > len(b)
	}
	return a < b
}
