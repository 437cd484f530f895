"""The aclnn operator-info dump, as opbase writes it (``op_info_serialize.cpp``).

While a dump is active, each executed operator writes one JSON per target directory
under the dump root: ``<pid>_debug/`` for every op, ``<pid>_opcompile/`` unless opbase's
own black list excludes the op type, and ``<pid>/`` for white-listed types. Names are
``<OpType>_<dtype>_<format>_<dims>_<n>.json`` (``<OpType>_<n>.json`` without inputs), one
counter per directory and process; identical JSONs are written once per dump session;
``json.dumps(indent=2, sort_keys=True)``.
"""

import json
import os
from pathlib import Path

WHITE = {"MatMulV2", "MatMul", "BatchMatMulV2", "BatchMatMul", "Transpose", "LayerNorm"}
BLACK = {"ReduceSum", "ReduceMin", "ReduceMax", "GatherV2", "GatherV3", "ArgMaxWithValue"}

_active = {"root": None, "seen": set()}
_counters = {"": 0, "_debug": 0, "_opcompile": 0}


def start(path):
    _active["root"] = Path(path)
    _active["seen"] = set()


def stop():
    _active["root"] = None


def run_op(op_type, dtype, dims, attr=""):
    """One executed operator (the launcher's graph calls this)."""
    root = _active["root"]
    if root is None:
        return
    tensor = {"dtype": dtype, "format": "ND", "name": "x", "shape": list(dims)}
    body = {
        "attrs": [{"name": "variant", "value": attr}],
        "deterministic": "false",
        "inputs": [tensor] if dims else [],
        "op_type": op_type,
        "outputs": [tensor],
    }
    text = json.dumps(body, indent=2, sort_keys=True)
    if text in _active["seen"]:
        return
    _active["seen"].add(text)
    mid = f"_{dtype}_ND_{'_'.join(map(str, dims))}" if dims else ""
    targets = [("_debug", {"bin_type": "static", "bin_info": f"{op_type}.o"})]
    if op_type not in BLACK:
        targets.append(("_opcompile", {}))
    if op_type in WHITE:
        targets.append(("", {"bin_type": "static", "bin_info": f"{op_type}.o"}))
    for sub, extra in targets:
        d = root / f"{os.getpid()}{sub}"
        d.mkdir(exist_ok=True)
        name = f"{op_type}{mid}_{_counters[sub]}.json"
        _counters[sub] += 1
        (d / name).write_text(json.dumps({**body, **extra}, indent=2, sort_keys=True))
