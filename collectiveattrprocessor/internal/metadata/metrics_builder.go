package metadata

import (
	"time"

	"go.opentelemetry.io/collector/filter"
	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/processor"
)

// NewMetricsBuilder returns the builder of the processor's result metrics
// declared in metadata.yaml. mdatagen (v0.159) generates the MetricsBuilder
// and its test for every component class but writes this constructor only
// for receivers, scrapers and connectors; this is its template's body for a
// processor. The generated TestMetricsBuilder records every declared metric
// through it, so a metric added to metadata.yaml and not here fails there.
func NewMetricsBuilder(mbc MetricsBuilderConfig, settings processor.Settings, options ...MetricBuilderOption) *MetricsBuilder {
	mb := &MetricsBuilder{
		config:        mbc,
		startTime:     pcommon.NewTimestampFromTime(time.Now()),
		metricsBuffer: pmetric.NewMetrics(),
		buildInfo:     settings.BuildInfo,
		metricCollectiveAttributionAttributedBytes: newMetricCollectiveAttributionAttributedBytes(mbc.Metrics.CollectiveAttributionAttributedBytes),
		metricCollectiveAttributionConfidence:      newMetricCollectiveAttributionConfidence(mbc.Metrics.CollectiveAttributionConfidence),
		metricCollectiveAttributionIntervals:       newMetricCollectiveAttributionIntervals(mbc.Metrics.CollectiveAttributionIntervals),
		metricGpuMemoryDeviceLimit:                 newMetricGpuMemoryDeviceLimit(mbc.Metrics.GpuMemoryDeviceLimit),
		metricGpuMemoryDeviceUsedPeak:              newMetricGpuMemoryDeviceUsedPeak(mbc.Metrics.GpuMemoryDeviceUsedPeak),
		metricGpuMemoryHidden:                      newMetricGpuMemoryHidden(mbc.Metrics.GpuMemoryHidden),
		metricGpuMemoryHiddenPeak:                  newMetricGpuMemoryHiddenPeak(mbc.Metrics.GpuMemoryHiddenPeak),
		metricGpuMemoryHiddenUsage:                 newMetricGpuMemoryHiddenUsage(mbc.Metrics.GpuMemoryHiddenUsage),
		resourceAttributeIncludeFilter:             map[string]filter.Filter{},
		resourceAttributeExcludeFilter:             map[string]filter.Filter{},
	}
	for name, rac := range map[string]ResourceAttributeConfig{
		"service.name":    mbc.ResourceAttributes.ServiceName,
		"training.job.id": mbc.ResourceAttributes.TrainingJobID,
	} {
		if rac.MetricsInclude != nil {
			mb.resourceAttributeIncludeFilter[name] = filter.CreateFilter(rac.MetricsInclude)
		}
		if rac.MetricsExclude != nil {
			mb.resourceAttributeExcludeFilter[name] = filter.CreateFilter(rac.MetricsExclude)
		}
	}
	for _, op := range options {
		op.apply(mb)
	}
	return mb
}
