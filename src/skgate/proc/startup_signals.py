"""Stop signals from the first instant of a command's start-up (issue 28 s5, C4).

Between the interpreter's start and :class:`skgate.proc.signals.StopSignals` taking over,
``skgate run`` imports, parses and starts its early work for about a tenth of a second.
Python's defaults there are wrong both ways: SIGINT raises KeyboardInterrupt wherever the
import happens to be (a traceback, or "Exception ignored" inside a finaliser, after
which the compile was launched as if nothing had come), and SIGTERM/SIGHUP kill the
process with hook probes it started still running.

So the console entry installs :func:`install` before its first import that takes time:

* until :func:`hold`, nothing exists outside this process (no child, no attempt
  directory): a stop signal ends the process at once with 128 + n, as the signal would,
  with no traceback and nothing launched;
* from :func:`hold` (just before the early work starts children), a signal is kept, and
  :func:`handover` gives it to ``StopSignals``, which acts on it at its first safe point
  (the attempt then ends not started, the signal on record);
* :func:`release` gives every other command Python's usual dispositions back once its
  arguments are parsed.

An inherited ignored SIGHUP or SIGINT stays ignored (``nohup``; a background job), as in
``StopSignals``. Only ``os`` and ``signal`` are imported here: this runs first.
"""

from __future__ import annotations

import os
import signal

_STOP = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_KEEP_IGNORED = (signal.SIGHUP, signal.SIGINT)

#: Dispositions found at install (signal -> handler); empty when not installed.
_original: dict[int, object] = {}
#: Signals received after :func:`hold`, in order.
_pending: list[int] = []
_held = [False]


def _on_stop(signum: int, _frame: object) -> None:
    if not _held[0]:
        os._exit(128 + signum)  # nothing started or recorded yet: end as the signal would
    _pending.append(signum)


def install() -> None:
    """Take the stop signals for the start-up (the console entry's first act)."""
    for sig in _STOP:
        old = signal.getsignal(sig)
        if sig in _KEEP_IGNORED and old is signal.SIG_IGN:
            continue
        _original[sig] = signal.signal(sig, _on_stop)


def hold() -> None:
    """From now on something was started: keep a signal for the runner to act on."""
    _held[0] = True


def pending() -> list[int]:
    """Signals kept since :func:`hold` and not handed over."""
    return list(_pending)


def handover() -> tuple[list[int], dict[int, object]]:
    """(kept signals, the dispositions found at install) for ``StopSignals.install``,
    which installs its own handlers over these; afterwards this module is out of it."""
    kept, original = list(_pending), dict(_original)
    _pending.clear()
    _original.clear()
    _held[0] = False
    return kept, original


def release() -> None:
    """Give the dispositions found at install back (a command other than ``run``)."""
    for sig, handler in _original.items():
        signal.signal(sig, handler)  # type: ignore[arg-type]
    _original.clear()
