"""The runner's finishing flushes, in order (C2, issue 29: last exit to verdict.json).

The runner's durable writes are traced by a small wrapper (every ``fsync``, every evidence
link, every journal line and whether it was fsync'd itself), and the test checks the
order that makes a durable ``verdict.json`` imply durable evidence beneath it, with the
fewest flushes on the way:

* the tree-end lines (``leader_exited``, ``tree_ended``) are written at once but get no
  fsync of their own: the journal is flushed in the one round of fsyncs with the final
  files, verdict.json, run.log, procs.jsonl and the final manifest (the verdict is
  classified from the final files' text before they are written, so it joins their
  round: two flushes from the last exit to a durable verdict, not three);
* every final file's content is fsync'd before any link, and linked before verdict.json is;
* one directory fsync, after the verdict's link and before ``finished``, serves every
  link (none between the final files' links and the verdict's), and no other fsync
  happens between the tree's end and ``finished``;
* the pipe keeper, whose pipe is drained, is released only after ``finished`` (its exit
  never delays the verdict) and before the seal, which then lists no ``run.kept.log``;
* no module is imported between ``tree_ended`` and ``finished``: what finishing needs is
  loaded while the command runs (an import there compiles it, without cached bytecode);
* neither is ``control.json`` read there (final since before the launch, it is parsed
  while the command runs), nor the whole journal (read in steps meanwhile); the event
  listeners are closed only after the verdict; the final manifest is compact JSON, as
  the running snapshots.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import ENV

WRAPPER = """\
import os, sys, threading
from pathlib import Path

trace = sys.argv[1]
lock = threading.Lock()


def note(line):
    with lock, open(trace, "a") as fh:
        fh.write(line + "\\n")


def name_of(fd):
    try:
        path = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return "?"
    if os.path.isdir(path):
        return "dir:" + os.path.basename(path)
    base = os.path.basename(path)
    if base.startswith(".") and base.endswith(".tmp"):  # files.temp_name: .NAME.PID.HEX.tmp
        return "temp:" + base[1:].rsplit(".", 3)[0]
    return base


real_fsync = os.fsync


def fsync(fd):
    real_fsync(fd)
    note("fsync " + name_of(fd))


os.fsync = fsync
from skgate.evidence import files

real_link = files._link_new


def link(tmp, path):
    real_link(tmp, path)
    note("link " + Path(path).name)


files._link_new = link
real_emit = files.Journal.emit


loaded = set()
built = set()


def emit(self, event, **kwargs):
    out = real_emit(self, event, **kwargs)
    kind = out.to_dict()["event"]
    note(f"line {kind} sync={kwargs.get('sync', True)}")
    from skgate.model import events

    if kind == "tree_ended":
        loaded.update(sys.modules)
        built.update(events._READERS)
    elif kind == "finished":
        for name in sorted(set(sys.modules) - loaded):
            note(f"imported {name}")
        for cls in sorted(events._READERS, key=lambda c: c.__name__):
            late = "" if cls in built else " built after tree_ended"
            note(f"reader {cls.__name__}{late}")
    return out


files.Journal.emit = emit
from skgate.proc.keeper import PipeKeeper

real_release = PipeKeeper.release


def release(self, *args, **kwargs):
    note("keeper released")
    return real_release(self, *args, **kwargs)


PipeKeeper.release = release
from skgate.evidence import load

real_load_control = load.load_control


def load_control(*args, **kwargs):
    note("control read")
    return real_load_control(*args, **kwargs)


load.load_control = load_control
real_read_journal = load.read_journal


def read_journal(*args, **kwargs):
    note("journal read whole")
    return real_read_journal(*args, **kwargs)


load.read_journal = read_journal
from skgate.proc.sources import Sources

real_close = Sources.close


def close(self):
    note("sources closed")
    return real_close(self)


Sources.close = close
from skgate.cli.main import main

sys.exit(main(sys.argv[2:]))
"""

FINAL_FILES = ("summary.txt", "logscan.json", "census.json", "stages.json", "plog.json")
APPENDED = ("run.log", "procs.jsonl", "ownership.json", "events.jsonl")


def traced_run(tmp_path: Path) -> list[str]:
    trace = tmp_path / "trace"
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, str(trace), "run", "--root", "r", "--quiet",
         "--verdict-from", "exit-status", "--", "true"],
        cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return trace.read_text().splitlines()


def traced_compile(tmp_path: Path, summary: str, status: int) -> list[str]:
    """The trace of a run of a compile-like workload printing one summary line."""
    work = tmp_path / "w.py"
    work.write_text(f"print('[summary] stage=compile {summary}')\n")
    trace = tmp_path / "trace"
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, str(trace), "run", "--root", "r", "--quiet",
         "--", sys.executable, str(work)],
        cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == status, done.stderr
    return trace.read_text().splitlines()


def test_the_verdict_is_linked_after_one_flush_of_everything_it_stands_on(
    tmp_path: Path,
) -> None:
    steps = traced_run(tmp_path)
    ended = steps.index("line tree_ended sync=False")
    left = steps.index("line leader_exited sync=False")
    verdict_link = steps.index("link verdict.json")
    finished = steps.index("line finished sync=True")
    assert left < ended < verdict_link < finished
    # No fsync of the journal of its own between the tree's end and the final flush.
    first_link = min(steps.index(f"link {name}") for name in FINAL_FILES)
    batch = steps[ended:first_link]
    assert batch.count("fsync events.jsonl") == 1, batch
    assert "fsync events.jsonl" not in steps[left:ended]
    # The one round: every appended file and every final file's content, before any link.
    for name in APPENDED:
        assert f"fsync {name}" in batch, (name, batch)
    for name in FINAL_FILES:
        assert f"fsync temp:{name}" in batch, (name, batch)
        assert steps.index(f"link {name}") < verdict_link
    # verdict.json's content in the same round, before any link: classified from memory.
    assert "fsync temp:verdict.json" in batch, batch
    dir_syncs = [i for i, s in enumerate(steps) if s.startswith("fsync dir:")]
    assert not [i for i in dir_syncs if first_link < i < verdict_link], steps[first_link:finished]
    assert [i for i in dir_syncs if verdict_link < i < finished], steps[verdict_link:finished]
    # Two flushes on the way, nothing else: the one round, then the one directory fsync.
    assert steps[finished - 1] == "fsync events.jsonl"  # the finished line's own, after
    after_links = [s for s in steps[first_link : finished - 1] if s.startswith("fsync ")]
    assert len(after_links) == 1 and after_links[0].startswith("fsync dir:"), after_links


def test_the_pipe_keeper_is_released_after_the_verdict_and_before_the_seal(
    tmp_path: Path,
) -> None:
    steps = traced_run(tmp_path)
    released = steps.index("keeper released")
    assert steps.index("line finished sync=True") < released < steps.index("link seal.json")
    attempt = tmp_path / "r" / "attempts" / "0001"
    assert not (attempt / "run.kept.log").exists()
    assert "run.kept.log" not in (attempt / "seal.json").read_text()


def test_nothing_is_imported_between_the_last_exit_and_the_verdict(tmp_path: Path) -> None:
    # A compile-like workload: a summary line, so the stage and census paths all run.
    steps = traced_compile(tmp_path, "inputs=1 succeeded=1 failed=0", 0)
    assert "line finished sync=True" in steps
    assert [s for s in steps if s.startswith("imported ")] == []


def test_what_is_final_before_the_last_exit_is_not_done_after_it(tmp_path: Path) -> None:
    """Issue 29: off the path from the tree's end to verdict.json, with the same result
    (C2: the recorded verdict is what ``skgate classify`` recomputes from the files)."""
    from skgate.evidence.load import load_control, load_evidence
    from skgate.verdict.classify import classify

    steps = traced_compile(tmp_path, "inputs=2 succeeded=1 failed=1", 1)  # failed
    ended = steps.index("line tree_ended sync=False")
    finished = steps.index("line finished sync=True")
    # control.json was read back while the command ran, and not again after its end;
    # the journal was read in steps meanwhile, and not whole again after it.
    assert "control read" in steps[:ended], steps
    assert "control read" not in steps[ended:finished], steps[ended:finished]
    assert "journal read whole" not in steps[ended:finished], steps[ended:finished]
    # Every journal record reader it needed was built before the tree's end; none for a
    # kind this journal does not hold (no foreign compiler was waited for).
    assert [s for s in steps if s.endswith("built after tree_ended")] == []
    readers = [s for s in steps if s.startswith("reader ")]
    assert "reader TreeEnded" in readers and "reader Launched" in readers, readers
    assert "reader ForeignWait" not in readers, readers
    # The listeners are closed after verdict.json (the leaf's facts are in the manifest).
    assert steps.index("link verdict.json") < steps.index("sources closed")
    att = tmp_path / "r" / "attempts" / "0001"
    text = (att / "ownership.json").read_text()
    manifest = json.loads(text)
    assert manifest["complete"] is True and manifest["owned"]
    assert text.count("\n") == 1 and ": " not in text  # compact, as the snapshots
    recorded = json.loads((att / "verdict.json").read_text())
    fresh = classify(load_evidence(att)).to_dict()
    assert recorded["state"] == fresh["state"] == "failed"
    assert recorded["reasons"] == fresh["reasons"]
    assert load_evidence(att, control=load_control(att)) == load_evidence(att)


def test_the_runner_classifies_the_final_files_text_as_a_later_reader_reads_the_files(
    tmp_path: Path,
) -> None:
    """C2: the runner classifies the final files from the text it then writes (issue 29);
    a later ``skgate classify`` reads the same evidence from the files."""
    from skgate.evidence.load import load_evidence
    from skgate.verdict.classify import classify

    work = tmp_path / "w.py"
    work.write_text("print('[summary] stage=compile inputs=2 succeeded=1 failed=1')\n")
    done = subprocess.run(
        [sys.executable, "-m", "skgate", "run", "--root", "r", "--quiet", "--",
         sys.executable, str(work)],
        cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    att = tmp_path / "r" / "attempts" / "0001"
    assert (att / "verdict.json").exists(), done.stderr
    names = ("logscan.json", "census.json", "stages.json", "installs.json", "summary.txt")
    written = {name: (att / name).read_text() for name in names}
    from_files = load_evidence(att, finishing=True)
    assert load_evidence(att, finishing=True, pending=written) == from_files
    recorded = json.loads((att / "verdict.json").read_text())
    assert recorded["state"] == classify(from_files).state.value == "failed"
    # The pending text is what is read, not the file beside it: another summary, another
    # verdict.
    other = json.loads(written["logscan.json"])
    other["summary"]["lines"] = ["[summary] stage=compile inputs=2 succeeded=2 failed=0"]
    other["summary"]["failed"] = 0
    other["summary"]["succeeded"] = 2
    changed = load_evidence(
        att, finishing=True, pending={**written, "logscan.json": json.dumps(other)}
    )
    assert changed != from_files


def test_the_round_of_fsyncs_waits_for_every_one_and_raises_the_first_error(
    tmp_path: Path,
) -> None:
    import errno
    import os

    import pytest

    from skgate.evidence.files import _fsync_all

    _fsync_all(())  # nothing to flush: returns at once, never waits for a thread
    fds = [os.open(tmp_path / f"f{i}", os.O_WRONLY | os.O_CREAT) for i in range(5)]
    try:
        _fsync_all(tuple(fds))
        closed = os.open(tmp_path / "closed", os.O_WRONLY | os.O_CREAT)
        os.close(closed)
        with pytest.raises(OSError, match="Bad file descriptor") as err:
            _fsync_all((*fds, closed))
        assert err.value.errno == errno.EBADF
    finally:
        for fd in fds:
            os.close(fd)


def test_the_journal_read_in_steps_is_the_journal_read_whole(tmp_path: Path) -> None:
    """Issue 29, C2: what JournalSoFar gives is what read_journal gives, at any point,
    complete lines taken as they come, a torn last line and damage alike."""
    import pytest

    from skgate.evidence.journal import JournalSoFar, read_journal
    from skgate.model.errors import EvidenceError

    path = tmp_path / "events.jsonl"
    so_far = JournalSoFar(path)
    so_far.advance()  # not written yet
    assert so_far.events() == read_journal(path) == []

    def line(i: int) -> bytes:
        record = {"schema": "skgate.event/1", "t": 1.0 + i, "event": "observation", "n": i}
        return (json.dumps(record) + "\n").encode()

    with path.open("ab") as fh:
        fh.write(line(1) + b"\n" + line(2) + line(3)[:-9])  # a blank line; a torn write
    so_far.advance()
    assert so_far.events() == read_journal(path) and len(read_journal(path)) == 2
    with path.open("ab") as fh:
        fh.write(line(3)[-9:] + line(4))  # the torn line completed, one more
    assert so_far.events() == read_journal(path) and len(read_journal(path)) == 4
    so_far.advance()
    with path.open("ab") as fh:
        fh.write(line(5))
    assert so_far.events() == read_journal(path) and len(read_journal(path)) == 5
    # A line iter_journal refuses is refused in the same words, taken in steps or not.
    with path.open("ab") as fh:
        fh.write(b'{"schema": "not an event"}\n' + line(6))
    with pytest.raises(EvidenceError) as whole:
        read_journal(path)
    with pytest.raises(EvidenceError) as stepped:
        so_far.events()
    assert str(stepped.value) == str(whole.value) and "line 7 " in str(whole.value)
    so_far.advance()  # it stops stepping there, and still says the same
    with pytest.raises(EvidenceError) as after:
        so_far.events()
    assert str(after.value) == str(whole.value)
