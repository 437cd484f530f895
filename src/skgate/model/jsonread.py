"""JSON text read back into Python values, without importing :mod:`json` (issue 29).

``import json`` loads ``json.decoder`` and ``json.encoder``, which compile regular
expressions at import, so it brings ``re`` and ``enum`` with it: about a fifth of
``skgate status``'s start-up, for a command that only reads a few small evidence files.
:func:`loads` runs the very parser ``json.loads`` runs, the C scanner of the ``_json``
extension (``_json.make_scanner``, built from the same settings as json's default
decoder), and wraps it in json's own rules: the input types taken, the encoding of bytes
(RFC 8259 section 8.1: UTF-8, or UTF-16/32 told by the NUL bytes or a BOM), the refused
UTF-8 BOM at the head of a text, the JSON whitespace skipped before and after the value,
and "Extra data" after it. So the value and the refusal (``json.JSONDecodeError``, with
its message and position, ``UnicodeDecodeError``, ``RecursionError``, ``TypeError``) are
those of ``json.loads`` for every input; tests/model/test_jsonread.py compares both.

``json`` is imported only on a refusal (``JSONDecodeError`` is its class) or where the
interpreter has no ``_json``. The C scanner raises its errors inside a string (one left
open, a bad escape, a control character) as ``json.decoder.JSONDecodeError``, but on
Python 3.11 only when ``json.decoder`` is already loaded: it looks the module up without
importing it, and without it fails with ``SystemError`` ("returned NULL without setting
an exception"). :func:`loads` then loads ``json.decoder`` and scans again, so the refusal
is json's own there too (a ``seal.json`` cut inside a string crashed ``skgate status``).
"""

from __future__ import annotations

# Not ``typing.TYPE_CHECKING``: ``skgate status`` never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

#: JSON's whitespace (RFC 8259 section 2), the only characters skipped around a value.
_SPACE = " \t\n\r"

_INF = float("inf")
#: The three names json accepts for non-finite numbers (as ``json.loads`` does).
_CONSTANTS: dict[str, float] = {"-Infinity": -_INF, "Infinity": _INF, "NaN": _INF - _INF}


class _Settings:
    """What the C scanner reads from a decoder: json's defaults (``json.JSONDecoder()``)."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = _CONSTANTS.__getitem__


def _make_scanner() -> Callable[[str, int], tuple[Any, int]] | None:
    try:
        from _json import make_scanner  # noqa: PLC0415 - CPython's accelerator, if built
    except ImportError:
        return None
    # typeshed names the scanner class as the context's type; the C code reads only the
    # attributes above from it, as it does from a json.JSONDecoder.
    scan: Callable[[str, int], tuple[Any, int]] = make_scanner(_Settings())  # type: ignore[arg-type]
    return scan


_scan = _make_scanner()


def _error(message: str, text: str, at: int) -> ValueError:
    from json import JSONDecodeError  # noqa: PLC0415 - a refusal only (see module doc)

    return JSONDecodeError(message, text, at)


def _encoding(data: bytes | bytearray) -> str:
    """The encoding of a JSON byte string, by its BOM or its NUL bytes (RFC 8259 s8.1;
    the same answers as ``json.detect_encoding``)."""
    if data.startswith((b"\x00\x00\xfe\xff", b"\xff\xfe\x00\x00")):
        return "utf-32"
    if data.startswith((b"\xfe\xff", b"\xff\xfe")):
        return "utf-16"
    if data.startswith(b"\xef\xbb\xbf"):
        return "utf-8-sig"
    if len(data) >= 4:
        if not data[0]:  # 00 00 = UTF-32-BE, 00 XX = UTF-16-BE
            return "utf-16-be" if data[1] else "utf-32-be"
        if not data[1]:  # XX 00 00 00 = UTF-32-LE, else UTF-16-LE
            return "utf-16-le" if data[2] or data[3] else "utf-32-le"
    elif len(data) == 2:
        if not data[0]:
            return "utf-16-be"
        if not data[1]:
            return "utf-16-le"
    return "utf-8"


def _skip_space(text: str, at: int) -> int:
    """The first index at or after ``at`` that is not JSON whitespace."""
    rest = len(text) - at
    return at + rest - len(text[at:].lstrip(_SPACE)) if rest > 0 else at


def loads(data: str | bytes | bytearray) -> Any:
    """``json.loads(data)``: the same value, or the same error (see the module doc)."""
    if _scan is None:
        import json  # noqa: PLC0415 - an interpreter without the C scanner

        return json.loads(data)
    if isinstance(data, str):
        if data.startswith("\ufeff"):
            raise _error("Unexpected UTF-8 BOM (decode using utf-8-sig)", data, 0)
        text = data
    elif isinstance(data, (bytes, bytearray)):
        text = data.decode(_encoding(data), "surrogatepass")
    else:
        raise TypeError(
            f"the JSON object must be str, bytes or bytearray, not {data.__class__.__name__}"
        )
    start = _skip_space(text, 0)
    try:
        value, end = _scan(text, start)  # its key memo is its own, emptied after each call
    except StopIteration as stop:
        raise _error("Expecting value", text, stop.value) from None
    except SystemError:
        # A refusal inside a string, where json.decoder was not loaded (see the module
        # doc): with it loaded, the same scan raises json's own JSONDecodeError.
        import json.decoder  # noqa: PLC0415 - a refusal only

        value, end = _scan(text, start)
    end = _skip_space(text, end)
    if end != len(text):
        raise _error("Extra data", text, end)
    return value


def error_line(exc: ValueError) -> int | None:
    """The line a refusal of :func:`loads` points at (``JSONDecodeError.lineno``)."""
    lineno = getattr(exc, "lineno", None)
    return lineno if isinstance(lineno, int) else None
