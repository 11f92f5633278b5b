"""Instrument a PyTorch distributed job for the collectiveattr processor.

    import torch.distributed as dist
    import collectiveattr_torch

    dist.init_process_group("nccl")
    collectiveattr_torch.instrument()

sends, over OTLP/HTTP JSON to the collector (OTEL_EXPORTER_OTLP_ENDPOINT,
default http://localhost:4318): GPU memory gauges sampled on a background
thread, one span per collective with its identity, NCCL's per-communicator
accounting where torch reports it, all under the rank's identity. See
README.md next to this package.

Nothing here raises into the training loop: instrument() logs and returns a
disabled handle when it cannot start (strict=True raises instead), hooks
count their own failures, and a collector that is away costs dropped,
counted items, never a blocked step.
"""

import atexit
import logging
import os
import random
import threading
import time

from . import accounting as _accounting
from . import collectives as _collectives
from . import config as _config
from . import identity as _identity
from . import memory as _memory
from .config import ConfigError
from .exporter import Exporter
from .otlp import MemoryReading

__all__ = ["instrument", "Instrumentation", "MemoryReading", "ConfigError", "__version__"]
__version__ = "0.1.0"

log = logging.getLogger("collectiveattr_torch")

_lock = threading.Lock()
_active = None


class Instrumentation(object):
    """The handle instrument() returns: stats() and shutdown()."""

    def __init__(self, exporter=None, sampler=None, recorder=None, unpatch=None, resource=None, error=None):
        self.exporter, self.sampler, self.recorder = exporter, sampler, recorder
        self._unpatch = unpatch
        self.resource = resource or {}
        self.error = error
        self._closed = False

    @property
    def enabled(self):
        return self.exporter is not None and not self._closed

    def stats(self):
        """Counters since instrument(): what was recorded, sent and dropped."""
        e, s, r = self.exporter, self.sampler, self.recorder
        if e is None:
            return {}
        return {
            "spans_recorded": r.spans if r else 0,
            "samples_recorded": s.samples if s else 0,
            "spans_sent": e.sent_spans,
            "samples_sent": e.sent_samples,
            "dropped_queue_full": e.spans.dropped + e.samples.dropped,
            "dropped_export_failed": e.spans_failed + e.samples_failed,
            "export_requests_failed": e.requests_failed,
            "hook_errors": r.errors if r else 0,
            "memory_source_errors": s.errors if s else 0,
        }

    def flush(self):
        """Sends what is queued now (blocks up to the export timeout per request)."""
        if self.exporter is not None:
            self.exporter.flush()

    def shutdown(self, timeout=5.0):
        """Restores torch.distributed, stops sampling and sends what is queued,
        waiting at most timeout seconds. Idempotent; never raises."""
        global _active
        if self._closed:
            return
        self._closed = True
        try:
            if self._unpatch is not None:
                self._unpatch()
            deadline = time.monotonic() + timeout
            if self.sampler is not None:
                self.sampler.stop(max(0.0, deadline - time.monotonic()))
            if self.exporter is not None:
                self.exporter.stop(max(0.0, deadline - time.monotonic()))
        except Exception:
            log.exception("collectiveattr_torch: shutdown failed")
        with _lock:
            if _active is self:
                _active = None


def _ids():
    rng = random.Random(os.urandom(16))
    return lambda: (rng.getrandbits(128) or 1, rng.getrandbits(64) or 1)


def _otel_parent():
    """The current OpenTelemetry span as (trace id, span id), when the OTel API is
    installed and a span is active: collective spans then join the application's
    trace under its current (phase) span. None otherwise."""
    try:
        from opentelemetry import trace
    except ImportError:
        return None

    def parent():
        ctx = trace.get_current_span().get_span_context()
        return (ctx.trace_id, ctx.span_id) if ctx.is_valid else None

    return parent


def instrument(endpoint=None, job_id=None, service_name=None, sample_interval=None, export_interval=None,
               memory_source=None, accounting_source=None, device=None, headers=None, timeout=None,
               queue_size=None, nccl_accounting=None, clock=time.time_ns, strict=False):
    """Starts instrumenting this rank; call once, after init_process_group.

    endpoint        OTLP/HTTP base URL (else OTEL_EXPORTER_OTLP_*_ENDPOINT / _ENDPOINT, else localhost:4318)
    job_id          the job (else COLLECTIVEATTR_JOB_ID, OTEL_RESOURCE_ATTRIBUTES training.job.id,
                    TORCHELASTIC_RUN_ID, SLURM_JOB_ID, k8s.job.name, K8S_JOB_NAME)
    sample_interval seconds between memory samples (COLLECTIVEATTR_SAMPLE_INTERVAL, default 0.1)
    export_interval seconds between sends (COLLECTIVEATTR_EXPORT_INTERVAL, default 1)
    memory_source   a callable returning MemoryReading; default: the rank's CUDA device, none without CUDA
    accounting_source a callable returning {comm id: bytes}; default: ProcessGroupNCCL memory_stats
    device          the CUDA device index (default torch.cuda.current_device())

    Returns an Instrumentation. A second call returns the first one's handle.
    """
    global _active
    with _lock:
        if _active is not None:
            return _active
        try:
            handle = _start(endpoint, job_id, service_name, sample_interval, export_interval, memory_source,
                            accounting_source, device, headers, timeout, queue_size, nccl_accounting, clock)
        except Exception as e:
            if strict:
                raise
            log.error("collectiveattr_torch: not instrumenting this job: %s", e)
            return Instrumentation(error=str(e))
        if handle.enabled:
            _active = handle
            atexit.register(handle.shutdown)
        return handle


def _start(endpoint, job_id, service_name, sample_interval, export_interval, memory_source, accounting_source,
           device, headers, timeout, queue_size, nccl_accounting, clock):
    environ = os.environ
    s = _config.settings(environ, endpoint=endpoint, headers=headers, timeout=timeout,
                         sample_interval=sample_interval, export_interval=export_interval,
                         queue_size=queue_size, nccl_accounting=nccl_accounting)
    if not s.enabled:
        return Instrumentation(error="COLLECTIVEATTR_DISABLED is set")

    import torch
    import torch.distributed as dist
    from torch.distributed import distributed_c10d as c10d

    if not (dist.is_available() and dist.is_initialized()):
        raise RuntimeError("torch.distributed is not initialized: call instrument() after init_process_group")

    cuda = torch.cuda.is_available()
    cuda_index = None
    nvml = None
    if cuda:
        cuda_index = int(device) if device is not None else torch.cuda.current_device()
        if memory_source is None:
            nvml = _memory.open_nvml(environ, cuda_index)
            memory_source = _memory.TorchCudaMemory(torch, cuda_index, nvml)
    elif memory_source is None:
        log.warning("collectiveattr_torch: no CUDA device and no memory_source: memory is not sampled")

    job, job_from = _identity.resolve_job_id(environ, job_id)
    if not job:
        log.warning("collectiveattr_torch: no job id (set COLLECTIVEATTR_JOB_ID or launch with torchrun/Slurm)")
    resource = _identity.resource_attributes(
        environ, dist.get_rank(), dist.get_world_size(), job_id=job, service_name=service_name,
        cuda_index=cuda_index, gpu_uuid=nvml.uuid if nvml is not None else None)

    exporter = Exporter(s.traces_url, s.metrics_url, resource, headers=s.headers, interval=s.export_interval,
                        timeout=s.timeout, queue_size=s.queue_size, version=__version__)
    groups = _collectives.Groups(dist, c10d)
    recorder = _collectives.Recorder(groups, exporter.add_span, clock, _ids(), parent=_otel_parent())
    if accounting_source is None and cuda and s.nccl_accounting:
        accounting_source = _accounting.NcclAccounting(groups, torch.device("cuda", cuda_index))
    sampler = None
    if memory_source is not None or accounting_source is not None:
        sampler = _memory.Sampler(memory_source, exporter.add_sample, s.sample_interval, clock,
                                  accounting=accounting_source)
    unpatch = _collectives.patch(dist, c10d, recorder)
    exporter.start()
    if sampler is not None:
        sampler.start()
    log.info("collectiveattr_torch: job %r (from %s), rank %d/%d, sending to %s",
             job, job_from, dist.get_rank(), dist.get_world_size(), s.traces_url.rsplit("/v1/", 1)[0])
    return Instrumentation(exporter, sampler, recorder, unpatch, resource)
