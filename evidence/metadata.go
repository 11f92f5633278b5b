package evidence

import (
	"encoding/json"

	"github.com/collectiveattr/collectiveattr/telemetry"
)

// recordMetadata is what the record readers (MetadataMarker, AccountingOf)
// read of a record's metadata: the value of each key they use (the zero
// MetadataValue, as a missing key, reads as nothing). One walk over the
// members reads them all; a key given twice keeps its last value, as a
// decoded map does.
type recordMetadata struct {
	comm, seq, total, duration, approximate, cumem telemetry.MetadataValue
	collective                                     collectiveMetadata
}

// collectiveMetadata is what CollectiveTable reads of a marker's metadata.
type collectiveMetadata struct {
	op, messageBytes, nRanks, ranks telemetry.MetadataValue
}

func readRecordMetadata(e *telemetry.Event) recordMetadata {
	var md recordMetadata
	if !e.HasMetadata() {
		return md
	}
	for k, v := range e.MetadataMembers() {
		switch k {
		case KeyCommID:
			md.comm = v
		case KeySeq:
			md.seq = v
		case KeyMemoryTotal:
			md.total = v
		case KeyDurationNs:
			md.duration = v
		case KeyTimeApproximate:
			md.approximate = v
		case KeyCumemEnabled:
			md.cumem = v
		case KeyOp:
			md.collective.op = v
		case KeyMessageBytes:
			md.collective.messageBytes = v
		case KeyCommNRanks:
			md.collective.nRanks = v
		case KeyCommRanks:
			md.collective.ranks = v
		}
	}
	return md
}

func collectiveMetadataOf(md map[string]any) collectiveMetadata {
	return collectiveMetadata{
		op:           telemetry.MetadataValueOf(md[KeyOp]),
		messageBytes: telemetry.MetadataValueOf(md[KeyMessageBytes]),
		nRanks:       telemetry.MetadataValueOf(md[KeyCommNRanks]),
		ranks:        telemetry.MetadataValueOf(md[KeyCommRanks]),
	}
}

// metadataValueInt is MetadataInt of a metadata value.
func metadataValueInt(v telemetry.MetadataValue) (int64, bool) {
	if n, ok := v.AsNumber(); ok {
		return numberInt(n)
	}
	if b, ok := v.Built(); ok {
		return MetadataInt(b)
	}
	return 0, false
}

func numberInt(x json.Number) (int64, bool) {
	if i, err := x.Int64(); err == nil {
		return i, true
	}
	if f, err := x.Float64(); err == nil {
		return floatInt(f)
	}
	return 0, false
}
