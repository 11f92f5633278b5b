"""A background thread that sends queued spans and samples over OTLP/HTTP JSON.

The training thread only appends to bounded queues; when a queue is full the
new item is dropped and counted, so a collector that is away or slow never
blocks a step. A request that fails (refused, timed out, non-2xx) is
dropped and counted too: samples are a time series, resending old ones after
an outage would only delay the current ones.
"""

import collections
import logging
import threading
import time
import urllib.error
import urllib.request

from . import otlpjson

log = logging.getLogger("collectiveattr_torch")


class BoundedQueue(object):
    """A FIFO that refuses items beyond its capacity and counts them.

    put is called from the training thread, from the sampler thread and from
    the threads that complete async work; take from the exporter thread.
    """

    def __init__(self, capacity):
        if capacity < 1:
            raise ValueError("queue capacity must be >= 1, got %r" % (capacity,))
        self.capacity = capacity
        self._items = collections.deque()
        self._lock = threading.Lock()
        self.dropped = 0

    def put(self, item):
        """Appends item and returns the queue's new length, or 0 when it was full."""
        items = self._items
        with self._lock:
            n = len(items)
            if n >= self.capacity:
                self.dropped += 1
                return 0
            items.append(item)
            return n + 1

    def take(self, limit):
        """Removes and returns up to limit items, oldest first."""
        with self._lock:
            n = min(limit, len(self._items))
            return [self._items.popleft() for _ in range(n)]

    def __len__(self):
        return len(self._items)


def post_json(url, body, headers, timeout):
    """POSTs body (bytes) as JSON; raises on a transport error or a non-2xx status."""
    req = urllib.request.Request(url, data=body, method="POST")
    req.add_header("Content-Type", "application/json")
    for k, v in headers.items():
        req.add_header(k, v)
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        resp.read()
        if not 200 <= resp.status < 300:
            raise urllib.error.HTTPError(url, resp.status, "status %d" % resp.status, resp.headers, None)


class Exporter(object):
    """Drains the span and sample queues every interval (or sooner when one
    fills past half) and posts them as one traces and one metrics request."""

    def __init__(self, traces_url, metrics_url, resource, headers=None, interval=1.0, timeout=2.0,
                 queue_size=65536, max_batch=4096, post=post_json, version=""):
        self.traces_url, self.metrics_url = traces_url, metrics_url
        self.resource = resource
        self.headers = dict(headers or {})
        self.interval, self.timeout, self.max_batch = interval, timeout, max_batch
        self.spans = BoundedQueue(queue_size)
        self.samples = BoundedQueue(queue_size)
        # A queue reaching half its capacity wakes the thread before the interval ends.
        self._wake_at = queue_size // 2 + 1
        self._post = post
        self._encode_spans = otlpjson.TracesEncoder(resource, version).encode
        self._encode_samples = otlpjson.MetricsEncoder(resource, version).encode
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = None
        self._flush_lock = threading.Lock()
        self.sent_spans = 0
        self.sent_samples = 0
        self.requests_failed = 0
        self.spans_failed = 0
        self.samples_failed = 0
        self._last_warning = 0.0

    def start(self):
        self._thread = threading.Thread(target=self._run, name="collectiveattr-export", daemon=True)
        self._thread.start()

    def add_span(self, span):
        if self.spans.put(span) == self._wake_at:
            self._wake.set()

    def add_sample(self, sample):
        if self.samples.put(sample) == self._wake_at:
            self._wake.set()

    def _run(self):
        while True:
            self._wake.wait(self.interval)
            self._wake.clear()
            stopping = self._stop.is_set()
            self.flush()
            if stopping:
                return

    def flush(self):
        """Sends what is queued now. Never raises."""
        with self._flush_lock:
            self._send(self.samples, self.metrics_url, self._encode_samples, "samples")
            self._send(self.spans, self.traces_url, self._encode_spans, "spans")

    def _send(self, queue, url, encode, what):
        while True:
            batch = queue.take(self.max_batch)
            if not batch:
                return
            try:
                self._post(url, encode(batch), self.headers, self.timeout)
            except Exception as e:  # refused, timeout, HTTP error (or a record we cannot encode): drop this batch
                self.requests_failed += 1
                if what == "spans":
                    self.spans_failed += len(batch)
                else:
                    self.samples_failed += len(batch)
                self._warn("collectiveattr_torch: sending %d %s to %s failed (%s); dropped" % (len(batch), what, url, e))
                return
            if what == "spans":
                self.sent_spans += len(batch)
            else:
                self.sent_samples += len(batch)

    def _warn(self, msg):
        now = time.monotonic()
        if now - self._last_warning >= 60 or self._last_warning == 0.0:
            self._last_warning = now
            log.warning(msg)

    def stop(self, timeout):
        """Stops the thread after one last flush bounded by timeout seconds."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout)
