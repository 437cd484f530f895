"""The lines a real torchair launcher prints, recognised as they appear in a run log.

torchair's npugraph_ex path reports through Python warnings on stderr, so a real line is
``/…/static_kernel.py:241: UserWarning: <message>`` followed by the indented source line
(``  warnings.warn(...)``); multi-card runs prefix the message with ``Rank <n>: ``; some
lines arrive on stdout without the warning header. This table is consulted by
:class:`skgate.evidence.logscan.LogScanner` (one literal per kind, found with
``bytes.find``); what a line means is decided here:

- ``start``: ``Starting static kernel compilation, the build directory is R`` (single card)
  or ``starting static kernel compilation for multi card, the build directory is R``;
- ``compiler_error``: ``execute op_compiler error, msg: <stderr>``; the stderr may go on
  over the following lines, kept up to the warning's source line;
- ``cache_hit``: ``Static kernel cache hit: <path>``;
- ``cache_miss``: ``No matching cache found for key : <key>``;
- ``no_run_files``: ``no run files were found, the static compilation might have failed, ...``;
- ``install``: ``Verifying archive integrity...`` (and ``Uncompressing STATIC KERNEL RUN
  PACKAGE``);
- ``uninstall_warning``: ``Warning: If the process exits abnormally, you must manually
  uninstall the static kernel package by executing: <path>``;
- ``package_lines``: ``<name>.run install failed, msg: ...`` (a warning in torch-npu 2.14,
  a logger warning in 2.7 and 2.9, printed only with ``TORCH_COMPILE_DEBUG=1``),
  ``<name>.run install success, msg: ...`` (logger debug), ``<path>/uninstall.sh
  uninstall failed`` (logger error, printed by default) and ``... uninstall success``
  (debug), each with its rank (``[WARNING] TORCHAIR(...) [...] Rank N: ...`` carries the
  rank after the logger's header). C8: a failed install is part of the answer.

``no_run_files`` is the runtime's own guess ("might have failed"): it is quoted as the
runtime's words and never adopted as skgate's verdict (C7).

Schema: the ``launcher`` object of ``skgate.logscan/1`` (optional; absent in files of
older versions, read back as empty).
"""

from __future__ import annotations

import re

from skgate.model.launcher import LauncherFacts

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Caps on what is kept per kind (the rest is counted in ``LauncherFacts.omitted``).
MAX_ITEMS = 1000
#: Lines of an ``execute op_compiler error`` message kept after the first.
MAX_MESSAGE_LINES = 40
MAX_TEXT = 4096

START = b"static kernel compilation"
COMPILER_ERROR = b"execute op_compiler error"
CACHE_HIT = b"Static kernel cache hit"
CACHE_MISS = b"No matching cache found for key"
NO_RUN_FILES = b"no run files were found"
INSTALL_VERIFY = b"Verifying archive integrity"
INSTALL_UNPACK = b"Uncompressing STATIC KERNEL RUN PACKAGE"
UNINSTALL_WARNING = b"manually uninstall the static kernel package"
#: Matches both "X.run install failed" and "X/uninstall.sh uninstall failed".
PACKAGE_FAILED = b"install failed"
PACKAGE_SUCCESS = b"install success"
#: The multi-card dump failed (2.9, 2.14 ``warnings.warn``); the Gloo probe's skip line
#: holds START (``Rank N: skipping static kernel compilation for multi card: ...``).
DUMP_FAILED = b"Failed to execute dump json"
SKIPPING = "skipping static kernel compilation"

#: Literals the log scanner looks for on this module's behalf.
LITERALS: tuple[bytes, ...] = (
    START,
    COMPILER_ERROR,
    CACHE_HIT,
    CACHE_MISS,
    NO_RUN_FILES,
    INSTALL_VERIFY,
    INSTALL_UNPACK,
    UNINSTALL_WARNING,
    PACKAGE_FAILED,
    PACKAGE_SUCCESS,
    DUMP_FAILED,
)

#: A line can add a fact only if it holds one of these (each is in, or implied by, what
#: ``LauncherCollector.on_line`` looks for: ``start`` needs ``[Ss]tarting static kernel
#: compilation``, an unpacking line adds nothing). Lines that merely close an open error
#: message are read by the grep path around its hits, so they need no trigger.
TRIGGERS: tuple[bytes, ...] = (
    b"tarting static kernel compilation",
    COMPILER_ERROR,
    CACHE_HIT,
    CACHE_MISS,
    NO_RUN_FILES,
    INSTALL_VERIFY,
    UNINSTALL_WARNING,
    # Merged from two branches (issue 27's install lines and its skip lines): each is a
    # fact of its own that no other trigger's line holds.
    PACKAGE_FAILED,
    PACKAGE_SUCCESS,
    DUMP_FAILED,
    SKIPPING.encode(),
)

_MSG = "execute op_compiler error, msg:"


class _Patterns:
    """This module's regexes, compiled when the first line holding a launcher literal
    comes (:func:`_patterns`): a run whose log holds none (``run -- true``, most
    compiles' stdout) compiles none of them (issue 29: about 0.6 ms of every start-up)."""

    def __init__(self) -> None:
        # torch-npu 2.7.1's start line names no build directory (static_kernel.py l.27).
        self.bare_start = re.compile(r"^Starting static kernel compilation\s*$")
        # ``<file>:<lineno>: <Category>: `` as warnings.formatwarning writes it.
        self.warning_header = re.compile(r"^.*?:\d+: (?P<category>[A-Za-z_]\w*(?:Warning|Error)): ")
        # The same header found by a search from its first colon: on a line (no newline,
        # which ``.`` would not cross) the leftmost match is the one the lazy ``^.*?``
        # finds, at a fraction of the cost (the lazy prefix retries the tail at every
        # byte; issue 29).
        self.warning_tail = re.compile(r":\d+: (?P<category>[A-Za-z_]\w*(?:Warning|Error)): ")
        self.rank_at = re.compile(r"Rank (?P<rank>\d+): ")
        self.header_rank = re.compile(
            r":\d+: (?P<category>[A-Za-z_]\w*(?:Warning|Error)): (?:Rank (?P<rank>\d+): )?"
        )
        self.start = re.compile(
            r"[Ss]tarting static kernel compilation(?P<multi> for multi card)?, "
            r"the build directory is (?P<root>.+?)\s*$"
        )
        self.cache_hit = re.compile(r"Static kernel cache hit:?\s*(?P<path>.*?)\s*$")
        self.cache_miss = re.compile(r"No matching cache found for key\s*:?\s*(?P<key>.*?)\s*$")
        # ``[Rank N: ]<file>.run install failed`` / ``<dir>/uninstall.sh uninstall
        # success``, anywhere in the line: the logger's header comes first.
        self.package = re.compile(
            r"(?:Rank (?P<rank>\d+): )?(?P<path>\S+) (?P<kind>un)?install (?P<res>failed|success)\b"
        )


_PATTERNS: _Patterns | None = None


def _patterns() -> _Patterns:
    """The compiled regexes (two threads racing here compile them twice: harmless)."""
    global _PATTERNS
    if _PATTERNS is None:
        _PATTERNS = _Patterns()
    return _PATTERNS


def _header(text: str) -> re.Match[str] | None:
    """``warning_header.match(text)``, faster on a line without a newline."""
    rx = _patterns()
    if "\n" in text:
        return rx.warning_header.match(text)
    return rx.warning_tail.search(text)


# The literal each check above needs, decoded once (``start`` and ``bare_start`` need
# ``[Ss]tarting static kernel compilation``, ``package`` needs ``install failed`` or
# ``install success``): a regex runs only on a line holding its literal.
_S_START = TRIGGERS[0].decode()
_S_COMPILER_ERROR = COMPILER_ERROR.decode()
_S_CACHE_HIT = CACHE_HIT.decode()
_S_CACHE_MISS = CACHE_MISS.decode()
_S_NO_RUN_FILES = NO_RUN_FILES.decode()
_S_DUMP_FAILED = DUMP_FAILED.decode()
_S_INSTALL_VERIFY = INSTALL_VERIFY.decode()
_S_UNINSTALL_WARNING = UNINSTALL_WARNING.decode()
_S_PACKAGE_FAILED = PACKAGE_FAILED.decode()
_S_PACKAGE_SUCCESS = PACKAGE_SUCCESS.decode()


def split_line(text: str) -> tuple[str | None, int | None, str]:
    """(warning category or None, rank or None, message) of one log line."""
    rx = _patterns()
    if "\n" not in text:
        # One search finds the header and the rank after it: the optional rank cannot
        # move the leftmost header, and after it it is ``rank_at.match`` (issue 29).
        m = rx.header_rank.search(text)
        if m is not None:
            rank = m.group("rank")
            return m.group("category"), int(rank) if rank else None, text[m.end() :]
    else:
        m = rx.warning_header.match(text)
    category = None
    at = 0
    if m is not None:
        category = m.group("category")
        at = m.end()
    # ``rank_at.match(text, at)`` is ``rank_at.match(text[at:])`` without the copy.
    r = rx.rank_at.match(text, at)
    if r is not None:
        return category, int(r.group("rank")), text[r.end() :]
    return category, None, text[at:] if at else text


def _ends_message(text: str) -> bool:
    """The line after a warning's message: its source line, a new warning, or a blank."""
    stripped = text.strip()
    return not stripped or stripped.startswith("warnings.warn") or _header(text) is not None


class LauncherCollector:
    """Collects :class:`LauncherFacts` from the lines the log scanner hands it."""

    literals = LITERALS

    def __init__(self) -> None:
        self._lists: dict[str, list[Any]] = {
            "starts": [],
            "compiler_errors": [],
            "cache_hits": [],
            "cache_misses": [],
            "no_run_files": [],
            "package_lines": [],
            "skips": [],
        }
        self._bare_starts = 0
        self._omitted: dict[str, int] = {}
        self._installs = 0
        self._uninstall = 0
        self._ranks: set[int] = set()
        #: The error message being continued, or None (read by the log scan's grep path).
        self.message: list[str] | None = None

    def _add(self, kind: str, item: Any) -> bool:
        items = self._lists[kind]
        if len(items) >= MAX_ITEMS:
            self._omitted[kind] = self._omitted.get(kind, 0) + 1
            return False
        items.append(item)
        return True

    @property
    def continuing(self) -> bool:
        """An error message is open: the scanner hands over the following lines."""
        return self.message is not None

    def on_line(self, text: str) -> None:
        """One line holding one of ``LITERALS`` (whole, decoded, no newline).

        Each regex runs only when the literal it needs is in the line (``_GATES``): a log
        full of error messages pays a few ``in`` tests per line, not five regex searches
        (issue 29; ``package`` alone is quadratic in a long path token).
        """
        _, rank, msg = split_line(text)
        rx = _patterns()
        seen = False
        if _S_COMPILER_ERROR in msg:
            if len(self._lists["compiler_errors"]) < MAX_ITEMS:
                first = msg.split(_MSG, 1)[1] if _MSG in msg else msg
                message = [first.strip()[:MAX_TEXT]]
                self._add("compiler_errors", {"rank": rank, "message": message})
                self.message = message
            else:  # full: only counted (``_add``), the message is not built
                self._add("compiler_errors", None)
            seen = True
        if _S_START in msg:
            m = rx.start.search(msg)
            if m is not None:
                self._add(
                    "starts",
                    {
                        "rank": rank,
                        "root": m.group("root")[:MAX_TEXT],
                        "multi_card": m.group("multi") is not None,
                    },
                )
                seen = True
            if rx.bare_start.match(msg.strip()) is not None:
                self._bare_starts += 1
                seen = True
        if _S_CACHE_HIT in msg:
            m = rx.cache_hit.search(msg)
            if m is not None:
                self._add("cache_hits", {"rank": rank, "path": m.group("path")[:MAX_TEXT]})
                seen = True
        if _S_CACHE_MISS in msg:
            m = rx.cache_miss.search(msg)
            if m is not None:
                self._add("cache_misses", {"rank": rank, "key": m.group("key")[:MAX_TEXT]})
                seen = True
        if _S_NO_RUN_FILES in msg:
            # Verbatim: the runtime's words, quoted, never skgate's verdict (C7).
            self._add("no_run_files", text.strip()[:MAX_TEXT])
            seen = True
        if SKIPPING in msg or _S_DUMP_FAILED in msg:
            self._add("skips", text.strip()[:MAX_TEXT])
            seen = True
        if _S_INSTALL_VERIFY in msg:
            self._installs += 1
            seen = True
        if _S_UNINSTALL_WARNING in msg:
            self._uninstall += 1
            seen = True
        if _S_PACKAGE_FAILED in msg or _S_PACKAGE_SUCCESS in msg:
            m = rx.package.search(msg)
            if m is not None:
                line_rank = int(m.group("rank")) if m.group("rank") else rank
                self._add(
                    "package_lines",
                    {
                        "rank": line_rank,
                        "path": m.group("path")[:MAX_TEXT],
                        "uninstall": m.group("kind") is not None,
                        "ok": m.group("res") == "success",
                    },
                )
                if line_rank is not None:
                    self._ranks.add(line_rank)
                seen = True
        if seen and rank is not None:
            self._ranks.add(rank)

    def on_continuation(self, text: str) -> None:
        """The line after an open error message: part of it, or its end."""
        message = self.message
        if message is None:
            return
        if _ends_message(text) or len(message) > MAX_MESSAGE_LINES:
            self.message = None
            return
        message.append(text.rstrip()[:MAX_TEXT])

    def end_message(self) -> None:
        self.message = None

    def result(self) -> LauncherFacts:
        self.message = None
        return LauncherFacts(
            starts=tuple(self._lists["starts"]),
            compiler_errors=tuple(self._lists["compiler_errors"]),
            cache_hits=tuple(self._lists["cache_hits"]),
            cache_misses=tuple(self._lists["cache_misses"]),
            no_run_files=tuple(self._lists["no_run_files"]),
            package_lines=tuple(self._lists["package_lines"]),
            installs=self._installs,
            uninstall_warnings=self._uninstall,
            ranks=tuple(sorted(self._ranks)),
            skips=tuple(self._lists["skips"]),
            bare_starts=self._bare_starts,
            omitted={k: v for k, v in self._omitted.items() if v},
        )
