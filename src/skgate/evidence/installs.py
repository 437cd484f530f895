"""``installs.json``: the static-kernel packages the owned tree installed or uninstalled.

Built once, after the tree ended, from the final ownership records (each exec of a
``*.run`` or an ``uninstall.sh`` by an owned process, with its exit status where the
process events or the reaper gave one) and the launcher's own install lines
(``launcher_lines``); read back for the classifier (C8). An attempt from before this file
existed has none: it reads as "no install evidence", never as a failed or good install.
The rule and the records are :mod:`skgate.model.installs`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from skgate.evidence import files

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from skgate.model.installs import Installs
    from skgate.model.launcher import LauncherFacts
    from skgate.model.running import ProcessRecord

INSTALLS_FILE = "installs.json"


#: ``.run`` files listed from the outputs, to name a run whose argv was never read.
MAX_RUN_FILES = 1000


def run_files(outputs: Path | None) -> list[str]:
    """The ``.run`` files under ``outputs`` and its result roots (two levels, no links
    followed, bounded): the packages a run known only by name can be."""
    if outputs is None:
        return []
    found: list[str] = []
    dirs = [str(outputs)]
    for depth in range(2):
        nxt: list[str] = []
        for d in dirs:
            try:
                with os.scandir(d) as it:
                    for e in it:
                        if len(found) >= MAX_RUN_FILES:
                            return found
                        if e.name.endswith(".run") and e.is_file(follow_symlinks=False):
                            found.append(e.path)
                        elif depth == 0 and e.is_dir(follow_symlinks=False):
                            nxt.append(e.path)
            except OSError:
                continue  # unreadable: nothing to name from it
        dirs = nxt
    return found


def attempt_installs(
    records: Iterable[ProcessRecord],
    launcher: LauncherFacts | None,
    outputs: Path | None = None,
) -> Installs:
    """The package runs of one attempt (see the module doc)."""
    from skgate.model.installs import build_installs  # noqa: PLC0415

    lines = launcher.package_lines if launcher is not None else ()
    return build_installs(records, lines, run_files(outputs))


def load_installs(attempt_dir: Path) -> Installs | None:
    """``installs.json`` of an attempt, or None when it has none (older skgate)."""
    from skgate.model.installs import Installs  # noqa: PLC0415

    path = attempt_dir / INSTALLS_FILE
    if not files.present(path):
        return None
    return Installs.from_dict(files.read_json(path), str(path))
