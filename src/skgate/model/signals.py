"""The one signal-name helper (issue 22 s6): ``SIGTERM`` for 15, ``signal 64`` for a
number this platform does not name. Every layer of the gate that says a signal's name
uses it: the classifier's reasons (C2), the supervisor's journal and messages (C4), the
reports (C7). (The simulator, stdlib-only by design, words its programs' own messages.)"""

from __future__ import annotations

import signal


def signal_name(signum: int) -> str:
    try:
        return signal.Signals(signum).name
    except ValueError:
        return f"signal {signum}"


#: Signals a process most often gets from its own fault (the kernel's answer to a bad
#: memory access, an illegal instruction, an arithmetic trap, ``abort()``). A process
#: ended by one that skgate did not send crashed, or was sent it from outside: skgate
#: cannot tell which, so it is neither a natural return nor a shown interruption (C2).
CRASH_SIGNALS = frozenset(
    int(s)
    for s in (
        signal.SIGSEGV,
        signal.SIGBUS,
        signal.SIGILL,
        signal.SIGFPE,
        signal.SIGABRT,
        signal.SIGSYS,
        signal.SIGTRAP,
    )
)
