"""The one reader and the one follower of an attempt's journal (``events.jsonl``).

Both give :class:`skgate.model.events.Event` objects, never raw dicts: this module is
the only place that looks at a record's ``event`` string (a test holds that), so a
renamed kind is a type error everywhere else.

- :func:`iter_journal` / :func:`read_journal`: the whole journal, for the evidence
  loader, reports and recover. Strict: a link or a non-regular file, a line over
  ``regular.LINE_LIMIT`` or a complete line that is not an event is a one-line
  EvidenceError (issue 21: a journal linked to ``/dev/zero`` or holding a 300 MB line is
  refused, never read whole). A torn last line (the runner killed mid-write, no newline)
  is skipped: it is the one line a crash may leave half-written (C3).
- :class:`JournalFollower`: the complete lines appended since the last look, for
  ``skgate wait``/``stop``, the detached hand-shake and the Ray task's progress. A line is
  taken only once its newline is there (the runner writes each record with one
  ``write``); a damaged line is skipped (the classifier reports damage, a follower does
  not); an over-long line is an EvidenceError once, and is then skipped to its end.

Nothing here writes or signals (C2.1: observing a live attempt is read-only).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from skgate.evidence import regular, sealed
from skgate.model import jsonread
from skgate.model.errors import EvidenceError
from skgate.model.events import (
    Created,
    Event,
    ForeignWait,
    ForeignWaitEnd,
    Preflight,
    PreflightStep,
    UnknownEvent,
    event_from_dict,
)
from skgate.model.running import Waiting
from skgate.model.schema import SCHEMA_EVENT

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "JournalFollower",
    "JournalSoFar",
    "blocker_text",
    "blockers_of",
    "created_runner",
    "is_wait_end",
    "is_wait_start",
    "iter_journal",
    "read_journal",
]


def iter_journal(path: Path) -> Iterator[Event]:
    """Stream the journal, one bounded line at a time (see the module doc)."""
    try:
        # Through the one reader: a sealed journal must match its seal (issue 28 s3).
        for line in sealed.iter_lines(path):
            event = _event_of(path, line, line.number)
            if event is not None:
                yield event
    except FileNotFoundError:
        return


def _event_of(path: Path, line: regular.Line, number: int) -> Event | None:
    """One line of the journal as :func:`iter_journal` reads it (None: nothing to read)."""
    if line.too_long:
        raise EvidenceError(
            f"{path}: line {number} is longer than {regular.LINE_LIMIT} bytes "
            "(a damaged record, not read)"
        )
    if not line.raw.strip():
        return None
    try:
        record = jsonread.loads(line.raw)
    except (ValueError, RecursionError):  # JSONDecodeError, UnicodeDecodeError
        if not line.complete:
            return None  # torn final write
        raise EvidenceError(f"{path}: line {number} is not a JSON event") from None
    if not isinstance(record, dict) or record.get("schema") != SCHEMA_EVENT:
        raise EvidenceError(f"{path}: line {number} is not a {SCHEMA_EVENT!r} event")
    return event_from_dict(record)


class JournalSoFar:
    """:func:`read_journal` of a journal still being written, taken in steps (issue 29).

    The runner's own journal, before its seal: :meth:`advance` parses the complete lines
    written since the last call (while the command runs), so :meth:`events` has only the
    last few left to read after the last exit. Each line is read from the file's bytes by
    the very per-line rule of :func:`iter_journal`, so the result is the same list (C2:
    the runner's verdict is the one ``skgate classify`` recomputes). Anything
    :func:`iter_journal` would stop at (a damaged or over-long line, a read error) ends
    the stepping: :meth:`events` then reads the whole file again, as it does, and raises
    what it raises.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0  # just after the last complete line taken
        self._lines = 0
        self._events: list[Event] = []
        self._stepping = True

    def advance(self) -> None:
        """Take the complete lines appended since the last call."""
        if not self._stepping:
            return
        try:
            with regular.opened(self.path) as fd:
                os.lseek(fd, self._offset, os.SEEK_SET)
                for line in regular.iter_fd_lines(fd):
                    if not line.complete:
                        break  # its newline is not there yet: taken at the next call
                    event = _event_of(self.path, line, self._lines + line.number)
                    self._offset += len(line.raw) + 1
                    self._lines += 1
                    if event is not None:
                        self._events.append(event)
        except FileNotFoundError:
            return  # not written yet
        except (OSError, EvidenceError):
            self._stepping = False

    def events(self) -> list[Event]:
        """The whole journal now, exactly as :func:`read_journal` gives it."""
        if not self._stepping:
            return read_journal(self.path)
        try:
            with regular.opened(self.path) as fd:
                os.lseek(fd, self._offset, os.SEEK_SET)
                rest = [
                    event
                    for line in regular.iter_fd_lines(fd)
                    if (event := _event_of(self.path, line, self._lines + line.number)) is not None
                ]
        except (OSError, EvidenceError):
            return read_journal(self.path)  # raises what it raises, or reads it whole
        return [*self._events, *rest]


def created_runner(path: Path) -> tuple[int, int, str] | None:
    """(pid, start ticks, boot id) of the runner the journal's ``created`` names: the
    owner of an attempt whose controls are not frozen yet (a runner in preflight)."""
    for ev in iter_journal(path):
        runner = ev.runner if isinstance(ev, Created) else None
        if runner is not None and _is_int(runner.get("pid")):
            ticks = runner.get("start_ticks")
            if isinstance(ticks, int) and _is_int(ticks):
                boot = runner.get("boot_id", (isinstance(ev, Created) and ev.boot_id) or "")
                return int(runner["pid"]), ticks, str(boot)
    return None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def read_journal(path: Path) -> list[Event]:
    """The whole journal (see :func:`iter_journal`)."""
    return list(iter_journal(path))


class JournalFollower:
    """The complete records appended to a journal since the last :meth:`poll`."""

    def __init__(self, journal: Path) -> None:
        self.journal = journal
        self._offset = 0
        self._partial = b""
        #: Inside an over-long line already reported: dropped up to its newline.
        self._skipping = False

    def poll(self) -> list[Event]:
        try:
            # A regular file only (a link to /dev/zero or a FIFO is refused, never read
            # or waited on), and at most one line bound per look (issue 21).
            fd = regular.open_fd(self.journal)
        except FileNotFoundError:
            return []
        try:
            chunks = []
            taken = 0
            while taken < regular.LINE_LIMIT:
                data = os.pread(fd, 1 << 16, self._offset)
                if not data:
                    break
                self._offset += len(data)
                taken += len(data)
                chunks.append(data)
        finally:
            os.close(fd)
        if not chunks:
            return []
        buf = self._partial + b"".join(chunks)
        *lines, self._partial = buf.split(b"\n")
        if self._skipping and lines:
            lines, self._skipping = lines[1:], False  # the rest of the over-long line
        if self._skipping or len(self._partial) >= regular.LINE_LIMIT:
            self._partial = b""  # never held whole (issue 21)
            if not self._skipping:
                self._skipping = True
                raise EvidenceError(
                    f"{self.journal}: a line longer than {regular.LINE_LIMIT} bytes; "
                    "damaged or hostile, not read"
                )
        out: list[Event] = []
        for raw in lines:
            if not raw.strip():
                continue
            try:
                record = jsonread.loads(raw)
            except (ValueError, RecursionError):  # JSONDecodeError, UnicodeDecodeError
                continue  # a damaged line: the classifier reports damage, not the follower
            if isinstance(record, dict) and record.get("schema") == SCHEMA_EVENT:
                out.append(event_from_dict(record))
        return out


# Waits for a blocker (C4: blockers are waited for, never signalled). Older versions
# wrote them as ``preflight`` steps or as events of their own name; all are read.
_WAIT_STARTS = (PreflightStep.FOREIGN_WAIT.value, PreflightStep.LEASE_WAIT.value)
_WAIT_ENDS = (
    PreflightStep.FOREIGN_WAIT_END.value,
    PreflightStep.LEASE_WAIT_END.value,
    PreflightStep.FOREIGN_CLEARED.value,
    PreflightStep.LEASE_ACQUIRED.value,
)


def _wait_name(ev: Event) -> str | None:
    if isinstance(ev, Preflight):
        return ev.step
    if isinstance(ev, UnknownEvent) and ev.kind is None:
        return ev.event_name
    return None


def is_wait_start(ev: Event) -> bool:
    return isinstance(ev, ForeignWait) or _wait_name(ev) in _WAIT_STARTS


def is_wait_end(ev: Event) -> bool:
    return isinstance(ev, ForeignWaitEnd) or _wait_name(ev) in _WAIT_ENDS


def _fields(ev: Event) -> Mapping[str, Any]:
    if isinstance(ev, Preflight):
        return ev.details
    if isinstance(ev, UnknownEvent):
        return ev.raw
    return {}


def blockers_of(ev: Event) -> Waiting:
    """The blockers a wait event names, typed (issue 30): foreign compilers by (pid,
    name), any other blocker (a device lease) as its line."""
    fields = _fields(ev)
    named: Sequence[Any] = (
        ev.blockers
        if isinstance(ev, ForeignWait)
        else (fields.get("blockers") or fields.get("processes") or [])
    )
    foreign = tuple(
        (int(p["pid"]), _shown_name(p))
        for p in named
        if isinstance(p, dict) and _is_int(p.get("pid"))
    )
    other = [line for line in blocker_text(ev) if not line.startswith("foreign ")]
    return Waiting(foreign=foreign, other=tuple(other))


def _shown_name(p: Mapping[str, Any]) -> str:
    """The name a person matched the process by: its argv[0] (``exec -a opc``), else
    its command name."""
    argv = p.get("argv")
    if isinstance(argv, list) and argv and isinstance(argv[0], str) and argv[0]:
        return argv[0].rsplit("/", 1)[-1]
    return str(p.get("name") or "?")


def blocker_text(ev: Event) -> list[str]:
    """One line per blocker named by a wait event: pid, name, never signalled (C4)."""
    fields = _fields(ev)
    named: Sequence[Any] = (
        ev.blockers
        if isinstance(ev, ForeignWait)
        else (fields.get("blockers") or fields.get("processes") or [])
    )
    out = [
        f"foreign {p.get('name')}[{p.get('pid')}] (never signalled, C4)"
        for p in named
        if isinstance(p, dict)
    ]
    if _wait_name(ev) == PreflightStep.LEASE_WAIT.value:
        holder = fields.get("holder") or {}
        who = f" held by pid {holder.get('pid')}" if isinstance(holder, dict) else ""
        out.append(f"device {fields.get('device')} lease{who} (never signalled, C4)")
    if not out:
        what = ev.event_name if _wait_name(ev) is None else _wait_name(ev)
        out.append(f"{what} (never signalled, C4)")
    return out
