"""Which interpreter the workload will run, and with which start-up flags (C6 scans
exactly that one)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping

from skgate.evidence import regular
from skgate.model.errors import UsageError
from skgate.model.frozen import record
from skgate.model.request import RunRequest

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_PYTHON_RE = re.compile(r"^python(\d+(\.\d+)*)?$")
#: Interpreter flags of the command that change start-up, passed to the scan probes.
_STARTUP_FLAGS = "EsSI"
_FLAGS_WITH_ARG = ("-X", "-W", "--check-hash-based-pycs")
#: How an interpreter was found (recorded in the hook scan's ``interpreter.how``).
_BY_OPTION = "--python"
_ON_PATH = "python3 on the workload PATH"


@record
class Interpreter:
    path: str | None
    how: str
    flags: tuple[str, ...] = ()
    command_is_python: bool = False
    note: str | None = None

    @property
    def guessed(self) -> bool:
        """Found neither in the command nor by --python: the python3 first on the PATH,
        scanned because a command that is not Python may still start it (C6)."""
        return self.how == _ON_PATH

    def scanned_why(self) -> str:
        """Which interpreter the hook scan inspected, and why (said in a refusal)."""
        if self.guessed:
            return (
                f"scanned {self.path}, the python3 first on the workload PATH, because the "
                "command is not Python but may start it"
            )
        if self.how == _BY_OPTION:
            return f"scanned {self.path}, given with --python"
        return f"scanned {self.path}, the interpreter of the command ({self.how})"

    def other_way(self) -> str:
        """The way out of a refusal besides approving the hook: name the right one, when
        skgate had to guess it ('' otherwise)."""
        if not self.guessed:
            return ""
        return "or, if the workload runs another interpreter, name it with --python PATH"

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "how": self.how,
            "flags": list(self.flags),
            "command_is_python": self.command_is_python,
            "note": self.note,
        }


def resolve_command(name: str, env: Mapping[str, str], cwd: str) -> str | None:
    """The executable ``name`` runs as (a path, or found on the ``PATH`` of ``env``), or
    None when there is none: then the command is not started, and nothing is scanned."""
    if os.sep in name:
        p = name if os.path.isabs(name) else os.path.join(cwd, name)
        return p if os.path.isfile(p) and os.access(p, os.X_OK) else None
    return _which(name, env.get("PATH", os.defpath))


def _which(name: str, path: str) -> str | None:
    """``shutil.which(name, path=path)`` on POSIX, step for step (the first existing,
    executable non-directory ``DIR/name`` along ``path``; an empty entry is relative),
    without importing ``shutil`` and the compression modules it loads on every run's
    start-up (issue 29)."""
    if not path:
        return None
    seen: set[str] = set()
    for folder in path.split(os.pathsep):
        if folder in seen:
            continue
        seen.add(folder)
        candidate = os.path.join(folder, name)
        if (
            os.path.exists(candidate)
            and os.access(candidate, os.X_OK)
            and not os.path.isdir(candidate)
        ):
            return candidate
    return None


def _startup_flags(args: Iterable[str]) -> tuple[str, ...]:
    """Start-up flags (-E -s -S -I) given to the interpreter before the script/-c/-m."""
    found: list[str] = []
    it = iter(args)
    for arg in it:
        if arg in _FLAGS_WITH_ARG:
            next(it, None)
            continue
        if not arg.startswith("-") or arg == "-" or arg.startswith("--"):
            break
        letters = arg[1:]
        for i, ch in enumerate(letters):
            if ch in "cm":  # -c CMD / -m MOD: everything after is the program's
                return tuple(found)
            if ch in "XW":  # -Xfoo: the rest of the token is the option's value
                break
            if ch in _STARTUP_FLAGS and f"-{ch}" not in found:
                found.append(f"-{ch}")
            del i
    return tuple(found)


def _shebang(path: str) -> list[str] | None:
    head = regular.read_head(path, 256)  # a FIFO named as the command: never waited on
    if head is None or not head.startswith(b"#!"):
        return None
    line = head[2:].split(b"\n", 1)[0].decode("utf-8", "replace").strip()
    return line.split()


def find_interpreter(request: RunRequest, env: Mapping[str, str]) -> Interpreter:
    """The interpreter the workload will run (C6 scans exactly that one)."""
    cwd = request.cwd
    if request.python:
        found = resolve_command(request.python, env, cwd)
        if found is None:
            raise UsageError(
                f"--python {request.python} does not exist or is not executable; "
                "give the interpreter the workload runs"
            )
        return Interpreter(found, _BY_OPTION)
    argv = list(request.argv)
    if argv and os.path.basename(argv[0]) == "env":
        rest = argv[1:]
        while rest and (rest[0].startswith("-") or "=" in rest[0]):
            rest = rest[1:]
        argv = rest
    if argv:
        name = os.path.basename(argv[0])
        resolved = resolve_command(argv[0], env, cwd)
        if _PYTHON_RE.match(name):
            flags = _startup_flags(argv[1:])
            if resolved is None:
                return Interpreter(
                    None,
                    "command",
                    flags,
                    True,
                    f"the command's interpreter {argv[0]} is not found on the workload PATH",
                )
            return Interpreter(resolved, "command argv[0]", flags, True)
        if resolved is not None:
            tokens = _shebang(resolved)
            if tokens:
                interp, rest_tokens = tokens[0], tokens[1:]
                if os.path.basename(interp) == "env":
                    rest_tokens = [t for t in rest_tokens if t != "-S"]
                    while rest_tokens and rest_tokens[0].startswith("-"):
                        rest_tokens = rest_tokens[1:]
                    if rest_tokens:
                        interp, rest_tokens = rest_tokens[0], rest_tokens[1:]
                if _PYTHON_RE.match(os.path.basename(interp)):
                    found = resolve_command(interp, env, cwd)
                    if found is not None:
                        return Interpreter(
                            found, f"shebang of {resolved}", _startup_flags(rest_tokens)
                        )
    fallback = resolve_command("python3", env, cwd)
    if fallback is None:
        return Interpreter(
            None, "none", note="no python3 on the workload PATH: start-up hook scan skipped"
        )
    return Interpreter(fallback, _ON_PATH)
