"""OTLP/HTTP JSON request bodies, encoded cheaply on the exporter thread.

otlp.traces_request / otlp.metrics_request define the requests as dicts; the
encoders here write the same JSON text without building those dicts, because
the exporter thread holds the GIL while it encodes and so takes that time from
the training loop. The resource and scope blocks are encoded once per
encoder; the parts of a span that repeat from call to call (name, op,
communicator, members, backend, ...) are encoded once per distinct
combination into a %-format template, so that a span costs one string
formatting of its times, ids, sequence number and size.
"""

import json

from . import otlp

# Distinct span shapes kept; a job has a handful per communicator and op.
# Past this (a job creating groups without end) the cache starts afresh.
MAX_TEMPLATES = 4096

_dumps = json.JSONEncoder(separators=(",", ":")).encode


def _fmt(obj):
    """obj's compact JSON with '%' escaped, for use inside a %-format template."""
    return _dumps(obj).replace("%", "%%")


def _attr(key, value):
    return _fmt({"key": key, "value": otlp.any_value(value)})


def _head(kind, resource, version):
    """'{"resource<kind>s":[{"resource":...,"scope<kind>s":[{"scope":...,"<items>":[' as text."""
    items = "spans" if kind == "Span" else "metrics"
    return '{"resource%ss":[{"resource":{"attributes":%s},"scope%ss":[{"scope":%s,"%s":[' % (
        kind, _dumps(otlp.attributes(resource)), kind, _dumps({"name": otlp.SCOPE_NAME, "version": version}), items)


_TAIL = "]}]}]}"


class TracesEncoder(object):
    """Encodes spans (otlp.CollectiveSpan) of one resource as an
    ExportTraceServiceRequest body, the JSON of otlp.traces_request."""

    def __init__(self, resource, version=""):
        self._head = _head("Span", resource, version)
        self._templates = {}

    def encode(self, spans):
        return (self._head + ",".join([self._span(s) for s in spans]) + _TAIL).encode()

    def _span(self, s):
        start, end, seq, size = s.start_ns, s.end_ns, s.seq, s.message_bytes
        if not (type(start) is int and type(end) is int and type(size) is int
                and (seq is None or type(seq) is int)):
            return _dumps(otlp.span_json(s))  # a value of another type: the general encoder
        with_seq = s.comm_id is not None and seq is not None
        key = (s.op, s.backend, s.comm_id, with_seq, s.ranks, s.declare, s.peer, s.async_op, s.end_kind, bool(s.parent_span_id))
        try:
            t = self._templates.get(key)
        except TypeError:  # an unhashable member list
            return _dumps(otlp.span_json(s))
        if t is None:
            t = self._template(s, with_seq)
            if len(self._templates) >= MAX_TEMPLATES:
                self._templates.clear()
            self._templates[key] = t
        if end < start:
            end = start
        if s.parent_span_id:
            if with_seq:
                return t % (s.trace_id, s.span_id, s.parent_span_id, start, end, seq, size)
            return t % (s.trace_id, s.span_id, s.parent_span_id, start, end, size)
        if with_seq:
            return t % (s.trace_id, s.span_id, start, end, seq, size)
        return t % (s.trace_id, s.span_id, start, end, size)

    @staticmethod
    def _template(s, with_seq):
        """The span's JSON as a %-format taking trace id, span id, [parent id,]
        start, end, [seq,] size. Attributes in otlp.span_attributes' order."""
        attrs = [_attr(otlp.KEY_OP, s.op)]
        if with_seq:
            attrs.append(_attr(otlp.KEY_COMM_ID, s.comm_id))
            attrs.append('{"key":"%s","value":{"intValue":"%%d"}}' % otlp.KEY_SEQ)
        attrs.append('{"key":"%s","value":{"intValue":"%%d"}}' % otlp.KEY_MESSAGE_BYTES)
        rest = otlp.span_attributes(s._replace(op="", comm_id=None, seq=None))
        for k in (otlp.KEY_OP, otlp.KEY_MESSAGE_BYTES):
            del rest[k]
        attrs.extend(_attr(k, v) for k, v in rest.items())
        parent = '"parentSpanId":"%016x",' if s.parent_span_id else ""
        return ('{"traceId":"%032x","spanId":"%016x",' + parent + '"name":' + _fmt(otlp.span_name(s.backend, s.op))
                + ',"kind":%d,"startTimeUnixNano":"%%d","endTimeUnixNano":"%%d","attributes":[' % otlp.SPAN_KIND_INTERNAL
                + ",".join(attrs) + "]}")


class MetricsEncoder(object):
    """Encodes samples (otlp.Sample) of one resource as an
    ExportMetricsServiceRequest body, the JSON of otlp.metrics_request."""

    def __init__(self, resource, version=""):
        self._head = _head("Metric", resource, version)
        self._gauges = [(field, '{"name":%s,"description":%s,"unit":"By","gauge":{"dataPoints":[' % (
            _dumps(name), _dumps(description))) for name, field, description in otlp.GAUGES]
        self._accounting_head = '{"name":%s,"description":%s,"unit":"By","gauge":{"dataPoints":[' % (
            _dumps(otlp.METRIC_COMM_MEMORY_TOTAL), _dumps(otlp.COMM_MEMORY_DESCRIPTION))
        self._comm_points = {}

    def encode(self, samples):
        metrics = []
        for field, head in self._gauges:
            points = ['{"timeUnixNano":"%d","asInt":"%d"}' % (s.time_ns, getattr(s.reading, field)) for s in samples
                      if s.reading is not None and getattr(s.reading, field) is not None]
            if points:
                metrics.append(head + ",".join(points) + "]}}")
        points = [self._comm_point(comm) % (s.time_ns, b) for s in samples if s.accounting
                  for comm, b in sorted(s.accounting.items())]
        if points:
            metrics.append(self._accounting_head + ",".join(points) + "]}}")
        return (self._head + ",".join(metrics) + _TAIL).encode()

    def _comm_point(self, comm):
        t = self._comm_points.get(comm)
        if t is None:
            if len(self._comm_points) >= MAX_TEMPLATES:
                self._comm_points.clear()
            t = self._comm_points[comm] = '{"timeUnixNano":"%%d","asInt":"%%d","attributes":[%s]}' % _attr(
                otlp.KEY_COMM_ID, comm)
        return t
