"""The simulated install tree, records file and SK fusion evidence (C8 layout).

```
$ASCEND_HOME_PATH/opp/static_kernel/ai_core/
  .skgate-sim                          # marks a simulator sandbox
  config/<soc>/binary_info_config.json, config/static_kernel.lock
  config.ini, version.info
  static_kernel_<ts>_<pid>/            # one dir per package: per-op .o/.json + uninstall.sh
    config/<soc>/binary_info_config.json  # the package's manifest: {OpType: {"staticList": [...]}}
  uninstall.sh                         # full uninstall: every package (never from cleanup)
```

Safety: the simulator never writes into a real CANN installation. With
``ASCEND_HOME_PATH`` unset it uses ``<workdir>/sim_ascend_home``; when it is set, the
``ai_core`` directory must already carry the ``.skgate-sim`` marker, or the home must be
missing or empty (a fresh sandbox), otherwise installation is refused.
"""

from __future__ import annotations

import json
import os
import shlex
import time
from pathlib import Path

SANDBOX_MARKER = ".skgate-sim"
SANDBOX_DIRNAME = "sim_ascend_home"
RECORDS_NAME = ".static_kernel_records.json"
SIM_CANN_VERSION = "8.0.RC3.skgate-sim"
#: Op types (comma-separated) the package's manifest leaves out: an input whose static
#: binary was not built (the situation ``check-outputs`` names, C8).
ENV_MANIFEST_DROP = "SKGATE_SIM_MANIFEST_DROP"


class InstallRefused(Exception):
    """The install target is not a simulator sandbox (one-line message)."""


def resolve_home(workdir: Path, env_value: str | None) -> tuple[Path, bool]:
    """The Ascend home to install into, and whether it is the default sandbox."""
    if not env_value:
        return (workdir / SANDBOX_DIRNAME).resolve(), True
    return Path(env_value).resolve(), False


def ai_core_dir(home: Path) -> Path:
    return home / "opp" / "static_kernel" / "ai_core"


def check_sandbox(home: Path) -> None:
    """Refuse a home that looks like a real CANN installation."""
    ai_core = ai_core_dir(home)
    if (ai_core / SANDBOX_MARKER).is_file():
        return
    if not home.exists() or (home.is_dir() and not any(home.iterdir())):
        return
    raise InstallRefused(
        f"ASCEND_HOME_PATH={home} is not a skgate-sim sandbox (no {ai_core / SANDBOX_MARKER}); "
        "unset it or point it at an empty directory"
    )


def _write_atomic(path: Path, text: str, mode: int = 0o644) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.chmod(tmp, mode)
    os.replace(tmp, path)


def _package_uninstall_script(pkg_dir: Path) -> str:
    q = shlex.quote(str(pkg_dir))
    return (
        "#!/bin/sh\n"
        f"# skgate-sim: uninstall the static kernel package {pkg_dir.name}.\n"
        "# Removes this package directory and nothing else.\n"
        f"pkg_dir={q}\n"
        'if [ -n "${SKGATE_SIM_UNINSTALL_LOG:-}" ]; then\n'
        '  printf \'uninstall %s\\n\' "$pkg_dir" >> "$SKGATE_SIM_UNINSTALL_LOG"\n'
        "fi\n"
        'rm -rf -- "$pkg_dir"\n'
    )


def _full_uninstall_script(ai_core: Path) -> str:
    q = shlex.quote(str(ai_core))
    return (
        "#!/bin/sh\n"
        "# skgate-sim: FULL uninstall: removes EVERY static kernel package below.\n"
        "# C8: a cleanup must never run this script.\n"
        f"ai_core={q}\n"
        f'if [ ! -f "$ai_core/{SANDBOX_MARKER}" ]; then\n'
        '  echo "not a skgate-sim sandbox" >&2; exit 1\n'
        "fi\n"
        'if [ -n "${SKGATE_SIM_UNINSTALL_LOG:-}" ]; then\n'
        '  printf \'uninstall-all %s\\n\' "$ai_core" >> "$SKGATE_SIM_UNINSTALL_LOG"\n'
        "fi\n"
        'for d in "$ai_core"/static_kernel_*; do\n'
        '  [ -d "$d" ] && rm -rf -- "$d"\n'
        "done\n"
        "exit 0\n"
    )


def _kernels_in(run: Path) -> list[str]:
    kernels: list[str] = []
    for line in run.read_text(encoding="utf-8").splitlines():
        if line.startswith("# kernel: "):
            kernels.append(line.split()[2])
    return kernels


def install_package(home: Path, run: Path, soc: str) -> Path:
    """Unpack ``run`` into the sandbox; return the package's ``uninstall.sh`` path."""
    check_sandbox(home)
    ai_core = ai_core_dir(home)
    ai_core.mkdir(parents=True, exist_ok=True)
    marker = ai_core / SANDBOX_MARKER
    if not marker.exists():
        marker.write_text("skgate-sim sandbox: safe to delete\n", encoding="utf-8")
    cfg = ai_core / "config" / soc
    cfg.mkdir(parents=True, exist_ok=True)
    (ai_core / "config" / "static_kernel.lock").touch()
    if not (ai_core / "config.ini").exists():
        _write_atomic(ai_core / "config.ini", "[static_kernel]\nsimulator=skgate-sim\n")
    if not (ai_core / "version.info").exists():
        _write_atomic(ai_core / "version.info", f"Version={SIM_CANN_VERSION}\n")
    full = ai_core / "uninstall.sh"
    if not full.exists():
        _write_atomic(full, _full_uninstall_script(ai_core), 0o755)

    stem = run.name[: -len(".run")]
    pkg_dir = ai_core / stem
    pkg_dir.mkdir(exist_ok=True)
    kernels = _kernels_in(run)
    kernel_src = run.parent / "kernel"
    for k in kernels:
        for suffix in (".o", ".json"):
            src = kernel_src / f"{k}{suffix}"
            if src.exists():
                (pkg_dir / src.name).write_bytes(src.read_bytes())
    uninstall = pkg_dir / "uninstall.sh"
    _write_atomic(uninstall, _package_uninstall_script(pkg_dir), 0o755)

    _write_package_manifest(pkg_dir, soc, kernels)

    info_path = cfg / "binary_info_config.json"
    try:
        info = json.loads(info_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        info = {}
    if not isinstance(info, dict):
        info = {}
    info[stem] = kernels
    _write_atomic(info_path, json.dumps(info, indent=1, sort_keys=True) + "\n")
    return uninstall


def soc_dir_name(soc: str) -> str:
    """The lower-case short SoC name of the config directory (``Ascend910B1`` ->
    ``ascend910b``; fact 4a)."""
    low = soc.lower()
    return low[:-1] if low.startswith("ascend910b") and low[-1:].isdigit() else low


def _write_package_manifest(pkg_dir: Path, soc: str, kernels: list[str]) -> None:
    """``<package>/config/<soc>/binary_info_config.json`` as the op_compiler documentation
    lays it out: ``{OpType: {"staticList": [{"binPath": ...}, ...]}}`` (fact 4a)."""
    drop = {t for t in os.environ.get(ENV_MANIFEST_DROP, "").split(",") if t}
    info: dict[str, dict[str, list[dict[str, str]]]] = {}
    for k in kernels:
        op = k.split("_", 1)[0]
        if op in drop:
            continue
        entry = {"binPath": f"{soc_dir_name(soc)}/{op}/static_kernel_{k}_d0.o"}
        info.setdefault(op, {"staticList": []})["staticList"].append(entry)
    cfg = pkg_dir / "config" / soc_dir_name(soc)
    cfg.mkdir(parents=True, exist_ok=True)
    _write_atomic(cfg / "binary_info_config.json", json.dumps(info, indent=1, sort_keys=True))


def write_record(workdir: Path, run: Path, uninstall: Path, pid: int, start: int) -> Path:
    """Add this package to ``.static_kernel_records.json`` (torchair's crash-cleanup record).

    The format mimics torchair (package -> fields), so it carries no skgate schema key.
    """
    path = workdir / RECORDS_NAME
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        records = {}
    if not isinstance(records, dict):
        records = {}
    records[run.name[: -len(".run")]] = {
        "uninstall_path": str(uninstall),
        "filename": run.name,
        "pid": pid,
        "process_start_time": start,
        "record_create_time": time.time(),
    }
    _write_atomic(path, json.dumps(records, indent=2, sort_keys=True) + "\n")
    return path


def write_sk_meta(workdir: Path, pid: int, kernels: list[str]) -> Path:
    """SK fusion evidence as ``ASCEND_OP_COMPILE_SAVE_KERNEL_META=1`` leaves it."""
    model = workdir / "sk_meta" / str(pid) / "model_0_0"
    model.mkdir(parents=True, exist_ok=True)
    fused = [f"SK Function: sk_model_0_0_scope_0, scope id: 0, Node Count: {len(kernels)}"]
    for i, k in enumerate(kernels):
        fused.append(
            f"[nodeId:{10 + i}, streamId:1] - KernelInfos{{funcName:{k}, "
            "kernelType:AIC_ONLY, blockDim:24}"
        )
    (model / "sk_fused_nodes.log").write_text("\n".join(fused) + "\n", encoding="utf-8")
    (model / "sk_scope_split.log").write_text(
        f"scope 0: nodes 10..{9 + len(kernels)}, split: none\n", encoding="utf-8"
    )
    (model / "sk_fusion_fail_reasons.log").write_text("", encoding="utf-8")
    (model / "super_kernel.log").write_text(
        f"[INFO] super kernel sk_model_0_0_scope_0 built from {len(kernels)} nodes\n",
        encoding="utf-8",
    )
    return model
