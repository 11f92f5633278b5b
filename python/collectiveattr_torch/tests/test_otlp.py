import json
import unittest

from collectiveattr_torch import otlp
from collectiveattr_torch.otlp import CollectiveSpan, MemoryReading, Sample


def attrs(lst):
    """OTLP JSON attributes back to a dict of plain values."""
    out = {}
    for kv in lst:
        v = kv["value"]
        if "arrayValue" in v:
            out[kv["key"]] = [int(x["intValue"]) for x in v["arrayValue"]["values"]]
        elif "intValue" in v:
            out[kv["key"]] = int(v["intValue"])
        else:
            out[kv["key"]] = next(iter(v.values()))
    return out


def span(**kw):
    base = dict(op="all_reduce", backend="nccl", start_ns=1000, end_ns=2500, comm_id="pg:0", seq=7,
                message_bytes=4096, ranks=(0, 1, 2, 3), peer=None, async_op=False, end_kind="return",
                trace_id=0xABC, span_id=0x12, parent_span_id=None)
    base.update(kw)
    return CollectiveSpan(**base)


class SpanTest(unittest.TestCase):
    def test_collective_span_carries_the_identity_the_processor_reads(self):
        req = otlp.traces_request({"training.rank": 2, "training.job.id": "j"}, [span()])
        json.dumps(req)  # serialisable
        rs = req["resourceSpans"][0]
        self.assertEqual(attrs(rs["resource"]["attributes"]), {"training.rank": 2, "training.job.id": "j"})
        sp = rs["scopeSpans"][0]["spans"][0]
        self.assertEqual(sp["name"], "nccl:all_reduce")
        self.assertEqual(sp["traceId"], "00000000000000000000000000000abc")
        self.assertEqual(sp["spanId"], "0000000000000012")
        self.assertNotIn("parentSpanId", sp)
        self.assertEqual((sp["startTimeUnixNano"], sp["endTimeUnixNano"]), ("1000", "2500"))
        self.assertEqual(sp["kind"], 1)
        a = attrs(sp["attributes"])
        # docs/evidence-mode.md §2.1, written out here rather than taken from the module.
        self.assertEqual(a["nccl.comm.id"], "pg:0")
        self.assertEqual(a["nccl.seq"], 7)
        self.assertEqual(a["nccl.op"], "all_reduce")
        self.assertEqual(a["nccl.message_bytes"], 4096)
        self.assertEqual(a["nccl.comm.nranks"], 4)
        self.assertEqual(a["nccl.comm.ranks"], [0, 1, 2, 3])
        self.assertNotIn("nccl.peer", a)
        self.assertEqual(a["collectiveattr.span_end"], "return")

    def test_p2p_and_identityless_spans(self):
        sp = otlp.span_json(span(op="send", backend="gloo", comm_id="pg:0:p2p:1-3", seq=0, ranks=(1, 3), peer=3,
                                 parent_span_id=0x99, trace_id=0x5))
        a = attrs(sp["attributes"])
        self.assertEqual(sp["name"], "gloo:send")
        self.assertEqual(sp["parentSpanId"], "0000000000000099")
        self.assertEqual((a["nccl.peer"], a["nccl.comm.ranks"], a["nccl.seq"]), (3, [1, 3], 0))
        bare = attrs(otlp.span_json(span(op="recv", comm_id=None, seq=None, peer=None))["attributes"])
        self.assertNotIn("nccl.comm.id", bare)
        self.assertNotIn("nccl.seq", bare)

    def test_members_listed_only_on_a_declaring_span(self):
        big = tuple(range(1024))
        a = attrs(otlp.span_json(span(ranks=big, declare=True))["attributes"])
        self.assertEqual((a["nccl.comm.nranks"], a["nccl.comm.ranks"]), (1024, list(big)))
        a = attrs(otlp.span_json(span(ranks=big, declare=False))["attributes"])
        self.assertEqual(a["nccl.comm.nranks"], 1024)
        self.assertNotIn("nccl.comm.ranks", a)

    def test_end_never_before_start(self):
        sp = otlp.span_json(span(start_ns=5000, end_ns=4000))
        self.assertEqual(sp["endTimeUnixNano"], "5000")


class MetricsTest(unittest.TestCase):
    def test_points_of_a_sample_share_its_time(self):
        samples = [
            Sample(100, MemoryReading(reserved=10, allocated=5, device_used=50, device_free=950, device_total=1000), None),
            Sample(200, MemoryReading(reserved=12, device_used=70), {"pg:0": 30, "pg:1": 8}),
        ]
        req = otlp.metrics_request({"training.rank": 0}, samples)
        ms = {m["name"]: m for m in req["resourceMetrics"][0]["scopeMetrics"][0]["metrics"]}
        self.assertEqual(set(ms), {"gpu.memory.allocator.reserved", "gpu.memory.allocator.allocated",
                                   "gpu.memory.device.used", "gpu.memory.device.free",
                                   "gpu.memory.device.total", "nccl.comm.memory.total"})
        for m in ms.values():
            self.assertEqual(m["unit"], "By")
            self.assertIn("gauge", m)

        def points(name):
            return [(p["timeUnixNano"], p["asInt"]) for p in ms[name]["gauge"]["dataPoints"]]

        self.assertEqual(points("gpu.memory.device.used"), [("100", "50"), ("200", "70")])
        self.assertEqual(points("gpu.memory.allocator.reserved"), [("100", "10"), ("200", "12")])
        self.assertEqual(points("gpu.memory.device.total"), [("100", "1000")])  # unknown in the 2nd
        acc = ms["nccl.comm.memory.total"]["gauge"]["dataPoints"]
        self.assertEqual([(p["timeUnixNano"], p["asInt"], attrs(p["attributes"])) for p in acc],
                         [("200", "30", {"nccl.comm.id": "pg:0"}), ("200", "8", {"nccl.comm.id": "pg:1"})])

    def test_unknown_fields_send_no_gauge(self):
        req = otlp.metrics_request({}, [Sample(1, MemoryReading(reserved=1), None)])
        names = [m["name"] for m in req["resourceMetrics"][0]["scopeMetrics"][0]["metrics"]]
        self.assertEqual(names, ["gpu.memory.allocator.reserved"])


if __name__ == "__main__":
    unittest.main()
