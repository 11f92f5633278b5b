package collectiveattrprocessor // import "github.com/collectiveattr/collectiveattr/collectiveattrprocessor"

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
)

// Every value the checkpointer stores (a job's checkpoint, the index) is
// sealed in an envelope, so that a value damaged on disk is refused instead
// of restored as different data:
//
//	magic "CAS\x00" | format version (1 byte) | flags (1 byte) | CRC-32C (4 bytes, little endian) | payload
//
// The CRC (Castagnoli) covers the version, the flags and the payload. The
// envelope is the storage boundary's, independent of the payload's own
// format (store.CheckpointVersion), which it carries unchanged.
const (
	envelopeMagic   = "CAS\x00"
	envelopeVersion = 1
	envelopeHeader  = len(envelopeMagic) + 1 + 1 + 4
	// envelopeCRCAt is where the CRC is; what follows it is the payload.
	envelopeCRCAt = len(envelopeMagic) + 2
)

// Envelope flags.
const (
	// flagFinal marks a finalised job's checkpoint kept until the
	// downstream accepted its results (at_least_once.go).
	flagFinal  byte = 1 << iota
	knownFlags      = flagFinal
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// errEnvelope wraps every reason a stored value is refused.
var errEnvelope = errors.New("damaged or unknown stored value")

// beginEnvelope appends room for an envelope's header to dst; the payload is
// appended after it, and sealEnvelope fills the header in. Building the
// payload in place spares a copy of checkpoints of megabytes.
func beginEnvelope(dst []byte) []byte {
	return append(dst, make([]byte, envelopeHeader)...)
}

// sealEnvelope fills in the header of value, which beginEnvelope started
// (its payload appended since), and returns it.
func sealEnvelope(value []byte, flags byte) []byte {
	copy(value, envelopeMagic)
	value[len(envelopeMagic)] = envelopeVersion
	value[len(envelopeMagic)+1] = flags
	crc := crc32.Update(0, castagnoli, value[len(envelopeMagic):envelopeCRCAt])
	crc = crc32.Update(crc, castagnoli, value[envelopeHeader:])
	binary.LittleEndian.PutUint32(value[envelopeCRCAt:], crc)
	return value
}

// seal returns payload in an envelope.
func seal(payload []byte, flags byte) []byte {
	return sealEnvelope(append(beginEnvelope(make([]byte, 0, envelopeHeader+len(payload))), payload...), flags)
}

// openEnvelope returns the payload and flags of a stored value. A value that
// starts with legacyPrefix instead of the envelope's magic was written by a
// build before envelopes: it is returned whole, unchecked, with legacy set
// (it is rewritten sealed at the next checkpoint). Anything else, and an
// envelope whose CRC, version or flags do not hold, is refused.
func openEnvelope(value []byte, legacyPrefix string) (payload []byte, flags byte, legacy bool, err error) {
	switch {
	case strings.HasPrefix(string(value[:min(len(value), len(envelopeMagic))]), envelopeMagic):
	case legacyPrefix != "" && strings.HasPrefix(string(value[:min(len(value), len(legacyPrefix))]), legacyPrefix):
		return value, 0, true, nil
	default:
		return nil, 0, false, fmt.Errorf("%w: no envelope", errEnvelope)
	}
	if len(value) < envelopeHeader {
		return nil, 0, false, fmt.Errorf("%w: %d bytes, shorter than an envelope's header", errEnvelope, len(value))
	}
	crc := crc32.Update(0, castagnoli, value[len(envelopeMagic):envelopeCRCAt])
	crc = crc32.Update(crc, castagnoli, value[envelopeHeader:])
	if want := binary.LittleEndian.Uint32(value[envelopeCRCAt:]); crc != want {
		return nil, 0, false, fmt.Errorf("%w: CRC-32C %08x, stored %08x (%d bytes)", errEnvelope, crc, want, len(value))
	}
	// Checked after the CRC: a version or flag this build does not know
	// in an intact value is a newer build's, not damage.
	if v := value[len(envelopeMagic)]; v != envelopeVersion {
		return nil, 0, false, fmt.Errorf("%w: envelope version %d; this build reads %d", errEnvelope, v, envelopeVersion)
	}
	flags = value[len(envelopeMagic)+1]
	if flags&^knownFlags != 0 {
		return nil, 0, false, fmt.Errorf("%w: envelope flags %#x; this build knows %#x", errEnvelope, flags, knownFlags)
	}
	return value[envelopeHeader:], flags, false, nil
}
