"""Stub ``torch._dynamo.utils``: the debug dir the real core/utils.py logs into when
TORCH_COMPILE_DEBUG=1 (``<cwd>/torch_compile_debug/run_<pid>``, as torch names it)."""

import os


def get_debug_dir():
    return os.path.join(os.getcwd(), "torch_compile_debug", f"run_{os.getpid()}")
