"""Settings from instrument()'s arguments and the environment.

An argument wins over its environment variable, which wins over the default.
The endpoint variables are the OpenTelemetry exporter's own, so a job already
configured for an OTel SDK sends to the same collector.
"""

import collections
from urllib.parse import unquote

DEFAULT_ENDPOINT = "http://localhost:4318"

Settings = collections.namedtuple(
    "Settings",
    "enabled traces_url metrics_url headers timeout sample_interval export_interval queue_size nccl_accounting")


class ConfigError(ValueError):
    """A setting with a value outside its range; the message names the setting."""


def _pick(environ, key, name, arg):
    """The argument when given, else the variable; and the name to report it by."""
    if arg is not None:
        return arg, name
    return environ.get(key), key


def _float(value, where, default, minimum):
    if value is None or value == "":
        return default
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise ConfigError("%s: %r is not a number" % (where, value))
    if not f > minimum:
        raise ConfigError("%s: %r must be > %g" % (where, value, minimum))
    return f


def _int(value, where, default, minimum):
    if value is None or value == "":
        return default
    try:
        n = int(value)
    except (TypeError, ValueError):
        raise ConfigError("%s: %r is not an integer" % (where, value))
    if n < minimum:
        raise ConfigError("%s: %r must be >= %d" % (where, value, minimum))
    return n


def _flag(value, where, default):
    if isinstance(value, bool):
        return value
    value = (value or "").strip().lower()
    if value == "":
        return default
    if value in ("1", "true", "yes", "on"):
        return True
    if value in ("0", "false", "no", "off"):
        return False
    raise ConfigError("%s: %r is not a boolean (true/false, 1/0)" % (where, value))


def parse_headers(text):
    """OTEL_EXPORTER_OTLP_HEADERS ("k=v,k2=v2", values percent-encoded)."""
    out = {}
    for member in (text or "").split(","):
        key, sep, value = member.partition("=")
        if sep and key.strip():
            out[key.strip()] = unquote(value.strip())
    return out


def _signal_url(environ, endpoint, signal):
    """The URL of one signal: the argument (a base URL), else the signal's own
    variable (a full URL, used as is), else OTEL_EXPORTER_OTLP_ENDPOINT (a base)."""
    if endpoint:
        base = endpoint
    else:
        own = environ.get("OTEL_EXPORTER_OTLP_%s_ENDPOINT" % signal.upper(), "").strip()
        if own:
            return own
        base = environ.get("OTEL_EXPORTER_OTLP_ENDPOINT", "").strip() or DEFAULT_ENDPOINT
    if "://" not in base:
        raise ConfigError("endpoint: %r is no URL (http://host:4318)" % (base,))
    return base.rstrip("/") + "/v1/" + signal


def settings(environ, endpoint=None, headers=None, timeout=None, sample_interval=None,
             export_interval=None, queue_size=None, nccl_accounting=None):
    """Settings of one instrument() call; raises ConfigError naming a bad setting."""
    if timeout is not None:
        seconds = _float(timeout, "timeout", 2.0, 0)
    else:  # the OTel variable is in milliseconds
        seconds = _float(environ.get("OTEL_EXPORTER_OTLP_TIMEOUT"), "OTEL_EXPORTER_OTLP_TIMEOUT", 2000.0, 0) / 1000.0
    hdrs = parse_headers(environ.get("OTEL_EXPORTER_OTLP_HEADERS", ""))
    hdrs.update(headers or {})
    return Settings(
        enabled=not _flag(environ.get("COLLECTIVEATTR_DISABLED"), "COLLECTIVEATTR_DISABLED", False),
        traces_url=_signal_url(environ, endpoint, "traces"),
        metrics_url=_signal_url(environ, endpoint, "metrics"),
        headers=hdrs,
        timeout=seconds,
        sample_interval=_float(*_pick(environ, "COLLECTIVEATTR_SAMPLE_INTERVAL", "sample_interval", sample_interval), default=0.1, minimum=0),
        export_interval=_float(*_pick(environ, "COLLECTIVEATTR_EXPORT_INTERVAL", "export_interval", export_interval), default=1.0, minimum=0),
        queue_size=_int(*_pick(environ, "COLLECTIVEATTR_QUEUE_SIZE", "queue_size", queue_size), default=65536, minimum=1),
        nccl_accounting=_flag(*_pick(environ, "COLLECTIVEATTR_NCCL_ACCOUNTING", "nccl_accounting", nccl_accounting), default=True),
    )
