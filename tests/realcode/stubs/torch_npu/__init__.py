"""Stub ``torch_npu``: the dump, CANN version and reselect entry points static_kernel.py
calls (realcode suite). The CANN version comes from RC_CANN_VERSION (default 8.5.0), as
the real ``torch_npu._C._get_cann_version("CANN")`` reads it from the installed CANN.
"""

from torch_npu import _C, npu

__version__ = "0.0.0+realcode-stub"
__all__ = ["_C", "npu"]
