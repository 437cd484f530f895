"""skgate: the process-safety gate for Ascend SuperKernel static compilation.

The public API for controllers (people's scripts and AI agents) is re-exported here.
"""

from __future__ import annotations

from skgate.classify import classify
from skgate.errors import BlockedError, EvidenceError, SkgateError, UsageError
from skgate.model import Cause, Evidence, PackageMode, State, Verdict

__version__ = "0.1.0"

__all__ = [
    "BlockedError",
    "Cause",
    "Evidence",
    "EvidenceError",
    "PackageMode",
    "SkgateError",
    "State",
    "UsageError",
    "Verdict",
    "__version__",
    "classify",
]
