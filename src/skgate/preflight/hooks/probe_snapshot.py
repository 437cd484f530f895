"""Child side of the start-up probes (C6). Runs under the *workload* interpreter.

Run by path, never imported by skgate::

    PY [FLAGS] probe_snapshot.py OUT            # start-up probe: the workload's start-up

It writes ``repr()`` of ``{"executable": ..., "modules": [(name, file or None), ...]}``,
the modules present when user code starts, to ``OUT``. Modules in its list and not in
the baseline (recorded by ``probe_static.py``) were imported by a start-up hook.

The start-up probe runs only after the static scan found nothing unapproved, since it
executes whatever start-up runs. It must not import anything itself: a module on
``PYTHONPATH`` could shadow it and would then run as part of the probe, not of the
workload's start-up. So it uses only ``sys`` (built in) and the ``open``/``repr``
builtins, and reads ``sys.modules`` before anything else happens.

Kept to the syntax of Python 3.6+: the workload interpreter may be older than skgate's.
"""

import sys

_modules = [(str(k), getattr(v, "__file__", None)) for k, v in list(sys.modules.items())]

if __name__ == "__main__":
    _snapshot = {
        "executable": sys.executable,
        "modules": [(k, f if isinstance(f, str) else None) for k, f in _modules],
    }
    with open(sys.argv[1], "w") as _fh:
        _fh.write(repr(_snapshot))
