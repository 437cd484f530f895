"""Which ownership sources the operator allows (``SKGATE_OWNERSHIP_SOURCES``, C3): a
pure parse, so a request is validated before the process machinery is loaded. What each
source is and how it is opened: :mod:`skgate.proc.sources`."""

from __future__ import annotations

from collections.abc import Mapping

from skgate.model.errors import UsageError

SOURCE_EVENTS = "events"
SOURCE_CGROUP = "cgroup"
SOURCE_SCAN = "scan"
SOURCES_VAR = "SKGATE_OWNERSHIP_SOURCES"
ALL_SOURCES = (SOURCE_EVENTS, SOURCE_CGROUP, SOURCE_SCAN)


def allowed_sources(env: Mapping[str, str]) -> frozenset[str]:
    """The sources the operator allows; :class:`UsageError` (exit 2) for a bad value."""
    raw = env.get(SOURCES_VAR)
    if raw is None or not raw.strip():
        return frozenset(ALL_SOURCES)
    names = {n.strip() for n in raw.split(",") if n.strip()}
    bad = sorted(names - set(ALL_SOURCES))
    if bad:
        raise UsageError(
            f"{SOURCES_VAR} names unknown source(s) {', '.join(bad)}; use a comma list of "
            f"{', '.join(ALL_SOURCES)}"
        )
    if SOURCE_SCAN not in names:
        raise UsageError(
            f"{SOURCES_VAR} must include scan (the fallback and cross-check of the others)"
        )
    return frozenset(names)
