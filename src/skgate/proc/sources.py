"""Which ownership sources an attempt uses: detected before launch, never assumed.

* ``events``: the process-events connector (:mod:`skgate.proc.events`), where the runner
  may open it (root or ``CAP_NET_ADMIN``);
* ``cgroup``: a cgroup v2 leaf for the attempt (:mod:`skgate.proc.cgroup`), where a
  writable hierarchy exists (pure v2, hybrid ``unified``, delegated scope);
* ``scan``: the walk of the runner's descendants in ``/proc``, always on, as the fallback
  and the cross-check.

Each source that cannot be used is recorded with the one-line reason, so the manifest
says how complete it is (C3). ``SKGATE_OWNERSHIP_SOURCES`` (a comma list of ``events``,
``cgroup``, ``scan``) restricts the sources an operator allows; ``scan`` cannot be
switched off, since it is the cross-check of the others.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from skgate.model.frozen import field, mutable
from skgate.model.running import Coverage
from skgate.model.sources import (
    ALL_SOURCES,
    SOURCE_CGROUP,
    SOURCE_EVENTS,
    SOURCE_SCAN,
    SOURCES_VAR,
    allowed_sources,
)
from skgate.proc import cgroup, events, taskstats
from skgate.proc.cgroup import MadeLeaf, make_leaf
from skgate.proc.owned import OwnedTree

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# The operator's choice is parsed in the model (validated before this module is loaded);
# re-exported here with the rest of the sources' public face.
__all__ = [
    "ALL_SOURCES",
    "SOURCES_VAR",
    "MadeLeaf",
    "Sources",
    "allowed_sources",
    "coverage",
    "make_leaf",
    "open_sources",
]


@mutable
class Sources:
    """The sources opened for one attempt (before its launch)."""

    connector: events.Connector | None = None
    leaf: cgroup.Leaf | None = None
    unavailable: dict[str, str] = field(default_factory=dict)
    #: The leaf's cpu.stat / memory.peak, read just before the leaf is removed.
    final_stats: dict[str, Any] | None = None
    #: The kernel's exit records (taskstats), or why they are not read.
    exit_records: taskstats.ExitRecords | None = None
    exit_names_unavailable: str | None = None

    @property
    def used(self) -> tuple[str, ...]:
        got = []
        if self.connector is not None:
            got.append(SOURCE_EVENTS)
        if self.leaf is not None:
            got.append(SOURCE_CGROUP)
        got.append(SOURCE_SCAN)
        return tuple(got)

    @contextlib.contextmanager
    def placing(self) -> Iterator[None]:
        """Around the launch: the leader is born inside the leaf, when there is one."""
        if self.leaf is None:
            yield
            return
        leaf = self.leaf
        with cgroup.MIGRATION_LOCK:
            try:
                leaf.enter()
            except OSError as exc:
                self.drop_leaf(f"the runner could not enter its cgroup ({exc.strerror})")
                yield
                return
            try:
                yield
            finally:
                leaf.leave()

    def drop_leaf(self, why: str) -> None:
        if self.leaf is not None:
            self.leaf.remove()
            self.leaf = None
        self.unavailable[SOURCE_CGROUP] = why

    def cgroup_facts(self) -> dict[str, Any]:
        leaf = self.leaf
        if leaf is None:
            return {}
        stats = self.final_stats if self.final_stats is not None else leaf.stats()
        return {
            "path": str(leaf.path),
            "hierarchy": leaf.hierarchy.kind,
            "removed": leaf.removed,
            **stats,
        }

    def close(self) -> None:
        """At the end of the attempt: stop listening; remove the leaf if it is empty."""
        self.close_leaf()
        if self.connector is not None:
            self.connector.close()
        if self.exit_records is not None:
            self.exit_records.close()  # kept: the final coverage names the source

    def close_leaf(self) -> None:
        """Take the leaf's final stats and remove it if empty: what the final manifest
        says of it. The listeners can stay open until :meth:`close` (nothing reads them
        once the tree has ended; closing them is off the last exit's path, issue 29)."""
        if self.leaf is not None and not self.leaf.removed:
            self.final_stats = self.leaf.stats()
            self.leaf.remove()


def open_sources(allowed: frozenset[str], leaf_name: str, made: MadeLeaf | None = None) -> Sources:
    """Open every allowed source that works here; record why the others do not.

    ``leaf_name`` comes from :func:`skgate.proc.cgroup.leaf_name` (the runner's identity);
    ``made`` is a leaf :func:`make_leaf` made earlier for it (made here otherwise).
    """
    src = Sources()
    if SOURCE_EVENTS in allowed:
        try:
            src.connector = events.open_connector(doorbell=True)
        except events.EventsUnavailable as exc:
            src.unavailable[SOURCE_EVENTS] = str(exc)
        else:
            # Names that do not race the exit (issue 28 s7), where the kernel gives them.
            try:
                src.exit_records = taskstats.open_exit_records()
            except taskstats.ExitRecordsUnavailable as exc:
                src.exit_names_unavailable = str(exc)
            src.connector.exit_records = src.exit_records  # read with the events
    else:
        src.unavailable[SOURCE_EVENTS] = f"not allowed by {SOURCES_VAR}"
    leaf, why = made if made is not None else make_leaf(allowed, leaf_name)
    src.leaf = leaf
    if why is not None:
        src.unavailable[SOURCE_CGROUP] = why
    return src


#: The name of the exit-record source in ``coverage.exit_names`` and the C3 line.
TASKSTATS = "taskstats"


def coverage(
    src: Sources, owned: OwnedTree, *, final: bool, foreign: list[int], left_cgroup: int = 0
) -> Coverage:
    """How complete the owned tree's record is, for ``ownership.json`` (C3)."""
    facts: dict[str, Any] = (
        src.cgroup_facts() if final else ({"path": str(src.leaf.path)} if src.leaf else {})
    )
    if foreign:
        # Processes put into the attempt's cgroup from outside: recorded, never touched.
        facts["foreign_members"] = foreign
    folded = owned.folded.to_dict()
    return Coverage(
        sources=src.used,
        unavailable=dict(src.unavailable),
        events_overruns=src.connector.overruns if src.connector is not None else 0,
        missed_by_events=owned.missed_by_events() if src.connector is not None else 0,
        argv_late=owned.argv_late_count(),
        named_at_exit=owned.named_at_exit,
        exit_names=TASKSTATS if src.exit_records is not None else "",
        exit_overruns=src.exit_records.overruns if src.exit_records is not None else 0,
        folded=folded if folded.get("processes") else {},
        cgroup=facts,
        left_cgroup=left_cgroup,
    )
