"""Bringing a sealed attempt home from another node (C4: evidence is never rewritten).

A distributed executor runs an attempt on a node into a node-local root, then streams the
sealed attempt directory back in bounded chunks. This module has both ends and knows
nothing about the transport:

- :func:`send_items` turns a sealed attempt into a stream of small header dicts and byte
  chunks (each at most ``chunk`` bytes, so a 1 GB run log never sits in memory whole);
- :class:`Incoming` writes such a stream into a staging directory of the driver's root,
  refuses anything that is not a plain relative file name or exceeds the size bound,
  re-verifies the seal over the received bytes, and only then renames the staging
  directory onto the attempt id the driver reserved and appends the ``start`` / ``end``
  ledger entries naming the node (:func:`skgate.evidence.ledger.record_import`).

Nothing half-received ever appears as an attempt: until the rename the files live in
``<root>/.incoming/``, which no reader treats as evidence.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from skgate.evidence import ledger, regular, seal
from skgate.evidence.files import SEAL, VERDICT, fsync_dir, read_json
from skgate.evidence.walk import walk_files
from skgate.model.errors import EvidenceError
from skgate.model.messages import FileHeader, FileList, message_from_dict
from skgate.model.records import Verdict

#: Bytes per streamed chunk: small enough to bound the driver's memory (a few chunks in
#: flight), large enough that per-object overhead stays far below the copy itself.
CHUNK = 4 << 20

#: Default upper bound on one attempt's evidence brought home (run logs can be large;
#: an attempt over the bound stays on its node and the arm says where).
MAX_BYTES = 16 << 30

INCOMING = ".incoming"


def file_list(attempt: Path) -> list[dict[str, Any]]:
    """Every regular file of a sealed attempt with its size (the seal included)."""
    if not (attempt / SEAL).is_file():
        raise EvidenceError(f"{attempt}: not sealed; only a sealed attempt travels")
    names, others = walk_files(attempt)
    if others:
        raise EvidenceError(f"{attempt}: holds non-regular entries {others[:3]}; not sent")
    return [{"name": n, "size": os.lstat(attempt / n).st_size} for n in names]


def send_items(attempt: Path, chunk: int = CHUNK) -> Iterator[dict[str, Any] | bytes]:
    """The stream of one sealed attempt: a ``files`` header, then for each file a
    ``file`` header and exactly ``size`` bytes in chunks of at most ``chunk``."""
    listing = file_list(attempt)
    yield FileList(tuple((str(f["name"]), int(f["size"])) for f in listing)).to_dict()
    for item in listing:
        yield FileHeader(str(item["name"]), int(item["size"])).to_dict()
        left = int(item["size"])
        # Regular files only: a FIFO or link put in after the listing is refused (issue 21).
        try:
            fd = regular.open_fd(attempt / item["name"])
        except FileNotFoundError:
            raise EvidenceError(f"{attempt / item['name']}: vanished while being sent") from None
        try:
            while left > 0:
                data = os.read(fd, min(chunk, left))
                if not data:
                    raise EvidenceError(f"{attempt / item['name']}: shrank while being sent")
                left -= len(data)
                yield data
        finally:
            os.close(fd)


class Incoming:
    """Receive one attempt's stream into ``<root>/.incoming/<token>/<attempt_id>``."""

    def __init__(self, root: Path, attempt_id: str, max_bytes: int = MAX_BYTES) -> None:
        self.root = root
        self.attempt_id = attempt_id
        self.max_bytes = max_bytes
        self.stage = root / INCOMING / uuid.uuid4().hex / attempt_id
        self.stage.mkdir(parents=True)
        self.expected: dict[str, int] = {}
        self.total = 0
        self._fd = -1
        self._name = ""
        self._left = 0

    def feed(self, item: dict[str, Any] | bytes) -> None:
        """One item of :func:`send_items`, in order."""
        if isinstance(item, bytes):
            self._write(item)
            return
        try:
            message = message_from_dict(item)
        except ValueError as exc:
            raise EvidenceError(f"attempt {self.attempt_id}: {exc}") from None
        if isinstance(message, FileList):
            for name, size in message.files:
                self.expected[_plain(name)] = size
            total = sum(self.expected.values())
            if total > self.max_bytes:
                raise EvidenceError(
                    f"attempt {self.attempt_id}: {total} bytes of evidence exceed the bound "
                    f"of {self.max_bytes}; it stays on its node"
                )
        elif isinstance(message, FileHeader):
            self._close_file()
            name = _plain(message.name)
            if self.expected.get(name) != message.size:
                raise EvidenceError(f"attempt {self.attempt_id}: {name} was not announced")
            path = self.stage / name
            path.parent.mkdir(parents=True, exist_ok=True)
            self._fd = os.open(
                path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644
            )
            self._name = name
            self._left = message.size
        else:
            kind = message.KIND.value
            raise EvidenceError(f"attempt {self.attempt_id}: unexpected stream item {kind!r}")

    def _write(self, data: bytes) -> None:
        if self._fd < 0 or len(data) > self._left:
            raise EvidenceError(f"attempt {self.attempt_id}: more bytes than announced")
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]
        self._left -= len(data)
        self.total += len(data)

    def _close_file(self) -> None:
        if self._fd >= 0:
            try:
                if self._left:
                    raise EvidenceError(
                        f"attempt {self.attempt_id}: {self._name} ended {self._left} bytes short"
                    )
                os.fsync(self._fd)
            finally:
                os.close(self._fd)
                self._fd = -1

    def commit(self, target: Path, node: dict[str, Any], origin: str) -> Verdict:
        """Check the received attempt against its own seal, move it onto ``target`` (the
        empty directory the driver reserved) and index it in the root's ledger."""
        self._close_file()
        got = set(walk_files(self.stage)[0])
        if got != set(self.expected):
            raise EvidenceError(f"attempt {self.attempt_id}: files missing from the stream")
        problems = seal.verify_attempt(self.stage)
        if problems:
            raise EvidenceError(
                f"attempt {self.attempt_id}: the seal does not match what arrived: {problems[0]}"
            )
        for directory in sorted({(self.stage / n).parent for n in got}, reverse=True):
            fsync_dir(directory)
        verdict = Verdict.from_dict(read_json(self.stage / VERDICT), str(self.stage / VERDICT))
        # rename(2) onto an empty directory is atomic: the attempt appears whole or not at all.
        os.rename(self.stage, target)
        fsync_dir(target.parent)
        self.discard()
        ledger.record_import(ledger_root(target), target, verdict, node, origin)
        return verdict.with_attempt(str(target))

    def discard(self) -> None:
        """Drop whatever was staged (after a commit, only the empty staging parent)."""
        with contextlib.suppress(OSError):
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
        shutil.rmtree(self.stage.parent, ignore_errors=True)
        with contextlib.suppress(OSError):
            (self.root / INCOMING).rmdir()  # only when no other arm is arriving


def ledger_root(attempt: Path) -> Path:
    root = ledger.root_of(attempt)
    if root is None:
        raise EvidenceError(f"{attempt}: not inside an evidence root's attempts/")
    return root


def _plain(name: str) -> str:
    parts = name.split("/")
    if not name or name.startswith("/") or ".." in parts or "" in parts or "." in parts:
        raise EvidenceError(f"streamed file name {name!r} is not a plain relative path")
    return name
