"""Helpers shared by the simulator programs: process names, markers, /proc facts.

Standalone on purpose (stdlib only, nothing from the gate): the gate must be tested
against a simulator it does not share code with, as it will meet real CANN that way.
Every ``opc`` worker imports this module, so it keeps its imports few (no pathlib,
dataclasses or ctypes at start): a worker costs about one bare interpreter start.
"""

from __future__ import annotations

import json
import os
import sys
import time

ENV_MARKERS = "SKGATE_SIM_MARKERS"
ENV_OPC_SECONDS = "SKGATE_SIM_OPC_SECONDS"
ENV_HOOK_LOADED = "SKGATE_SIM_HOOK_LOADED"
ENV_CACHE_SEED = "SKGATE_SIM_CACHE_SEED"
ENV_PROFILE = "SKGATE_SIM_PROFILE"
ENV_READY_FD = "SKGATE_SIM_READY_FD"
ENV_PROFILER_SCHEDULE = "SKGATE_PROFILER_SCHEDULE"
ENV_JOBS = "NPU_STATIC_KERNEL_COMPILE_JOBS"
ENV_ASCEND_HOME = "ASCEND_HOME_PATH"
ENV_SAVE_KERNEL_META = "ASCEND_OP_COMPILE_SAVE_KERNEL_META"
ENV_PROF_SK = "ASCEND_PROF_SK_ON"
#: A stand-in for a changed kernel (a replaced vendor ``.o``, kernel source): its value is
#: built into every kernel object and so into the ``.run``. torchair's cache key does not
#: cover it, as it covers no ``.o`` content (docs/cann-static-compile.md, 5b).
ENV_KERNEL_REVISION = "SKGATE_SIM_KERNEL_REVISION"
#: Prefix for the names the sim's compilers show (argv[0] and comm), e.g. ``sk_`` gives
#: ``sk_op_compiler`` / ``sk_opc``: tests on a shared machine name their own compilers
#: and never meet another checkout's ``opc`` as a foreign workload (C4).
ENV_PROGRAM_PREFIX = "SKGATE_SIM_PROGRAM_PREFIX"

DEFAULT_OPC_SECONDS = 0.05

#: The directory of this package: the bootstrap ``_entry.py`` lives here.
SIM_DIR = os.path.dirname(os.path.abspath(__file__))
ENTRY = os.path.join(SIM_DIR, "_entry.py")

_PR_SET_NAME = 15


def set_comm(name: str) -> None:
    """Set this process's name (``/proc/<pid>/stat`` comm) as the real binary would show it.

    The gate recognises compilers by name (C4: foreign ``opc`` / ``op_compiler`` are
    recorded and never touched), so the simulator must look like them.
    """
    raw = (os.environ.get(ENV_PROGRAM_PREFIX, "") + name).encode()[:15]
    # Writing /proc/self/comm is prctl(PR_SET_NAME) without the cost of importing ctypes
    # in every worker; ctypes is the fallback.
    try:
        with open("/proc/self/comm", "wb") as fh:
            fh.write(raw)
        return
    except OSError:
        pass
    try:
        import ctypes  # noqa: PLC0415 - fallback only; keeps worker start-up cheap

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_NAME, ctypes.c_char_p(raw), 0, 0, 0)
    except (OSError, AttributeError):
        pass


def start_ticks(pid: int | None = None) -> int:
    """Field 22 of ``/proc/<pid>/stat``: start time in clock ticks since boot (0 if unknown)."""
    try:
        with open(f"/proc/{pid or os.getpid()}/stat", "rb") as fh:
            raw = fh.read()
        return int(raw[raw.rfind(b")") + 2 :].split()[19])
    except (OSError, ValueError, IndexError):
        return 0


def python_executable() -> str:
    """The interpreter to run sim children with.

    A process started with ``argv[0]`` ``opc`` / ``op_compiler`` has an empty
    ``sys.executable`` (Python cannot find that name on PATH), so fall back to the
    running binary.
    """
    if sys.executable:
        return sys.executable
    return os.readlink("/proc/self/exe")


def program_argv(argv0: str, module: str, args: list[str]) -> list[str]:
    """argv that shows ``argv0`` in ``/proc/<pid>/cmdline`` and runs sim ``module``.

    ``_entry.py`` loads the sim package without importing the gate's package (whose
    import cost would be paid by every ``opc``).
    """
    return [os.environ.get(ENV_PROGRAM_PREFIX, "") + argv0, ENTRY, module, *args]


def write_marker(role: str, suffix: str, extra: dict[str, object] | None = None) -> None:
    """Write ``$SKGATE_SIM_MARKERS/<role>.<pid>.<suffix>`` atomically (tmp + rename).

    Tests wait for these files instead of sleeping; the payload carries the identity a
    test needs to end the process by pid safely (pid + start ticks) and timing facts.
    """
    directory = os.environ.get(ENV_MARKERS)
    if not directory:
        return
    pid = os.getpid()
    payload: dict[str, object] = {
        "role": role,
        "event": suffix,
        "pid": pid,
        "ppid": os.getppid(),
        "pgid": os.getpgid(0),
        "sid": os.getsid(0),
        "start_ticks": start_ticks(pid),
        "mono": time.monotonic(),
        "wall": time.time(),
    }
    if extra:
        payload.update(extra)
    name = f"{role}.{pid}.{suffix}"
    tmp = os.path.join(directory, f".{name}.tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as fh:
            # Trailing newline: readers treat a marker as complete once it ends with one.
            fh.write(json.dumps(payload) + "\n")
        os.replace(tmp, os.path.join(directory, name))
    except OSError:
        # Markers are a test aid; a missing marker directory must not change behaviour.
        pass


def opc_seconds() -> float:
    raw = os.environ.get(ENV_OPC_SECONDS, "")
    try:
        value = float(raw) if raw else DEFAULT_OPC_SECONDS
    except ValueError:
        return DEFAULT_OPC_SECONDS
    return value if 0.0 <= value < float("inf") else DEFAULT_OPC_SECONDS


def say(line: str, *, err: bool = False) -> None:
    """Print one line and flush: the log is a pipe shared by the whole tree."""
    stream = sys.stderr if err else sys.stdout
    try:
        stream.write(line + "\n")
        stream.flush()
    except (BrokenPipeError, ValueError):
        # The reader went away (e.g. the leader exited early): keep compiling quietly.
        pass
