"""GPU memory sources and the sampler thread.

A memory source is a callable returning a MemoryReading (bytes, None for
what it does not know). The processor needs, per tick, the device's used
memory and the caching allocator's reserved bytes: their difference is the
hidden memory (NCCL buffers, CUDA context, workspaces) whose spikes it
attributes.

* allocator: torch.cuda.memory_reserved / memory_allocated of the rank's device;
* device: NVML (libnvidia-ml through ctypes) when it loads and the device can
  be named to it, else torch.cuda.mem_get_info. Both report the whole GPU
  (every process on it), which is what the hidden memory is measured against.

Where CUDA is absent (CPU tests) the caller passes its own source.
"""

import ctypes
import logging
import threading

from .otlp import MemoryReading, Sample

log = logging.getLogger("collectiveattr_torch")


class _NvmlMemory(ctypes.Structure):
    _fields_ = [("total", ctypes.c_ulonglong), ("free", ctypes.c_ulonglong), ("used", ctypes.c_ulonglong)]


class NvmlDevice(object):
    """One GPU's memory through NVML. lib is the loaded libnvidia-ml (a ctypes
    CDLL, or a stand-in with the same functions in tests)."""

    def __init__(self, lib, index=None, uuid=None):
        self._lib = lib
        self._handle = ctypes.c_void_p()
        if lib.nvmlInit_v2() != 0:
            raise OSError("nvmlInit_v2 failed")
        if uuid:
            rc = lib.nvmlDeviceGetHandleByUUID(uuid.encode(), ctypes.byref(self._handle))
        else:
            rc = lib.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(index), ctypes.byref(self._handle))
        if rc != 0:
            raise OSError("NVML has no device %s (error %d)" % (uuid or index, rc))
        buf = ctypes.create_string_buffer(96)
        self.uuid = buf.value.decode() if lib.nvmlDeviceGetUUID(self._handle, buf, ctypes.c_uint(96)) == 0 else None

    def read(self):
        m = _NvmlMemory()
        if self._lib.nvmlDeviceGetMemoryInfo(self._handle, ctypes.byref(m)) != 0:
            return None
        return int(m.used), int(m.free), int(m.total)


def open_nvml(environ, cuda_index, loader=ctypes.CDLL):
    """An NvmlDevice for CUDA device cuda_index, or None when NVML is absent or
    the device cannot be named to it (CUDA_VISIBLE_DEVICES holding MIG ids)."""
    from .identity import physical_gpu_index

    try:
        lib = loader("libnvidia-ml.so.1")
    except OSError:
        return None
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    uuid = None
    index = physical_gpu_index(environ, cuda_index)
    if index is None and visible is not None:
        entries = [e.strip() for e in visible.split(",") if e.strip()]
        if cuda_index < len(entries) and entries[cuda_index].startswith("GPU-"):
            uuid = entries[cuda_index]
    if index is None and uuid is None:
        return None
    try:
        return NvmlDevice(lib, index=index, uuid=uuid)
    except (OSError, AttributeError) as e:
        log.info("collectiveattr_torch: NVML unusable (%s); using torch.cuda.mem_get_info", e)
        return None


class TorchCudaMemory(object):
    """The rank's CUDA device: allocator counters from torch, device memory from
    NVML when given, else torch.cuda.mem_get_info."""

    def __init__(self, torch, device_index, nvml=None):
        self._cuda = torch.cuda
        self.device = device_index
        self.nvml = nvml

    def __call__(self):
        cuda, d = self._cuda, self.device
        reserved = int(cuda.memory_reserved(d))
        allocated = int(cuda.memory_allocated(d))
        used = free = total = None
        dev = self.nvml.read() if self.nvml is not None else None
        if dev is not None:
            used, free, total = dev
        else:
            free, total = (int(x) for x in cuda.mem_get_info(d))
            used = total - free
        return MemoryReading(reserved=reserved, allocated=allocated, device_used=used, device_free=free, device_total=total)


class Sampler(object):
    """Reads the memory source (and NCCL's accounting) every interval seconds
    on a daemon thread and hands each Sample to emit.

    A source that raises is counted and logged once; the thread keeps going.
    clock returns Unix nanoseconds; wait(timeout) returns True to stop.
    """

    def __init__(self, source, emit, interval, clock, accounting=None):
        if interval <= 0:
            raise ValueError("sample interval must be > 0 seconds, got %r" % (interval,))
        self.source, self.emit, self.interval, self.clock = source, emit, interval, clock
        self.accounting = accounting
        self.samples = 0
        self.errors = 0
        self._stop = threading.Event()
        self._thread = None

    def start(self):
        self._thread = threading.Thread(target=self._run, name="collectiveattr-sampler", daemon=True)
        self._thread.start()

    def tick(self):
        """Takes one sample. Never raises."""
        now = self.clock()
        try:
            reading = self.source() if self.source is not None else None
            accounting = self.accounting() if self.accounting is not None else None
        except Exception as e:
            self.errors += 1
            if self.errors == 1:
                log.warning("collectiveattr_torch: memory source failed (%r); further failures are counted only", e)
            return
        if reading is None and not accounting:
            return
        self.samples += 1
        self.emit(Sample(now, reading, accounting))

    def _run(self):
        self.tick()
        while not self._stop.wait(self.interval):
            self.tick()

    def stop(self, timeout):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)
