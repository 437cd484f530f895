"""Stub ``torch_npu.npu``."""

import os

from torch_npu.npu import utils

__all__ = ["utils"]


class _Stream:
    def synchronize(self):
        return None


def current_stream():
    return _Stream()


def get_device_name(device=None):
    return os.environ.get("RC_DEVICE_NAME", "Ascend910B1")


def _get_deterministic_level():
    return int(os.environ.get("RC_DETERMINISTIC_LEVEL", "0"))


def _aclnn_reselect_static_kernel():
    return None


def _aclnn_reselect_static_kernel_with_path(path):
    return None
