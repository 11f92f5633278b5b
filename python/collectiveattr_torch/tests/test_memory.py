import ctypes
import time
import types
import unittest

from collectiveattr_torch import memory
from collectiveattr_torch.otlp import MemoryReading


class SamplerTest(unittest.TestCase):
    def test_tick_reads_source_and_accounting_at_one_time(self):
        got = []
        clock = iter([100, 200]).__next__
        s = memory.Sampler(lambda: MemoryReading(reserved=1, device_used=3), got.append, 0.1, clock,
                           accounting=lambda: {"pg:0": 9})
        s.tick()
        s.tick()
        self.assertEqual([(x.time_ns, x.reading.device_used, x.accounting) for x in got],
                         [(100, 3, {"pg:0": 9}), (200, 3, {"pg:0": 9})])
        self.assertEqual(s.samples, 2)

    def test_failing_source_is_counted_not_raised(self):
        got = []

        def broken():
            raise RuntimeError("CUDA error")

        s = memory.Sampler(broken, got.append, 0.1, lambda: 1)
        with self.assertLogs("collectiveattr_torch", "WARNING"):
            s.tick()
        s.tick()
        self.assertEqual((s.errors, got), (2, []))

    def test_interval_must_be_positive(self):
        with self.assertRaises(ValueError):
            memory.Sampler(None, print, 0, lambda: 1)

    def test_thread_samples_and_stops(self):
        got = []
        s = memory.Sampler(lambda: MemoryReading(reserved=1), got.append, 0.01, lambda: 1)
        s.start()
        deadline = time.monotonic() + 30
        while len(got) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        s.stop(30)
        self.assertFalse(s._thread.is_alive())
        n = len(got)
        self.assertGreaterEqual(n, 3)
        time.sleep(0.05)
        self.assertEqual(len(got), n, "no sample after stop")


class FakeNvml(object):
    """libnvidia-ml's functions used, writing through the ctypes pointers as the C library does."""

    def __init__(self, used=3, free=7, uuid=b"GPU-1234"):
        self.used, self.free, self.uuid, self.asked = used, free, uuid, None

    def nvmlInit_v2(self):
        return 0

    def nvmlDeviceGetHandleByIndex_v2(self, index, handle):
        self.asked = ("index", index.value)
        handle._obj.value = 0x1000
        return 0

    def nvmlDeviceGetHandleByUUID(self, uuid, handle):
        self.asked = ("uuid", uuid)
        handle._obj.value = 0x2000
        return 0

    def nvmlDeviceGetUUID(self, handle, buf, n):
        ctypes.memmove(buf, self.uuid + b"\0", len(self.uuid) + 1)
        return 0

    def nvmlDeviceGetMemoryInfo(self, handle, mem):
        m = mem._obj
        m.total, m.free, m.used = self.used + self.free, self.free, self.used
        return 0


class NvmlTest(unittest.TestCase):
    def test_reads_memory_and_uuid(self):
        lib = FakeNvml()
        dev = memory.open_nvml({"CUDA_VISIBLE_DEVICES": "5,6"}, 1, loader=lambda name: lib)
        self.assertEqual(lib.asked, ("index", 6))
        self.assertEqual(dev.uuid, "GPU-1234")
        self.assertEqual(dev.read(), (3, 7, 10))

    def test_uuid_in_visible_devices(self):
        lib = FakeNvml()
        memory.open_nvml({"CUDA_VISIBLE_DEVICES": "GPU-aa,GPU-bb"}, 1, loader=lambda name: lib)
        self.assertEqual(lib.asked, ("uuid", b"GPU-bb"))

    def test_absent_library(self):
        def missing(name):
            raise OSError(name + ": cannot open shared object file")

        self.assertIsNone(memory.open_nvml({}, 0, loader=missing))

    def test_mig_device_is_not_guessed(self):
        self.assertIsNone(memory.open_nvml({"CUDA_VISIBLE_DEVICES": "MIG-1"}, 0, loader=lambda n: FakeNvml()))


class TorchCudaMemoryTest(unittest.TestCase):
    def fake_torch(self):
        calls = []
        cuda = types.SimpleNamespace(
            memory_reserved=lambda d: calls.append(("reserved", d)) or 100,
            memory_allocated=lambda d: 60,
            mem_get_info=lambda d: (700, 1000),
        )
        return types.SimpleNamespace(cuda=cuda), calls

    def test_device_from_mem_get_info_without_nvml(self):
        torch, calls = self.fake_torch()
        r = memory.TorchCudaMemory(torch, 2)()
        self.assertEqual(r, MemoryReading(reserved=100, allocated=60, device_used=300, device_free=700, device_total=1000))
        self.assertEqual(calls, [("reserved", 2)])

    def test_device_from_nvml(self):
        torch, _ = self.fake_torch()
        nvml = types.SimpleNamespace(read=lambda: (5, 15, 20))
        r = memory.TorchCudaMemory(torch, 0, nvml)()
        self.assertEqual((r.device_used, r.device_free, r.device_total, r.reserved), (5, 15, 20, 100))


if __name__ == "__main__":
    unittest.main()
