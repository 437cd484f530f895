"""``stages.json`` read back from an archived attempt (C2, C3).

The runner side that builds it while the compile lives is :mod:`skgate.runner.stage_tracker`.
"""

from __future__ import annotations

from pathlib import Path

from skgate.evidence import files

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from skgate.model.stages import Stages


def load_stages(path: Path) -> Stages | None:
    """``stages.json`` of an attempt, or None when the attempt has none (older skgate)."""
    from skgate.model.stages import Stages  # noqa: PLC0415

    if not path.exists():
        return None
    return Stages.from_dict(files.read_json(path), str(path))
