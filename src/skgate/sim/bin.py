"""``python -m skgate.sim.bin DIR``: put the sim's op_compiler into DIR as an executable.

A real launcher finds ``op_compiler`` on its PATH; the sim's torchair does the same with
``--op-compiler-from-path``. The file written here is that op_compiler: a small script
(run with ``-I -S``, so no start-up hook of any interpreter is involved) that execs the
sim's op_compiler exactly as :func:`common.program_argv` would start it, so the process
looks the same (argv[0] and comm ``op_compiler``, with ``SKGATE_SIM_PROGRAM_PREFIX``).

Exit status: 0 written, 2 bad arguments or DIR not writable.
"""

from __future__ import annotations

import os
import sys

from . import common

NAME = "op_compiler"

_SCRIPT = """#!{python} -IS
# skgate-sim op_compiler on PATH (written by python -m skgate.sim.bin)
import os, sys
argv0 = os.environ.get({prefix_var!r}, "") + {name!r}
os.execv({python!r}, [argv0, {entry!r}, {name!r}, *sys.argv[1:]])
"""


def write_bin(directory: str) -> str:
    """Write ``DIR/op_compiler`` (mode 0755) and return its path."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, NAME)
    text = _SCRIPT.format(
        python=common.python_executable(),
        prefix_var=common.ENV_PROGRAM_PREFIX,
        name=NAME,
        entry=common.ENTRY,
    )
    tmp = os.path.join(directory, f".{NAME}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.chmod(tmp, 0o755)  # noqa: S103 - an executable for the sim's PATH, like CANN's bin
    os.replace(tmp, path)
    return path


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        common.say("usage: python -m skgate.sim.bin DIR", err=True)
        return 2
    try:
        common.say(write_bin(args[0]))
    except OSError as exc:
        common.say(f"skgate-sim bin: {exc}", err=True)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
