"""When the runner reads the machine's process events while its own tree is quiet (C3,
issue 29).

The events connector reports every process of the host, not only the owned tree. One
wake per event of a busy host would cost the runner more than 1 % of a core, so while
the owned tree is quiet the events are read in batches: they queue in the socket
meanwhile. The pause doubles from the first to the last value of :data:`COALESCE` while
batches hold only foreign events; an owned event ends it, and the fd is then listened to
at once again, so argv is read promptly while the tree is active.

A paused batch is read in the loop turn its pause ends in (skgate.proc.supervise), not by
listening to the fd again and taking a second turn for what already queued: on a busy
host every pause ended with exactly that second turn. When nothing queued during the
pause, the fd is listened to again, so the next event (an owned fork on a quiet host) is
read as it arrives, as before.

With a doorbell (skgate.proc.events.Doorbell: the kernel wakes the loop for the owned
tree's events only), the full socket is never listened to: it is read when the doorbell
rings, at each scan and at the tree's end, and otherwise every :data:`FULL_READ_EVERY`,
so that the host's events never overflow its queue. The owned tree's events are then read
as they come whether or not the host is busy, and a busy host costs one wake a second.
On a quiet host (a read finds at most :data:`QUIET_READ` events) the interval doubles up
to its cap; a busy read or an owned event brings it back to one second.
"""

from __future__ import annotations

#: The first and the longest pause, in seconds.
COALESCE = (0.025, 0.2)
#: With a doorbell: the time between two reads of the full socket, in seconds, and its
#: cap on a quiet host (the 16 MiB queue holds about 20,000 events: a host forking 5,000
#: processes a second from quiet would fill it in the longest interval).
FULL_READ_EVERY = (1.0, 4.0)
#: At most this many events in a read: the host is quiet, the next read may wait longer.
QUIET_READ = 250


class EventsPace:
    """The paused events' next read (see the module doc). ``resume_at`` is None while
    the fd is listened to."""

    __slots__ = ("every", "pause", "resume_at")

    def __init__(self) -> None:
        self.pause = COALESCE[0]
        self.resume_at: float | None = None
        self.every = FULL_READ_EVERY[0]  # with a doorbell: the next paced read's interval

    def start(self, now: float, *, bell: bool) -> None:
        """As the loop starts at ``now``: the fd listened to, or with a doorbell the full
        socket's first paced read, one interval on."""
        self.every = FULL_READ_EVERY[0]
        self.resume_at = now + self.every if bell else None

    def due(self, now: float) -> bool:
        """Has the pause ended at ``now``?"""
        return self.resume_at is not None and now >= self.resume_at

    def after_batch(
        self, now: float, *, listen: bool, owned: bool, bell: bool = False, read: int = 0
    ) -> None:
        """After a batch of ``read`` events read at ``now``: listened to again (an owned
        event, which also starts the next pause short, or an empty queue), or paused,
        longer each time up to the cap (only foreign events). With a doorbell (``bell``),
        the next read of the full socket is due :attr:`every` later (see the module doc)."""
        if owned:
            self.pause = COALESCE[0]
        if bell:
            quiet = read <= QUIET_READ and not owned
            self.every = min(2 * self.every, FULL_READ_EVERY[1]) if quiet else FULL_READ_EVERY[0]
            self.resume_at = now + self.every
        elif listen:
            self.resume_at = None
        else:
            self.resume_at = now + self.pause
            self.pause = min(2 * self.pause, COALESCE[1])
