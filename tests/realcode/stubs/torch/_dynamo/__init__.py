"""Stub ``torch._dynamo``: reset() is called at exit by npugraph_ex's finaliser."""

from torch._dynamo import utils

__all__ = ["reset", "utils"]


def reset():
    return None
