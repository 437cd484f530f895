from __future__ import annotations

from skgate.cli import entry

entry()
