package window

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestPhasePathJoinsKeyOnBothParts: a remembered join is reused only for
// the same two slices, lengths included.
func TestPhasePathJoinsKeyOnBothParts(t *testing.T) {
	var pp phaseParents
	outer, inner := []string{"train", "step"}, []string{"forward"}
	whole := pp.join(outer, inner)
	assert.Equal(t, []string{"train", "step", "forward"}, whole)
	assert.Same(t, &whole[0], &pp.join(outer, inner)[0], "the same parts give the same path")
	assert.Equal(t, []string{"train", "forward"}, pp.join(outer[:1], inner))
	assert.Equal(t, []string{"train", "step"}, pp.join(outer[:1], outer[1:]))
	both := []string{"forward", "backward"}
	assert.Equal(t, []string{"train", "step", "forward"}, pp.join(outer, both[:1]))
	assert.Equal(t, []string{"train", "step", "forward", "backward"}, pp.join(outer, both))
}
