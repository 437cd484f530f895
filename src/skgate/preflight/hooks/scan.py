"""Start-up hook scan of the workload interpreter (C6).

C6 forbids any Python start-up hook from implementing an override: ``sitecustomize``,
``usercustomize``, ``.pth`` import lines, ``PYTHONSTARTUP``, monkey-patch directories
prepended to ``PYTHONPATH``, and shims that import application modules or ``torch_npu``
at start-up. Loading a hook alone changes import order and process state, so an
unapproved hook blocks the run even with profiling disabled; and preflight itself never
runs the code it inspects before it has been approved.

Probe protocol (parent <-> child, in the style of pyproject-hooks). The children are
real files beside this module, run under the workload interpreter; each writes one
record to the file named on its command line (JSON from the static probe, ``repr()`` of
a dict from the start-up probe, which may import nothing, not even ``json``), read here
with ``json.loads`` or ``ast.literal_eval``, never through stdout (so a hook that prints
cannot forge it):

1. *static probe* (``probe_static.py``, run with ``-I -S`` and the workload environment
   without any ``PYTHON*`` variable, ``LD_PRELOAD`` or ``LD_AUDIT``): nothing of the
   inspected start-up can execute. The workload's start-up flags, working directory and
   start-up variables (``PYTHONPATH``, ``PYTHONUSERBASE``, ...) are passed as data; the
   child replays ``site.main()`` on them without running any ``.pth`` import line or
   customize module, and reports interpreter facts, the start-up ``sys.path``, site
   directories, every ``.pth`` line classified, the ``sitecustomize``/``usercustomize``
   it would import, the ``PYTHONPATH`` entries with the top-level names they hold, and
   the stdlib names. Every static finding comes from this record. Before it imports
   anything of its own it also records the *baseline*: the interpreter's own start-up
   module set (``-I -S``, ``site`` imported but not run). This was a probe of its own
   (``probe_snapshot.py --site``) until one interpreter start-up less per scan mattered
   for ``skgate start`` (issue 13).
2. *start-up probe* (``probe_snapshot.py`` with the command's flags and exactly the
   workload environment): runs only when 1 found nothing unapproved, because it
   executes the start-up it inspects. It imports nothing itself (``sys`` is built in),
   so a shadowing module on ``PYTHONPATH`` cannot run as part of the probe. Modules in
   (2) but not in the baseline were imported by a hook; non-stdlib ones are "start-up
   modules".

Each probe runs in its own session with a timeout; on timeout skgate kills that probe's
own process group (it created it, C4) and reports a blocked preflight, never a silent
pass. A finding is approved by its full fingerprint (``--approve-hook``), by a baseline
file (``skgate.hook-baseline/1``), or, for the few known distribution hooks of
:mod:`skgate.preflight.hooks.catalogue`, by their exact content (off with ``strict``).
"""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from skgate.evidence.digest import sha256_bytes, small_sha256
from skgate.model.frozen import replace
from skgate.preflight.hooks import cache, catalogue
from skgate.preflight.hooks.baseline import (
    SCHEMA_HOOK_BASELINE,
    check_fingerprint,
    freeze_baseline,
    load_baseline,
    write_baseline,
)
from skgate.preflight.hooks.findings import (
    BY_CATALOGUE,
    KIND_PTH_IMPORT,
    KIND_PYTHONHOME,
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
)
from skgate.preflight.hooks.probe import Cancel, Probe, ProbeCancelled
from skgate.preflight.hooks.rounds import (
    PROBE_TIMEOUT,
    SNAPSHOT_PROBE,
    FirstRound,
    ScanInputs,
    isolated_env,
)

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Re-exported: the scan's public face (callers name them through this module).
__all__ = [
    "SCHEMA_HOOK_BASELINE",
    "SCHEMA_HOOK_SCAN",
    "Cancel",
    "Finding",
    "HookScan",
    "InterpreterError",
    "ProbeCancelled",
    "ScanInputs",
    "check_fingerprint",
    "freeze_baseline",
    "isolated_env",
    "load_baseline",
    "scan",
    "write_baseline",
]

ALLOW_PATH_LINES = ".pth path lines only extend sys.path and import nothing: not a hook"
NOT_PROBED = (
    "start-up probe not run: the static scan found unapproved start-up hooks, and "
    "preflight never runs the code it inspects before it is approved (C6); modules they "
    "would import at start-up are reported once they are approved"
)


class InterpreterError(Exception):
    """The static probe could not run: the interpreter is missing, broken or not Python."""


def _top(name: str) -> str:
    return name.split(".", 1)[0]


def _imports_of(path: str) -> list[str]:
    """Top-level module names a hook file imports, read without running it (ast)."""
    try:
        return _imports_in(Path(path).read_bytes())
    except OSError:
        return []


def _imports_in(source: str | bytes) -> list[str]:
    import ast  # noqa: PLC0415 - only when a hook file is there to read (issue 29)

    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return []
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found = [_top(a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            found = [_top(node.module)]
        else:
            continue
        names.extend(n for n in found if n not in names)
    return names


# --------------------------------------------------------------------------- scan


def run_scan(
    inputs: ScanInputs, cancel: Cancel | None = None, first: FirstRound | None = None
) -> HookScan:
    """The whole scan of ``inputs``; ``first`` is a round 1 already started for them
    (:meth:`ScanInputs.first_round`)."""
    return scan(
        inputs.python,
        dict(inputs.env),
        cwd=inputs.cwd,
        flags=inputs.flags,
        approved=inputs.approved,
        baseline=inputs.baseline,
        strict=inputs.strict,
        approve_all=inputs.approve_all,
        cancel=cancel,
        first=first,
    )


def scan(
    python: str,
    env: Mapping[str, str],
    *,
    cwd: str | None = None,
    flags: Sequence[str] = (),
    approved: Iterable[str] = (),
    baseline: Iterable[str] = (),
    timeout: float | None = None,
    strict: bool = False,
    approve_all: bool = False,
    cancel: Cancel | None = None,
    first: FirstRound | None = None,
) -> HookScan:
    """Scan ``python`` as it will start with ``env`` and interpreter ``flags``.

    ``flags`` are the start-up flags the command itself passes (``-E``, ``-s``, ``-S``,
    ``-I``), so the probe sees the start-up the workload will see. ``strict`` turns the
    catalogue of known distribution hooks off. ``approve_all`` (used only to freeze a
    baseline of everything there is) treats every static finding as approved, so the
    start-up probe runs and its findings are reported too. ``cancel`` lets the thread
    that owns the attempt end a scan running in another thread (:mod:`skgate.preflight.early`):
    every probe is then ended and :class:`ProbeCancelled` raised. ``first`` is round 1
    already started for exactly these arguments (:meth:`ScanInputs.first_round`).
    """
    limit = PROBE_TIMEOUT if timeout is None else timeout
    approved_set = {fp.lower() for fp in approved}
    baseline_set = set(baseline)
    no_site = "-S" in flags
    # Round 1 runs nothing the scan inspects: both probes are isolated (-I -S), so they
    # run at once (one interpreter start-up of wall time), and may have started early.
    if first is None:
        first = FirstRound(python, env, cwd, flags, cancel, timeout=limit)
    try:
        ((static, problem),) = first.results()
        if static is None or not isinstance(static, dict):
            raise InterpreterError(problem or "probe result is not an object")
        base = static.get("baseline")
        if not isinstance(base, dict):
            base, problem_base = None, "the static probe recorded no start-up baseline"
        else:
            problem_base = None
        found, allowances, allowed_modules, notes = _static_findings(static, no_site)
        marker = functools.partial(
            _mark, static=static, approved=approved_set, baseline=baseline_set, strict=strict
        )
        findings = marker(found, allowances=allowances, allowed_modules=allowed_modules)
        if approve_all:
            findings = [f if f.approved else f.approve("freeze") for f in findings]
        problems = [p for p in (problem_base,) if p]
        probed = False
        cached = first.cached
        started: Any = None
        fresh = cached is None  # a probe ran: its answer is stored for the next scan
        if any(not f.approved for f in findings):
            notes.append(NOT_PROBED)
        elif base is not None:
            if cached is not None and cached.startup is not None:
                started = cached.startup  # the same start-up, fingerprint for fingerprint
            else:
                # Round 2: everything static is approved, so the real start-up may run.
                t = first.dir  # made only now: a cached answer needs no directory
                startup = Probe(
                    [python, *flags, str(SNAPSHOT_PROBE), str(t / "start")],
                    env,
                    cwd,
                    t / "start",
                    cancel,
                )
                first.forked.set()
                started, problem_dyn = startup.result(time.monotonic() + limit)
                fresh = fresh or started is not None
                if problem_dyn:
                    problems.append(problem_dyn)
            probed = started is not None
            if started is not None:
                dynamic = _startup_findings(
                    started=started,
                    base=base,
                    static=static,
                    existing=findings,
                    allowed_modules=allowed_modules,
                    allowances=allowances,
                )
                findings += marker(dynamic, allowances=[], allowed_modules={})
        if fresh and not problems:
            entry = cache.Entry(static, started, first.cache_rest, first.cache_reads)
            cache.store(first.cache_dir, first.cache_key, entry, since=first.probe_from)
    finally:
        first.forked.set()
        first.cleanup()
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
    public_path = [{k: v for k, v in e.items() if k != "_files"} for e in _pythonpath(static)]
    return HookScan(
        python=python,
        interpreter=interpreter,
        findings=tuple(findings),
        allowances=tuple(allowances),
        pythonpath=tuple(public_path),
        notes=tuple(notes),
        problems=tuple(problems),
        extra={
            "strict": strict,
            "startup_probe": "ran" if probed else "not run",
            # Issue 29: the probes ran for this scan, or their answer was reused.
            "probe_answer": cache.PROBED if fresh else cache.CACHED,
        },
    )


def _system_sitedirs(static: Mapping[str, Any]) -> tuple[str, ...]:
    """The interpreter's own site directories: not the user site, not PYTHONPATH."""
    user = static.get("user_site")
    pp = {str(e.get("path")) for e in static.get("pythonpath", [])}
    return tuple(str(d) for d in static.get("sitedirs", []) if d != user and str(d) not in pp)


def _mark(
    findings: Sequence[Finding],
    *,
    static: Mapping[str, Any],
    approved: set[str],
    baseline: set[str],
    allowances: list[dict[str, str]],
    allowed_modules: dict[str, tuple[str, ...]],
    strict: bool,
) -> list[Finding]:
    """Approve findings by fingerprint, baseline, or (unless ``strict``) the catalogue."""
    out: list[Finding] = []
    system = _system_sitedirs(static)
    for found in findings:
        hashes = {p: content_hash(p) for p in catalogue.companion_files(found) if os.path.isfile(p)}
        known = catalogue.match(found, system_sitedirs=system, companion_hash=hashes)
        f = found if known is None else replace(found, catalogue_id=known.hook.id)
        if f.fingerprint in approved:
            out.append(f.approve("--approve-hook"))
        elif f.fingerprint in baseline:
            out.append(f.approve("baseline"))
        elif known is not None and not strict:
            out.append(f.approve(BY_CATALOGUE))
        else:
            out.append(f)
        if known is not None and out[-1].approved:
            allowances.append(known.allowance(f))
            if known.hook.companion:
                allowed_modules[known.hook.companion] = known.companion_dirs
    return out


def _static_findings(
    static: Mapping[str, Any], no_site: bool
) -> tuple[list[Finding], list[dict[str, str]], dict[str, tuple[str, ...]], list[str]]:
    findings: list[Finding] = []
    allowances: list[dict[str, str]] = []
    # module -> directories it may be loaded from at start-up (() = anywhere)
    allowed_modules: dict[str, tuple[str, ...]] = {}
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
        detail = f"{name} is imported at every start-up"
        imports = _imports_of(path) if os.path.isfile(path) else []
        if imports:
            detail += (
                "; it imports " + ", ".join(imports[:8]) + (" ..." if len(imports) > 8 else "")
            )
        findings.append(make_finding(kind, path, detail))
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
        if len(lines) == 1 and catalogue.DISTUTILS_PTH.fullmatch(lines[0].strip()):
            allowances.append(
                {"kind": "pth-import", "path": path, "reason": catalogue.ALLOW_DISTUTILS}
            )
            allowed_modules["_distutils_hack"] = ()
            continue
        shown = lines[0] if len(lines[0]) <= 80 else lines[0][:77] + "..."
        more = f" (+{len(lines) - 1} more)" if len(lines) > 1 else ""
        imports = _imports_in("\n".join(lines))
        named = f"; it imports {', '.join(imports[:8])}" if imports else ""
        findings.append(
            make_finding(KIND_PTH_IMPORT, path, f".pth import line runs: {shown}{more}{named}")
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
    home = static.get("pythonhome")
    if home:
        # The standard library and site itself would come from there: the isolated probe
        # cannot see that start-up without running it, so it is a hook to approve.
        findings.append(
            make_finding(
                KIND_PYTHONHOME,
                str(home),
                "PYTHONHOME is set: the standard library and site.py come from it",
                content=sha256_bytes(str(home).encode()),
            )
        )
    for entry in _pythonpath(static):
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
    h = small_sha256()
    for name, path in sorted(entry["_files"].items()):
        h.update(f"{name}\0{content_hash(path)}\0".encode())
    return h.hexdigest()


def _startup_findings(
    *,
    started: Mapping[str, Any],
    base: Mapping[str, Any],
    static: Mapping[str, Any],
    existing: Sequence[Finding],
    allowed_modules: Mapping[str, tuple[str, ...]],
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
        where = allowed_modules.get(top)
        inside = where is not None and (
            not where
            or (file is not None and str(file).startswith(tuple(d + os.sep for d in where)))
        )
        if inside:
            if not any(a.get("module") == top for a in allowances):
                allowances.append(
                    {
                        "kind": "startup-module",
                        "module": top,
                        "path": str(file),
                        "content_sha256": content_hash(str(file)) if file else "",
                        "reason": f"{top} is loaded by an allowed packaging or distribution hook",
                    }
                )
            continue
        path = str(file) if file else f"module:{name}"
        if path in covered or (file and str(file).startswith(covered_dirs)):
            continue  # the customize module or shadow dir itself: reported once
        if top != name:
            continue  # report a package once, by its top-level module
        detail = f"module {name!r} is imported at interpreter start-up"
        if where is not None:
            detail += " (a known hook's companion, but not from where the catalogue allows)"
        if top in ("torch_npu", "torch"):
            detail += " (framework imported before the launcher's own initialisation)"
        out.append(
            make_finding(KIND_STARTUP_MODULE, path, detail, None if file else sha256_bytes(b""))
        )
        covered.add(path)
    return out
