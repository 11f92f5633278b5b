package window

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/collectiveattr/collectiveattr/evidence"
)

// TestCollectivesKeyedByOp: NCCL numbers each collective type of a
// communicator on its own counter, so an all_reduce and an all_gather of one
// communicator with the same seq are two collectives, while a send and its
// peer's recv are one, as evidence.CollectiveTable keys them.
func TestCollectivesKeyedByOp(t *testing.T) {
	j := &Job{}
	md := func(op string) map[string]any {
		return map[string]any{evidence.KeyCommID: "c", evidence.KeySeq: json.Number("7"), evidence.KeyOp: op}
	}
	ar := j.table().Intern("c", 7, md("all_reduce"))
	ag := j.table().Intern("c", 7, md("all_gather"))
	send := j.table().Intern("c", 7, md("send"))
	recv := j.table().Intern("c", 7, md("recv"))
	assert.NotEqual(t, ar, ag, "all_reduce and all_gather of one seq are two collectives")
	assert.Equal(t, send, recv, "a send and its recv are one")
	assert.Equal(t, ar, j.table().Intern("c", 7, md("all_reduce")))
}
