"""Which ownership sources an attempt uses: allowed, available, or why not (injected)."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from skgate.model.errors import UsageError
from skgate.proc import cgroup, events, sources
from skgate.proc.sources import allowed_sources, open_sources


def test_allowed_sources_parses_and_refuses_with_one_line() -> None:
    assert allowed_sources({}) == frozenset(sources.ALL_SOURCES)
    assert allowed_sources({sources.SOURCES_VAR: " events , scan"}) == {"events", "scan"}
    with pytest.raises(UsageError, match="unknown source"):
        allowed_sources({sources.SOURCES_VAR: "events,ebpf"})
    with pytest.raises(UsageError, match="must include scan"):
        allowed_sources({sources.SOURCES_VAR: "events,cgroup"})


@pytest.mark.parametrize(
    ("events_ok", "cgroup_ok"), list(itertools.product([True, False], repeat=2))
)
def test_every_availability_combination_degrades_with_reasons(
    monkeypatch: pytest.MonkeyPatch, events_ok: bool, cgroup_ok: bool
) -> None:
    """Injected availability: each missing source is named with why; scan is always on."""
    opened: list[object] = []

    class FakeConn:
        overruns = 0

        def close(self) -> None:
            opened.remove(self)

    class FakeLeaf:
        removed = False
        path = Path("/sys/fs/cgroup/fake/skgate-1-2")
        inside = False

        def enter(self) -> None:
            self.inside = True

        def leave(self) -> None:
            self.inside = False

        def remove(self) -> bool:
            self.removed = True
            return True

        def stats(self) -> dict[str, object]:
            return {"usage_usec": 5}

    def connector(rcvbuf: int = 0, doorbell: bool = False) -> FakeConn:
        if not events_ok:
            raise events.EventsUnavailable("injected: no CAP_NET_ADMIN")
        conn = FakeConn()
        opened.append(conn)
        return conn

    def create(name: str, hierarchy: object = None) -> FakeLeaf:
        if not cgroup_ok:
            raise cgroup.CgroupUnavailable("injected: not delegated")
        return FakeLeaf()

    monkeypatch.setattr(events, "open_connector", connector)
    monkeypatch.setattr(cgroup, "detect", lambda: None)
    monkeypatch.setattr(cgroup, "sweep_stale", lambda _h: [])
    monkeypatch.setattr(cgroup.Leaf, "create", staticmethod(create))
    src = open_sources(frozenset(sources.ALL_SOURCES), "skgate-1-2")
    want = [s for s, ok in (("events", events_ok), ("cgroup", cgroup_ok)) if ok] + ["scan"]
    assert list(src.used) == want
    assert set(src.unavailable) == {"events", "cgroup"} - set(want)
    assert all("injected" in why for why in src.unavailable.values())
    with src.placing():
        # The launch happens here: inside the leaf when there is one.
        assert getattr(src.leaf, "inside", False) is cgroup_ok
    assert not getattr(src.leaf, "inside", False)  # the runner is back home
    src.close()
    assert opened == []  # the connector is closed
    if cgroup_ok:
        assert src.final_stats == {"usage_usec": 5}


def test_disallowed_sources_are_never_opened(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(*_a: object, **_k: object) -> None:
        raise AssertionError("must not be opened")

    monkeypatch.setattr(events, "open_connector", boom)
    monkeypatch.setattr(cgroup.Leaf, "create", staticmethod(boom))
    src = open_sources(frozenset({"scan"}), "skgate-1-2")
    assert src.used == ("scan",)
    assert src.unavailable == {
        "events": "not allowed by SKGATE_OWNERSHIP_SOURCES",
        "cgroup": "not allowed by SKGATE_OWNERSHIP_SOURCES",
    }
