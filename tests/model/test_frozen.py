"""skgate.model.frozen.record behaves as ``@dataclass(frozen=True)`` for what skgate's
records use, and ``mutable`` as a plain ``@dataclass``: the same class is declared both
ways and every behaviour compared."""

from __future__ import annotations

import dataclasses
import pickle
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import pytest

from skgate.model.frozen import _GENERIC_CALLS as GENERIC_CALLS
from skgate.model.frozen import (
    FrozenRecordError,
    KwRecord,
    field,
    fields,
    kw_field,
    mutable,
    record,
    replace,
)


@record
class Rec:
    """A record with every kind of field skgate's records have."""

    name: str
    count: int
    tags: tuple[str, ...] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)
    LIMIT: ClassVar[int] = 3

    def twice(self) -> int:
        return 2 * self.count


@dataclasses.dataclass(frozen=True)
class Dc:
    """The same declaration, as a frozen dataclass."""

    name: str
    count: int
    tags: tuple[str, ...] = ()
    extra: Mapping[str, Any] = dataclasses.field(default_factory=dict)
    LIMIT: ClassVar[int] = 3

    def twice(self) -> int:
        return 2 * self.count


def both(*args: Any, **kwargs: Any) -> tuple[Any, Any]:
    return Rec(*args, **kwargs), Dc(*args, **kwargs)


def test_construction_repr_and_fields_match_a_frozen_dataclass() -> None:
    r, d = both("a", 2, tags=("x",))
    assert repr(r) == repr(d).replace("Dc(", "Rec(")
    assert fields(r) == fields(Rec) == tuple(f.name for f in dataclasses.fields(d))
    assert Rec.__match_args__ == Dc.__match_args__
    assert r.twice() == d.twice() == 4 and Rec.LIMIT == 3
    with pytest.raises(TypeError):
        Rec("a")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Rec("a", 1, nope=1)  # type: ignore[call-arg]


def test_a_default_factory_makes_a_new_value_per_record() -> None:
    a, b = Rec("a", 1), Rec("b", 1)
    assert a.extra == {} and a.extra is not b.extra
    assert not hasattr(Rec, "extra")  # as with dataclasses: no shared class attribute


@record
class Point:
    """Hashable fields only."""

    x: int
    y: tuple[str, ...] = ()


def test_equality_and_hash_follow_the_field_values() -> None:
    p1, p2, p3 = Point(1, ("t",)), Point(1, ("t",)), Point(2, ("t",))
    assert p1 == p2 and p1 != p3 and hash(p1) == hash(p2)
    assert {p1, p2, p3} == {p1, p3}
    assert Rec("a", 1) == Rec("a", 1) and Rec("a", 1) != Rec("a", 2)
    assert Rec("a", 1) != Dc("a", 1)  # type: ignore[comparison-overlap]  # another class
    for unhashable in both("a", 1):  # a dict field: unhashable, as with dataclasses
        with pytest.raises(TypeError):
            hash(unhashable)


def test_assignment_and_deletion_are_refused_like_a_frozen_dataclass() -> None:
    r, d = both("a", 1)
    for obj, error in ((r, FrozenRecordError), (d, dataclasses.FrozenInstanceError)):
        with pytest.raises(error):
            obj.count = 5
        with pytest.raises(error):
            del obj.count
        with pytest.raises(AttributeError):  # both are AttributeErrors
            obj.other = 1
    assert r.count == 1


def test_replace_serves_records_and_dataclasses_alike() -> None:
    r, d = both("a", 1)
    r2, d2 = replace(r, count=7), replace(d, count=7)
    assert (r2.count, r.count, d2.count, d.count) == (7, 1, 7, 1)
    assert type(r2) is Rec and type(d2) is Dc
    with pytest.raises(TypeError, match="no field"):
        replace(r, nope=1)
    with pytest.raises(TypeError):
        replace(d, nope=1)


def test_records_pickle_and_copy() -> None:
    import copy

    r = Rec("a", 1, ("t",), {"k": [1]})
    for clone in (pickle.loads(pickle.dumps(r)), copy.deepcopy(r), copy.copy(r)):
        assert clone == r and type(clone) is Rec


def test_a_field_without_default_after_one_with_is_refused() -> None:
    with pytest.raises(TypeError, match="non-default field 'b'"):

        @record
        class Bad:
            a: int = 1
            b: int  # type: ignore[misc]


def test_fields_of_a_non_record_is_a_type_error() -> None:
    with pytest.raises(TypeError, match="not a record"):
        fields(object())


def test_the_verdict_round_trips_through_its_json_as_before() -> None:
    from evidence_fixtures import census, verdict_for
    from skgate.model.records import State, Verdict

    for state in State:
        v = verdict_for(state, "/r/attempts/0001", census(1, 2, 1, False), ("why",))
        again = Verdict.from_dict(v.to_dict())
        assert again == v and again.to_dict() == v.to_dict()
        assert replace(v, attempt="x").attempt == "x" and v.attempt != "x"


def test_the_status_path_loads_neither_dataclasses_nor_inspect(tmp_path: Path) -> None:
    """``skgate status`` of a finished attempt (the start-up target of issue 22 s5)."""
    from evidence_fixtures import make_attempt
    from skgate.model.records import State

    make_attempt(tmp_path, 1, State.SUCCEEDED)
    code = (
        "import sys, io, contextlib\n"
        "from skgate.cli.main import main\n"
        "with contextlib.redirect_stdout(io.StringIO()) as out:\n"
        f"    code = main(['status', {str(tmp_path)!r}])\n"
        "print(code, out.getvalue().split()[0], sorted(m for m in ('dataclasses', 'inspect') "
        "if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip().split(maxsplit=2) == ["0", "SUCCEEDED:", "[]"], done.stdout


# -- KwRecord: keyword-only records with inheritance (the journal's events, issue 29) ----


class KwBase(KwRecord):
    """A base with the envelope fields, as model.events.Event."""

    KIND: ClassVar[str] = "base"
    t: float | None = None
    mono: float | None = None


class KwRec(KwBase):
    KIND: ClassVar[str] = "rec"
    name: str | None = None
    mono: float | None = 1.5  # redefined: keeps its place, takes the new default
    reasons: tuple[str, ...] = kw_field(default=(), metadata={"strict": True})
    extra: Mapping[str, Any] = kw_field(default_factory=dict)


@dataclasses.dataclass(frozen=True, kw_only=True)
class DcBase:
    KIND: ClassVar[str] = "base"
    t: float | None = None
    mono: float | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class DcRec(DcBase):
    KIND: ClassVar[str] = "rec"
    name: str | None = None
    mono: float | None = 1.5
    reasons: tuple[str, ...] = dataclasses.field(default=(), metadata={"strict": True})
    extra: Mapping[str, Any] = dataclasses.field(default_factory=dict)


def test_a_kw_record_matches_a_frozen_kw_only_dataclass_hierarchy() -> None:
    k, d = KwRec(name="a", t=2.0), DcRec(name="a", t=2.0)
    assert repr(k) == repr(d).replace("DcRec(", "KwRec(")
    assert fields(k) == tuple(f.name for f in dataclasses.fields(d))
    assert [f.metadata.get("strict") for f in KwRec.__record_specs__] == [
        f.metadata.get("strict") for f in dataclasses.fields(d)
    ]
    assert KwRec.__match_args__ == DcRec.__match_args__ == ()
    assert (k.mono, k.reasons, k.extra, KwRec.KIND, KwBase.KIND) == (1.5, (), {}, "rec", "base")
    assert KwRec(extra={}).extra is not KwRec().extra  # a factory makes a new value each time
    assert (KwRec.reasons, DcRec.reasons) == ((), ())  # a plain default stays a class attribute
    assert not hasattr(KwRec, "extra") and not hasattr(DcRec, "extra")
    for cls in (KwRec, DcRec):
        with pytest.raises(TypeError):
            cls("a")  # type: ignore[call-arg, arg-type]  # keyword-only
        with pytest.raises(TypeError):
            cls(nope=1)  # type: ignore[call-arg]


def test_a_kw_record_is_frozen_compares_by_value_and_type_and_pickles() -> None:
    k = KwRec(name="a", reasons=("x",))
    assert k == KwRec(name="a", reasons=("x",))
    assert hash(KwBase(t=1.0)) == hash(KwBase(t=1.0)) == hash(DcBase(t=1.0))
    assert k != KwRec(name="b", reasons=("x",))
    assert k != KwBase(t=None, mono=1.5)  # another type: never equal
    with pytest.raises(FrozenRecordError):
        k.name = "b"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        DcRec().name = "b"  # type: ignore[misc]
    assert replace(k, mono=None) == KwRec(name="a", reasons=("x",), mono=None)
    assert pickle.loads(pickle.dumps(k)) == k


def _fresh_pair() -> tuple[type, type]:
    """A record class and its dataclass twin, neither constructed yet (a record compiles
    its ``__init__`` on the first construction, issue 29)."""

    @record
    class Rec:
        name: str
        count: int
        tags: tuple[str, ...] = ()
        extra: Mapping[str, Any] = field(default_factory=dict)

        def __post_init__(self) -> None:
            if self.count < 0:
                raise ValueError(f"count {self.count} < 0")

    @dataclasses.dataclass(frozen=True)
    class Rec2:
        name: str
        count: int
        tags: tuple[str, ...] = ()
        extra: Mapping[str, Any] = dataclasses.field(default_factory=dict)

        def __post_init__(self) -> None:
            if self.count < 0:
                raise ValueError(f"count {self.count} < 0")

    return Rec, Rec2


CALLS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    (("a", 1), {}),
    (("a",), {"count": 2, "tags": ("t",)}),
    ((), {"name": "a", "count": 3, "extra": {"k": 1}}),
    (("a", 1, ("t",), {"k": 2}), {}),
    (("a",), {}),  # missing count
    ((), {}),  # missing both
    (("a", 1, (), {}, 5), {}),  # too many positionals
    (("a", 1), {"nope": 1}),  # unknown keyword
    (("a", 1), {"name": "b"}),  # a field given twice
    (("a", -1), {}),  # refused by __post_init__
]


def _outcome(cls: type, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, str]:
    try:
        made = cls(*args, **kwargs)
    except (TypeError, ValueError) as exc:
        return type(exc).__name__, str(exc).replace("Rec2.", "Rec.")
    return "ok", repr(made).replace("Rec2(", "Rec(")


@pytest.mark.parametrize(("args", "kwargs"), CALLS)
def test_the_first_construction_behaves_as_a_dataclass_and_as_every_later_one(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    # Each call is the first construction of fresh classes (the generic __init__), then
    # one with the compiled __init__: both accept, refuse and word their errors exactly
    # as the dataclass does.
    rec, dc = _fresh_pair()
    first = _outcome(rec, args, kwargs)
    assert first == _outcome(dc, args, kwargs)
    for _ in range(GENERIC_CALLS + 1):
        rec(*CALLS[0][0])
    assert rec.__dict__["__init__"].__code__.co_varnames[1] == "name"  # compiled now
    assert _outcome(rec, args, kwargs) == first


def test_a_subclass_constructed_first_gets_its_base_records_init() -> None:
    rec, _ = _fresh_pair()

    class Sub(rec):  # type: ignore[misc, valid-type]
        pass

    s = Sub("a", 1)
    assert (s.name, s.count, type(s)) == ("a", 1, Sub)
    assert rec("b", 2).name == "b" and "__init__" not in Sub.__dict__
    assert rec.__dict__["__init__"].__qualname__.endswith("Rec.__init__")


def test_a_record_compiles_its_init_after_a_few_constructions_or_on_an_error() -> None:
    # Issue 29: compiling one __init__ per class at import was a quarter of skgate's own
    # share of `skgate status`, which constructs five of the record types it imports.
    rec, _ = _fresh_pair()
    stub = rec.__dict__["__init__"]
    assert stub.__code__.co_varnames[:3] == ("self", "args", "kwargs")
    made = [rec("a", n, extra={"n": n}) for n in range(GENERIC_CALLS)]
    assert rec.__dict__["__init__"] is stub  # no code compiled for these
    assert [m.extra for m in made] == [{"n": n} for n in range(GENERIC_CALLS)]
    assert made[0].extra is not rec("a", 1).extra  # a factory: a new dict each (9th)
    compiled = rec.__dict__["__init__"]
    assert compiled is not stub and compiled.__code__.co_varnames[:5] == (
        "self",
        "name",
        "count",
        "tags",
        "extra",
    )
    rec("b", 2)
    assert rec.__dict__["__init__"] is compiled
    other, _ = _fresh_pair()
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'count'"):
        other("a")
    assert other.__dict__["__init__"].__code__.co_varnames[1] == "name"  # an error compiles


@mutable
class State:
    """Mutable working state, as the run path's (a watcher, a disk-full tally)."""

    limit: int
    errors: list[str] = field(default_factory=list)
    seen: int = 0
    _hook: Any = None


@dataclasses.dataclass
class DcState:
    """The same declaration, as a plain dataclass."""

    limit: int
    errors: list[str] = dataclasses.field(default_factory=list)
    seen: int = 0
    _hook: Any = None


def test_a_mutable_record_matches_a_plain_dataclass() -> None:
    for _ in range(GENERIC_CALLS + 2):  # the generic __init__, then the compiled one
        m, d = State(2, seen=1), DcState(2, seen=1)
        assert repr(m) == repr(d).replace("DcState(", "State(")
        assert fields(m) == tuple(f.name for f in dataclasses.fields(d))
        assert State.__match_args__ == DcState.__match_args__
    a, b = State(1), State(1)
    assert a.errors == [] and a.errors is not b.errors and not hasattr(State, "errors")
    assert a == b and a != State(2)
    assert a != DcState(1)  # type: ignore[comparison-overlap]  # another class
    a.seen += 1  # assignable, unlike a record
    a.errors.append("x")
    a._hook = print
    assert a != b and (a.seen, a.errors, a._hook) == (1, ["x"], print)
    # eq without frozen: unhashable, as a dataclass
    assert vars(State)["__hash__"] is None is vars(DcState)["__hash__"]
    with pytest.raises(TypeError):
        hash(a)
    assert replace(a, seen=5).seen == 5 and a.seen == 1
    bad_calls: tuple[tuple[Any, ...], ...] = ((), (1, [], 0, None, "extra"))
    for bad in bad_calls:
        for cls in (State, DcState):
            with pytest.raises(TypeError):
                cls(*bad)
    assert pickle.loads(pickle.dumps(a)) == a
