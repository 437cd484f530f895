from __future__ import annotations

from skgate.cli.main import entry

entry()
