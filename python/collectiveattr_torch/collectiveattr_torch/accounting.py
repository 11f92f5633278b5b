"""NCCL's own accounting of the device memory each communicator holds.

PyTorch builds with NCCL >= 2.29.7 expose it on the NCCL backend of a process
group as memory_stats(), a dict whose "total" is ncclStatGpuMemTotal
(docs/evidence-mode.md §2.2). The processor reads it as the gauge
nccl.comm.memory.total with nccl.comm.id on each point; the id is the one the
collective spans of that group carry, so the processor can tell which
communicator holds which bytes.
"""

import logging

log = logging.getLogger("collectiveattr_torch")

TOTAL_KEY = "total"


def backend_total(pg, device):
    """NCCL's total for process group pg, or None when this torch, backend or
    NCCL does not report it."""
    get_backend = getattr(pg, "_get_backend", None)
    if get_backend is None:
        return None
    try:
        backend = get_backend(device)
    except (RuntimeError, ValueError, TypeError):
        return None
    stats_fn = getattr(backend, "memory_stats", None)
    if stats_fn is None:
        return None
    stats = stats_fn()
    if isinstance(stats, dict):
        value = stats.get(TOTAL_KEY)
        if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
            return value
    return None


class NcclAccounting(object):
    """Reads every NCCL group the job has used (groups.seen: comm id -> group).

    Returns {comm id: bytes} per call, or None when no group reports. After a
    read raises, the group is not asked again (and the failure is logged once).
    """

    def __init__(self, groups, device):
        self._groups = groups
        self._device = device
        self._broken = set()

    def __call__(self):
        out = {}
        for comm, pg in list(self._groups.seen.items()):
            if comm in self._broken:
                continue
            try:
                total = backend_total(pg, self._device)
            except Exception as e:
                self._broken.add(comm)
                log.warning("collectiveattr_torch: NCCL memory_stats of %s failed (%r); not asked again", comm, e)
                continue
            if total is not None:
                out[comm] = total
        return out or None
