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
``StopSignals``. Only ``os`` and the interpreter's built-in ``_signal`` are imported
here, not ``signal``: this runs first, and ``signal`` builds three enums at import (and
imports ``enum``), a tenth of ``skgate --help``'s start-up (issue 29). ``_signal`` speaks
in plain ints (``SIG_DFL`` 0, ``SIG_IGN`` 1); :func:`handover` gives ``signal``'s enum
members back to ``StopSignals``, which imports ``signal`` anyway.
"""

from __future__ import annotations

import os

# Not ``typing.TYPE_CHECKING``: this module runs before anything is imported.
TYPE_CHECKING = False
if TYPE_CHECKING:  # typeshed has no stubs for ``_signal``; ``signal`` types it alike
    import signal as _signal
else:
    # The C module under ``signal`` (built in, loaded before ``site``): the same
    # ``signal()`` and ``getsignal()``, without the enum wrappers.
    import _signal

_STOP = (_signal.SIGINT, _signal.SIGTERM, _signal.SIGHUP)
_KEEP_IGNORED = (_signal.SIGHUP, _signal.SIGINT)

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
        old = _signal.getsignal(sig)
        if sig in _KEEP_IGNORED and old == _signal.SIG_IGN:
            continue
        _original[sig] = _signal.signal(sig, _on_stop)


def hold() -> None:
    """From now on something was started: keep a signal for the runner to act on."""
    _held[0] = True


def pending() -> list[int]:
    """Signals kept since :func:`hold` and not handed over."""
    return list(_pending)


def handover() -> tuple[list[int], dict[int, object]]:
    """(kept signals, the dispositions found at install) for ``StopSignals.install``,
    which installs its own handlers over these; afterwards this module is out of it.

    The dispositions are given as ``signal.getsignal`` gives them (``Handlers.SIG_DFL``
    and ``SIG_IGN`` members, else the handler), as if ``signal`` had read them.
    """
    import signal  # noqa: PLC0415 - the caller (StopSignals) has loaded it already

    kept = list(_pending)
    original = {
        sig: signal.Handlers(h) if isinstance(h, int) else h for sig, h in _original.items()
    }
    _pending.clear()
    _original.clear()
    _held[0] = False
    return kept, original


def release() -> None:
    """Give the dispositions found at install back (a command other than ``run``)."""
    for sig, handler in _original.items():
        _signal.signal(sig, handler)  # type: ignore[arg-type]
    _original.clear()
