"""Stub ``torch.distributed``: a file-store "gloo" for local ranks (realcode suite).

``init_process_group`` is called by the launcher when WORLD_SIZE > 1 (torchrun-style
environment: RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, RC_STORE). Every collective is a
numbered exchange of files under RC_STORE; ranks wait by polling the files (the real
gloo blocks the same way), up to RC_DIST_TIMEOUT seconds.
"""

import os
import pickle
import time
from pathlib import Path

_state = {"init": False, "rank": 0, "world": 1, "store": None, "groups": 0}


class ProcessGroup:
    def __init__(self, gid, ranks):
        self.gid = gid
        self.ranks = list(ranks)
        self.seq = 0


_WORLD = ProcessGroup(0, [0])


def is_available():
    return True


def is_initialized():
    return _state["init"]


def init_process_group(backend="gloo", **_kwargs):
    _state["rank"] = int(os.environ["RANK"])
    _state["world"] = int(os.environ["WORLD_SIZE"])
    _state["store"] = Path(os.environ["RC_STORE"])
    _state["store"].mkdir(parents=True, exist_ok=True)
    _state["init"] = True
    _WORLD.ranks = list(range(_state["world"]))


def get_world_size(group=None):
    return len(group.ranks) if group is not None else _state["world"]


def get_rank(group=None):
    if group is not None:
        return group.ranks.index(_state["rank"])
    return _state["rank"]


def new_group(ranks=None, backend=None, timeout=None):
    _state["groups"] += 1
    return ProcessGroup(_state["groups"], ranks if ranks is not None else _WORLD.ranks)


def destroy_process_group(group=None):
    return None


def _slot(group, rank):
    return _state["store"] / f"g{group.gid}_op{group.seq}_r{rank}"


def _put(group, rank, obj):
    tmp = _slot(group, rank).with_suffix(".tmp")
    tmp.write_bytes(pickle.dumps(obj))
    tmp.replace(_slot(group, rank))


def _get(group, rank):
    path = _slot(group, rank)
    deadline = time.monotonic() + float(os.environ.get("RC_DIST_TIMEOUT", "120"))
    while not path.exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"realcode stub gloo: timed out waiting for {path.name}")
        time.sleep(0.01)
    return pickle.loads(path.read_bytes())


def _exchange(group, obj, readers):
    group = group or _WORLD
    _put(group, _state["rank"], obj)
    got = {r: _get(group, r) for r in readers(group)}
    group.seq += 1
    return got


def barrier(group=None):
    _exchange(group, None, lambda g: g.ranks)


def broadcast_object_list(object_list, src=0, group=None):
    mine = list(object_list) if _state["rank"] == src else None
    got = _exchange(group, mine, lambda g: [src])
    object_list[:] = got[src]


def gather_object(obj, object_gather_list=None, dst=0, group=None):
    g = group or _WORLD
    readers = (lambda gg: gg.ranks) if _state["rank"] == dst else (lambda gg: [])
    got = _exchange(group, obj, readers)
    if _state["rank"] == dst and object_gather_list is not None:
        for i, r in enumerate(g.ranks):
            object_gather_list[i] = got[r]
