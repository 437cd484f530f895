"""skgate.model.jsonread.loads must equal json.loads on every input: the same value, or
the same refusal (type, message, position), since every evidence read goes through it
(issue 29: ``skgate status`` reads evidence without importing ``json``)."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from skgate.model import jsonread


def _norm(value: object) -> object:
    """A value comparable with ``==`` also where it holds NaN (never equal to itself)."""
    if isinstance(value, float) and math.isnan(value):
        return "<nan>"
    if isinstance(value, float):
        return ("float", repr(value))
    if isinstance(value, int) and not isinstance(value, bool):
        return ("int", value)
    if isinstance(value, list):
        return [_norm(v) for v in value]
    if isinstance(value, dict):
        return [(k, _norm(v)) for k, v in value.items()]  # key order kept, as json keeps it
    return value


def _outcome(parse: object, data: object) -> tuple[str, object]:
    try:
        return ("value", _norm(parse(data)))  # type: ignore[operator]
    except json.JSONDecodeError as exc:
        return ("json-error", (type(exc), exc.msg, exc.pos, exc.lineno, exc.colno, exc.doc))
    except (UnicodeDecodeError, TypeError, RecursionError) as exc:
        return ("error", (type(exc), str(exc)))


def _same(data: object) -> None:
    assert _outcome(jsonread.loads, data) == _outcome(json.loads, data)


#: Documents json reads and refuses in its edge cases: non-finite numbers, duplicate keys
#: (the last wins), lone surrogates, trailing data, BOMs, whitespace json does not take.
EDGES: list[object] = [
    "",
    " ",
    "\t\n\r ",
    "0",
    "-0",
    "-0.0",
    "1e400",
    "-1e400",
    "1E-400",
    "123456789012345678901234567890",
    "NaN",
    "-NaN",
    "Infinity",
    "-Infinity",
    "[NaN, Infinity, -Infinity]",
    "nan",
    "inf",
    '{"a": 1, "a": 2}',
    '{"a": {"b": 1}, "a": [1]}',
    '"\\ud800"',
    '"\\udc80x"',
    '"\\ud83d\\ude00"',
    '"\ud800"',
    '"\\u00e9\\n\\t"',
    '"a\nb"',
    '"a\x00"',
    "[1] [2]",
    "{} x",
    "1 2",
    "true false",
    "null\n\n  x",
    "[1,]",
    '{"a":1,}',
    "[1",
    '{"a"',
    '{"a":',
    "{1: 2}",
    "'a'",
    "\ufeff{}",
    "\u00a0{}",
    "{}\u2028",
    "\f{}",
    "\v{}",
    "tru",
    "01",
    "1.",
    ".5",
    "+1",
    "--1",
    "[" * 100_000 + "]" * 100_000,
    '{"a":' * 50_000 + "1" + "}" * 50_000,
    b"",
    b"{}",
    b"\xef\xbb\xbf{}",
    b"\xef\xbb\xbf",
    "{}".encode("utf-16"),
    "{}".encode("utf-16-le"),
    "{}".encode("utf-16-be"),
    "[1]".encode("utf-32"),
    "[1]".encode("utf-32-le"),
    "[1]".encode("utf-32-be"),
    "1".encode("utf-16-le"),
    "1".encode("utf-16-be"),
    b'"\xff"',
    b'"\xed\xa0\x80"',
    b'"\xc3\xa9"',
    b"\x00",
    b"\x00\x00\x00\x00",
    bytearray(b'{"k": [1, 2]}'),
    None,
    1,
    ["[]"],
    memoryview(b"[]"),
]


@pytest.mark.parametrize("data", EDGES, ids=range(len(EDGES)))
def test_edges_equal_json_loads(data: object) -> None:
    _same(data)


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner),
    max_leaves=20,
)


@settings(max_examples=400, deadline=None, database=None)
@given(_JSON, st.booleans(), st.sampled_from(["", " ", "\n\t", " x", ",1", "\r\n"]))
def test_documents_equal_json_loads(value: object, ascii_only: bool, tail: str) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only) + tail
    _same(text)
    _same(text.encode("utf-8", "surrogatepass"))


@settings(max_examples=600, deadline=None, database=None)
@given(st.text(alphabet='{}[]":,.-+eE0123456789 \t\n\rtruefalsnNIify\\u\ud800\ufeff\x00'))
def test_near_json_text_equals_json_loads(text: str) -> None:
    _same(text)


@settings(max_examples=600, deadline=None, database=None)
@given(st.binary(max_size=24))
def test_any_bytes_equal_json_loads(data: bytes) -> None:
    _same(data)


def _fresh(code: str) -> str:
    """What ``code`` prints in a fresh interpreter that has loaded ``jsonread`` (and with
    it ``sys``) only, as ``skgate status`` has."""
    head = "import sys\nfrom skgate.model.jsonread import loads\n"
    done = subprocess.run(
        [sys.executable, "-c", head + code], capture_output=True, text=True, timeout=60, check=True
    )
    return done.stdout.strip()


def test_reading_imports_neither_json_nor_re() -> None:
    """The point of the module: a good document is read with no ``json`` (nor ``re``)."""
    code = (
        "assert loads(b'{\"a\": [1, 2.5, NaN]}')['a'][0] == 1\n"
        "print(sorted(m for m in ('json', 're', 'enum') if m in sys.modules))\n"
    )
    assert _fresh(code) == "[]"


def test_a_refusal_names_its_line() -> None:
    with pytest.raises(ValueError, match="Expecting property name") as caught:
        jsonread.loads('{\n"a": 1,\n}')
    assert jsonread.error_line(caught.value) == 3
    assert jsonread.error_line(ValueError("x")) is None


#: Refusals inside a string: on Python 3.11 the C scanner raises them through
#: ``json.decoder`` only when that module is loaded already (see the module doc).
_STRING_REFUSALS = ['"abc', '{"schema": "x', '{"a": "x\\q"}', '["\x01"]', b'{"k": "\\u12']


@pytest.mark.parametrize("data", _STRING_REFUSALS, ids=range(len(_STRING_REFUSALS)))
def test_a_refusal_inside_a_string_is_jsons_own_before_json_is_loaded(data: object) -> None:
    """In a fresh interpreter (no ``json`` loaded, as in ``skgate status``), a string's
    refusal is json's ``JSONDecodeError`` with json's message, never a ``SystemError``
    (a ``seal.json`` cut inside a string crashed ``skgate status``)."""
    code = (
        "assert 'json.decoder' not in sys.modules\n"
        f"data = {data!r}\n"
        "try:\n"
        "    loads(data)\n"
        "except ValueError as exc:\n"
        "    print(type(exc).__name__, exc.msg, exc.pos)\n"
    )
    with pytest.raises(json.JSONDecodeError) as want:
        json.loads(data)  # type: ignore[arg-type]
    assert _fresh(code) == f"JSONDecodeError {want.value.msg} {want.value.pos}"
