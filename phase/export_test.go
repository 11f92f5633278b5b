package phase

// Hooks for the external tests (package phase_test), which simulate jobs
// with cmd/gpujobsim/jobsim: jobsim imports attribution, which imports
// phase, so those tests cannot be in package phase.

// OracleNewIndex is NewIndex as of 8c9c5f4 (oracle_index_test.go).
var OracleNewIndex = oracleNewIndex

// GroupCount is the number of (session, rank) groups of ix.
func GroupCount(ix *Index) int { return len(ix.groups) }

// Groups returns ix's groups, for comparing two indexes.
func Groups(ix *Index) any { return ix.groups }
