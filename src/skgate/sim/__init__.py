"""skgate.sim: a simulator of CANN SuperKernel static compilation, with fault injection.

Programs (each also runs as ``python -m skgate.sim.<name>``):

- ``launcher``: an inference process that static-compiles, installs and runs steps;
- ``op_compiler``: the compile driver that fans out into ``opc`` workers;
- ``opc``: one per-input compile worker.

Layout, names and printed lines follow ``docs/cann-static-compile.md`` so that the
gate's code works the same against a real Ascend host. Faults (``SKGATE_SIM_FAULTS``, see
``faults.py``) are inherited by the whole tree. With ``SKGATE_SIM_MARKERS=DIR`` each
process writes ``DIR/<role>.<pid>.started`` (and ``.finished``, ``.ignoring-sigterm``)
atomically, so tests wait on files instead of sleeping.

The gate's core never imports this package, and this package imports nothing from the
gate: it is stdlib-only, so it can stand in for CANN as an independent program.
"""

from __future__ import annotations
