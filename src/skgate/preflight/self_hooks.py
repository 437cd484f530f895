"""The start-up hooks skgate's own interpreter ran (issue 21; C6).

The ``skgate`` console script is a Python program. A ``sitecustomize.py`` on
``PYTHONPATH`` (or in the user site), a ``usercustomize.py``, or a ``.pth`` file in the
user site runs inside skgate itself before any check: it could patch ``os.cpu_count``
(and so the frozen ``--jobs auto``, C5) or skgate's own code. The hook scan (C6) blocks
such hooks for the workload; skgate cannot undo them for itself once they ran, but it
can say so, and record them in ``control.json`` (``controls.skgate_self``), so nobody
trusts an attempt made under them without knowing. ``python -I -m skgate`` (isolated
mode: no ``PYTHONPATH``, no user site) is the hardened way to call it.

Read from ``sys.modules``, ``sys.flags`` and ``site`` only: nothing is imported or run.
"""

from __future__ import annotations

import os
import site
import sys

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: The advice printed and recorded whenever a hook ran in skgate's own process.
HARDENED = "python -I -m skgate"


def _origin(path: str, pythonpath: list[str], user_site: str | None) -> str:
    """Where a hook file came from: ``PYTHONPATH``, ``user site`` or ``installation``."""
    real = os.path.realpath(path)
    if user_site and os.path.commonpath([real, os.path.realpath(user_site)]) == (
        os.path.realpath(user_site)
    ):
        return "user site"
    for entry in pythonpath:
        base = os.path.realpath(entry or ".")
        if os.path.commonpath([real, base]) == base:
            return "PYTHONPATH"
    return "installation"


def own_hooks(
    modules: dict[str, Any] | None = None, environ: dict[str, str] | None = None
) -> dict[str, Any]:
    """The record ``controls.skgate_self``: this process's interpreter, its isolation
    flags, and each start-up hook it ran that came from ``PYTHONPATH`` or the user site.

    A hook of the installation itself (a distribution's ``sitecustomize``) is listed
    too, with ``from: installation``, but is not counted as untrusted: the hook scan's
    catalogue judges those for the workload.
    """
    mods = sys.modules if modules is None else modules
    env = os.environ if environ is None else environ
    flags = sys.flags
    pythonpath = [] if flags.ignore_environment else env.get("PYTHONPATH", "").split(os.pathsep)
    pythonpath = [p for p in pythonpath if p]
    user_site = site.USER_SITE if site.ENABLE_USER_SITE else None
    hooks: list[dict[str, str]] = []
    for name in ("sitecustomize", "usercustomize"):
        mod = mods.get(name)
        path = getattr(mod, "__file__", None) if mod is not None else None
        if isinstance(path, str):
            hooks.append({"kind": name, "path": path, "from": _origin(path, pythonpath, user_site)})
    if user_site and user_site in sys.path:
        # site added the user site, so it processed every .pth file there at start-up.
        try:
            names = sorted(n for n in os.listdir(user_site) if n.endswith(".pth"))
        except OSError:
            names = []
        hooks.extend(
            {"kind": "pth", "path": os.path.join(user_site, n), "from": "user site"} for n in names
        )
    untrusted = [h for h in hooks if h["from"] != "installation"]
    record: dict[str, Any] = {
        "executable": sys.executable,
        "isolated": bool(flags.isolated),
        "ignore_environment": bool(flags.ignore_environment),
        "no_user_site": bool(flags.no_user_site),
        "no_site": bool(flags.no_site),
        "hooks": hooks,
        "untrusted": len(untrusted),
        "note": None,
    }
    if untrusted:
        record["note"] = (
            f"skgate's own interpreter ran {len(untrusted)} start-up hook(s) from PYTHONPATH "
            "or the user site before any check (they could have changed skgate itself or "
            f"os.cpu_count); call it as '{HARDENED}'"
        )
    return record


def render(record: dict[str, Any]) -> list[str]:
    """The preflight lines of :func:`own_hooks` (nothing when no untrusted hook ran)."""
    untrusted = [h for h in record.get("hooks", []) if h.get("from") != "installation"]
    if not untrusted:
        return []
    lines = [f"WARNING: {record.get('note')}"]
    lines.extend(f"  [ran in skgate] {h['kind']}: {h['path']} ({h['from']})" for h in untrusted)
    return lines
