from __future__ import annotations

from skgate.cli.console import entry

entry()
