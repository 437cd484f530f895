"""How often the owned tree is scanned while process events are healthy (C3, issue 29).

The walk of ``/proc`` (skgate.proc.observe) is the fallback and the cross-check of the
event sources. Where the events connector is open, every fork, exec and exit reaches the
runner as it happens, and a scan that finds nothing the events had not reported costs
about 2 ms of CPU per 64 processes for no news. So the interval doubles after each such
quiet scan, up to :data:`BACKOFF_MAX` times the configured interval, and snaps back to
the configured interval at once when:

* the scan disagreed with the events (it found a process, an exit, an exec, a regroup or
  a cgroup member they had not reported);
* the kernel reported lost events (an overrun of the connector or of the exit records);
* the owned tree changed (an owned event, a reaped orphan, the leader's exit).

Without the events connector the scan is the record, and its interval never grows.
Nothing here weakens the record: a process the events miss is still found by a later
scan (at most ``BACKOFF_MAX`` intervals later), and the census that decides the tree has
ended is always a full walk (skgate.proc.supervise). Signals never depend on it (C4).
"""

from __future__ import annotations

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from skgate.proc.sources import Sources

#: The longest pause between two scans, in configured intervals (8 s by default).
BACKOFF_MAX = 8


class ScanPace:
    """When the next scan is due: the configured interval, doubled while the events and
    the scans agree (see the module doc)."""

    __slots__ = ("_base", "_losses", "interval", "next_at")

    def __init__(self, base: float) -> None:
        self._base = base
        self._losses = 0
        self.interval = base
        #: The monotonic time the next scan is due.
        self.next_at = 0.0

    def snap_back(self, now: float) -> None:
        """The owned tree changed: the next scan comes within the configured interval."""
        self.interval = self._base
        self.next_at = min(self.next_at, now + self._base)

    def after_scan(self, now: float, sources: Sources, *, agreed: bool) -> None:
        """Pace the next scan after one at ``now`` that ``agreed`` (found nothing the
        events had not reported); a new overrun of the connector or of the exit records
        is a lost-event signal."""
        conn, records = sources.connector, sources.exit_records
        losses = (conn.overruns if conn else 0) + (records.overruns if records else 0)
        lost, self._losses = losses != self._losses, losses
        if conn is None or not agreed or lost:
            self.interval = self._base
        else:
            self.interval = min(2 * self.interval, BACKOFF_MAX * self._base)
        self.next_at = now + self.interval
