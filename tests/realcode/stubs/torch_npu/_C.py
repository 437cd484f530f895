"""Stub ``torch_npu._C``: the aclnn JSON dump and the CANN version queries."""

import os

from torch_npu import _opdump


def _aclop_start_dump(path):
    _opdump.start(path)


def _aclop_stop_dump():
    _opdump.stop()


def _cann_tuple(text):
    parts = []
    for piece in text.replace("-", ".").split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def _get_cann_version(module="CANN"):
    return os.environ.get("RC_CANN_VERSION", "8.5.0")


def _is_gte_cann_version(version, module="CANN"):
    return _cann_tuple(_get_cann_version(module)) >= _cann_tuple(version)
