"""The first round of the start-up hook scan (C6), and everything a scan depends on.

Round 1 is one isolated interpreter (``-I -S``: nothing the scan inspects can run in
it), the static probe, which also records the interpreter's own start-up module set
(see :mod:`skgate.preflight.hooks.scan` for the protocol). This module holds only what
starting it needs, so the runner can start it before the rest of preflight is even
imported (:mod:`skgate.preflight.early`); everything that judges results is in ``scan``.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from skgate.model.frozen import record
from skgate.preflight.hooks import cache
from skgate.preflight.hooks.probe import Cancel, Probe, results

# One list for both sides: the probe module only defines things when imported.
from skgate.preflight.hooks.probe_static import BOOTSTRAP, STARTUP_VARS

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Seconds one probe may take before the scan is reported as blocked.
PROBE_TIMEOUT = 30.0

STATIC_PROBE = Path(__file__).with_name("probe_static.py")
SNAPSHOT_PROBE = Path(__file__).with_name("probe_snapshot.py")

#: Dropped from the isolated probes' environment as well: they would load code (native)
#: into the probe interpreter before it could look at anything.
_PROBE_DROP = ("LD_PRELOAD", "LD_AUDIT")


def isolated_env(env: Mapping[str, str]) -> dict[str, str]:
    """The environment of the probes that must not run inspected code: the workload's,
    without any ``PYTHON*`` variable (``-I`` ignores them too) or preloaded library."""
    return {k: v for k, v in env.items() if not k.startswith("PYTHON") and k not in _PROBE_DROP}


@record
class ScanInputs:
    """Everything a scan depends on, so a scan started early (:mod:`skgate.preflight.early`)
    is used only when preflight would have scanned exactly the same thing."""

    python: str
    env: tuple[tuple[str, str], ...]
    cwd: str | None
    flags: tuple[str, ...]
    approved: frozenset[str]
    baseline: frozenset[str]
    strict: bool
    approve_all: bool

    def first_round(self, cancel: Cancel | None = None) -> FirstRound:
        """Start round 1 for these inputs now (its results are read by
        :func:`skgate.preflight.hooks.scan.run_scan`, which stands on this module: this
        one never imports it, issue 22 s6)."""
        return FirstRound(self.python, dict(self.env), self.cwd, self.flags, cancel)


def _temp_root() -> str | None:
    """The directory ``tempfile`` would pick, without its first-use test (it writes a file
    into each candidate: about 10 ms before a runner's first probe); None, and so that
    test, for anything but the usual case of a writable ``$TMPDIR`` (or ``TEMP``, ``TMP``)
    or, with none of them set, ``/tmp``."""
    for name in ("TMPDIR", "TEMP", "TMP"):
        value = os.environ.get(name)
        if value:
            return value if _usable(value) else None
    return "/tmp" if _usable("/tmp") else None


def _usable(path: str) -> bool:
    return os.path.isdir(path) and os.access(path, os.W_OK | os.X_OK)


def _private_dir() -> str:
    """A new directory only this user may enter, for the probes' result files.

    Made with ``mkdir`` under a random name, as ``tempfile.mkdtemp`` makes one (``mkdir``
    never follows a link and fails on any name already there), without importing
    ``tempfile``, which brings ``shutil``, ``random`` and the compression modules: about
    5 ms of a probing run's start-up (issue 29). Anything unusual (no usable
    ``$TMPDIR``/``/tmp``) goes to ``tempfile`` itself."""
    root = _temp_root()
    if root is not None:
        for _ in range(100):
            path = os.path.join(root, f"skgate-probe-{os.urandom(6).hex()}")
            try:
                os.mkdir(path, 0o700)
            except FileExistsError:
                continue
            except OSError:
                break
            return path
    import tempfile  # noqa: PLC0415 - the unusual case only

    return tempfile.mkdtemp(prefix="skgate-probe-")


def _remove_dir(path: str) -> None:
    """Remove the probes' directory: their result files, then the directory; a probe
    that left anything else (a directory) has it removed by ``shutil``."""
    with contextlib.suppress(OSError), os.scandir(path) as entries:
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                import shutil  # noqa: PLC0415 - never in the usual case

                shutil.rmtree(entry.path, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
    with contextlib.suppress(OSError):
        os.rmdir(path)


class FirstRound:
    """Round 1 of a scan, started: the static probe runs in a private temporary
    directory, which round 2 uses too; :meth:`cleanup` removes it. When the probes'
    answer for exactly these inputs is cached and every fingerprint it lists still holds
    (:mod:`skgate.preflight.hooks.cache`), no probe starts: ``cached`` holds it."""

    def __init__(
        self,
        python: str,
        env: Mapping[str, str],
        cwd: str | None,
        flags: Sequence[str],
        cancel: Cancel | None = None,
        *,
        timeout: float | None = None,
    ) -> None:
        self.cancel = cancel
        #: Set once the scan starts no more probes (round 2 started, or not to be run):
        #: after that a cgroup move cannot hold up one of its forks (skgate.preflight.early).
        self.forked = threading.Event()
        self.limit = PROBE_TIMEOUT if timeout is None else timeout
        self._tmp: str | None = None  # made with the first probe: a cached answer needs none
        self.deadline = time.monotonic() + self.limit
        workdir = cwd if cwd and os.path.isdir(cwd) else os.getcwd()
        quiet = isolated_env(env)
        data = [f"{k}={env[k]}" if k in env else k for k in STARTUP_VARS]
        flag_text = "".join(f.lstrip("-") for f in flags) or "-"
        self._results: list[tuple[Any | None, str | None]] | None = None
        self.probes: list[Probe] = []
        self.cache_dir = cache.cache_dir()
        self.cache_key = cache.cache_key(python, env, workdir, flags, STATIC_PROBE.parent)
        self.cache_rest = cache.rest_digest(env, workdir)
        self.cache_reads = cache.reads_digest(env)
        self.cached = cache.load(self.cache_dir, self.cache_key, self.cache_rest, self.cache_reads)
        #: When the first probe started: its answer is cached only if nothing it depends
        #: on changed since (cache.store, C6).
        self.probe_from = cache.moment()
        if self.cached is not None:
            self._results = [(self.cached.static, None)]
            return
        t = self.dir
        static = [python, "-I", "-S", "-c", BOOTSTRAP, str(STATIC_PROBE.parent), str(t / "static")]
        static += [flag_text, workdir]
        try:
            self.probes.append(
                Probe(
                    [*static, *data],
                    quiet,
                    str(t),
                    t / "static",
                    cancel,
                )
            )
        except BaseException:
            self.cleanup()
            raise

    @property
    def dir(self) -> Path:
        """The probes' private temporary directory, made on first use."""
        if self._tmp is None:
            self._tmp = _private_dir()
            # Removed at exit too if nobody calls cleanup (an interrupted runner).
            atexit.register(self._remove_tmp)
        return Path(self._tmp)

    def _remove_tmp(self) -> None:
        if self._tmp is not None:
            _remove_dir(self._tmp)
            self._tmp = None
            atexit.unregister(self._remove_tmp)

    def results(self) -> list[tuple[Any | None, str | None]]:
        """[(static record, problem)], waited for until the deadline (once: later calls
        return the same)."""
        if self._results is None:
            self._results = results(self.probes, self.deadline)
        return self._results

    def cleanup(self) -> None:
        """End any probe still running (its own session) and remove the directory."""
        self.forked.set()
        for probe in self.probes:
            probe.end()
        self._remove_tmp()
