package metadata

import "go.opentelemetry.io/collector/processor/processortest"

// settings are the processor settings mdatagen's TestMetricsBuilder builds
// its MetricsBuilder with: its template declares them only for receivers,
// scrapers and connectors.
var settings = processortest.NewNopSettings(processortest.NopType)
