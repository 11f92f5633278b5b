"""Wrapping torch.distributed's collective functions: one span per call.

Each wrapped call gets, before it runs, its collective identity
(docs/evidence-mode.md §2.1): the communicator (the process group), the op,
the op's sequence number on that communicator, the message size and the
members' global ranks. Every member numbers the same op alike because
torch.distributed requires every member to issue a group's collectives in
the same order.

* Sequence numbers count per (communicator, op), as NCCL numbers each
  collective type of a communicator on its own counter; the processor keys
  a collective by (communicator, op, sequence number).
* A send/recv belongs to the pair's own communicator, "<group>:p2p:<lo>-<hi>"
  (NCCL's process group also gives each pair its own communicator), both
  directions on one counter, so the sender's and the receiver's spans name
  the same transfer. A recv from any source has no identity.
* Message size: the bytes this rank sends into the op (the input tensor; the
  whole input list of a reduce_scatter or all_to_all; 0 for a barrier).

The span runs from the call to its return; for async_op=True (and isend /
irecv) it ends when the work's future completes, when the installed torch
gives work handles a future, else at the return.
"""

import inspect
import threading

from .otlp import CollectiveSpan

# How often a communicator's span lists its members again after its first
# (CollectiveSpan.declare): a collector that restarted without its state, or a
# declaration lost in a full export queue, learns the membership within this.
DECLARE_INTERVAL_NS = 60 * 10 ** 9

# Wrapped function name -> the op it is (NCCL's collective names).
OPS = {
    "all_reduce": "all_reduce",
    "broadcast": "broadcast",
    "reduce": "reduce",
    "all_gather": "all_gather",
    "all_gather_into_tensor": "all_gather",
    "_all_gather_base": "all_gather",
    "reduce_scatter": "reduce_scatter",
    "reduce_scatter_tensor": "reduce_scatter",
    "_reduce_scatter_base": "reduce_scatter",
    "all_to_all": "all_to_all",
    "all_to_all_single": "all_to_all",
    "gather": "gather",
    "scatter": "scatter",
    "barrier": "barrier",
    "monitored_barrier": "barrier",
    "send": "send",
    "recv": "recv",
    "isend": "send",
    "irecv": "recv",
}

# The argument whose tensors are this rank's input, per wrapped function.
_INPUT_ARG = {
    "all_reduce": "tensor", "broadcast": "tensor", "reduce": "tensor",
    "all_gather": "tensor", "all_gather_into_tensor": "input_tensor", "_all_gather_base": "input_tensor",
    "reduce_scatter": "input_list", "reduce_scatter_tensor": "input", "_reduce_scatter_base": "input",
    "all_to_all": "input_tensor_list", "all_to_all_single": "input",
    "gather": "tensor", "scatter": "tensor",
    "send": "tensor", "recv": "tensor", "isend": "tensor", "irecv": "tensor",
}

_ALWAYS_ASYNC = {"isend", "irecv"}


def tensor_bytes(value):
    """Bytes of a tensor or of a list of tensors; 0 for anything else."""
    if value is None:
        return 0
    if isinstance(value, (list, tuple)):
        return sum(tensor_bytes(v) for v in value)
    try:
        return int(value.numel()) * int(value.element_size())
    except AttributeError:
        return 0


class Signature(object):
    """Where a wrapped function takes its arguments, found once at wrap time."""

    def __init__(self, fn, name):
        params = list(inspect.signature(fn).parameters)
        self.name = name
        self.op = OPS[name]
        self._pos = {p: i for i, p in enumerate(params)}
        self._defaults = {p: v.default for p, v in inspect.signature(fn).parameters.items()
                          if v.default is not inspect.Parameter.empty}
        self.input_arg = _INPUT_ARG.get(name)
        self.peer_arg = "dst" if self.op == "send" else "src" if self.op == "recv" else None

    def arg(self, args, kwargs, name):
        if name in kwargs:
            return kwargs[name]
        i = self._pos.get(name)
        if i is not None and i < len(args):
            return args[i]
        return self._defaults.get(name)


class Groups(object):
    """Names and members of process groups, looked up once per group.

    c10d is torch.distributed.distributed_c10d. The communicator id of a group
    is "pg:<group name>": c10d gives every member the same name for a group
    (new_group must be called by all ranks in the same order).
    """

    def __init__(self, dist, c10d):
        self._dist, self._c10d = dist, c10d
        self._cache = {}
        self.world_size = dist.get_world_size()
        self.rank = dist.get_rank()
        self.seen = {}  # comm id -> process group, for NCCL's accounting

    def describe(self, group):
        """(comm id, backend, members tuple, whether this rank is a member) of group
        (None: the default group)."""
        key = group
        hit = self._cache.get(key)
        if hit is not None:
            return hit
        c10d = self._c10d
        pg = group if group is not None else c10d._get_default_group()
        name = self._group_name(pg)
        try:
            members = tuple(sorted(int(r) for r in self._dist.get_process_group_ranks(pg)))
        except (AttributeError, RuntimeError, KeyError, ValueError):
            ranks = getattr(c10d, "_pg_group_ranks", {}).get(pg)
            members = tuple(sorted(ranks)) if ranks else tuple(range(self.world_size))
        try:
            backend = str(self._dist.get_backend(pg))
        except (RuntimeError, ValueError, AttributeError):
            backend = ""
        hit = ("pg:" + name, backend, members, self.rank in members)
        self._cache[key] = hit
        self.seen[hit[0]] = pg
        return hit

    def _group_name(self, pg):
        name = getattr(pg, "group_name", None)
        if isinstance(name, str) and name:
            return name
        names = getattr(self._c10d, "_pg_names", None)
        if names is None:
            world = getattr(self._c10d, "_world", None)
            names = getattr(world, "pg_names", {}) if world is not None else {}
        name = names.get(pg)
        if name:
            return str(name)
        # 1.13 names the default group "" when init_process_group got no group_name.
        return "0" if pg is self._c10d._get_default_group() else "unnamed-%x" % id(pg)


class Recorder(object):
    """Turns wrapped calls into CollectiveSpans and hands them to emit.

    ids() returns a fresh (trace id, span id) pair; parent() the current
    (trace id, span id) to nest under, or None. clock returns Unix ns.
    """

    def __init__(self, groups, emit, clock, ids, parent=None):
        self.groups, self.emit, self.clock, self.ids = groups, emit, clock, ids
        self.parent = parent
        self._seq = {}
        self._declared = {}  # comm id -> time its members were last listed
        self._seq_lock = threading.Lock()
        self._local = threading.local()
        self.spans = 0
        self.errors = 0

    def next_seq(self, comm, op):
        key = (comm, "send/recv" if op in ("send", "recv") else op)
        with self._seq_lock:
            n = self._seq.get(key, 0)
            self._seq[key] = n + 1
        return n

    def declares(self, comm, now_ns):
        """Whether a span of comm ending at now_ns lists the members: the
        communicator's first span, and the first after each DECLARE_INTERVAL_NS.
        A span without identity lists none (nothing could take them up)."""
        if comm is None:
            return False
        with self._seq_lock:
            last = self._declared.get(comm)
            if last is not None and now_ns - last < DECLARE_INTERVAL_NS:
                return False
            self._declared[comm] = now_ns
        return True

    def identity(self, sig, args, kwargs):
        """(op, backend, comm id, seq, message bytes, members, peer), or None when
        this rank does not take part (a group it is not in)."""
        comm, backend, members, member = self.groups.describe(sig.arg(args, kwargs, "group"))
        if not member:
            return None
        rank = self.groups.rank
        msg = tensor_bytes(sig.arg(args, kwargs, sig.input_arg)) if sig.input_arg else 0
        peer = None
        if sig.peer_arg is not None:
            peer = sig.arg(args, kwargs, sig.peer_arg)
            if peer is None:  # recv from any source: no pair, no identity
                return (sig.op, backend, None, None, msg, members, None)
            peer = int(peer)
            lo, hi = min(rank, peer), max(rank, peer)
            p2p = "%s:p2p:%d-%d" % (comm, lo, hi)
            return (sig.op, backend, p2p, self.next_seq(p2p, sig.op), msg, (lo, hi), peer)
        return (sig.op, backend, comm, self.next_seq(comm, sig.op), msg, members, None)

    def wrap(self, fn, name):
        sig = Signature(fn, name)
        recorder = self

        def wrapper(*args, **kwargs):
            local = recorder._local
            if getattr(local, "inside", False):  # a wrapped function calling another
                return fn(*args, **kwargs)
            ident = parent = None
            try:
                ident = recorder.identity(sig, args, kwargs)
                parent = recorder.parent() if recorder.parent is not None else None
            except Exception:
                recorder.errors += 1
                ident = None
            local.inside = True
            start = recorder.clock()
            try:
                result = fn(*args, **kwargs)
            finally:
                local.inside = False
            if ident is not None:
                recorder._finish(sig, args, kwargs, ident, parent, start, result)
            return result

        wrapper.__wrapped__ = fn
        wrapper.__name__ = getattr(fn, "__name__", name)
        wrapper.__doc__ = getattr(fn, "__doc__", None)
        wrapper._collectiveattr = True
        return wrapper

    def _finish(self, sig, args, kwargs, ident, parent, start, result):
        """Emits the span now, or when the async work completes. Never raises."""
        try:
            is_async = sig.name in _ALWAYS_ASYNC or bool(sig.arg(args, kwargs, "async_op"))
            if is_async and result is not None and hasattr(result, "get_future"):
                try:
                    fut = result.get_future()
                except RuntimeError:  # this backend's work has no future
                    fut = None
                if fut is not None:
                    fut.add_done_callback(lambda _f: self._emit(ident, parent, start, self.clock(), True, "completion"))
                    return
            self._emit(ident, parent, start, self.clock(), is_async, "return")
        except Exception:
            self.errors += 1

    def _emit(self, ident, parent, start, end, is_async, end_kind):
        try:
            op, backend, comm, seq, msg, members, peer = ident
            trace_id, span_id = self.ids()
            parent_span = None
            if parent is not None:
                trace_id, parent_span = parent
            self.spans += 1
            self.emit(CollectiveSpan(op, backend, start, end, comm, seq, msg, members, peer, is_async,
                                     end_kind, trace_id, span_id, parent_span, self.declares(comm, end)))
        except Exception:
            self.errors += 1


def wrappable(c10d):
    """The names in OPS that the installed torch.distributed defines."""
    return [n for n in OPS if callable(getattr(c10d, n, None))]


def patch(dist, c10d, recorder):
    """Replaces each collective function in torch.distributed and
    distributed_c10d by its wrapper; returns a function that restores them."""
    restore = []
    for name in wrappable(c10d):
        original = getattr(c10d, name)
        if getattr(original, "_collectiveattr", False):
            continue
        wrapped = recorder.wrap(original, name)
        for module in (c10d, dist):
            if getattr(module, name, None) is original:
                setattr(module, name, wrapped)
                restore.append((module, name, original))

    def unpatch():
        for module, name, original in restore:
            setattr(module, name, original)

    return unpatch
