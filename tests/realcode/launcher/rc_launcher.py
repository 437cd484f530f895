"""The realcode launcher: torch-npu's own static_kernel.py, loaded by path, unmodified.

``python rc_launcher.py SPEC.json`` plays the inference process: it puts the stub
modules first on ``sys.path`` itself (no PYTHONPATH, no .pth, no sitecustomize: C6), loads
the wheel's ``core/utils.py`` (the real logger) and ``_acl_concrete_graph/static_kernel.py``
from the extracted release, and calls ``compile_static_kernel`` once per graph of the spec,
the way that release's ``acl_graph.py`` calls it (README.md lists each call and its line).
The graph is a callable that executes operators: while torch_npu's dump is on, each one
writes its JSON as opbase does (``stubs/torch_npu/_opdump.py``).
"""

from __future__ import annotations

import atexit
import importlib.util
import inspect
import json
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from types import FrameType, ModuleType
from typing import Any


def load_by_path(name: str, path: Path) -> ModuleType:
    """Import the file at ``path`` as module ``name``, unmodified, and hang it on its parent."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    parent, _, leaf = name.rpartition(".")
    setattr(sys.modules[parent], leaf, module)
    return module


def flavour_dir(src: Path) -> tuple[str, Path]:
    """npugraph_ex where the wheel has it (2.9 and later), else torchair (2.7.1)."""
    base = src / "torch_npu" / "dynamo"
    if (base / "npugraph_ex" / "_acl_concrete_graph" / "static_kernel.py").is_file():
        return "npugraph_ex", base / "npugraph_ex"
    return "torchair", base / "torchair"


def load_release(src: Path) -> ModuleType:
    flavour, pkg = flavour_dir(src)
    __import__(f"{flavour}.core")
    __import__(f"{flavour}._acl_concrete_graph")
    load_by_path(f"{flavour}.core.utils", pkg / "core" / "utils.py")
    return load_by_path(
        f"{flavour}._acl_concrete_graph.static_kernel",
        pkg / "_acl_concrete_graph" / "static_kernel.py",
    )


def install_finaliser(sk: ModuleType, src: Path) -> None:
    """What the release's package init does around static kernels: an atexit uninstall
    in every release; in releases whose init defines ``_signal_handler`` (2.11, 2.14), a
    SIGTERM/SIGINT handler that uninstalls, ignores the signal and re-sends it to itself
    (so the process survives it). The wheel's init is read as text, never executed."""
    flavour, pkg = flavour_dir(src)
    init = pkg / ("__init__.py" if flavour == "npugraph_ex" else "core/_backend.py")
    atexit.register(sk.uninstall_static_kernel)
    if "def _signal_handler" not in init.read_text(encoding="utf-8"):
        return

    def handler(signum: int, _frame: FrameType | None) -> None:
        sk.uninstall_static_kernel()
        signal.signal(signum, signal.SIG_IGN)
        os.kill(os.getpid(), signum)

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def make_graph(ops: list[str]) -> Callable[..., None]:
    """``Op:dtype:AxB[:attr]`` per operator; executing the graph runs each one."""
    from torch_npu import _opdump  # type: ignore[import-not-found]  # the stub

    def graph(*_args: object, **_kwargs: object) -> None:
        for spec in ops:
            op_type, dtype, shape, *rest = spec.split(":")
            dims = [int(d) for d in shape.split("x")] if shape != "-" else []
            _opdump.run_op(op_type, dtype, dims, rest[0] if rest else "")

    return graph


def compile_graph(sk: ModuleType, graph: Callable[..., None], spec: dict[str, Any]) -> None:
    """One ``compile_static_kernel`` call, with the release's own calling convention."""
    params = inspect.signature(sk.compile_static_kernel).parameters
    cache_dir = spec.get("use_cache_compile")
    build_dir = spec.get("build_dir")
    import torch_npu  # the stub

    cann = torch_npu.npu.utils.get_cann_version()
    if "config" in params:
        # 2.11/2.14 acl_graph.py L1036 and L1868: the compiler config only, no build_dir.
        config: dict[str, Any] = {"static_kernel_compile": True}
        if cache_dir:
            config["static_kernel_compile.use_cache_compile"] = True
            config["static_kernel_compile.cann_version"] = cann
            config["static_kernel_compile.compile_cache_dir"] = cache_dir
            config["static_kernel_compile.deterministic"] = False
        sk.compile_static_kernel(graph, config=config)
    elif "use_cache_compile" in params:
        # 2.9 acl_graph.py L933-943.
        sk.compile_static_kernel(
            graph,
            use_cache_compile="1" if cache_dir else None,
            cached_cann_version=cann if cache_dir else None,
            compile_cache_dir=cache_dir,
            cached_deterministic="0",
            super_kernel_optimize=False,
            build_dir=build_dir,
        )
    else:
        # 2.7.1 acl_graph.py L774-776.
        sk.compile_static_kernel(graph, build_dir=build_dir)


def main() -> int:
    spec = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    sys.path.insert(0, spec["stubs"])  # the stubs win over any real torch in the venv
    import torch.distributed as dist  # the stub

    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        dist.init_process_group("gloo")
    src = Path(spec["src"])
    sk = load_release(src)
    install_finaliser(sk, src)
    if spec.get("blacklist"):
        sk._set_static_kernel_blacklist(spec["blacklist"])
    rank = os.environ.get("RANK", "0")
    for ops in spec.get("rank_graphs", {}).get(rank, spec["graphs"]):
        compile_graph(sk, make_graph(ops), spec)
    print(f"realcode launcher: rank {rank} reached the end of inference", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
