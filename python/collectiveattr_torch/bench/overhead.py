"""What collectiveattr_torch costs a training step: alternating rounds in one job.

    /usr/bin/python3 bench/overhead.py [--ranks 2] [--rounds 6] [--steps 20]
        [--shape 100:50 --shape 500:100]

Three measurements, each plain beside instrumented in the same run:

* encoding on the exporter thread: the time to encode a batch of spans and of
  memory samples into the request body, through the dict form (json.dumps of
  otlp.traces_request, what the exporter did before) and through the
  exporter's template encoders;
* the hook on the training thread: a world-size-1 gloo all_reduce of one
  float, plain and wrapped;
* training-like steps: for each --shape STEP_MS:N, every rank runs steps of
  about STEP_MS of compute (matrix products that release the GIL, as a GPU
  step's CPU side waits with it released) with N gloo all_reduces spread
  through it. Rounds alternate plain and instrumented (instrument() ...
  shutdown(), memory sampled at 10 Hz from an injected source, sent to a
  collector stub in the parent process), so both see the same machine load.
  Per rank: the median wall time of a step and the median CPU time of the
  training thread in its collective calls per step, of each kind, and the CPU time of the module's
  own threads (exporter: encoding and sending; sampler) per instrumented
  step, read from /proc after the exporter has sent the round's spans.
  What the module adds to a step is the training thread's extra CPU time
  plus its threads' CPU time (an upper bound: those threads hold the GIL
  only part of it, and run on another core when there is one).
"""

import argparse
import http.server
import json
import os
import statistics
import sys
import threading
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import collectiveattr_torch  # noqa: E402
from collectiveattr_torch import MemoryReading, otlp, otlpjson  # noqa: E402


class _Sink(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


READING = MemoryReading(reserved=1 << 30, allocated=1 << 29, device_used=3 << 30, device_free=5 << 30,
                        device_total=8 << 30)
RESOURCE = {"training.job.id": "bench-job-0042", "training.rank": 3, "training.world_size": 64,
            "training.local_rank": 3, "host.name": "gpu-node-017", "gpu.index": 3, "process.pid": 12345,
            "service.name": "pytorch-training", "telemetry.sdk.name": "collectiveattr_torch"}


def encode_cost(n):
    """Per-item encode time of n spans (an 8-rank data-parallel group and a
    4-rank tensor-parallel one, all_reduce / all_gather / reduce_scatter) and
    of n samples, through the dict form and through the template encoders."""
    ops = ("all_reduce", "all_gather", "reduce_scatter")
    spans = [otlp.CollectiveSpan(ops[i % 3], "nccl", 1_765_000_000_000_000_000 + i * 1000,
                                 1_765_000_000_000_000_000 + i * 1000 + 731, "pg:%d" % (i % 2), i // 6,
                                 4 << 20, tuple(range(8)) if i % 2 == 0 else (0, 1, 2, 3), None, False, "return",
                                 (0x5EED << 64) + i, 0xF00 + i, None) for i in range(n)]
    samples = [otlp.Sample(1_765_000_000_000_000_000 + i * 100_000_000, READING, {"pg:0": 300 << 20, "pg:1": 96 << 20})
               for i in range(n)]

    def timed(fn, batch):
        best = []
        for _ in range(5):
            t0 = time.perf_counter()
            fn(batch)
            best.append(time.perf_counter() - t0)
        return statistics.median(best) / len(batch) * 1e6

    def dict_spans(b):
        return json.dumps(otlp.traces_request(RESOURCE, b), separators=(",", ":")).encode()

    def dict_samples(b):
        return json.dumps(otlp.metrics_request(RESOURCE, b), separators=(",", ":")).encode()

    fast_spans = otlpjson.TracesEncoder(RESOURCE).encode
    fast_samples = otlpjson.MetricsEncoder(RESOURCE).encode
    print("encode, %d per batch (median of 5): span %.1f us dict form, %.1f us template; "
          "sample %.1f us dict form, %.1f us template"
          % (n, timed(dict_spans, spans), timed(fast_spans, spans), timed(dict_samples, samples),
             timed(fast_samples, samples)), flush=True)


def hook_cost(endpoint, n):
    """Per-call cost of the hook: a world-size-1 all_reduce of one float, plain and wrapped."""
    import tempfile

    store = os.path.join(tempfile.mkdtemp(), "store")
    dist.init_process_group("gloo", init_method="file://" + store, rank=0, world_size=1)
    t = torch.ones(1)

    def per_call():
        t0 = time.perf_counter()
        for _ in range(n):
            dist.all_reduce(t)
        return (time.perf_counter() - t0) / n

    plain, wrapped = [], []
    for _ in range(5):
        plain.append(per_call())
        h = collectiveattr_torch.instrument(endpoint=endpoint, job_id="bench", strict=True)
        wrapped.append(per_call())
        h.shutdown(10)
    p, w = statistics.median(plain), statistics.median(wrapped)
    print("hook: all_reduce of 1 float, world size 1 (median of 5 x %d): %.1f us plain, %.1f us wrapped: "
          "%.1f us per call" % (n, p * 1e6, w * 1e6, (w - p) * 1e6), flush=True)
    dist.destroy_process_group()


def calibrate(a, step_ms):
    """Matrix products per step giving about step_ms of compute."""
    for _ in range(3):
        torch.mm(a, a)
    t0 = time.perf_counter()
    for _ in range(20):
        torch.mm(a, a)
    return max(1, int(round(step_ms / 1e3 / ((time.perf_counter() - t0) / 20))))


def steps(a, products, n_coll, grad, n):
    """n steps of `products` matrix products with n_coll all_reduces spread
    through them; returns the median wall time of a step and the median CPU
    time the training thread spent in the all_reduce calls (with the hook when
    instrumented) per step, in seconds. Only the calls are clocked: the CPU
    time of the products varies with what the other core runs by more than
    the hook costs."""
    wall, cpu = [], []
    every = max(1, products // max(1, n_coll))
    clock = time.thread_time
    for _ in range(n):
        w0, c = time.perf_counter(), 0.0
        done = 0
        for i in range(products):
            torch.mm(a, a)
            if (i + 1) % every == 0 and done < n_coll:
                c0 = clock()
                dist.all_reduce(grad)
                c += clock() - c0
                done += 1
        while done < n_coll:
            c0 = clock()
            dist.all_reduce(grad)
            c += clock() - c0
            done += 1
        wall.append(time.perf_counter() - w0)
        cpu.append(c)
    return statistics.median(wall), statistics.median(cpu)


def thread_cpu(thread):
    """CPU seconds a live thread of this process has run (the kernel's schedstat, ns)."""
    with open("/proc/%d/task/%d/schedstat" % (os.getpid(), thread.native_id)) as f:
        return int(f.read().split()[0]) / 1e9


def run(rank, args):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.master_port))
    dist.init_process_group("gloo", rank=rank, world_size=args.ranks)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    a = torch.randn(256, 256)
    grad = torch.randn(16384)  # a 64 KiB gradient bucket
    for step_ms, n_coll in args.shape:
        products = calibrate(a, step_ms)
        t = torch.tensor([products])
        dist.all_reduce(t, op=dist.ReduceOp.MAX)  # every rank the same work
        products = int(t.item())
        steps(a, products, n_coll, grad, 3)  # warm-up
        plain, inst, module, sent = [], [], [], 0
        for _ in range(args.rounds):
            plain.append(steps(a, products, n_coll, grad, args.steps))
            h = collectiveattr_torch.instrument(endpoint=args.endpoint, job_id="bench", memory_source=lambda: READING,
                                                strict=True)
            t0 = time.perf_counter()
            inst.append(steps(a, products, n_coll, grad, args.steps))
            time.sleep(2.2)  # the exporter's next send (every second) takes the round's last spans
            spans = h.stats()["spans_sent"]
            # The exporter's work is per span (and per request); the sampler's per second.
            exporter = thread_cpu(h.exporter._thread) / args.steps
            sampler = thread_cpu(h.sampler._thread) / (time.perf_counter() - t0) * inst[-1][0]
            module.append((exporter, sampler))
            h.shutdown(10)
            if spans != args.steps * n_coll:
                print("rank %d: %d of %d spans sent before the CPU reading" % (rank, spans, args.steps * n_coll))
            sent += spans
        pw, pc = statistics.median(x[0] for x in plain), statistics.median(x[1] for x in plain)
        iw, ic = statistics.median(x[0] for x in inst), statistics.median(x[1] for x in inst)
        me, ms = statistics.median(x[0] for x in module), statistics.median(x[1] for x in module)
        added = (ic - pc) + me + ms
        dist.barrier()
        print("rank %d, %d ms / %d collectives: step %.1f ms plain, %.1f ms instrumented (%+.2f %%); "
              "training thread in collective calls %.2f ms plain, %.2f ms instrumented (%+.3f ms); exporter thread "
              "%.3f ms and sampler thread %.3f ms per step; added CPU %.3f ms = %.2f %% of the plain step; %d rounds x %d steps, %d spans sent"
              % (rank, step_ms, n_coll, pw * 1e3, iw * 1e3, (iw - pw) / pw * 100, pc * 1e3, ic * 1e3,
                 (ic - pc) * 1e3, me * 1e3, ms * 1e3, added * 1e3, added / pw * 100, args.rounds, args.steps, sent), flush=True)
    dist.destroy_process_group()


def shape(s):
    step_ms, n = s.split(":")
    return int(step_ms), int(n)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--shape", type=shape, action="append", help="STEP_MS:COLLECTIVES (default 100:50 and 500:100)")
    p.add_argument("--master-port", type=int, default=29533)
    args = p.parse_args()
    args.shape = args.shape or [(100, 50), (500, 100)]
    sink = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    threading.Thread(target=sink.serve_forever, daemon=True).start()
    args.endpoint = "http://127.0.0.1:%d" % sink.server_port
    print("load average %.1f %.1f %.1f" % os.getloadavg(), flush=True)
    encode_cost(2000)
    hook_cost(args.endpoint, 3000)
    mp.spawn(run, args=(args,), nprocs=args.ranks)
    print("load average %.1f %.1f %.1f" % os.getloadavg(), flush=True)


if __name__ == "__main__":
    main()
