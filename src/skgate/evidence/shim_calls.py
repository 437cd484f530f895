"""The argvs skgate's op_compiler shim left in the attempt (``--enforce-jobs``, C5).

For each call the shim (``skgate/data/op_compiler.sh``) writes ``shim/calls/<pid>.orig``
(the argv the launcher gave it) and then ``<pid>.new`` (the argv it execs the real
op_compiler with), NUL-separated, before its ``exec``; the pid stays the same through
the exec. Read after the owned tree has ended, when no writer is left (C1). A call
without ``.new`` never reached its exec and is not a stage's.

:func:`with_shim_calls` puts them into the stage record: each stage of a shimmed pid
keeps the launcher's argv as ``original_argv``; when the ownership sources saw only the
shim's image (the argv before the exec), its ``args`` become the argv the shim exec'd,
the one the real op_compiler ran with. Nothing here writes.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from skgate.evidence.files import SHIM_CALLS
from skgate.model.frozen import replace
from skgate.model.stages import CompilerArgs, Stages, parse_compiler_argv

__all__ = ["SHIM_CALLS", "ShimCall", "read_shim_calls", "with_shim_calls"]

#: An argv file larger than this is not the shim's (a bound on what is read).
MAX_ARGV_BYTES = 1 << 20


@dataclass(frozen=True)
class ShimCall:
    """One op_compiler call through the shim: the argv before and after ``-j`` was set."""

    pid: int
    original: tuple[str, ...]
    rewritten: tuple[str, ...]


def _read_argv(path: Path) -> tuple[str, ...] | None:
    try:
        with path.open("rb") as fh:
            raw = fh.read(MAX_ARGV_BYTES + 1)
    except OSError:
        return None
    if len(raw) > MAX_ARGV_BYTES or not raw.endswith(b"\0"):
        return None
    return tuple(w.decode("utf-8", "surrogateescape") for w in raw[:-1].split(b"\0"))


def read_shim_calls(calls_dir: Path) -> dict[int, ShimCall]:
    """Every complete call the shim left in ``calls_dir`` (none when it is absent)."""
    out: dict[int, ShimCall] = {}
    try:
        names = sorted(p.name for p in calls_dir.iterdir())
    except OSError:
        return out
    for name in names:
        stem, dot, kind = name.partition(".")
        if kind != "new" or not dot or not stem.isdigit():
            continue
        rewritten = _read_argv(calls_dir / name)
        original = _read_argv(calls_dir / f"{stem}.orig")
        if rewritten is None or original is None:
            continue
        out[int(stem)] = ShimCall(int(stem), original, rewritten)
    return out


def _same_invocation(a: CompilerArgs, b: CompilerArgs) -> bool:
    return a.params_dir == b.params_dir and a.output == b.output


def with_shim_calls(stages: Stages, calls: dict[int, ShimCall]) -> Stages:
    """``stages`` with each shimmed stage's ``original_argv`` (and argv, see module doc)."""
    if not calls:
        return stages
    changed = []
    for st in stages.stages:
        call = calls.get(st.pid)
        if call is None:
            changed.append(st)
            continue
        original = parse_compiler_argv(call.original)
        rewritten = parse_compiler_argv(call.rewritten)
        if not _same_invocation(st.args, rewritten):
            changed.append(st)  # a recycled pid: another process's call
            continue
        args = st.args
        if st.args.jobs_text == original.jobs_text != rewritten.jobs_text:
            # Only the shim's image was seen: its recorded exec is what op_compiler ran.
            args = rewritten
        changed.append(replace(st, args=args, original_argv=call.original))
    return replace(stages, stages=tuple(changed))
