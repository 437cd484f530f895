"""Frozen records for the read path, without the ``dataclasses`` module (issue 22 s5).

``skgate status`` reads a recorded verdict: a dozen frozen record types (the verdict, its
evidence, the census, the ownership record, a ledger or JSON-lines line). Importing
``dataclasses`` for them costs more than the rest of the command: it imports ``inspect``,
and with it ``ast``, ``dis`` and ``tokenize`` (about 20 ms of a 100 ms command here,
measured in docs/benchmarks.md), for a feature those types do not use.

:func:`record` gives a class what ``@dataclass(frozen=True)`` gives it and nothing else:
an ``__init__`` over its annotated fields in order (defaults and
``field(default_factory=...)`` allowed; it calls ``__post_init__`` when the class has
one), ``__repr__``, ``__eq__`` and ``__hash__`` over
the field values, ``__match_args__``, and assignment refused (:class:`FrozenRecordError`,
an ``AttributeError`` like ``dataclasses.FrozenInstanceError``). :func:`replace` and
:func:`fields` stand in for their ``dataclasses`` namesakes. Type checkers see the
decorator as a frozen dataclass (PEP 681 ``dataclass_transform``). Records pickle as any
plain class does (Ray sends verdicts between processes).

:class:`KwRecord` is the same for a family of keyword-only records that share fields
through inheritance (``@dataclass(frozen=True, kw_only=True)`` on a base and its
subclasses): the journal's events, which a runner loads before its launch (issue 29:
building their two dozen dataclasses cost 25-34 ms of every start-up). Its one
``__init__`` is written once, not generated per class.

:func:`mutable` is a plain ``@dataclass``'s equivalent (assignable, unhashable), for the
run path's working state built before every launch (issue 29).

Everything else in skgate keeps ``dataclasses``: only the types the read path and the
run path's start-up load use this (tests/model/test_frozen.py holds both to the same
behaviour).
"""

from __future__ import annotations

# Not ``typing.TYPE_CHECKING``: the read path never imports ``typing`` for this module.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    from typing_extensions import dataclass_transform

    T = TypeVar("T")
    C = TypeVar("C", bound=type)
else:

    def dataclass_transform(**_kwargs: object) -> Callable[[C], C]:
        return lambda fn: fn


#: The attribute that lists a record's fields, in order.
FIELDS = "__record_fields__"


class FrozenRecordError(AttributeError):
    """An assignment to (or deletion of) a field of a frozen record."""


class _Factory:
    __slots__ = ("make",)

    def __init__(self, make: Callable[[], object]) -> None:
        self.make = make


def field(*, default_factory: Callable[[], T]) -> T:
    """A field whose default is made new for each record (``dataclasses.field``'s
    ``default_factory``, the one option skgate's records use)."""
    return _Factory(default_factory)  # type: ignore[return-value]


#: Constructions of a record type filled by the generic ``__init__`` before its own is
#: compiled (:func:`record`): a type built more often (the run path's) then gets the
#: compiled one's per-record cost.
_GENERIC_CALLS = 8


class _Missing:
    __slots__ = ()


_MISSING = _Missing()


def _own_fields(cls: type) -> tuple[str, ...]:
    """The annotated names of ``cls`` itself, in order, without ``ClassVar`` ones."""
    # Since 3.10 a class's ``__annotations__`` are its own, never a base's (and
    # ``inspect.get_annotations`` is the import this module exists to avoid).
    annotations: dict[str, object] = getattr(cls, "__annotations__", {})
    names = []
    for name, note in annotations.items():
        text = note if isinstance(note, str) else getattr(note, "__name__", repr(note))
        if text.startswith(("ClassVar", "typing.ClassVar")):
            continue
        names.append(name)
    return tuple(names)


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def record(cls: C) -> C:
    """Make ``cls`` a frozen record (see the module doc). No inheritance of fields: a
    record's fields are the ones it annotates itself.

    The fields are checked here; the ``__init__`` is compiled only after a few
    constructions (issue 29): compiling one per class at import was a quarter of skgate's
    own share of ``skgate status``, which constructs five of the types it imports, once.
    Until then a generic one fills well-formed calls; a call it cannot fill (a missing,
    extra or repeated argument) compiles the real one at once, which raises its error."""
    return _make(cls, frozen=True)


@dataclass_transform(field_specifiers=(field,))
def mutable(cls: C) -> C:
    """Make ``cls`` what a plain ``@dataclass`` makes it, without the ``dataclasses``
    module: :func:`record`'s ``__init__``, ``__repr__`` and ``__eq__``, its fields
    assignable, and unhashable (``__hash__`` None, as a dataclass with ``eq`` and not
    frozen). For the run path's working state, built before every launch (issue 29: each
    generated dataclass costs about a millisecond of ``exec`` on every start-up, and the
    module itself, with ``inspect``, ``ast``, ``dis`` and ``tokenize``, several more)."""
    return _make(cls, frozen=False)


def _make(cls: C, *, frozen: bool) -> C:
    """:func:`record` (``frozen``) or :func:`mutable`: the fields and the lazily compiled
    ``__init__`` are the same for both (``object.__setattr__`` sets a mutable one's too)."""
    names = _own_fields(cls)
    known = frozenset(names)
    fills: dict[str, object] = {}  # a field's default, or its _Factory
    params: list[str] = []
    body: list[str] = []
    scope: dict[str, object] = {"_set": object.__setattr__, "_MISSING": _MISSING}
    seen_default = False
    for name in names:
        default = cls.__dict__.get(name, _MISSING)
        if isinstance(default, _Factory):
            scope[f"_make_{name}"] = default.make
            fills[name] = default
            params.append(f"{name}=_MISSING")
            body.append(f"  _set(self, {name!r}, _make_{name}() if {name} is _MISSING else {name})")
            delattr(cls, name)  # a factory is no class attribute (as in dataclasses)
            seen_default = True
            continue
        if default is _MISSING:
            if seen_default:
                raise TypeError(f"{cls.__name__}: non-default field {name!r} after a default")
            params.append(name)
        else:
            scope[f"_default_{name}"] = default
            fills[name] = default
            params.append(f"{name}=_default_{name}")
            seen_default = True
        body.append(f"  _set(self, {name!r}, {name})")
    post = hasattr(cls, "__post_init__")
    if post:
        body.append("  self.__post_init__()")  # as dataclasses: checks after the fields
    source = f"def __init__(self, {', '.join(params)}):\n" + ("\n".join(body) or "  pass")

    def build() -> Callable[..., None]:
        exec(source, scope)  # noqa: S102 - our own generated text, as dataclasses does
        made: Callable[..., None] = scope["__init__"]  # type: ignore[assignment]
        made.__qualname__ = f"{cls.__qualname__}.__init__"
        cls.__init__ = made  # type: ignore[misc]
        return made

    calls = [0]

    def __init__(self: object, *args: object, **kwargs: object) -> None:
        made = cls.__dict__["__init__"]
        if made is not __init__:  # compiled meanwhile (another thread)
            made(self, *args, **kwargs)
            return
        calls[0] += 1
        if (
            calls[0] > _GENERIC_CALLS
            or len(args) > len(names)
            or not known.issuperset(kwargs)
            or not kwargs.keys().isdisjoint(names[: len(args)])
        ):
            build()(self, *args, **kwargs)  # the compiled one, and its own error if any
            return
        given = dict(zip(names, args, strict=False))  # fewer args than fields: the rest
        given.update(kwargs)
        if any(n not in given and n not in fills for n in names):
            build()(self, *args, **kwargs)  # raises the missing-argument error
            return
        for name in names:  # in field order, as the compiled one: factories alike
            if name in given:
                value = given[name]
            else:
                value = fills[name]
                if isinstance(value, _Factory):
                    value = value.make()
            object.__setattr__(self, name, value)
        if post:
            self.__post_init__()  # type: ignore[attr-defined]

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    cls.__init__ = __init__  # type: ignore[misc]
    setattr(cls, FIELDS, names)
    setattr(cls, "__match_args__", names)  # noqa: B010 - mypy types this name as read-only
    cls.__repr__ = _repr  # type: ignore[assignment, method-assign]
    cls.__eq__ = _eq  # type: ignore[assignment, method-assign]
    if not frozen:
        cls.__hash__ = None  # type: ignore[assignment]
        return cls
    cls.__hash__ = _hash  # type: ignore[assignment, method-assign]
    cls.__setattr__ = _refuse_set  # type: ignore[assignment, method-assign]
    cls.__delattr__ = _refuse_delete  # type: ignore[assignment, method-assign]
    return cls


def _values(obj: object) -> tuple[object, ...]:
    return tuple(getattr(obj, name) for name in getattr(obj, FIELDS))


def _repr(self: object) -> str:
    inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in getattr(self, FIELDS))
    return f"{type(self).__qualname__}({inner})"


def _eq(self: object, other: object) -> bool:
    if other.__class__ is not self.__class__:
        return NotImplemented  # type: ignore[no-any-return]
    return _values(self) == _values(other)


def _hash(self: object) -> int:
    return hash(_values(self))


def _refuse_set(self: object, name: str, _value: object) -> None:
    raise FrozenRecordError(f"cannot assign to field {name!r} of a frozen record")


def _refuse_delete(self: object, name: str) -> None:
    raise FrozenRecordError(f"cannot delete field {name!r} of a frozen record")


def fields(obj: object) -> tuple[str, ...]:
    """The field names of a record (or record type), in order."""
    names: tuple[str, ...] | None = getattr(obj, FIELDS, None)
    if names is None:
        raise TypeError(f"{obj!r} is not a record")
    return names


def replace(obj: T, **changes: Any) -> T:
    """A copy of ``obj`` with ``changes``: a record, or any dataclass (then it is
    ``dataclasses.replace``), so one ``replace`` serves code that holds either."""
    names: tuple[str, ...] | None = getattr(obj, FIELDS, None)
    if names is None:
        import dataclasses  # noqa: PLC0415 - a dataclass was given: the module is loaded

        return dataclasses.replace(obj, **changes)  # type: ignore[type-var]
    unknown = set(changes) - set(names)
    if unknown:
        raise TypeError(f"{type(obj).__name__} has no field(s) {sorted(unknown)}")
    values = {n: changes[n] if n in changes else getattr(obj, n) for n in names}
    return type(obj)(**values)


# -- keyword-only records with inheritance (the journal's events) ----------------------


class KwField:
    """One field of a :class:`KwRecord`: its name, default (or factory) and metadata."""

    __slots__ = ("default", "factory", "metadata", "name")

    def __init__(
        self,
        name: str,
        default: object = _MISSING,
        factory: Callable[[], object] | None = None,
        metadata: dict[str, object] | None = None,
    ) -> None:
        self.name = name
        self.default = default
        self.factory = factory
        self.metadata: dict[str, object] = metadata or {}


def kw_field(
    *,
    default: Any = _MISSING,
    default_factory: Callable[[], Any] | None = None,
    metadata: dict[str, object] | None = None,
) -> Any:
    """A :class:`KwRecord` field with a default or a factory, and ``metadata`` (as
    ``dataclasses.field``'s)."""
    return KwField("", default, default_factory, metadata)


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(kw_field,))
class KwRecord:
    """A frozen, keyword-only record whose fields are those of its bases, then its own (a
    redefined field keeps its place), as ``@dataclass(frozen=True, kw_only=True)`` orders
    them. Equality, hash and repr over the field values; :func:`replace` and
    :func:`fields` serve it. Subclass it; no decorator."""

    #: The fields, in order (built once per class by ``__init_subclass__``).
    __record_specs__: tuple[KwField, ...] = ()
    __record_fields__: tuple[str, ...] = ()
    __match_args__ = ()  # keyword-only fields match by keyword, as in a kw_only dataclass

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        specs = {f.name: f for f in cls.__record_specs__}  # the base's, in its order
        for name in _own_fields(cls):
            given = cls.__dict__.get(name, _MISSING)
            if isinstance(given, KwField):
                spec = KwField(name, given.default, given.factory, given.metadata)
                if given.default is _MISSING:
                    delattr(cls, name)  # a factory (or nothing) is no class attribute
                else:
                    setattr(cls, name, given.default)
            else:
                spec = KwField(name, given)
            specs[name] = spec
        cls.__record_specs__ = tuple(specs.values())
        cls.__record_fields__ = tuple(specs)

    def __init__(self, **values: Any) -> None:
        for spec in self.__record_specs__:
            name = spec.name
            if name in values:
                value = values.pop(name)
            elif spec.factory is not None:
                value = spec.factory()
            elif spec.default is _MISSING:
                raise TypeError(f"{type(self).__name__}() missing keyword argument {name!r}")
            else:
                value = spec.default
            object.__setattr__(self, name, value)
        if values:
            raise TypeError(
                f"{type(self).__name__}() got an unexpected keyword argument {next(iter(values))!r}"
            )

    __repr__ = _repr
    __eq__ = _eq
    __hash__ = _hash
    __setattr__ = _refuse_set
    __delattr__ = _refuse_delete
