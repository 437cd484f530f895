"""Schema names of the evidence files and the checks every ``from_dict`` uses.

Nothing here does I/O. Schema history (bump the number beside the name when a file's
shape changes):

- ``skgate.control/1``, ``skgate.ownership/1``, ``skgate.verdict/1``,
  ``skgate.census/1``, ``skgate.event/1``: first versions (2026-11).
- ``skgate.stages/1``: first version (2026-12): every observed op_compiler invocation.
"""

from __future__ import annotations

from collections.abc import Mapping

from skgate.model.errors import EvidenceError

# Not ``typing.TYPE_CHECKING``: ``skgate status`` never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SCHEMA_CONTROL = "skgate.control/1"

SCHEMA_OWNERSHIP = "skgate.ownership/1"

SCHEMA_VERDICT = "skgate.verdict/1"

SCHEMA_CENSUS = "skgate.census/1"

SCHEMA_EVENT = "skgate.event/1"

#: ``skgate.stages/1`` first version (2026-11): censuses paired input and log by stem.
#: ``/2`` (2026-12): real log names (op type + hash) paired by stem, hash or op type and
#: count; per-op-type tallies, unpaired inputs and logs; announced build directories and
#: static-kernel cache files (a cache hit that printed nothing). ``/1`` is still read.
SCHEMA_STAGES = "skgate.stages/2"
SCHEMA_STAGES_V1 = "skgate.stages/1"
#: ``skgate.regress/1`` first version (2026-11).
SCHEMA_REGRESS = "skgate.regress/1"


def require(data: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    """Return ``data[key]`` if it has the expected type, else raise EvidenceError."""
    if key not in data:
        raise EvidenceError(f"{where}: missing field {key!r}")
    value = data[key]
    # bool is an int subclass; a flag where a number belongs is the wrong shape.
    if isinstance(value, bool) and kind in (int, float, (int, float)):
        raise EvidenceError(f"{where}: field {key!r} has the wrong type")
    if not isinstance(value, kind):
        raise EvidenceError(f"{where}: field {key!r} has the wrong type")
    return value


def check_schema(data: Any, expected: str, where: str) -> Mapping[str, Any]:
    """Check that ``data`` is an object that names ``expected`` as its schema."""
    if not isinstance(data, dict):
        raise EvidenceError(f"{where}: expected a JSON object")
    schema = data.get("schema")
    if schema != expected:
        name = expected.split("/", maxsplit=1)[0]
        if isinstance(schema, str) and schema.split("/")[0] == name:
            raise EvidenceError(
                f"{where}: unsupported schema version {schema!r} (this skgate reads {expected!r})"
            )
        raise EvidenceError(f"{where}: not a {expected!r} file (schema={schema!r})")
    return data


def opt_int(data: Mapping[str, Any], key: str, where: str) -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise EvidenceError(f"{where}: field {key!r} has the wrong type")
    return value


#: Schema history: ``skgate.regress/1`` first version (2026-11).
SCHEMA_REGRESS = "skgate.regress/1"
