"""Bootstrap: ``python .../sim/_entry.py <program> ARGS...`` runs one sim program.

``op_compiler`` starts ``opc`` as ``[argv0="opc", this file, "opc", ...]`` so that
``/proc/<pid>/cmdline`` begins with ``opc`` like the real worker. With that ``argv[0]``
Python cannot locate its virtual environment, and ``-m skgate.sim.opc`` would also pay for
importing the gate package in every worker. So this file registers the sim directory as a
private package and imports the program from it: the sim is stdlib-only and uses relative
imports, so it runs the same either way.
"""

from __future__ import annotations

import importlib
import os
import sys
import types

_PKG = "_skgate_sim"
_PROGRAMS = ("opc", "op_compiler", "launcher")


def _main() -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    # sys.path[0] is this directory: drop it so sim module names never shadow other modules.
    if sys.path and os.path.abspath(sys.path[0] or ".") == here:
        del sys.path[0]
    if len(sys.argv) < 2 or sys.argv[1] not in _PROGRAMS:
        sys.stderr.write(f"skgate-sim: usage: _entry.py {{{'|'.join(_PROGRAMS)}}} ARGS...\n")
        return 2
    program = sys.argv[1]
    pkg = types.ModuleType(_PKG)
    pkg.__path__ = [here]
    sys.modules[_PKG] = pkg
    module = importlib.import_module(f"{_PKG}.{program}")
    main = module.main
    result = main(sys.argv[2:])
    return int(result)


if __name__ == "__main__":
    sys.exit(_main())
