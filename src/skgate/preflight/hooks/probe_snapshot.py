"""Child side of the start-up probes (C6). Runs under the *workload* interpreter.

Run by path, never imported by skgate::

    PY [FLAGS] probe_snapshot.py OUT            # start-up probe: the workload's start-up

It writes, as JSON, ``{"executable": ..., "modules": [[name, file or null], ...]}``,
the modules present when user code starts, to ``OUT``. Modules in its list and not in
the baseline (recorded by ``probe_static.py``) were imported by a start-up hook.

The start-up probe runs only after the static scan found nothing unapproved, since it
executes whatever start-up runs. It must not import anything itself: a module on
``PYTHONPATH`` could shadow it and would then run as part of the probe, not of the
workload's start-up. So it uses only ``sys`` (built in) and the ``open``/``ord``/``str``
builtins, reads ``sys.modules`` before anything else happens, and spells its JSON by
hand (the runner reads it with ``json``, no ``ast`` needed: issue 29). Every ``"``,
``\\``, control character and lone surrogate (a file name the file system's encoding
could not decode) is written as a ``\\uXXXX`` escape, so the file is plain UTF-8 and
reads back as the very same strings.

Kept to the syntax of Python 3.6+: the workload interpreter may be older than skgate's.
"""

import sys

_modules = [(str(k), getattr(v, "__file__", None)) for k, v in list(sys.modules.items())]


def _text(s):  # type: (str) -> str
    out = []
    for ch in s:
        o = ord(ch)
        if ch in {'"', "\\"} or o < 0x20 or 0xD800 <= o <= 0xDFFF:
            out.append(f"\\u{o:04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _pair(name, file):  # type: (str, object) -> str
    return "[" + _text(name) + "," + (_text(file) if isinstance(file, str) else "null") + "]"


if __name__ == "__main__":
    _body = (
        '{"executable":'
        + _text(str(sys.executable))
        + ',"modules":['
        + ",".join(_pair(k, f) for k, f in _modules)
        + "]}"
    )
    with open(sys.argv[1], "w", encoding="utf-8") as _fh:
        _fh.write(_body)
