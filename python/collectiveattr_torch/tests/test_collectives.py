import types
import unittest

from collectiveattr_torch import collectives


class Tensor(object):
    def __init__(self, n, size=4):
        self.n, self.size = n, size

    def numel(self):
        return self.n

    def element_size(self):
        return self.size


class Future(object):
    def __init__(self):
        self.callbacks = []

    def add_done_callback(self, cb):
        self.callbacks.append(cb)

    def complete(self):
        for cb in self.callbacks:
            cb(self)


class Work(object):
    def __init__(self, has_future=True):
        self.future = Future() if has_future else None

    def get_future(self):
        if self.future is None:
            raise RuntimeError("Work::getFuture not implemented.")
        return self.future


class FakeDist(object):
    """torch.distributed and distributed_c10d of one rank, as far as the hooks use them."""

    def __init__(self, rank=1, world=4):
        self.rank, self.world = rank, world
        self.default = object()
        self.sub = object()  # members 1, 3
        self._pg_names = {self.default: "0", self.sub: "1"}
        self.calls = []
        self.works = []
        fake = self

        def all_reduce(tensor, op=None, group=None, async_op=False):
            fake.calls.append(("all_reduce", group))
            return fake._work(async_op)

        def broadcast(tensor, src, group=None, async_op=False):
            fake.calls.append(("broadcast", group))
            return fake._work(async_op)

        def reduce_scatter(output, input_list, op=None, group=None, async_op=False):
            fake.calls.append(("reduce_scatter", group))

        def all_gather_into_tensor(output_tensor, input_tensor, group=None, async_op=False):
            fake.calls.append(("all_gather_into_tensor", group))

        def _all_gather_base(output_tensor, input_tensor, group=None, async_op=False):
            return fake.all_gather_into_tensor(output_tensor, input_tensor, group, async_op)

        def barrier(group=None, async_op=False, device_ids=None):
            fake.calls.append(("barrier", group))

        def send(tensor, dst, group=None, tag=0):
            fake.calls.append(("send", dst))

        def recv(tensor, src=None, group=None, tag=0):
            fake.calls.append(("recv", src))
            if src == 99:
                raise RuntimeError("peer is gone")
            return 0

        def isend(tensor, dst, group=None, tag=0):
            fake.calls.append(("isend", dst))
            w = Work(has_future=False)
            return w

        for f in (all_reduce, broadcast, reduce_scatter, all_gather_into_tensor, _all_gather_base, barrier,
                  send, recv, isend):
            setattr(self, f.__name__, f)

    def _work(self, async_op):
        if not async_op:
            return None
        w = Work()
        self.works.append(w)
        return w

    def get_rank(self):
        return self.rank

    def get_world_size(self):
        return self.world

    def _get_default_group(self):
        return self.default

    def get_process_group_ranks(self, pg):
        return [3, 1] if pg is self.sub else list(range(self.world))

    def get_backend(self, pg):
        return "gloo"


def instrumented(rank=1):
    fake = FakeDist(rank)
    spans = []
    clock = iter(range(1000, 10 ** 6, 10)).__next__
    ids = iter((i, i) for i in range(1, 10 ** 6)).__next__
    rec = collectives.Recorder(collectives.Groups(fake, fake), spans.append, clock, ids)
    unpatch = collectives.patch(fake, fake, rec)
    return fake, spans, rec, unpatch


class RecorderTest(unittest.TestCase):
    def test_identity_of_collectives(self):
        fake, spans, rec, _ = instrumented()
        t = Tensor(256)  # 1 KiB
        fake.all_reduce(t)
        fake.all_reduce(t, group=fake.sub)
        fake.broadcast(t, 0)
        fake.all_reduce(t)
        fake.reduce_scatter(Tensor(64), [Tensor(64)] * 4, group=None)
        fake.barrier()
        got = [(s.op, s.comm_id, s.seq, s.message_bytes, s.ranks, s.backend) for s in spans]
        self.assertEqual(got, [
            ("all_reduce", "pg:0", 0, 1024, (0, 1, 2, 3), "gloo"),
            ("all_reduce", "pg:1", 0, 1024, (1, 3), "gloo"),
            ("broadcast", "pg:0", 0, 1024, (0, 1, 2, 3), "gloo"),  # its own counter
            ("all_reduce", "pg:0", 1, 1024, (0, 1, 2, 3), "gloo"),
            ("reduce_scatter", "pg:0", 0, 1024, (0, 1, 2, 3), "gloo"),
            ("barrier", "pg:0", 0, 0, (0, 1, 2, 3), "gloo"),
        ])
        for s in spans:
            self.assertLess(s.start_ns, s.end_ns)
            self.assertEqual((s.end_kind, s.async_op), ("return", False))

    def test_members_declared_once_per_communicator_and_interval(self):
        fake, spans, rec, _ = instrumented()
        t = Tensor(1)
        fake.all_reduce(t)
        fake.all_reduce(t, group=fake.sub)
        fake.broadcast(t, 0)  # pg:0 again: declared by its first all_reduce
        fake.recv(t)  # no identity: nothing to declare
        self.assertEqual([(s.comm_id, s.declare) for s in spans],
                         [("pg:0", True), ("pg:1", True), ("pg:0", False), (None, False)])
        # The clock (10 ns per call) passes the interval: pg:0 lists again, once.
        self.assertFalse(rec.declares("pg:0", spans[0].end_ns + collectives.DECLARE_INTERVAL_NS - 1))
        self.assertTrue(rec.declares("pg:0", spans[0].end_ns + collectives.DECLARE_INTERVAL_NS))
        self.assertFalse(rec.declares("pg:0", spans[0].end_ns + collectives.DECLARE_INTERVAL_NS + 1))

    def test_group_this_rank_is_not_in_records_nothing(self):
        fake, spans, _, _ = instrumented(rank=0)
        fake.all_reduce(Tensor(1), group=fake.sub)
        self.assertEqual(spans, [])
        self.assertEqual(fake.calls, [("all_reduce", fake.sub)], "the call still runs")

    def test_send_and_recv_share_the_pair_communicator(self):
        fake, spans, _, _ = instrumented(rank=1)
        fake.send(Tensor(2), 3)
        fake.recv(Tensor(2), 3)
        fake.send(Tensor(2), 0)
        fake.recv(Tensor(2))  # any source
        got = [(s.op, s.comm_id, s.seq, s.ranks, s.peer) for s in spans]
        self.assertEqual(got, [
            ("send", "pg:0:p2p:1-3", 0, (1, 3), 3),
            ("recv", "pg:0:p2p:1-3", 1, (1, 3), 3),
            ("send", "pg:0:p2p:0-1", 0, (0, 1), 0),
            ("recv", None, None, (0, 1, 2, 3), None),
        ])
        # The peer numbers the same transfers alike.
        peer, peer_spans, _, _ = instrumented(rank=3)
        peer.recv(Tensor(2), 1)
        peer.send(Tensor(2), 1)
        self.assertEqual([(s.comm_id, s.seq) for s in peer_spans], [("pg:0:p2p:1-3", 0), ("pg:0:p2p:1-3", 1)])

    def test_async_span_ends_at_completion(self):
        fake, spans, _, _ = instrumented()
        w = fake.all_reduce(Tensor(1), async_op=True)
        self.assertEqual(spans, [], "no span before the work completes")
        w.future.complete()
        self.assertEqual(len(spans), 1)
        self.assertEqual((spans[0].async_op, spans[0].end_kind), (True, "completion"))
        fake.isend(Tensor(1), 2)  # no future on this backend: ends at the return
        self.assertEqual((spans[1].op, spans[1].async_op, spans[1].end_kind), ("send", True, "return"))

    def test_nested_wrapped_call_is_one_span(self):
        fake, spans, _, _ = instrumented()
        fake._all_gather_base(Tensor(8), Tensor(2))
        self.assertEqual([(s.op, s.seq, s.message_bytes) for s in spans], [("all_gather", 0, 8)])

    def test_torch_errors_propagate_and_hook_errors_do_not(self):
        fake, spans, rec, _ = instrumented()
        with self.assertRaises(RuntimeError):
            fake.recv(Tensor(1), 99)
        rec.groups.describe = None  # the hook itself breaks
        fake.all_reduce(Tensor(1))
        self.assertEqual(rec.errors, 1)
        self.assertEqual(fake.calls[-1], ("all_reduce", None), "the collective still ran")

    def test_unpatch_restores_and_patch_is_idempotent(self):
        fake = FakeDist()
        original = fake.all_reduce
        rec = collectives.Recorder(collectives.Groups(fake, fake), lambda s: None, lambda: 1, lambda: (1, 1))
        unpatch = collectives.patch(fake, fake, rec)
        wrapped = fake.all_reduce
        self.assertIsNot(wrapped, original)
        self.assertIs(wrapped.__wrapped__, original)
        collectives.patch(fake, fake, rec)
        self.assertIs(fake.all_reduce, wrapped, "a wrapper is not wrapped again")
        unpatch()
        self.assertIs(fake.all_reduce, original)

    def test_parent_from_the_current_span(self):
        fake = FakeDist()
        spans = []
        rec = collectives.Recorder(collectives.Groups(fake, fake), spans.append, iter(range(10, 99)).__next__,
                                   lambda: (5, 6), parent=lambda: (0xAA, 0xBB))
        collectives.patch(fake, fake, rec)
        fake.barrier()
        self.assertEqual((spans[0].trace_id, spans[0].span_id, spans[0].parent_span_id), (0xAA, 6, 0xBB))


class TensorBytesTest(unittest.TestCase):
    def test_sizes(self):
        self.assertEqual(collectives.tensor_bytes(Tensor(10, 2)), 20)
        self.assertEqual(collectives.tensor_bytes([Tensor(1, 8), Tensor(2, 4)]), 16)
        self.assertEqual(collectives.tensor_bytes(None), 0)
        self.assertEqual(collectives.tensor_bytes("x"), 0)


if __name__ == "__main__":
    unittest.main()
