"""What a :class:`~skgate.proc.supervise.Supervisor` is given and what it tells back.

One frozen :class:`SupervisorConfig` (the options, as Bazel's process-wrapper keeps them in
one struct), one :class:`SupervisorObserver` (everything the runner hears: journal lines,
output, manifests, stage hooks), and the :class:`Outcome` it returns.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping

from skgate.model.events import Event
from skgate.model.frozen import field, mutable, record
from skgate.model.running import Coverage, ProcessRecord

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    # ``Any`` re-exported for skgate.proc.supervise's annotations (a module at its size
    # bound: one import line instead of a block of its own).
    from typing import Any as Any  # noqa: PLC0414 - an explicit re-export (mypy strict)
    from typing import Protocol
else:
    # The observer is a static interface: nothing checks it at run time (no
    # ``isinstance``), so a plain base stands in for ``typing.Protocol`` there; ``Any``
    # is only ever named in annotations, which are never evaluated (PEP 563).
    Protocol = Any = object


@record
class SupervisorConfig:
    """What one supervised run is given, frozen before the launch (C4: the deadline and
    the grace never change once the command runs)."""

    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: str
    timeout: float
    grace: float
    #: Seconds between scans of the owned tree (the fallback and cross-check, C3).
    scan_interval: float = 1.0
    #: Seconds between "still waiting" lines once the leader returned (C2.1).
    progress_every: float = 30.0
    #: The monotonic clock (injected, so the policy's inputs can be driven in tests).
    clock: Callable[[], float] = time.monotonic


class SupervisorObserver(Protocol):
    """Everything the Supervisor tells the runner; it never writes a file itself."""

    def emit(self, event: Event) -> object:
        """One journal record."""

    def output(self, data: bytes) -> None:
        """The command's output, as it streams."""

    def manifest(
        self, records: list[ProcessRecord], complete: bool, coverage: Coverage | None
    ) -> None:
        """The ownership snapshot (``complete`` once, at the end)."""

    def journal(self, data: bytes) -> None:
        """The owned tree's fork/exec/exit lines, as they are learnt (C3)."""

    def tick(self, live: int) -> None:
        """Once per scan, with the number of owned processes alive."""

    def process(self, record: ProcessRecord) -> None:
        """A new or exec'd owned process (stage tracking, C3)."""

    def scan(self, alive: list[tuple[int, int]]) -> None:
        """The (pid, start time) of the owned processes alive, at each scan and change."""

    def note(self, line: str) -> None:
        """A one-line note for the person running it."""

    def stop_request(self) -> dict[str, Any] | None:
        """The pending ``skgate stop`` request, asked when a SIGTERM arrives."""


@mutable
class Outcome:
    """Facts of one supervised run, as the journal also recorded them."""

    pid: int
    pgid: int
    leader_exit_status: int | None = None
    leader_exit_signal: int | None = None
    timeout_fired: bool = False
    external_signals: list[int] = field(default_factory=list)
    escaped_alive: int = 0
