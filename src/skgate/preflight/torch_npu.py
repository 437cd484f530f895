"""The workload's installed torch-npu, read from its ``dist-info`` without importing it.

Issue 27: what a static-kernel compile leaves depends on the torch-npu release
(:mod:`skgate.model.releases`). The version is read where the workload interpreter
would import ``torch_npu`` from: its ``PYTHONPATH`` entries, then its site directories,
as the hook scan's isolated probe of that interpreter reported them (never
``importlib.metadata`` in skgate's own interpreter, which may be another Python). The
first ``torch_npu-<version>.dist-info`` in that order wins, as an import would; its
``METADATA`` is read as a regular file, without following links, with a bound.
``control.json`` records it as ``controls.torch_npu``; preflight states the release's
behaviour.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable, Mapping, Sequence

from skgate.model.lazy_re import Lazy
from skgate.model.releases import release_for

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: A dist-info directory of torch-npu (the project's normalised name is ``torch_npu``).
_DIST_INFO = Lazy(r"torch_npu-(?P<version>[^-/]+)\.dist-info", re.IGNORECASE)
_VERSION_LINE = re.compile(rb"^Version:\s*(\S+)\s*$", re.MULTILINE)
#: METADATA read at the most (the Version line is in its header).
MAX_METADATA = 64 << 10


def _metadata_version(dist_info: str) -> str | None:
    path = os.path.join(dist_info, "METADATA")
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, MAX_METADATA)
    except OSError:
        return None
    finally:
        os.close(fd)
    m = _VERSION_LINE.search(data)
    return m.group(1).decode("ascii", "replace") if m else None


def find_torch_npu(dirs: Iterable[str]) -> tuple[str, str] | None:
    """(version, dist-info path) of the first torch-npu in ``dirs``, in order, or None."""
    for d in dirs:
        try:
            with os.scandir(d) as it:
                names = sorted(
                    e.name
                    for e in it
                    if _DIST_INFO.get().fullmatch(e.name) and e.is_dir(follow_symlinks=False)
                )
        except OSError:
            continue
        if names:
            path = os.path.join(d, names[0])
            m = _DIST_INFO.get().fullmatch(names[0])
            version = _metadata_version(path) or (m.group("version") if m else None)
            if version:
                return version, path
    return None


def search_dirs(pythonpath: Sequence[Mapping[str, Any]], sitedirs: Iterable[Any]) -> list[str]:
    """Where the workload would import from: ``PYTHONPATH`` entries, then site dirs."""
    out = [str(e["path"]) for e in pythonpath if e.get("entry") and e.get("is_dir")]
    out.extend(str(d) for d in sitedirs if str(d) not in out)
    return out


def torch_npu_record(dirs: Sequence[str] | None) -> dict[str, Any]:
    """``controls.torch_npu``: the version, where it was read, and its release's row."""
    if dirs is None:
        return {
            "version": None,
            "note": "the workload interpreter is not known, so its torch-npu is not read",
        }
    found = find_torch_npu(dirs)
    if found is None:
        return {
            "version": None,
            "searched": list(dirs)[:20],
            "note": "no torch_npu dist-info in the workload interpreter's PYTHONPATH or site "
            "directories: the static-kernel behaviour of its release is not stated",
        }
    version, path = found
    release = release_for(version)
    record: dict[str, Any] = {"version": version, "dist_info": path}
    if release is None:
        record["note"] = (
            f"torch-npu {version} is not in skgate's release table; its static-kernel "
            "behaviour is not stated"
        )
    else:
        record["release"] = release.to_dict()
    return record


def render(record: Mapping[str, Any]) -> list[str]:
    """The preflight lines of ``controls.torch_npu``."""
    version = record.get("version")
    if not version:
        return [f"torch-npu: not found ({record.get('note', '')})"]
    lines = [f"torch-npu: {version} ({record.get('dist_info')})"]
    rel = record.get("release")
    if not isinstance(rel, Mapping):
        lines.append(f"  note: {record.get('note', '')}")
        return lines
    yes = {True: "yes", False: "no"}
    lines += [
        f"  static kernel (torch-npu {rel['series']}, read in {rel['wheel']} {rel['source']}):",
        f"  output root: {rel['output_root']}",
        f"  start line: {rel['start_line']}",
        f"  op_compiler -j: {rel['jobs']} (NPU_STATIC_KERNEL_COMPILE_JOBS is not read)",
        "  op_compiler failures visible at the default log level: "
        + yes[bool(rel["compiler_failures_visible"])],
        f"  op_compiler output captured: {rel['compiler_output_captured']}",
        "  install failures visible at the default log level: "
        + yes[bool(rel["install_failures_visible"])],
        "  cache mechanisms: " + ("; ".join(rel["caches"]) or "none"),
        "  installs into a private path: " + (rel["private_install"] or "no (the shared opp tree)"),
        "  SIGTERM/SIGINT: "
        + (
            "uninstalls, then ignores the signal (the process lives on)"
            if rel["survives_sigterm"]
            else "default (atexit uninstall only)"
        ),
    ]
    return lines
