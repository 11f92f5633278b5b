"""OTLP/HTTP JSON encoding of collective spans and memory gauges.

The shapes are those the collectiveattr processor reads (docs/processor-contract.md
§2-§3, docs/evidence-mode.md §2) and that cmd/gpujobsim sends: one resource
per rank with its identity, memory gauges in bytes whose points of one
collection share a timestamp, one span per collective with the collective's
identity in `nccl.*` attributes, and NCCL's accounting as the gauge
`nccl.comm.memory.total` with `nccl.comm.id` on each point.

Pure functions of records, defining the requests as dicts; the exporter sends
the same JSON through the encoders of otlpjson.py, which skip the dicts.
"""

import collections

SCOPE_NAME = "collectiveattr_torch"

# Memory gauge names (contract §3.1 defaults), in Sample field order.
METRIC_ALLOCATOR_RESERVED = "gpu.memory.allocator.reserved"
METRIC_ALLOCATOR_ALLOCATED = "gpu.memory.allocator.allocated"
METRIC_DEVICE_USED = "gpu.memory.device.used"
METRIC_DEVICE_FREE = "gpu.memory.device.free"
METRIC_DEVICE_TOTAL = "gpu.memory.device.total"
METRIC_COMM_MEMORY_TOTAL = "nccl.comm.memory.total"

# Collective identity keys (evidence-mode §2.1).
KEY_COMM_ID = "nccl.comm.id"
KEY_SEQ = "nccl.seq"
KEY_OP = "nccl.op"
KEY_MESSAGE_BYTES = "nccl.message_bytes"
KEY_COMM_NRANKS = "nccl.comm.nranks"
KEY_COMM_RANKS = "nccl.comm.ranks"
KEY_PEER = "nccl.peer"

SPAN_KIND_INTERNAL = 1

# A span lists its communicator's members (nccl.comm.ranks) only when it
# declares them (CollectiveSpan.declare): the processor keeps a communicator's
# declared membership for its later spans (docs/evidence-mode.md §2.1), so a
# 1 024-rank group costs its 20 KB list once per declaration, not on every span
# encoded on the exporter thread under the GIL. Every span carries the number.

# One memory reading: bytes or None for what the source does not know.
MemoryReading = collections.namedtuple(
    "MemoryReading", "reserved allocated device_used device_free device_total", defaults=(None,) * 5)

# One sampler tick: the reading, NCCL's accounting {comm id: bytes} (or None), the time.
Sample = collections.namedtuple("Sample", "time_ns reading accounting")

# One collective call as the wrapper recorded it. comm_id and seq are None for
# a call without a usable identity (a recv from any source); ranks is a tuple
# of global ranks; peer is the other global rank of a send/recv, else None;
# declare says whether the span lists the members (collectives.Recorder sets it
# on a communicator's first span and again every DECLARE_INTERVAL_NS).
CollectiveSpan = collections.namedtuple(
    "CollectiveSpan",
    "op backend start_ns end_ns comm_id seq message_bytes ranks peer async_op end_kind trace_id span_id parent_span_id"
    " declare", defaults=(True,))

GAUGES = (
    (METRIC_ALLOCATOR_RESERVED, "reserved", "Bytes reserved by the caching allocator (torch.cuda.memory_reserved)."),
    (METRIC_ALLOCATOR_ALLOCATED, "allocated", "Bytes held by live tensors (torch.cuda.memory_allocated)."),
    (METRIC_DEVICE_USED, "device_used", "Device memory in use by every process on the GPU."),
    (METRIC_DEVICE_FREE, "device_free", "Free device memory."),
    (METRIC_DEVICE_TOTAL, "device_total", "Device memory capacity."),
)
COMM_MEMORY_DESCRIPTION = "Device memory the NCCL communicator holds (ProcessGroupNCCL memory_stats)."


def any_value(v):
    """An OTLP JSON AnyValue. int64 values are decimal strings, as protojson writes them."""
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    if isinstance(v, float):
        return {"doubleValue": v}
    if isinstance(v, (list, tuple)):
        return {"arrayValue": {"values": [any_value(x) for x in v]}}
    return {"stringValue": str(v)}


def attributes(d):
    return [{"key": k, "value": any_value(v)} for k, v in d.items()]


def span_name(backend, op):
    """The span's name: "<backend>:<op>" as torch's profiler names the execution
    ("nccl:all_reduce", "gloo:broadcast")."""
    return "%s:%s" % (backend or "c10d", op)


def span_attributes(s):
    a = {KEY_OP: s.op}
    if s.comm_id is not None and s.seq is not None:
        a[KEY_COMM_ID] = s.comm_id
        a[KEY_SEQ] = s.seq
    a[KEY_MESSAGE_BYTES] = s.message_bytes
    if s.ranks:
        a[KEY_COMM_NRANKS] = len(s.ranks)
        if s.declare:
            a[KEY_COMM_RANKS] = list(s.ranks)
    if s.peer is not None:
        a[KEY_PEER] = s.peer
    a["torch.distributed.backend"] = s.backend or ""
    a["torch.distributed.async_op"] = bool(s.async_op)
    a["collectiveattr.span_end"] = s.end_kind
    return a


def span_json(s):
    out = {
        "traceId": "%032x" % s.trace_id,
        "spanId": "%016x" % s.span_id,
        "name": span_name(s.backend, s.op),
        "kind": SPAN_KIND_INTERNAL,
        "startTimeUnixNano": str(s.start_ns),
        "endTimeUnixNano": str(max(s.end_ns, s.start_ns)),
        "attributes": attributes(span_attributes(s)),
    }
    if s.parent_span_id:
        out["parentSpanId"] = "%016x" % s.parent_span_id
    return out


def traces_request(resource, spans, version=""):
    """An ExportTraceServiceRequest holding spans (CollectiveSpan) of one resource."""
    return {"resourceSpans": [{
        "resource": {"attributes": attributes(resource)},
        "scopeSpans": [{"scope": {"name": SCOPE_NAME, "version": version},
                        "spans": [span_json(s) for s in spans]}],
    }]}


def _gauge(name, description, points):
    return {"name": name, "description": description, "unit": "By", "gauge": {"dataPoints": points}}


def _point(time_ns, value, attrs=None):
    p = {"timeUnixNano": str(time_ns), "asInt": str(int(value))}
    if attrs:
        p["attributes"] = attributes(attrs)
    return p


def metrics_request(resource, samples, version=""):
    """An ExportMetricsServiceRequest holding samples (Sample) of one resource.

    Each field a reading knows becomes a point of its gauge at the sample's
    time, so the processor joins device-used and allocator-reserved points of
    one tick exactly (contract §3.1: points of one collection share a
    timestamp). A gauge no sample knows is left out.
    """
    metrics = []
    for name, field, description in GAUGES:
        points = [_point(s.time_ns, getattr(s.reading, field)) for s in samples
                  if s.reading is not None and getattr(s.reading, field) is not None]
        if points:
            metrics.append(_gauge(name, description, points))
    accounting = [_point(s.time_ns, b, {KEY_COMM_ID: comm}) for s in samples if s.accounting
                  for comm, b in sorted(s.accounting.items())]
    if accounting:
        metrics.append(_gauge(METRIC_COMM_MEMORY_TOTAL, COMM_MEMORY_DESCRIPTION, accounting))
    return {"resourceMetrics": [{
        "resource": {"attributes": attributes(resource)},
        "scopeMetrics": [{"scope": {"name": SCOPE_NAME, "version": version}, "metrics": metrics}],
    }]}
