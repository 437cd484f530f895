"""The messages between a distributed task and its driver, as types (issue 22 s1).

A Ray task of one matrix unit (:mod:`skgate.regress.ray_exec`) is a streaming generator:
it yields these messages, as plain dicts with a ``kind`` (the wire stays JSON-shaped, so
a driver and a task of two skgate versions still read each other), and byte chunks of
the attempt's files (:mod:`skgate.evidence.transfer`). Each side builds or reads them
through this module only: :meth:`Message.to_dict` on the way out, :func:`message_from_dict`
on the way in, so a renamed kind is a type error, not a silent miss.

Order of one task's stream: ``started``; ``progress`` while the runner works (counts
provisional, C1); ``result`` (the runner's own error, if any); for a sealed attempt
``files``, then per file ``file`` and its bytes; ``end``.

No I/O here (the model layer's contract).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

__all__ = [
    "End",
    "FileHeader",
    "FileList",
    "Message",
    "MessageKind",
    "Progress",
    "Result",
    "Started",
    "message_from_dict",
]


class MessageKind(str, enum.Enum):
    STARTED = "started"
    PROGRESS = "progress"
    RESULT = "result"
    FILES = "files"
    FILE = "file"
    END = "end"


@dataclass(frozen=True)
class Message:
    KIND: ClassVar[MessageKind]

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.KIND.value}


@dataclass(frozen=True)
class Started(Message):
    """The task launched its runner: where (node facts), which attempt, which pid."""

    KIND: ClassVar[MessageKind] = MessageKind.STARTED
    node: Mapping[str, Any]
    origin: str
    runner_pid: int
    #: With the pid, the runner's identity on its node (a recycled pid is another
    #: process); None from a task of an older skgate.
    runner_start_ticks: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            **super().to_dict(),
            "node": dict(self.node),
            "origin": self.origin,
            "runner_pid": self.runner_pid,
            "runner_start_ticks": self.runner_start_ticks,
        }


@dataclass(frozen=True)
class Progress(Message):
    """A change of the unit's row on the driver's board (None: unchanged)."""

    KIND: ClassVar[MessageKind] = MessageKind.PROGRESS
    state: str | None = None
    note: str | None = None
    #: Provisional counts of the last observation (C1).
    stages: Mapping[str, Any] | None = None

    def changes(self) -> dict[str, Any]:
        """What the board updates (only the fields the message carries)."""
        out: dict[str, Any] = {}
        for key in ("state", "note", "stages"):
            value = getattr(self, key)
            if value is not None:
                out[key] = dict(value) if key == "stages" else value
        return out

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), **self.changes()}


@dataclass(frozen=True)
class Result(Message):
    KIND: ClassVar[MessageKind] = MessageKind.RESULT
    #: The runner's (or the task's) own refusal; None when the attempt was recorded.
    error: str | None = None
    #: Proven that nothing was launched: the runner ended before it recorded an attempt
    #: (it records one before any launch), so the unit reads not run, never unknown.
    nothing_ran: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "error": self.error, "nothing_ran": self.nothing_ran}


@dataclass(frozen=True)
class FileList(Message):
    """Every file of the sealed attempt with its size, before any byte is sent."""

    KIND: ClassVar[MessageKind] = MessageKind.FILES
    files: tuple[tuple[str, int], ...] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        listing = [{"name": name, "size": size} for name, size in self.files]
        return {**super().to_dict(), "files": listing}


@dataclass(frozen=True)
class FileHeader(Message):
    """The next ``size`` bytes of the stream are the file ``name``."""

    KIND: ClassVar[MessageKind] = MessageKind.FILE
    name: str
    size: int

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "name": self.name, "size": self.size}


@dataclass(frozen=True)
class End(Message):
    KIND: ClassVar[MessageKind] = MessageKind.END


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def message_from_dict(data: Mapping[str, Any]) -> Message:
    """The typed message of one streamed dict; ValueError (with what is wrong) for an
    unknown kind or a damaged field: the caller says whose stream it was."""
    try:
        kind = MessageKind(data.get("kind"))
    except ValueError:
        raise ValueError(f"unexpected stream item {data.get('kind')!r}") from None
    try:
        if kind is MessageKind.STARTED:
            ticks = data.get("runner_start_ticks")
            return Started(
                dict(data["node"]),
                str(data["origin"]),
                int(data["runner_pid"]),
                None if ticks is None else int(ticks),
            )
        if kind is MessageKind.PROGRESS:
            stages = data.get("stages")
            return Progress(
                _text(data.get("state")),
                _text(data.get("note")),
                dict(stages) if isinstance(stages, dict) else None,
            )
        if kind is MessageKind.RESULT:
            return Result(_text(data.get("error")), data.get("nothing_ran") is True)
        if kind is MessageKind.FILES:
            listing = tuple((str(f["name"]), int(f["size"])) for f in data.get("files", []))
            return FileList(listing)
        if kind is MessageKind.FILE:
            return FileHeader(str(data["name"]), int(data["size"]))
        return End()
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"damaged {kind.value!r} stream item ({exc})") from None
