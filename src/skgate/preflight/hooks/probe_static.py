"""Child side of the static hook probe (C6). Runs under the *workload* interpreter.

Run under the workload interpreter as ``PY -I -S -c BOOTSTRAP DIR OUT FLAGS CWD
[NAME=VALUE | NAME]...`` (see ``BOOTSTRAP`` below: this file imported from DIR, its own
directory), or by path with the same arguments after ``OUT``::

    PY -I -S probe_static.py OUT FLAGS CWD [NAME=VALUE | NAME]...

``-I`` (isolated: no ``PYTHON*`` variable, no user site, no script directory on
``sys.path``) and ``-S`` (no ``site.main()``, so no ``.pth`` line and no customize module
runs) mean nothing the scan inspects can execute here: this interpreter imports only its
own standard library. The workload's start-up is *described* to it as data instead:
``FLAGS`` are the command's start-up flags (``-E -s -S -I`` joined, or ``-``), ``CWD``
is the workload's working directory (relative ``PYTHONPATH`` entries are relative to
it), and each ``NAME=VALUE`` is a start-up variable of the workload environment (a bare
``NAME`` is an unset one). The probe replays what ``site.main()`` would do with them
(venv detection, user site, site directories, ``.pth`` path lines) without running
anything it finds, and writes one JSON object to ``OUT`` (the parent reads it with
``json.loads``, some 30 times faster than ``ast.literal_eval`` on this record; results
never go through stdout, so nothing that prints can forge them). Exit 0 on success; 3
when not started isolated (refused, nothing scanned).

The record also carries ``baseline``: the modules this interpreter has when user code
starts under ``-I -S``, with ``site`` imported but not run, taken before the probe
imports anything of its own. Modules the workload's real start-up has beyond these were
imported by a start-up hook (see ``probe_snapshot.py``).

Kept to the syntax of Python 3.6+ (string annotations, no ``typing`` import at run
time): the workload interpreter may be older than skgate's own.
"""

import sys

if __name__ == "__main__":
    # The baseline of the start-up probe (C6): the modules this interpreter has when user
    # code starts under -I -S, plus what importing ``site`` (without running it) loads.
    # Taken first, before this probe imports anything of its own. (If it was not started
    # with -I -S, start-up has run already and main() refuses; importing site adds nothing.)
    import site  # noqa: F401

    _BASELINE = [(str(k), getattr(v, "__file__", None)) for k, v in list(sys.modules.items())]
else:
    _BASELINE = []

import os  # after the baseline above

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: The variables of the workload environment that change how start-up finds code.
STARTUP_VARS = (
    "PYTHONPATH",
    "PYTHONSTARTUP",
    "PYTHONHOME",
    "PYTHONUSERBASE",
    "PYTHONNOUSERSITE",
    "PYTHONSAFEPATH",
)


def names_in(d: "str", suffixes: "tuple[str, ...]") -> "dict[str, str]":
    """Top-level module names a directory provides, each with the file that defines it."""
    found = {}  # type: dict[str, str]
    try:
        it = os.scandir(d)
    except OSError:
        return found
    # scandir, not listdir + isfile: the kernel's d_type answers for every entry but a
    # symbolic link (stat'ed, followed, as isfile would), and the stdlib holds hundreds.
    with it:
        for entry in it:
            e = entry.name
            try:
                if e.endswith(suffixes) and entry.is_file():
                    found.setdefault(e.split(".")[0], entry.path)
                elif e.isidentifier() and entry.is_dir():
                    for init in ("__init__.py", "__init__.pyc"):
                        if os.path.isfile(os.path.join(entry.path, init)):
                            found.setdefault(e, os.path.join(entry.path, init))
                            break
            except OSError:
                continue
    return found


def read_pth(sd: "str", name: "str", full: "list[str]") -> "dict[str, Any]":
    """Classify one ``.pth`` file's lines as ``site.addpackage`` would, running none."""
    p = os.path.join(sd, name)
    rec = {"path": p, "sitedir": sd, "import_lines": [], "path_lines": []}  # type: dict[str, Any]
    try:
        with open(p, "rb") as fh:
            raw = fh.read()
    except OSError as exc:
        rec["error"] = str(exc)
        return rec
    for line in raw.decode("utf-8", "replace").splitlines():
        if line.startswith("#"):
            continue
        if line.startswith(("import ", "import\t")):
            rec["import_lines"].append(line)
            continue
        entry = line.rstrip()
        if not entry:
            continue
        d = os.path.abspath(os.path.join(sd, entry))
        rec["path_lines"].append(d)
        if os.path.exists(d) and d not in full:
            full.append(d)
    return rec


def user_site_enabled(no_user_site: "bool") -> "bool":
    """``site.check_enableusersite()`` for the workload (this process runs with -I)."""
    if no_user_site:
        return False
    if hasattr(os, "getuid") and os.geteuid() != os.getuid():
        return False
    return not (hasattr(os, "getgid") and os.getegid() != os.getgid())


def venv_prefixes() -> "tuple[list[str], bool]":
    """The prefixes whose site directories start-up adds, as ``site.venv()`` finds them,
    and whether the user site may be enabled (a venv without system site packages
    disables it).

    Not ``site.venv()`` itself: it calls ``addsitepackages``, which *executes* the
    ``.pth`` import lines of the venv (the very thing being scanned). A broken
    pyvenv.cfg breaks the workload too: then the scan reports what there is.
    """
    base = [sys.prefix, sys.exec_prefix]
    exe_dir = os.path.dirname(os.path.abspath(sys.executable))
    site_prefix = os.path.dirname(exe_dir)
    for cfg in (os.path.join(exe_dir, "pyvenv.cfg"), os.path.join(site_prefix, "pyvenv.cfg")):
        if os.path.isfile(cfg):
            break
    else:
        return base, True
    system_site = "true"
    try:
        with open(cfg, encoding="utf-8") as fh:
            for line in fh:
                key, sep, value = line.partition("=")
                if sep and key.strip().lower() == "include-system-site-packages":
                    system_site = value.strip().lower()
    except (OSError, UnicodeDecodeError):
        return base, True
    sys.prefix = sys.exec_prefix = site_prefix  # what site.venv() sets: reported as prefix
    if system_site == "true":
        return [site_prefix, *base], True
    return [site_prefix], False


def stdlib_names(suffixes: "tuple[str, ...]") -> "list[str]":
    std = getattr(sys, "stdlib_module_names", None)
    if std is not None:
        return sorted(std)
    import sysconfig  # noqa: PLC0415 - Python < 3.10 only; the interpreter's own stdlib (-I)

    names = set(sys.builtin_module_names)
    for key in ("stdlib", "platstdlib"):
        d = sysconfig.get_paths().get(key)
        if d:
            names.update(names_in(d, suffixes))
            names.update(names_in(os.path.join(d, "lib-dynload"), suffixes))
    return sorted(names)


def describe(flags: "str", cwd: "str", wl_env: "dict[str, str]") -> "dict[str, Any]":
    """What the workload's start-up would load, found without running any of it."""
    import importlib.machinery  # noqa: PLC0415 - only after the isolation check in main()
    import site  # noqa: PLC0415

    ignore_env = "E" in flags or "I" in flags
    env = {} if ignore_env else wl_env
    no_site = "S" in flags
    no_user = "s" in flags or "I" in flags or bool(env.get("PYTHONNOUSERSITE"))
    res = {}  # type: dict[str, Any]
    res["executable"] = sys.executable
    res["version"] = ".".join(str(n) for n in sys.version_info[:3])
    res["implementation"] = sys.implementation.name
    res["path0"] = [p for p in sys.path if p]
    sitedirs = []  # type: list[str]
    user_site = None
    enable_user = False
    if not no_site:
        prefixes, user_allowed = venv_prefixes()
        enable_user = user_allowed and user_site_enabled(no_user)
        # site computes the user base from PYTHONUSERBASE and HOME at call time: give
        # it the workload's value (HOME is already the workload's: only PYTHON* is gone).
        if env.get("PYTHONUSERBASE"):
            os.environ["PYTHONUSERBASE"] = env["PYTHONUSERBASE"]
        site.USER_BASE = None
        site.USER_SITE = None
        user_site = site.getusersitepackages()
        if enable_user and os.path.isdir(user_site):
            sitedirs.append(user_site)
        for d in site.getsitepackages(prefixes):
            if os.path.isdir(d) and d not in sitedirs:
                sitedirs.append(d)
    res["prefix"] = sys.prefix
    res["base_prefix"] = getattr(sys, "base_prefix", sys.prefix)
    res["enable_user_site"] = bool(enable_user)
    res["user_site"] = user_site
    res["sitedirs"] = sitedirs
    sfx = tuple(importlib.machinery.all_suffixes())
    pp_raw = env.get("PYTHONPATH", "")
    entries = []
    for i, ent in enumerate(pp_raw.split(os.pathsep) if pp_raw else []):
        path = os.path.abspath(os.path.join(cwd, ent)) if ent else ent
        entries.append(
            {
                "index": i,
                "entry": ent,
                "path": path,
                "exists": bool(ent) and os.path.exists(path),
                "is_dir": bool(ent) and os.path.isdir(path),
                "names": names_in(path, sfx) if ent else {},
            }
        )
    res["pythonpath"] = entries
    # The workload's sys.path when site runs: PYTHONPATH first, then the default path.
    full = [str(e["path"]) for e in entries if e["entry"]]  # type: list[str]
    full += [p for p in res["path0"] if p not in full]
    pths = []  # type: list[dict[str, Any]]
    for sd in sitedirs:
        if sd not in full:
            full.append(sd)
        try:
            names = sorted(n for n in os.listdir(sd) if n.endswith(".pth"))
        except OSError:
            names = []
        pths.extend(read_pth(sd, n, full) for n in names)
    res["pth"] = pths
    res["sys_path"] = full
    custom = {}  # type: dict[str, Any]
    for name in ("sitecustomize", "usercustomize"):
        if no_site or (name == "usercustomize" and not enable_user):
            continue
        try:
            # PathFinder only looks: it finds a spec, it never executes the module.
            spec = importlib.machinery.PathFinder.find_spec(name, full)
        except Exception as exc:  # reported as a finding, not a crash
            custom[name] = {"error": str(exc)}
            continue
        if spec is not None:
            custom[name] = {
                "origin": spec.origin,
                "package": list(spec.submodule_search_locations or []),
            }
    res["customize"] = custom
    installed = {}  # type: dict[str, str]
    pp_paths = {e["path"] for e in entries}
    for d in full:
        if d in pp_paths:
            continue
        for n in names_in(d, sfx):
            installed.setdefault(n, d)
    res["installed_names"] = installed
    res["stdlib_names"] = stdlib_names(sfx)
    res["builtin_names"] = sorted(sys.builtin_module_names)
    res["pythonstartup"] = env.get("PYTHONSTARTUP")
    res["pythonhome"] = env.get("PYTHONHOME")
    return res


def main(argv: "list[str]", baseline: "list[tuple[str, object]] | None" = None) -> int:
    """``baseline``: the start-up module set taken by the caller (the bootstrap that
    imports this module, see ``BOOTSTRAP``); taken at the top of this file otherwise."""
    if not sys.flags.isolated or not sys.flags.no_site:
        sys.stderr.write("probe_static.py must run with -I -S; nothing was scanned\n")
        return 3
    import json  # noqa: PLC0415 - the interpreter's own stdlib (-I -S), after the check

    out, flags, cwd = argv[1], argv[2], argv[3]
    wl_env = {}
    for item in argv[4:]:
        name, sep, value = item.partition("=")
        if sep and name in STARTUP_VARS:
            wl_env[name] = value
    res = describe(flags if flags != "-" else "", cwd, wl_env)
    res["baseline"] = {
        "executable": sys.executable,
        "modules": [
            (k, f if isinstance(f, str) else None)
            for k, f in (_BASELINE if baseline is None else baseline)
        ],
    }
    with open(out, "w") as fh:
        fh.write(json.dumps(res))
    return 0


#: How skgate runs this probe: ``PY -I -S -c BOOTSTRAP DIR OUT FLAGS CWD ...``. Imported
#: as a module (from DIR, this file's directory), it runs from the interpreter's cached
#: bytecode where there is some, instead of being compiled from source as a script
#: always is (3 ms of every scan). The bootstrap takes the baseline first, exactly as the
#: top of this file does when it runs as a script; DIR is on ``sys.path`` only while this
#: module itself is imported, so nothing else can ever be found there.
BOOTSTRAP = (
    "import sys, site; b = [(str(k), getattr(v, '__file__', None)) for k, v in "
    "list(sys.modules.items())]; d = sys.argv.pop(1); sys.path.insert(0, d); "
    "import probe_static; sys.path.remove(d); sys.exit(probe_static.main(sys.argv, b))"
)

if __name__ == "__main__":
    sys.exit(main(sys.argv))
