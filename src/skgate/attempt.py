"""The attempt directory: file names, durable writes and the event journal.

Every box of the pipeline reads and writes the attempt directory; nothing passes hidden
state, so ``status``, ``classify`` and ``report`` can run later, from another process.

Durability rules (C3, C4 last bullet: evidence is never lost or rewritten):

- final evidence files are created exclusively (``O_EXCL``) and fsync'd: a second write
  of the same file is refused, never a silent overwrite;
- the ownership manifest is a snapshot while the attempt runs, replaced atomically
  (temp file + rename), so a reader never sees half a file;
- ``events.jsonl`` is append-only, one JSON object per line, flushed and fsync'd as each
  event happens, so a runner that is killed leaves its journal up to that moment.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from skgate.errors import EvidenceError
from skgate.model import SCHEMA_EVENT

CONTROL = "control.json"
OWNERSHIP = "ownership.json"
EVENTS = "events.jsonl"
RUN_LOG = "run.log"
SUMMARY = "summary.txt"
LOGSCAN = "logscan.json"
CENSUS = "census.json"
VERDICT = "verdict.json"
SEAL = "seal.json"

#: Evidence files in the order a reader should trust them.
EVIDENCE_FILES = (CONTROL, OWNERSHIP, EVENTS, RUN_LOG, SUMMARY, LOGSCAN, CENSUS, VERDICT)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def dumps(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=False, ensure_ascii=False) + "\n"


def write_new(path: Path, text: str | bytes) -> None:
    """Create ``path`` exclusively and durably; refuse if it exists (never overwrite)."""
    payload = text.encode("utf-8") if isinstance(text, str) else text
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    except FileExistsError:
        raise EvidenceError(f"{path}: already exists; evidence is never overwritten") from None
    try:
        view = memoryview(payload)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fsync(fd)
    finally:
        os.close(fd)
    _fsync_dir(path.parent)


def write_batch_new(
    directory: Path, items: Mapping[str, str | bytes], also_sync: Iterable[int] = ()
) -> None:
    """Create several evidence files exclusively, then make them all durable at once.

    The files are written first and fsync'd together from a few threads, plus the
    directory once: concurrent fsyncs share one journal commit on ext4/xfs, so four files
    cost about one flush instead of eight (the runner's last-exit-to-verdict latency).
    ``also_sync`` adds already open descriptors (the run log) to the same flush.
    """
    fds: list[int] = []
    try:
        for name, text in items.items():
            path = directory / name
            payload = text.encode("utf-8") if isinstance(text, str) else text
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
            except FileExistsError:
                raise EvidenceError(
                    f"{path}: already exists; evidence is never overwritten"
                ) from None
            fds.append(fd)
            view = memoryview(payload)
            while view:
                view = view[os.write(fd, view) :]
        # Plain threads (not concurrent.futures): that import alone costs the start-up
        # of every run more than this whole flush does.
        errors: list[OSError] = []

        def flush(fd: int) -> None:
            try:
                os.fsync(fd)
            except OSError as exc:
                errors.append(exc)

        threads = [threading.Thread(target=flush, args=(fd,)) for fd in (*fds, *also_sync)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
    finally:
        for fd in fds:
            os.close(fd)
    _fsync_dir(directory)


def write_json_new(path: Path, data: Any) -> None:
    write_new(path, dumps(data))


def replace_json(path: Path, data: Any, *, sync: bool = True) -> None:
    """Atomically replace a snapshot file (temp + fsync + rename).

    ``sync=False`` leaves the flush to the caller (see ``write_batch_new``); the rename
    is atomic either way, so a reader never sees half a file.
    """
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        fh.write(dumps(data))
        fh.flush()
        if sync:
            os.fsync(fh.fileno())
    tmp.replace(path)


def read_json(path: Path) -> Any:
    """Read an evidence JSON file; any problem is a one-line EvidenceError."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise EvidenceError(f"{path}: missing") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise EvidenceError(f"{path}: unreadable ({exc})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise EvidenceError(
            f"{path}: not valid JSON (truncated or damaged at line {exc.lineno})"
        ) from None


class Journal:
    """The append-only, fsync'd event journal of one attempt (``events.jsonl``)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o644)

    def emit(self, event: str, **fields: Any) -> dict[str, Any]:
        record = {"schema": SCHEMA_EVENT, "t": time.time(), "event": event, **fields}
        line = json.dumps(record, ensure_ascii=False, separators=(",", ":")) + "\n"
        os.write(self._fd, line.encode("utf-8"))
        # fsync per event: a runner killed a moment later still leaves this record (C3).
        os.fsync(self._fd)
        return record

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> Journal:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def read_events(path: Path) -> list[dict[str, Any]]:
    """Read the journal. A torn last line (runner killed mid-write) is skipped."""
    return list(iter_events(path))


def iter_events(path: Path) -> Iterator[dict[str, Any]]:
    try:
        fh = path.open("rb")
    except FileNotFoundError:
        return
    except OSError as exc:
        raise EvidenceError(f"{path}: unreadable ({exc})") from None
    with fh:
        lines = fh.read().split(b"\n")
    for i, raw in enumerate(lines):
        if not raw.strip():
            continue
        try:
            record = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            if i == len(lines) - 1:
                continue  # torn final write
            raise EvidenceError(f"{path}: line {i + 1} is not a JSON event") from None
        if not isinstance(record, dict) or record.get("schema") != SCHEMA_EVENT:
            raise EvidenceError(f"{path}: line {i + 1} is not a {SCHEMA_EVENT!r} event")
        yield record


def is_attempt_dir(path: Path) -> bool:
    return (path / CONTROL).is_file()
