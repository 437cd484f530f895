"""Start-up hook scan of the workload interpreter (C6).

C6 forbids any Python start-up hook from implementing an override: ``sitecustomize``,
``usercustomize``, ``.pth`` import lines, ``PYTHONSTARTUP``, monkey-patch directories
prepended to ``PYTHONPATH``, and shims that import application modules or ``torch_npu``
at start-up. Loading a hook alone changes import order and process state, so an
unapproved hook blocks the run even with profiling disabled.

Probe protocol (parent <-> child, in the style of pyproject-hooks):

1. *static probe*: the workload interpreter runs with ``-S`` (site disabled, so no hook
   executes) and exactly the workload environment. It replays what ``site.main()`` would
   do (venv detection, user site, site directories, ``.pth`` path lines) without running
   any ``.pth`` import line or customize module, and writes JSON to the file named in
   ``argv[1]``: interpreter facts, the start-up ``sys.path``, site directories, every
   ``.pth`` line classified, the ``sitecustomize``/``usercustomize`` it would import, the
   ``PYTHONPATH`` entries with the top-level names they hold, and the stdlib names.
2. *start-up probe*: the interpreter runs normally (``-c``) with exactly the workload
   environment and writes the modules present when user code starts.
3. *baseline probe*: the same interpreter with ``-I -S`` imports ``site`` without running
   it: the interpreter's own start-up set. Modules in (2) but not (3) were imported by a
   hook; non-stdlib ones are "start-up modules" (shims).

Results go through files, never stdout, so a hook that prints cannot forge them. Each
probe runs in its own session with a timeout; on timeout skgate kills that probe's own
process group (it created it, C4) and reports a blocked preflight, never a silent pass.

Each finding has a fingerprint: sha256 over (kind, path, sha256 of content). Approval
is explicit: a full fingerprint on the command line or in a baseline file
(``skgate.hook-baseline/1``) frozen once with ``skgate preflight --freeze-baseline``.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from skgate.preflight.hooks.baseline import (
    SCHEMA_HOOK_BASELINE,
    check_fingerprint,
    freeze_baseline,
    load_baseline,
    write_baseline,
)
from skgate.preflight.hooks.findings import (
    KIND_PTH_IMPORT,
    KIND_PYTHONPATH,
    KIND_PYTHONSTARTUP,
    KIND_SITECUSTOMIZE,
    KIND_STARTUP_MODULE,
    KIND_USERCUSTOMIZE,
    SCHEMA_HOOK_SCAN,
    Finding,
    HookScan,
    content_hash,
    make_finding,
    sha256_bytes,
)
from skgate.preflight.hooks.probe import Probe

#: Re-exported: the scan's public face (callers name them through this module).
__all__ = [
    "SCHEMA_HOOK_BASELINE",
    "SCHEMA_HOOK_SCAN",
    "Finding",
    "HookScan",
    "InterpreterError",
    "check_fingerprint",
    "freeze_baseline",
    "load_baseline",
    "scan",
    "write_baseline",
]

#: Seconds one probe may take before the scan is reported as blocked.
PROBE_TIMEOUT = 30.0


#: setuptools' ``distutils-precedence.pth``, matched by content (both shipped variants).
_DISTUTILS_PTH = re.compile(
    r"import os; var = 'SETUPTOOLS_USE_DISTUTILS'; "
    r"enabled = os\.environ\.get\(var, '(?:local|stdlib)'\) == 'local'; "
    r"enabled and __import__\('_distutils_hack'\)\.add_shim\(\); ?"
)
ALLOW_DISTUTILS = (
    "setuptools distutils-precedence.pth (packaging hook, matched by content): it imports "
    "only setuptools' _distutils_hack, nothing of the application"
)
ALLOW_PATH_LINES = ".pth path lines only extend sys.path and import nothing: not a hook"


class InterpreterError(Exception):
    """The static probe could not run: the interpreter is missing, broken or not Python."""


# --------------------------------------------------------------------------- probes
# The probe sources run under the *workload* interpreter: keep them Python-3.6-clean.

#: Prologue of every probe: before importing anything that lives on ``sys.path``, keep
#: only the interpreter's own stdlib entries, so a monkey-patch directory on PYTHONPATH
#: (one of the things being scanned) cannot shadow the probe's own imports. Results are
#: written with ``repr`` and read with ``ast.literal_eval``: no ``json`` in the child.
_PROLOGUE = r"""
import sys
_path0 = list(sys.path)
_std = getattr(sys, "_stdlib_dir", None)
if not _std:
    _enc = getattr(sys.modules.get("encodings"), "__file__", None) or ""
    _std = _enc.rsplit("/", 2)[0] if _enc.count("/") >= 2 else None
if _std in sys.path:
    _i = sys.path.index(_std)
    if _i > 0 and sys.path[_i - 1].endswith(".zip"):
        _i -= 1
    sys.path[:] = sys.path[_i:]
"""

STATIC_PROBE = (
    _PROLOGUE
    + r"""
import os
out = sys.argv[1]
cmd_no_site = sys.argv[2] == "1"
import site
res = {}
res["executable"] = sys.executable
res["version"] = "%d.%d.%d" % tuple(sys.version_info[:3])
res["implementation"] = sys.implementation.name
res["flags"] = {"ignore_environment": bool(sys.flags.ignore_environment),
                "no_user_site": bool(sys.flags.no_user_site),
                "isolated": bool(getattr(sys.flags, "isolated", 0))}
path0 = list(_path0)
if path0 and path0[0] == "":
    path0 = path0[1:]  # '' is inserted for -c after start-up, the workload never sees it
res["path0"] = path0
sitedirs = []
user_site = None
enable_user = False
if not cmd_no_site:
    try:
        site.venv(None)
    except Exception:
        pass
    enable_user = site.ENABLE_USER_SITE
    if enable_user is None:
        enable_user = site.check_enableusersite()
    user_site = site.getusersitepackages()
    if enable_user and os.path.isdir(user_site):
        sitedirs.append(user_site)
    for d in site.getsitepackages():
        if os.path.isdir(d) and d not in sitedirs:
            sitedirs.append(d)
res["prefix"] = sys.prefix
res["base_prefix"] = getattr(sys, "base_prefix", sys.prefix)
res["enable_user_site"] = bool(enable_user)
res["user_site"] = user_site
res["sitedirs"] = sitedirs
pths = []
full = list(path0)
for sd in sitedirs:
    if sd not in full:
        full.append(sd)
    try:
        names = sorted(n for n in os.listdir(sd) if n.endswith(".pth"))
    except OSError:
        names = []
    for n in names:
        p = os.path.join(sd, n)
        rec = {"path": p, "sitedir": sd, "import_lines": [], "path_lines": []}
        try:
            with open(p, "rb") as fh:
                raw = fh.read()
        except OSError as exc:
            rec["error"] = str(exc)
            pths.append(rec)
            continue
        text = raw.decode("utf-8", "replace")
        for line in text.splitlines():
            if line.startswith("#"):
                continue
            if line.startswith(("import ", "import\t")):
                rec["import_lines"].append(line)
                continue
            line = line.rstrip()
            if not line:
                continue
            d = os.path.abspath(os.path.join(sd, line))
            rec["path_lines"].append(d)
            if os.path.exists(d) and d not in full:
                full.append(d)
        pths.append(rec)
res["pth"] = pths
res["sys_path"] = full
import importlib.machinery
custom = {}
for name in ("sitecustomize", "usercustomize"):
    if cmd_no_site or (name == "usercustomize" and not enable_user):
        continue
    try:
        spec = importlib.machinery.PathFinder.find_spec(name, full)
    except Exception as exc:
        custom[name] = {"error": str(exc)}
        continue
    if spec is not None:
        custom[name] = {"origin": spec.origin,
                        "package": list(spec.submodule_search_locations or [])}
res["customize"] = custom
sfx = tuple(importlib.machinery.all_suffixes())
def names_in(d):
    found = {}
    try:
        entries = os.listdir(d)
    except OSError:
        return found
    for e in entries:
        p = os.path.join(d, e)
        if e.endswith(sfx) and os.path.isfile(p):
            found.setdefault(e.split(".")[0], p)
        elif e.isidentifier() and os.path.isdir(p):
            for init in ("__init__.py", "__init__.pyc"):
                if os.path.isfile(os.path.join(p, init)):
                    found.setdefault(e, os.path.join(p, init))
                    break
    return found
pp_raw = "" if sys.flags.ignore_environment else os.environ.get("PYTHONPATH", "")
entries = []
for i, ent in enumerate(pp_raw.split(os.pathsep) if pp_raw else []):
    absent = os.path.abspath(ent) if ent else ent
    entries.append({"index": i, "entry": ent, "path": absent,
                    "exists": bool(ent) and os.path.exists(absent),
                    "is_dir": bool(ent) and os.path.isdir(absent),
                    "names": names_in(absent) if ent else {}})
res["pythonpath"] = entries
installed = {}
for d in full:
    if any(d == e["path"] for e in entries):
        continue
    for n in names_in(d):
        installed.setdefault(n, d)
res["installed_names"] = installed
std = getattr(sys, "stdlib_module_names", None)
if std is None:
    import sysconfig
    std = set(sys.builtin_module_names)
    for key in ("stdlib", "platstdlib"):
        d = sysconfig.get_paths().get(key)
        if d:
            std.update(names_in(d))
            std.update(names_in(os.path.join(d, "lib-dynload")))
res["stdlib_names"] = sorted(std)
res["builtin_names"] = sorted(sys.builtin_module_names)
res["pythonstartup"] = None if sys.flags.ignore_environment else os.environ.get("PYTHONSTARTUP")
with open(out, "w") as fh:
    fh.write(repr(res))
"""
)

SNAPSHOT_PROBE = r"""
import sys
_m = [(str(k), getattr(v, "__file__", None)) for k, v in list(sys.modules.items())]
_m = [(k, f if isinstance(f, str) else None) for k, f in _m]
with open(sys.argv[1], "w") as fh:
    fh.write(repr({"executable": sys.executable, "modules": _m}))
"""


def _top(name: str) -> str:
    return name.split(".", 1)[0]


# --------------------------------------------------------------------------- scan


def scan(
    python: str,
    env: Mapping[str, str],
    *,
    cwd: str | None = None,
    flags: Sequence[str] = (),
    approved: Iterable[str] = (),
    baseline: Iterable[str] = (),
    timeout: float | None = None,
) -> HookScan:
    """Scan ``python`` as it will start with ``env`` and interpreter ``flags``.

    ``flags`` are the start-up flags the command itself passes (``-E``, ``-s``, ``-S``,
    ``-I``), so the probe sees the start-up the workload will see.
    """
    limit = PROBE_TIMEOUT if timeout is None else timeout
    approved_set = {fp.lower() for fp in approved}
    baseline_set = set(baseline)
    no_site = "-S" in flags
    with tempfile.TemporaryDirectory(prefix="skgate-probe-") as tmp:
        t = Path(tmp)
        # The three probes are independent interpreter start-ups: run them at once, so
        # preflight costs about one start-up, not three (run start-up overhead target).
        deadline = time.monotonic() + limit
        probes = [
            Probe(
                [
                    python,
                    *flags,
                    "-S",
                    "-c",
                    STATIC_PROBE,
                    str(t / "static.json"),
                    "1" if no_site else "0",
                ],
                env,
                cwd,
                t / "static.json",
            ),
            Probe(
                [python, *flags, "-c", SNAPSHOT_PROBE, str(t / "start.json")],
                env,
                cwd,
                t / "start.json",
            ),
            Probe(
                [python, "-I", "-S", "-c", "import site\n" + SNAPSHOT_PROBE, str(t / "base.json")],
                env,
                cwd,
                t / "base.json",
            ),
        ]
        (static, problem), (started, problem_dyn), (base, problem_base) = (
            p.result(deadline) for p in probes
        )
        if static is None or not isinstance(static, dict):
            raise InterpreterError(problem or "probe result is not an object")
    problems = [p for p in (problem_dyn, problem_base) if p]
    findings, allowances, allowed_modules, notes = _static_findings(static, env, no_site)
    pythonpath = _pythonpath(static)
    for entry in pythonpath:
        if entry["shadows"]:
            findings.append(
                make_finding(
                    KIND_PYTHONPATH,
                    str(entry["path"]),
                    f"PYTHONPATH entry {entry['index']} shadows "
                    + ", ".join(entry["shadows"][:8])
                    + (" ..." if len(entry["shadows"]) > 8 else ""),
                    content=_shadow_hash(entry),
                )
            )
    if started is not None and base is not None:
        findings.extend(
            _startup_findings(
                started=started,
                base=base,
                static=static,
                existing=findings,
                allowed_modules=allowed_modules,
                allowances=allowances,
            )
        )
    marked = []
    for f in findings:
        if f.fingerprint in approved_set:
            marked.append(f.approve("--approve-hook"))
        elif f.fingerprint in baseline_set:
            marked.append(f.approve("baseline"))
        else:
            marked.append(f)
    interpreter = {
        "path": python,
        "executable": static.get("executable"),
        "version": static.get("version"),
        "implementation": static.get("implementation"),
        "prefix": static.get("prefix"),
        "base_prefix": static.get("base_prefix"),
        "flags": list(flags),
        "sitedirs": static.get("sitedirs", []),
        "user_site": static.get("user_site"),
        "enable_user_site": static.get("enable_user_site"),
    }
    public_path = [{k: v for k, v in e.items() if k != "_files"} for e in pythonpath]
    return HookScan(
        python=python,
        interpreter=interpreter,
        findings=tuple(marked),
        allowances=tuple(allowances),
        pythonpath=tuple(public_path),
        notes=tuple(notes),
        problems=tuple(problems),
    )


def _static_findings(
    static: Mapping[str, Any], env: Mapping[str, str], no_site: bool
) -> tuple[list[Finding], list[dict[str, str]], set[str], list[str]]:
    findings: list[Finding] = []
    allowances: list[dict[str, str]] = []
    allowed_modules: set[str] = set()
    notes: list[str] = []
    if no_site:
        notes.append("the command disables site (-S): no .pth or customize module runs")
    for name, kind in (
        ("sitecustomize", KIND_SITECUSTOMIZE),
        ("usercustomize", KIND_USERCUSTOMIZE),
    ):
        spec = static.get("customize", {}).get(name)
        if not isinstance(spec, dict):
            continue
        origin = spec.get("origin")
        pkg = spec.get("package") or []
        path = str(pkg[0]) if pkg else str(origin)
        if origin is None and not pkg:
            continue
        findings.append(make_finding(kind, path, f"{name} is imported at every start-up"))
    for rec in static.get("pth", []):
        path = str(rec.get("path"))
        lines = [str(x) for x in rec.get("import_lines", [])]
        if rec.get("error"):
            findings.append(
                make_finding(KIND_PTH_IMPORT, path, f"unreadable .pth file: {rec['error']}")
            )
            continue
        if not lines:
            if rec.get("path_lines"):
                allowances.append({"kind": "pth-path", "path": path, "reason": ALLOW_PATH_LINES})
            continue
        if len(lines) == 1 and _DISTUTILS_PTH.fullmatch(lines[0].strip()):
            allowances.append({"kind": "pth-import", "path": path, "reason": ALLOW_DISTUTILS})
            allowed_modules.add("_distutils_hack")
            continue
        shown = lines[0] if len(lines[0]) <= 80 else lines[0][:77] + "..."
        more = f" (+{len(lines) - 1} more)" if len(lines) > 1 else ""
        findings.append(
            make_finding(KIND_PTH_IMPORT, path, f".pth import line runs: {shown}{more}")
        )
    startup = static.get("pythonstartup")
    if startup:
        # C6 bans PYTHONSTARTUP outright, although Python only runs it interactively.
        findings.append(
            make_finding(
                KIND_PYTHONSTARTUP,
                str(startup),
                "PYTHONSTARTUP is set"
                + ("" if os.path.isfile(str(startup)) else " (file does not exist)"),
            )
        )
    return findings, allowances, allowed_modules, notes


def _pythonpath(static: Mapping[str, Any]) -> list[dict[str, Any]]:
    std = set(static.get("stdlib_names", []))
    installed: Mapping[str, str] = static.get("installed_names", {})
    out: list[dict[str, Any]] = []
    for ent in static.get("pythonpath", []):
        names: Mapping[str, str] = ent.get("names", {})
        shadows = []
        files = {}
        for n in sorted(names):
            if n in std or n in installed:
                where = "stdlib" if n in std else f"installed in {installed[n]}"
                shadows.append(f"{n} ({where})")
                files[n] = names[n]
        startup = sorted(n for n in names if n in ("sitecustomize", "usercustomize"))
        out.append(
            {
                "index": ent.get("index"),
                "entry": ent.get("entry"),
                "path": ent.get("path"),
                "exists": ent.get("exists"),
                "is_dir": ent.get("is_dir"),
                "shadows": shadows,
                "startup_modules": startup,
                "_files": files,
            }
        )
    return out


def _shadow_hash(entry: Mapping[str, Any]) -> str:
    h = hashlib.sha256()
    for name, path in sorted(entry["_files"].items()):
        h.update(f"{name}\0{content_hash(path)}\0".encode())
    return h.hexdigest()


def _startup_findings(
    *,
    started: Mapping[str, Any],
    base: Mapping[str, Any],
    static: Mapping[str, Any],
    existing: Sequence[Finding],
    allowed_modules: set[str],
    allowances: list[dict[str, str]],
) -> list[Finding]:
    std = set(static.get("stdlib_names", []))
    base_names = {str(m[0]) for m in base.get("modules", [])}
    covered = {f.path for f in existing}
    covered_dirs = tuple(f.path + os.sep for f in existing if f.kind != KIND_PTH_IMPORT)
    out: list[Finding] = []
    for raw_name, file in started.get("modules", []):
        name = str(raw_name)
        if name in base_names or name == "__main__":
            continue
        top = _top(name)
        if top in std:
            continue  # stdlib pulled in by site itself or by a hook already reported
        if top in allowed_modules:
            if not any(a.get("kind") == "startup-module" for a in allowances):
                allowances.append(
                    {
                        "kind": "startup-module",
                        "path": str(file),
                        "reason": f"{top} is loaded by an allowed packaging hook",
                    }
                )
            continue
        path = str(file) if file else f"module:{name}"
        if path in covered or (file and str(file).startswith(covered_dirs)):
            continue  # the customize module or shadow dir itself: reported once
        if top != name:
            continue  # report a package once, by its top-level module
        detail = f"module {name!r} is imported at interpreter start-up"
        if top in ("torch_npu", "torch"):
            detail += " (framework imported before the launcher's own initialisation)"
        out.append(
            make_finding(KIND_STARTUP_MODULE, path, detail, None if file else sha256_bytes(b""))
        )
        covered.add(path)
    return out
