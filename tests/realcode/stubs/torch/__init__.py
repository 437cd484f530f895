"""Stub ``torch``: only what torch-npu's static_kernel.py touches (realcode suite).

It must win over a real CPU torch installed in the same venv: the launcher puts this
directory first on sys.path before anything imports torch.
"""

import os

from torch import _dynamo, distributed, fx

__version__ = "0.0.0+realcode-stub"
__all__ = ["_dynamo", "are_deterministic_algorithms_enabled", "distributed", "fx"]


def are_deterministic_algorithms_enabled():
    # static_kernel.py compares this with the cached deterministic flag (use_cache_compile)
    # and hashes it into the 2.14 cache key.
    return os.environ.get("RC_DETERMINISTIC", "0") == "1"
