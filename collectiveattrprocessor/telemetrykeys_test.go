package collectiveattrprocessor

import (
	"context"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component/componenttest"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/zap"
	"gopkg.in/yaml.v3"

	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/ingest"
	"github.com/collectiveattr/collectiveattr/collectiveattrprocessor/internal/metadata"
)

// telemetryAttributeKeys returns, by self-telemetry metric name (as
// exported, otelcol_ prefixed), the attribute keys metadata.yaml declares
// for it: an attribute's name_override, else its id. mdatagen v0.159.0
// generates no constants for these keys, so the processor writes them
// itself and this is what keeps the two the same.
func telemetryAttributeKeys(t *testing.T) map[string][]string {
	t.Helper()
	raw, err := os.ReadFile("metadata.yaml")
	require.NoError(t, err)
	var md struct {
		Attributes map[string]struct {
			NameOverride string `yaml:"name_override"`
		} `yaml:"attributes"`
		Telemetry struct {
			Metrics map[string]struct {
				Attributes []string `yaml:"attributes"`
			} `yaml:"metrics"`
		} `yaml:"telemetry"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &md))
	keys := map[string][]string{}
	for name, m := range md.Telemetry.Metrics {
		declared := []string{}
		for _, id := range m.Attributes {
			attr, ok := md.Attributes[id]
			require.True(t, ok, "%s: attribute %s is not declared", name, id)
			key := id
			if attr.NameOverride != "" {
				key = attr.NameOverride
			}
			declared = append(declared, key)
		}
		slices.Sort(declared)
		keys["otelcol_"+name] = declared
	}
	return keys
}

// TestTelemetryAttributeKeysAreMetadatas records every self-telemetry
// counter with every attribute value the processor has for it, and checks
// that each point carries exactly the attribute keys metadata.yaml declares
// for its instrument, so that a key renamed in the code or in metadata.yaml
// fails here instead of reaching dashboards as a new series.
func TestTelemetryAttributeKeysAreMetadatas(t *testing.T) {
	ctx := context.Background()
	tel := componenttest.NewTelemetry()
	t.Cleanup(func() { require.NoError(t, tel.Shutdown(ctx)) })
	tb, err := metadata.NewTelemetryBuilder(tel.NewTelemetrySettings())
	require.NoError(t, err)
	st, err := newSelfTelemetry(tb)
	require.NoError(t, err)

	for s := range numSignals {
		b := batchCounts{converted: 1}
		for i := range b.skipped {
			b.skipped[i] = 1
		}
		for i := range b.evicted {
			b.evicted[i] = 1
		}
		st.addBatch(ctx, s, &b)
		for f := range numEmitFailures {
			st.emitFailed(s, f, 1)
		}
	}
	st.addLedgerFlags(ctx, ledgerFlagCounts{1, 1})
	// An unknown classification takes the path that builds its attribute
	// set when counted.
	for _, c := range append(emittedClassifications(), "unlisted") {
		st.resultEmitted(ctx, c)
	}
	st.inspector.publish(tb, ingest.InspectorStats{Read: 1, Joined: 1, InvalidOps: 1, WrappedSizes: 1, NaNBandwidths: 1})
	cp := &checkpointer{
		failures: tb.ProcessorCollectiveattrCheckpointFailures,
		faults:   tb.ProcessorCollectiveattrStorageFaults,
		logger:   zap.NewNop(),
	}
	for _, op := range metadata.MapAttributeCheckpointOperation {
		cp.failed(ctx, op, "restore", "dropped", nil)
	}
	for _, f := range metadata.MapAttributeStorageFault {
		cp.count(ctx, f)
	}

	declared := telemetryAttributeKeys(t)
	var rm metricdata.ResourceMetrics
	require.NoError(t, tel.Reader.Collect(ctx, &rm))
	seen := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			want, ok := declared[m.Name]
			if !assert.True(t, ok, "%s is not in metadata.yaml", m.Name) {
				continue
			}
			sum, ok := m.Data.(metricdata.Sum[int64])
			if !ok {
				continue
			}
			for _, dp := range sum.DataPoints {
				var got []string
				for _, kv := range dp.Attributes.ToSlice() {
					got = append(got, string(kv.Key))
				}
				slices.Sort(got)
				assert.Equal(t, want, got, m.Name)
			}
			seen[m.Name] = len(sum.DataPoints) > 0
		}
	}
	// Every instrument declared with attributes was recorded above, so
	// none of their keys goes unchecked.
	for name, keys := range declared {
		if len(keys) > 0 {
			assert.True(t, seen[name], "%s has attributes but was not recorded by this test", name)
		}
	}
}
