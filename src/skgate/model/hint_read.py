"""Readers of JSON values by a field's evaluated annotation (``int | None``,
``tuple[str, ...]``, an enum, ``Mapping[str, Any]``): the value as its type says, or
:data:`BAD`. ``bool`` is never read as a number, nor a number as a ``bool``.

Built once per field by :mod:`skgate.model.events` (a journal of many thousand records is
read line by line: no per-value introspection), without ``typing`` (issue 29). No I/O.
"""

from __future__ import annotations

import enum
import types
from collections.abc import Mapping

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeAlias

    #: A field's reader: the value as its type says, or BAD.
    Reader: TypeAlias = Callable[[Any], Any]

#: What a reader returns for a value its type does not allow.
BAD: Any = object()


class _AnyHint:
    """What ``Any`` in a field's annotation evaluates to here (``typing.Any`` is not
    imported on the run path): a value of any type is read as it is."""

    def __repr__(self) -> str:
        return "Any"


ANY_HINT: Any = _AnyHint()


def _args(hint: Any) -> tuple[Any, ...]:
    return tuple(getattr(hint, "__args__", ()))


def reader_of(hint: Any) -> Reader:
    """The reader of one annotation, built once per field (a journal of many thousand
    records is read line by line: no per-value introspection)."""
    origin = getattr(hint, "__origin__", None)
    if hint is ANY_HINT:
        return lambda v: v
    if isinstance(hint, types.UnionType):
        arms = [reader_of(a) for a in _args(hint) if a is not type(None)]
        optional = len(arms) < len(_args(hint))

        def union(v: Any) -> Any:
            if v is None:
                return None if optional else BAD
            for arm in arms:
                out = arm(v)
                if out is not BAD:
                    return out
            return BAD

        return union
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        members = {m.value: m for m in hint}
        return lambda v: members.get(v, BAD) if isinstance(v, (str, int)) else BAD
    if hint is bool:
        return lambda v: v if v is True or v is False else BAD
    if hint is int:
        return lambda v: v if type(v) is int else BAD
    if hint is float:
        return lambda v: v if type(v) in (int, float) else BAD
    if hint is str:
        return lambda v: v if type(v) is str else BAD
    if origin is tuple:
        item = reader_of(_args(hint)[0])

        def sequence(v: Any) -> Any:
            if type(v) is not list:
                return BAD
            out = tuple(item(x) for x in v)
            return BAD if any(x is BAD for x in out) else out

        return sequence
    if origin is Mapping or hint is Mapping:
        return lambda v: v if type(v) is dict else BAD
    raise TypeError(f"no reader for {hint!r}")  # a new field type: add its reader here
