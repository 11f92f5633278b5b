package deploytest

import (
	"debug/buildinfo"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The images copy the binaries onto distroless/static, which has no libc:
// both distributions must be built with cgo off, as the Dockerfiles and the
// make targets build them.
func TestBinariesAreStatic(t *testing.T) {
	for name, bin := range map[string]func(testing.TB) string{"collectiveattr": collectorBinary, "agent": agentBinary} {
		t.Run(name, func(t *testing.T) {
			info, err := buildinfo.ReadFile(bin(t))
			require.NoError(t, err)
			settings := map[string]string{}
			for _, s := range info.Settings {
				settings[s.Key] = s.Value
			}
			assert.Equal(t, "0", settings["CGO_ENABLED"])
		})
	}
}
