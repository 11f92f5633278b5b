"""A small data-parallel job on CPU (gloo), instrumented with collectiveattr_torch.

Run by e2e/torch_test.go against the built collector, and usable by hand:

    /usr/bin/python3 tests/gloo_job.py --ranks 4 --endpoint http://127.0.0.1:4318 --out /tmp/job

Each rank trains a small linear model for --steps steps: forward, backward,
an all_reduce of the gradients on the world group, an all_reduce of the loss
on its pair's subgroup, and a broadcast every 10 steps. There is no GPU, so
the GPU memory source is injected: a steady allocator and device level with
a little noise, plus a hidden-memory spike of --spike-mib that starts at the
gradient all_reduce of step --spike-step on every rank (right after a
barrier, so that the ranks start it together) and lasts --spike-ms.
NCCL's accounting is injected too: the world communicator holds the
spike's bytes while it lasts (as NCCL does for its own buffers).

Each rank writes <out>/rank-<r>.json: its spike window and the identity of
the all_reduce it started at, the ground truth the test checks the
collector's results against.
"""

import argparse
import json
import os
import sys
import threading
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import collectiveattr_torch  # noqa: E402
from collectiveattr_torch import MemoryReading  # noqa: E402

MIB = 1 << 20
GIB = 1 << 30


class InjectedGPU(object):
    """What a GPU would report: 2 GiB reserved by the allocator, 1 GiB hidden
    (CUDA context, NCCL's buffers), noise of a few MiB, and the spike."""

    def __init__(self, rank, spike_bytes):
        self.rank = rank
        self.spike_bytes = spike_bytes
        self.window = None  # (start_ns, end_ns) once the spike is set
        self.lock = threading.Lock()
        self.n = 0

    def spiking(self, now):
        w = self.window
        return w is not None and w[0] <= now <= w[1]

    def __call__(self):
        with self.lock:
            self.n += 1
            n = self.n
        noise = ((n * 7 + self.rank * 3) % 11) * MIB
        reserved = 2 * GIB + ((n * 5) % 3) * 2 * MIB
        hidden = GIB + noise + (self.spike_bytes if self.spiking(time.time_ns()) else 0)
        total = 80 * GIB
        used = reserved + hidden
        return MemoryReading(reserved=reserved, allocated=reserved - 64 * MIB, device_used=used,
                             device_free=total - used, device_total=total)

    def accounting(self):
        return {"pg:0": 512 * MIB + (self.spike_bytes if self.spiking(time.time_ns()) else 0)}


def run(rank, args):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(args.master_port), RANK=str(rank),
                      WORLD_SIZE=str(args.ranks), LOCAL_RANK=str(rank))
    dist.init_process_group("gloo", rank=rank, world_size=args.ranks)
    pairs = [dist.new_group([r, r + 1]) for r in range(0, args.ranks - 1, 2)]
    pair = pairs[rank // 2] if rank // 2 < len(pairs) else None

    gpu = InjectedGPU(rank, args.spike_mib * MIB)
    handle = collectiveattr_torch.instrument(
        endpoint=args.endpoint, job_id=args.job_id, sample_interval=args.sample_ms / 1000.0,
        export_interval=0.5, memory_source=gpu, accounting_source=gpu.accounting, strict=True)

    torch.manual_seed(rank)
    model = torch.nn.Linear(256, 256)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    truth = {"rank": rank}
    grad_all_reduces = 0
    for step in range(args.steps):
        x = torch.randn(64, 256)
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        time.sleep(args.step_ms / 1000.0)  # the rest of a step's compute
        if step == args.spike_step:
            # Leave a barrier together, so that the ranks' spikes start together
            # even on a loaded machine, then spike at the gradient all_reduce.
            dist.barrier()
            start = time.time_ns()
            gpu.window = (start, start + args.spike_ms * 1000000)
            truth.update(spike_start_ns=gpu.window[0], spike_end_ns=gpu.window[1],
                         comm_id="pg:0", op="all_reduce", seq=grad_all_reduces)
        for p in model.parameters():
            dist.all_reduce(p.grad)
            grad_all_reduces += 1
        if pair is not None:
            dist.all_reduce(loss.detach().clone(), group=pair)
        if step % 10 == 0:
            dist.broadcast(model.weight.data, 0)
        opt.step()
    dist.barrier()
    handle.shutdown(timeout=10)
    truth["stats"] = handle.stats()
    with open(os.path.join(args.out, "rank-%d.json" % rank), "w") as f:
        json.dump(truth, f)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--ranks", type=int, default=4)
    p.add_argument("--endpoint", required=True, help="the collector's OTLP/HTTP base URL")
    p.add_argument("--job-id", default="gloo-job")
    p.add_argument("--master-port", type=int, default=29500)
    p.add_argument("--steps", type=int, default=60)
    p.add_argument("--step-ms", type=int, default=40)
    p.add_argument("--spike-step", type=int, default=30)
    p.add_argument("--spike-ms", type=int, default=500)
    p.add_argument("--spike-mib", type=int, default=3072)
    p.add_argument("--sample-ms", type=int, default=50)
    p.add_argument("--out", required=True, help="directory for the per-rank ground truth")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    mp.spawn(run, args=(args,), nprocs=args.ranks)


if __name__ == "__main__":
    main()
