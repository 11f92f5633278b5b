"""instrument() on the installed torch: one gloo rank, an in-process collector.

Skipped where torch is not installed (the plain python3 of a CI machine);
the multi-rank job against the built collector is e2e/torch_test.go.
"""

import http.server
import json
import os
import shutil
import tempfile
import threading
import time
import unittest

try:
    import torch
    import torch.distributed as dist
except ImportError:
    torch = None

import collectiveattr_torch
from collectiveattr_torch import MemoryReading


class _Collector(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.received.append((self.path, json.loads(body)))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


@unittest.skipIf(torch is None, "torch is not installed for this python")
class InstrumentTest(unittest.TestCase):
    def setUp(self):
        self.server = http.server.HTTPServer(("127.0.0.1", 0), _Collector)
        self.server.received = []
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.addCleanup(self.server.server_close)
        self.addCleanup(self.server.shutdown)
        tmp = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, tmp, True)
        dist.init_process_group("gloo", init_method="file://" + os.path.join(tmp, "store"), rank=0, world_size=1)
        self.addCleanup(dist.destroy_process_group)

    def test_spans_and_samples_reach_the_collector(self):
        original = dist.all_reduce
        os.environ["COLLECTIVEATTR_JOB_ID"] = "unit-job"
        self.addCleanup(os.environ.pop, "COLLECTIVEATTR_JOB_ID", None)
        h = collectiveattr_torch.instrument(
            endpoint="http://127.0.0.1:%d" % self.server.server_port, strict=True, sample_interval=0.01,
            memory_source=lambda: MemoryReading(reserved=1 << 20, device_used=3 << 20, device_total=1 << 30))
        self.addCleanup(h.shutdown, 5)
        self.assertIs(collectiveattr_torch.instrument(), h, "a second call returns the first handle")
        t = torch.ones(16)
        dist.all_reduce(t)
        dist.all_reduce(t, async_op=True).wait()
        dist.broadcast(t, 0)
        dist.barrier()
        deadline = time.monotonic() + 30
        while h.sampler.samples < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        h.shutdown(5)
        self.assertIs(dist.all_reduce, original, "shutdown restores torch.distributed")

        spans, points = [], {}
        for path, body in self.server.received:
            if path == "/v1/traces":
                for rs in body["resourceSpans"]:
                    res = {a["key"]: a["value"] for a in rs["resource"]["attributes"]}
                    self.assertEqual(res["training.job.id"], {"stringValue": "unit-job"})
                    self.assertEqual(res["training.rank"], {"intValue": "0"})
                    self.assertEqual(res["training.world_size"], {"intValue": "1"})
                    for sp in rs["scopeSpans"][0]["spans"]:
                        a = {x["key"]: list(x["value"].values())[0] for x in sp["attributes"]}
                        spans.append((sp["name"], a["nccl.comm.id"], a["nccl.seq"], a["nccl.message_bytes"],
                                      a["collectiveattr.span_end"]))
            else:
                for rm in body["resourceMetrics"]:
                    for m in rm["scopeMetrics"][0]["metrics"]:
                        points.setdefault(m["name"], []).extend(m["gauge"]["dataPoints"])
        self.assertEqual(sorted(spans), sorted([
            ("gloo:all_reduce", "pg:0", "0", "64", "return"),
            ("gloo:all_reduce", "pg:0", "1", "64", "completion"),
            ("gloo:broadcast", "pg:0", "0", "64", "return"),
            ("gloo:barrier", "pg:0", "0", "0", "return"),
        ]))
        self.assertEqual(set(points), {"gpu.memory.allocator.reserved", "gpu.memory.device.used",
                                       "gpu.memory.device.total"})
        self.assertGreater(len(points["gpu.memory.device.used"]), 0)
        self.assertEqual(h.stats()["dropped_queue_full"], 0)

    def test_before_init_or_disabled_is_a_logged_no_op(self):
        os.environ["COLLECTIVEATTR_DISABLED"] = "1"
        self.addCleanup(os.environ.pop, "COLLECTIVEATTR_DISABLED", None)
        h = collectiveattr_torch.instrument(endpoint="http://127.0.0.1:1")
        self.assertFalse(h.enabled)
        self.assertEqual(h.stats(), {})
        del os.environ["COLLECTIVEATTR_DISABLED"]
        with self.assertLogs("collectiveattr_torch", "ERROR"):
            h = collectiveattr_torch.instrument(endpoint="not a url")
        self.assertFalse(h.enabled)
        self.assertIn("endpoint", h.error)


if __name__ == "__main__":
    unittest.main()
