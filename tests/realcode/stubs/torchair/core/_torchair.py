"""Stub of torchair's C extension: the 2.7.1 dump calls and the SoC name."""

import os

from torch_npu import _opdump


def AclopStartDumpArgs(kind, path):
    _opdump.start(path)


def AclopStopDumpArgs(kind):
    _opdump.stop()


def GetSocName():
    return os.environ.get("RC_DEVICE_NAME", "Ascend910B1")


def SetDebugLogPath(path):
    return None
