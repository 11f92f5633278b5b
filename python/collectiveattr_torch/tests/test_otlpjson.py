import itertools
import json
import unittest
from unittest import mock

from collectiveattr_torch import otlp
from collectiveattr_torch.otlp import MemoryReading, Sample
from collectiveattr_torch.otlpjson import MetricsEncoder, TracesEncoder

from .test_otlp import span

# Names a job can give its groups and that JSON must escape: quotes, backslashes,
# control characters, non-ASCII (escaped as \uXXXX), an astral character
# (a surrogate pair), and '%', which the templates must not read as a format.
AWKWARD = ['pg:0', 'pg:"q"', 'pg:\\back', 'pg:tab\there\nnl', 'pg:\u00e9\u4e2d', 'pg:\U0001f600', 'pg:100%d%%s']

RESOURCE = {"training.job.id": 'job "\u00e9%s"', "training.rank": 3, "training.world_size": 8,
            "host.name": "n\u00f6de\\1", "flag": True}


def varied_spans():
    shapes = itertools.product(
        AWKWARD,
        [("all_reduce", "nccl", (0, 1, 2, 3), None), ("send", "gloo", (1, 3), 3),
         ("barrier", None, (), None), ("all_gather", "nccl", tuple(range(65)), None),
         ('op"%\u00fc', "b\\k", (7,), None)],
        [7, 0, None],
        [None, 0x99, 0xFFFFFFFFFFFFFFFF],
    )
    for i, (comm, (op, backend, ranks, peer), seq, parent) in enumerate(shapes):
        yield span(op=op, backend=backend, comm_id=comm if i % 11 else None, seq=seq, ranks=ranks, peer=peer,
                   parent_span_id=parent, start_ns=1_700_000_000_000_000_000 + i, end_ns=1_700_000_000_000_000_000 + i * (i % 3 - 1),
                   message_bytes=i * 4099 if i % 5 else (1 << 40), async_op=bool(i % 2),
                   end_kind="completion" if i % 2 else "return", trace_id=(0xABCDEF << 100) + i,
                   span_id=(1 << 63) + i, declare=bool(i % 4))


class TracesEncoderTest(unittest.TestCase):
    def test_equals_the_reference_request(self):
        spans = list(varied_spans())
        enc = TracesEncoder(RESOURCE, version="1.2%d")
        # Twice: the second pass formats from the cached templates. Every span
        # here takes the template path, not the general encoder.
        for _ in range(2):
            with mock.patch.object(otlp, "span_json", side_effect=AssertionError("general encoder used")):
                body = enc.encode(spans)
            self.assertIsInstance(body, bytes)
            self.assertEqual(json.loads(body.decode()), otlp.traces_request(RESOURCE, spans, "1.2%d"))

    def test_each_span_alone_and_empty_batch(self):
        enc = TracesEncoder({})
        for s in varied_spans():
            self.assertEqual(json.loads(enc.encode([s])), otlp.traces_request({}, [s]))
        self.assertEqual(json.loads(enc.encode([])), otlp.traces_request({}, []))

    def test_values_of_other_types_take_the_general_encoder(self):
        spans = [span(message_bytes=1.5), span(seq=True), span(start_ns=10.0, end_ns=20.0), span(ranks=[0, 1])]
        self.assertEqual(json.loads(TracesEncoder(RESOURCE).encode(spans)), otlp.traces_request(RESOURCE, spans))

    def test_template_cache_is_bounded(self):
        enc = TracesEncoder({})
        spans = [span(comm_id="pg:%d" % i) for i in range(5000)]
        self.assertEqual(json.loads(enc.encode(spans)), otlp.traces_request({}, spans))
        self.assertLessEqual(len(enc._templates), 4096)


class MetricsEncoderTest(unittest.TestCase):
    def test_equals_the_reference_request(self):
        samples = [
            Sample(100, MemoryReading(reserved=10, allocated=5, device_used=50, device_free=950, device_total=1000), None),
            Sample(200, MemoryReading(reserved=12, device_used=70), {c: 30 + i for i, c in enumerate(AWKWARD)}),
            Sample(300, None, {"pg:0": 1 << 40}),
            Sample(400, MemoryReading(), {}),
        ]
        enc = MetricsEncoder(RESOURCE, version="v")
        for _ in range(2):
            self.assertEqual(json.loads(enc.encode(samples)), otlp.metrics_request(RESOURCE, samples, "v"))
        for s in samples:
            self.assertEqual(json.loads(enc.encode([s])), otlp.metrics_request(RESOURCE, [s], "v"))
        self.assertEqual(json.loads(enc.encode([])), otlp.metrics_request(RESOURCE, [], "v"))


if __name__ == "__main__":
    unittest.main()
