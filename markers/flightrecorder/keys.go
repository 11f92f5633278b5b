package flightrecorder

// entryKey names the members of an entry that _dump_nccl_trace_json
// writes: those the reader reads and those it skips. Entries repeat their
// keys in one order, so the reader expects each key to be the one that
// followed the previous key last time (the stormlog decoder does the same).
type entryKey uint8

const (
	keyOther entryKey = iota // a key not listed here; also "before the first key"
	keyProcessGroup
	keyCollectiveSeq
	keyProfilingName
	keyCreated
	keyStarted
	keyCompleted
	keyDuration
	keyInputSizes
	keyOutputSizes
	keyInputDtypes
	keyState
	keyIsP2P
	// Written by the recorder, not read.
	keyRecordID
	keyPgID
	keyThreadID
	keyThreadName
	keyP2PSeq
	keyOpID
	keyOutputDtypes
	keyRetired
	keyTimeout
	keyFrames
	numEntryKeys
)

// quotedEntryKeys are the keys as they appear in the dump, quotes included.
var quotedEntryKeys = [numEntryKeys]string{
	keyProcessGroup:  `"process_group"`,
	keyCollectiveSeq: `"collective_seq_id"`,
	keyProfilingName: `"profiling_name"`,
	keyCreated:       `"time_created_ns"`,
	keyStarted:       `"time_discovered_started_ns"`,
	keyCompleted:     `"time_discovered_completed_ns"`,
	keyDuration:      `"duration_ms"`,
	keyInputSizes:    `"input_sizes"`,
	keyOutputSizes:   `"output_sizes"`,
	keyInputDtypes:   `"input_dtypes"`,
	keyState:         `"state"`,
	keyIsP2P:         `"is_p2p"`,
	keyRecordID:      `"record_id"`,
	keyPgID:          `"pg_id"`,
	keyThreadID:      `"thread_id"`,
	keyThreadName:    `"thread_name"`,
	keyP2PSeq:        `"p2p_seq_id"`,
	keyOpID:          `"op_id"`,
	keyOutputDtypes:  `"output_dtypes"`,
	keyRetired:       `"retired"`,
	keyTimeout:       `"timeout_ms"`,
	keyFrames:        `"frames"`,
}

// keyColon and commaKeyColon are each key as json.dumps writes it after an
// object's opening brace (`"key": `) and after a member (`, "key": `).
var keyColon, commaKeyColon = func() (kc, ckc [numEntryKeys]string) {
	for k := keyOther + 1; k < numEntryKeys; k++ {
		kc[k] = quotedEntryKeys[k] + ": "
		ckc[k] = ", " + kc[k]
	}
	return kc, ckc
}()

// entryKeys finds a decoded key's entryKey.
var entryKeys = func() map[string]entryKey {
	m := make(map[string]entryKey, numEntryKeys)
	for k := keyOther + 1; k < numEntryKeys; k++ {
		q := quotedEntryKeys[k]
		m[q[1:len(q)-1]] = k
	}
	return m
}()

// lookupEntryKey is key's entryKey, keyOther when it is none.
func lookupEntryKey(key []byte) entryKey {
	return entryKeys[string(key)] // absent: the zero value, keyOther
}
