"""Stub ``torch_npu.npu.utils``: both queries go to ``torch_npu._C`` as the real ones do."""

import torch_npu


def get_cann_version(module="CANN"):
    return torch_npu._C._get_cann_version(module)


def _is_gte_cann_version(version, module="CANN"):
    return bool(torch_npu._C._is_gte_cann_version(version, module))
