"""What collectiveattr_torch costs a training step: alternating rounds in one job.

    /usr/bin/python3 bench/overhead.py [--ranks 2] [--rounds 6] [--steps 50]

Each rank trains an MLP on CPU (gloo) with one all_reduce per gradient, a
loss all_reduce and a broadcast per step (8 collectives a step). Rounds
alternate plain and instrumented (instrument() ... shutdown()), so both see
the same machine load; the instrumented rounds sample memory at the default
10 Hz from an injected source and send to a collector stub in this process.
Printed per rank: the median step time of each kind, the overhead as a
share of the plain step, and the per-call cost of the hook measured on a
world-size-1 all_reduce.
"""

import argparse
import http.server
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
from collectiveattr_torch import MemoryReading  # noqa: E402


class _Sink(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.end_headers()

    def log_message(self, *args):
        pass


def steps(model, opt, n, group):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        x = torch.randn(128, 512)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        for p in model.parameters():
            dist.all_reduce(p.grad)
        dist.all_reduce(loss.detach(), group=group)
        dist.broadcast(model[0].bias.data, 0)
        opt.step()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def run(rank, args):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.master_port))
    dist.init_process_group("gloo", rank=rank, world_size=args.ranks)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(512, 512), torch.nn.ReLU(), torch.nn.Linear(512, 512),
                                torch.nn.ReLU(), torch.nn.Linear(512, 512), torch.nn.ReLU())
    opt = torch.optim.SGD(model.parameters(), lr=0.001)
    world = dist.group.WORLD
    reading = MemoryReading(reserved=1 << 30, allocated=1 << 29, device_used=3 << 30, device_free=5 << 30,
                            device_total=8 << 30)
    steps(model, opt, 10, world)  # warm-up
    plain, instrumented, sent = [], [], 0
    for _ in range(args.rounds):
        plain.append(steps(model, opt, args.steps, world))
        h = collectiveattr_torch.instrument(endpoint=args.endpoint, job_id="bench", memory_source=lambda: reading,
                                            strict=True)
        instrumented.append(steps(model, opt, args.steps, world))
        h.shutdown(10)
        sent += h.stats()["spans_sent"]
    base, inst = statistics.median(plain), statistics.median(instrumented)
    dist.barrier()
    print("rank %d: step %.3f ms plain, %.3f ms instrumented: %+.2f %% (%d rounds x %d steps, %d spans sent)"
          % (rank, base * 1e3, inst * 1e3, (inst - base) / base * 100, args.rounds, args.steps, sent), flush=True)
    dist.destroy_process_group()


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
    print("hook: all_reduce of 1 float, world size 1: %.1f us plain, %.1f us wrapped: %.1f us per call"
          % (p * 1e6, w * 1e6, (w - p) * 1e6))
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--master-port", type=int, default=29533)
    args = p.parse_args()
    sink = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    threading.Thread(target=sink.serve_forever, daemon=True).start()
    args.endpoint = "http://127.0.0.1:%d" % sink.server_port
    hook_cost(args.endpoint, 2000)
    mp.spawn(run, args=(args,), nprocs=args.ranks)


if __name__ == "__main__":
    main()
