"""The workload environment and what of it is recorded (C6: environment delta, ordered
``PYTHONPATH``; secrets redacted) plus the host facts frozen with every attempt."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from pathlib import Path

from skgate import __version__
from skgate.model.request import RunRequest
from skgate.preflight import jobs
from skgate.proc.observe import boot_id

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_SECRET = re.compile(
    r"(TOKEN|PASSW(OR)?D|SECRET|CREDENTIAL|PRIVATE|COOKIE|SESSION|AUTH|(^|_)KEY($|_)|"
    r"APIKEY|ACCESSKEY|PASSPHRASE)",
    re.IGNORECASE,
)
REDACTED = "<redacted>"
#: Variables whose full value is recorded even when unchanged (what the compile sees).
_RELEVANT_PREFIXES = (
    "ASCEND_",
    "NPU_",
    "SUPERKERNEL_",
    "PYTHON",
    "TORCH",
    "HCCL_",
    "SKGATE_",
    "LD_",
    "OMP_",
)
_RELEVANT_NAMES = ("PATH", "VIRTUAL_ENV", "CONDA_PREFIX", "LOCAL_WORLD_SIZE", "WORLD_SIZE")


def is_secret(name: str) -> bool:
    return bool(_SECRET.search(name))


#: ``scheme://user:password@host``: the password part of a URL in any variable's value.
_URL_CREDENTIALS = re.compile(r"(?<=://)([^/@\s:]+):([^/@\s]+)@")


def _shown(name: str, value: str) -> str:
    if is_secret(name):
        return REDACTED
    return _URL_CREDENTIALS.sub(lambda m: f"{m.group(1)}:{REDACTED}@", value)


def env_delta(before: Mapping[str, str], after: Mapping[str, str]) -> dict[str, Any]:
    """Added / removed / changed variables; values of secret-looking names redacted."""
    added = {k: _shown(k, after[k]) for k in sorted(after) if k not in before}
    removed = sorted(k for k in before if k not in after)
    changed = {
        k: {"from": _shown(k, before[k]), "to": _shown(k, after[k])}
        for k in sorted(after)
        if k in before and before[k] != after[k]
    }
    redacted = sorted(k for k in set(added) | set(changed) | set(removed) if is_secret(k))
    return {"added": added, "removed": removed, "changed": changed, "redacted": redacted}


def relevant_env(env: Mapping[str, str]) -> dict[str, str]:
    return {
        k: _shown(k, env[k])
        for k in sorted(env)
        if k.startswith(_RELEVANT_PREFIXES) or k in _RELEVANT_NAMES
    }


def base_env(request: RunRequest, runner_env: Mapping[str, str]) -> dict[str, str]:
    env = dict(runner_env)
    env.update({str(k): str(v) for k, v in request.env.items()})
    for name in request.unset_env:
        env.pop(name, None)
    return env


def ordered_pythonpath(env: Mapping[str, str]) -> list[dict[str, Any]]:
    """The ``PYTHONPATH`` entries in order with existence (used when no scan ran)."""
    raw = env.get("PYTHONPATH", "")
    out = []
    for i, entry in enumerate(raw.split(os.pathsep) if raw else []):
        path = os.path.abspath(entry) if entry else entry
        out.append(
            {
                "index": i,
                "entry": entry,
                "path": path,
                "exists": bool(entry) and os.path.exists(path),
                "is_dir": bool(entry) and os.path.isdir(path),
            }
        )
    return out


def cpu_model() -> str | None:
    """The CPU model name (``/proc/cpuinfo``), or None where the kernel does not say."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                key, _, value = line.partition(":")
                # x86 says "model name"; some aarch64 kernels only "Model" or "Hardware".
                if key.strip() in ("model name", "Model", "Hardware"):
                    return value.strip() or None
    except OSError:
        return None
    return None


#: Where a CANN toolkit records its version, relative to its home (first match wins).
CANN_VERSION_FILES = ("version.cfg", "version.info", "../ascend_toolkit_install.info")


def cann_version(env: Mapping[str, str]) -> str | None:
    """The CANN toolkit version when the environment names a toolkit home that says it
    (C5: it changes compile behaviour, so attempts on different hosts must agree on it)."""
    for var in ("ASCEND_TOOLKIT_HOME", "ASCEND_HOME_PATH"):
        home = env.get(var)
        if not home:
            continue
        for rel in CANN_VERSION_FILES:
            try:
                text = (Path(home) / rel).read_text(encoding="utf-8", errors="replace")
            except OSError:
                continue
            for line in text.splitlines():
                key, sep, value = line.partition("=")
                if sep and key.strip().lower() in ("version", "toolkit_version"):
                    return value.strip().strip('"') or None
    return None


def host_facts(
    env: Mapping[str, str] | None = None, probed: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The host as recorded in ``controls.host``; ``probed``: :func:`jobs.probe_host`'s
    answer already taken for the jobs decision, recorded as the decision saw it (and
    not read from /proc and the cgroup files a second time, issue 29)."""
    # Imported here: base_env is needed before the runner's early work starts, this not.
    # The C module: ``socket.py`` converts its constants to enums at import (issue 29).
    import _socket as socket  # noqa: PLC0415

    uname = os.uname()
    facts: dict[str, Any] = {
        "hostname": socket.gethostname(),
        "kernel": f"{uname.sysname} {uname.release}",
        "kernel_version": uname.version,
        "machine": uname.machine,
        "boot_id": boot_id(),
        # platform.python_version()'s answer, without importing platform (issue 29).
        "runner_python": sys.version.split()[0],
        "skgate_version": __version__,
        "cpu_model": cpu_model(),
        "cann_version": cann_version(os.environ if env is None else env),
    }
    facts.update(jobs.probe_host() if probed is None else probed)
    return facts
