import http.server
import json
import socket
import threading
import unittest

from collectiveattr_torch.exporter import BoundedQueue, Exporter, post_json
from collectiveattr_torch.otlp import MemoryReading, Sample

from .test_otlp import span


class QueueTest(unittest.TestCase):
    def test_full_queue_drops_and_counts(self):
        q = BoundedQueue(3)
        self.assertEqual([q.put(i) for i in range(5)], [1, 2, 3, 0, 0])
        self.assertEqual(q.dropped, 2)
        self.assertEqual(q.take(2), [0, 1])
        self.assertEqual(q.put(9), 2)
        self.assertEqual(q.take(10), [2, 9])

    def test_capacity_must_be_positive(self):
        with self.assertRaises(ValueError):
            BoundedQueue(0)


class _Collector(http.server.BaseHTTPRequestHandler):
    received = None

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.received.append((self.path, self.headers.get("Content-Type"), self.headers.get("X-Token"), json.loads(body)))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args):
        pass


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class ExporterTest(unittest.TestCase):
    def test_sends_otlp_json_over_http(self):
        received = []
        handler = type("H", (_Collector,), {"received": received})
        server = http.server.HTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        base = "http://127.0.0.1:%d" % server.server_port
        e = Exporter(base + "/v1/traces", base + "/v1/metrics", {"training.rank": 1}, headers={"X-Token": "t"})
        e.add_span(span())
        e.add_sample(Sample(5, MemoryReading(reserved=1, device_used=2), None))
        e.flush()
        paths = sorted(r[0] for r in received)
        self.assertEqual(paths, ["/v1/metrics", "/v1/traces"])
        for _, ctype, token, body in received:
            self.assertEqual((ctype, token), ("application/json", "t"))
            self.assertTrue("resourceSpans" in body or "resourceMetrics" in body)
        self.assertEqual((e.sent_spans, e.sent_samples, e.requests_failed), (1, 1, 0))

    def test_collector_away_drops_and_counts_without_raising(self):
        url = "http://127.0.0.1:%d" % free_port()  # nothing listens
        e = Exporter(url + "/v1/traces", url + "/v1/metrics", {}, timeout=0.5)
        for _ in range(3):
            e.add_span(span())
        e.add_sample(Sample(5, MemoryReading(reserved=1), None))
        with self.assertLogs("collectiveattr_torch", "WARNING") as logs:
            e.flush()
        self.assertEqual(len(logs.output), 1, "one warning per minute, not per request")
        self.assertEqual((e.spans_failed, e.samples_failed, e.requests_failed), (3, 1, 2))
        self.assertEqual((e.sent_spans, len(e.spans)), (0, 0))

    def test_a_slow_collector_never_blocks_the_producer(self):
        gate = threading.Event()
        posting = threading.Event()
        returned = []

        def stuck_post(url, body, headers, timeout):
            posting.set()
            gate.wait(60)
            returned.append(True)

        e = Exporter("http://x/v1/traces", "http://x/v1/metrics", {}, interval=0.01, queue_size=100, post=stuck_post)
        e.add_span(span())
        e.start()
        self.addCleanup(e.stop, 5)
        self.addCleanup(gate.set)
        self.assertTrue(posting.wait(30), "the exporter thread is posting")
        for _ in range(10000):
            e.add_span(span())
        # Every call returned while the post is still stuck: nothing waited for it.
        self.assertEqual(returned, [])
        self.assertEqual((len(e.spans), e.spans.dropped), (100, 10000 - 100))

    def test_encoder_failure_is_contained(self):
        e = Exporter("http://x/v1/traces", "http://x/v1/metrics", {}, post=lambda *a: None)
        e.add_span("not a span")
        with self.assertLogs("collectiveattr_torch", "WARNING"):
            e.flush()  # logs and counts, does not raise
        e.add_span(span())
        e.flush()
        self.assertEqual((e.spans_failed, e.sent_spans), (1, 1))

    def test_post_json_raises_on_http_error(self):
        class Refuse(_Collector):
            def do_POST(self):
                self.rfile.read(int(self.headers["Content-Length"]))
                self.send_response(503)
                self.end_headers()

        server = http.server.HTTPServer(("127.0.0.1", 0), Refuse)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        self.addCleanup(server.server_close)
        self.addCleanup(server.shutdown)
        with self.assertRaises(Exception):
            post_json("http://127.0.0.1:%d/v1/traces" % server.server_port, b"{}", {}, 2)


if __name__ == "__main__":
    unittest.main()
