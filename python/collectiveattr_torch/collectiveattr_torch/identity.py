"""Who this process is: the resource attributes the processor identifies a rank by.

The processor reads job, rank, local rank, world size, host and device from
each item's attributes, then from its resource (docs/processor-contract.md
§2). Every point and span of one process shares one resource, so the
identity is computed once, at instrument(), from the arguments, torch.distributed
and the launcher's environment.
"""

import datetime
import os
import socket
import time

# When this module was imported: the process's start time where /proc cannot
# tell it (a training script imports the module within seconds of starting).
_IMPORTED_AT = time.time()

# Where the job id comes from, first present wins. An explicit argument comes
# before all of them; OTEL_RESOURCE_ATTRIBUTES is read as the OTel SDK reads it.
JOB_SOURCES = (
    ("env", "COLLECTIVEATTR_JOB_ID"),
    ("otel", "training.job.id"),
    ("env", "TORCHELASTIC_RUN_ID"),
    ("env", "SLURM_JOB_ID"),
    ("otel", "k8s.job.name"),
    ("env", "K8S_JOB_NAME"),
)

# torchrun's run id when --rdzv-id is not given: every such job would share it.
_UNSET_RUN_IDS = {"none"}

_RANK_ENV = ("RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK")
_WORLD_ENV = ("WORLD_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE")
_LOCAL_RANK_ENV = ("LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK")
# The node's name, as dcgm-exporter reports it, in Kubernetes (downward API:
# spec.nodeName); a pod's own host name is the pod's name.
_NODE_ENV = ("K8S_NODE_NAME", "NODE_NAME")


def parse_otel_resource_attributes(text):
    """OTEL_RESOURCE_ATTRIBUTES ("k=v,k2=v2", values percent-encoded) as a dict.

    A member without "=" or with an empty key is ignored, as the SDK does.
    """
    from urllib.parse import unquote

    out = {}
    for member in (text or "").split(","):
        key, sep, value = member.partition("=")
        key = key.strip()
        if not sep or not key:
            continue
        out[key] = unquote(value.strip())
    return out


def resolve_job_id(environ, explicit=None):
    """The job id and where it came from, by JOB_SOURCES precedence.

    Returns ("", "none") when no source names the job: the processor then
    files the data under the job "" (contract §2).
    """
    if explicit:
        return str(explicit), "argument"
    otel = parse_otel_resource_attributes(environ.get("OTEL_RESOURCE_ATTRIBUTES", ""))
    for kind, key in JOB_SOURCES:
        value = (otel.get(key) if kind == "otel" else environ.get(key, "")) or ""
        value = value.strip()
        if not value:
            continue
        if key == "TORCHELASTIC_RUN_ID" and value.lower() in _UNSET_RUN_IDS:
            continue
        if key == "SLURM_JOB_ID":
            array_job = environ.get("SLURM_ARRAY_JOB_ID", "").strip()
            array_task = environ.get("SLURM_ARRAY_TASK_ID", "").strip()
            if array_job and array_task:
                value = array_job + "_" + array_task
        return value, key
    return "", "none"


def _first_int(environ, keys):
    for key in keys:
        value = environ.get(key, "").strip()
        if value.isdigit():
            return int(value)
    return None


def physical_gpu_index(environ, cuda_index):
    """The NVML/DCGM index of CUDA device cuda_index, or None when unknown.

    Under CUDA_VISIBLE_DEVICES=2,3 CUDA's device 0 is the machine's GPU 2,
    the index dcgm-exporter labels its points with. Entries given as UUIDs
    (GPU-...) or MIG ids say nothing about the index.
    """
    if cuda_index is None:
        return None
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    if visible is None:
        return cuda_index
    entries = [e.strip() for e in visible.split(",") if e.strip()]
    if cuda_index >= len(entries) or not entries[cuda_index].isdigit():
        return None
    return int(entries[cuda_index])


def process_creation_time(pid=None, proc="/proc"):
    """The process's start time as OpenTelemetry's process.creation.time: ISO 8601, UTC.

    Read from Linux's /proc (the process's start in clock ticks after boot,
    plus the boot time); elsewhere, or when /proc cannot be read, the time
    this module was imported. With process.pid it tells this process from an
    earlier one with the same pid (a container restarted on the same node),
    so that the processor files a restarted rank's data as a new session.
    """
    start = _IMPORTED_AT
    try:
        with open(os.path.join(proc, str(pid if pid is not None else os.getpid()), "stat")) as f:
            # The command name (field 2) is in parentheses and may hold
            # spaces and parentheses: the fields after the last ")" are
            # field 3 (state) on; starttime is field 22.
            ticks = int(f.read().rsplit(")", 1)[1].split()[19])
        with open(os.path.join(proc, "stat")) as f:
            boot = next(int(line.split()[1]) for line in f if line.startswith("btime "))
        start = boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration, AttributeError):
        pass
    moment = datetime.datetime.fromtimestamp(start, datetime.timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def resource_attributes(environ, rank, world_size, job_id="", service_name=None,
                        local_rank=None, cuda_index=None, gpu_uuid=None, host=None, pid=None,
                        process_start=None):
    """The resource attribute dict of one rank, in the simulator's shape.

    rank and world_size come from torch.distributed; the rest from the
    environment unless given. process.pid and process.creation.time name
    this process: the processor's session of the rank's data, so that a
    restarted rank (a new process) is a new session. Attributes of OTEL_RESOURCE_ATTRIBUTES are
    kept (service.name, k8s.*, ...) and the identity ones set here win.
    """
    attrs = dict(parse_otel_resource_attributes(environ.get("OTEL_RESOURCE_ATTRIBUTES", "")))
    attrs["service.name"] = service_name or environ.get("OTEL_SERVICE_NAME") or attrs.get("service.name") or "pytorch-training"
    if job_id:
        attrs["training.job.id"] = job_id
    attrs["training.rank"] = int(rank)
    attrs["training.world_size"] = int(world_size)
    if local_rank is None:
        local_rank = _first_int(environ, _LOCAL_RANK_ENV)
    if local_rank is not None:
        attrs["training.local_rank"] = int(local_rank)
    node = next((environ[k].strip() for k in _NODE_ENV if environ.get(k, "").strip()), "")
    if node:
        attrs["k8s.node.name"] = node
    attrs["host.name"] = host or node or socket.gethostname()
    attrs["process.pid"] = int(pid if pid is not None else os.getpid())
    attrs["process.creation.time"] = process_start or process_creation_time(pid)
    gpu = physical_gpu_index(environ, cuda_index)
    if gpu is not None:
        attrs["gpu.index"] = gpu
    if gpu_uuid:
        attrs["gpu.uuid"] = gpu_uuid
    attrs["telemetry.sdk.name"] = "collectiveattr_torch"
    attrs["telemetry.sdk.language"] = "python"
    return attrs


def rank_from_env(environ):
    """Rank and world size from the launcher's environment (before or without torch.distributed)."""
    return _first_int(environ, _RANK_ENV), _first_int(environ, _WORLD_ENV)
