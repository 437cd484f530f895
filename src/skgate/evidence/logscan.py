"""Streaming run-log evidence: one pass, bounded memory, whatever the log's size (C3).

CANN documents no format for the final aggregate summary, so the contract (C3) says:
archive every line that starts with ``[summary]`` verbatim, plus whatever a configured
``--summary-pattern`` matches. Besides the summary this pass collects, for later steps:

- the completion marker of the inference run (``--completion-marker``);
- result roots (``Starting static kernel compilation, the build directory is ...``);
- ``generate run package <name> success`` lines (the package names);
- ``execute op_compiler error, msg: ...`` lines;
- printed ``.../uninstall.sh`` paths (C8: only these may ever be run, after validation).

How it stays fast and small:

- bytes are fed in any chunking; only complete lines are scanned, a partial last line is
  carried (at most ``max_line`` bytes of it are kept; a longer line is counted in
  ``truncated_lines`` and never loaded whole);
- fixed literals are found with ``bytes.find`` over a whole block, and only the lines that
  hold a hit are decoded (``errors="backslashreplace"``, trailing CR stripped);
- user regexes run over the decoded block with ``re.MULTILINE`` to find candidates, and
  each candidate line is then checked on its own, so a pattern means the same thing as
  if it were applied line by line (lookarounds that peek across a newline are the only
  exception);
- every kept list is capped; what is left off is counted in ``omitted``.

A finished log is scanned by :func:`skgate.evidence.logscan_file.scan_file`, which may
take the anchor path of :mod:`skgate.evidence.logscan_anchor` or the grep/wc path of
:mod:`skgate.evidence.logscan_fast`: all stand on this module, a fast path feeding its
candidate lines through the same line handler
(``LogScanner.on_line``) for the same result; when it cannot be trusted the pure-Python
scan answers. The live ``LogScanner.feed`` (the runner's use while a compile streams) is
always pure Python.

A literal counts only when it lies wholly inside a line's kept part (its first
``max_line`` bytes), whether the line arrived whole or in pieces.

A summary that contradicts itself (succeeded + failed != inputs, one stage reported twice
with different numbers, a negative count, a summary line cut short) gets ``problems``,
which makes the classifier say ``unknown`` (C2.5), never ``failed`` or ``succeeded``.

The record it produces (``logscan.json``) is :class:`skgate.model.logscan.LogScan`; the
pattern checks are :func:`skgate.model.request.validate_patterns`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from skgate.evidence.launcher_lines import LITERALS as LAUNCHER_LITERALS
from skgate.evidence.launcher_lines import TRIGGERS as LAUNCHER_TRIGGERS
from skgate.evidence.launcher_lines import LauncherCollector
from skgate.model.errors import UsageError
from skgate.model.lazy_re import Lazy
from skgate.model.logscan import LogScan
from skgate.model.request import SUMMARY_GROUPS, validate_patterns
from skgate.model.running import Stage, Summary

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

#: Caps on what is kept (the rest is counted in ``LogScan.omitted``).
MAX_SUMMARY_LINES = 20_000
MAX_SUMMARY_BYTES = 8 << 20
MAX_STAGES = 10_000
MAX_LIST = 5_000
MAX_COMPLETION_LINES = 100
MAX_PROBLEMS = 200
#: Stored length (characters) of a kept non-summary line.
MAX_KEPT_LINE = 4096

_SUMMARY = b"[summary]"
_ROOT = b"Starting static kernel compilation, the build directory is "
_PACKAGE = b"generate run package "
_COMPILER_ERROR = b"execute op_compiler error"
_UNINSTALL = b"uninstall.sh"
_OWN_LITERALS = (_SUMMARY, _ROOT, _PACKAGE, _COMPILER_ERROR, _UNINSTALL)
#: Every literal a line must hold to be looked at: this module's and the launcher table's
#: (:mod:`skgate.evidence.launcher_lines`, the real torchair lines).
LITERALS = _OWN_LITERALS + tuple(x for x in LAUNCHER_LITERALS if x not in _OWN_LITERALS)
#: What the grep path searches for: every line that can change the result outside an open
#: launcher message holds one of these (``_ROOT`` holds the launcher's start trigger); the
#: lines of an open message are read by offset around the hits. Fewer, longer literals
#: than ``LITERALS``: GNU grep's cost grows fast with the literal set (issue 29).
GREP_TRIGGERS = (_SUMMARY, _PACKAGE, _UNINSTALL, *LAUNCHER_TRIGGERS)
#: The literals a line grep does not list can hold (each other literal holds a trigger).
_UNLISTED = tuple(x for x in LITERALS if not any(t in x for t in GREP_TRIGGERS))
#: The same literals as text, for the line handler's tests on an ASCII line.
_OWN_STR = tuple(x.decode() for x in _OWN_LITERALS)
_LAUNCHER_STR = tuple(x.decode() for x in LAUNCHER_LITERALS)

# Compiled on first use: a run with an empty log needs none of them (issue 29).
_KV = Lazy(r"\b(stage|inputs|succeeded|failed)=(\S+)")
_PACKAGE_RE = Lazy(r"generate run package (\S+) success")
_UNINSTALL_RE = Lazy(r"(?:[^\s'\"=,;:()<>\[\]]*/)?uninstall\.sh(?![\w.])")
_EXECUTING = "executing:"


def uninstall_paths(line: str) -> list[str]:
    """The ``uninstall.sh`` mentions one log line makes (C8), verbatim: the one grammar of
    that, used by the log scan (which keeps those with a directory) and by ``skgate
    uninstall --from-log`` (which records every one, run or refused).

    Upstream's line ends ``... by executing: <path>/uninstall.sh``: everything after the
    colon is the path, so a path with spaces or escape codes is kept whole (and refused by
    validation), never cut into a harmless-looking piece. Elsewhere a mention is a token
    ending in ``uninstall.sh``, delimited by blanks, quotes and shell punctuation.
    """
    at = line.rfind(_EXECUTING)
    if at >= 0:
        rest = line[at + len(_EXECUTING) :].strip(" ")
        return [rest] if rest else []
    return _UNINSTALL_RE.get().findall(line)


def count_long_lines(data: bytes | bytearray, s: int, e: int, max_line: int) -> int:
    """Lines longer than max_line bytes in data[s:e] (whole lines: it ends with a newline),
    found without visiting every line: from a line start, the last newline within the
    next max_line + 1 bytes is the next place to look; none there means a long line."""
    count, p = 0, s
    while p < e:
        window_end = min(p + max_line + 1, e)
        q = data.rfind(b"\n", p, window_end)
        if q < 0:
            count += 1
            nl = data.find(b"\n", window_end, e)
            p = nl + 1 if nl >= 0 else e
        else:
            p = q + 1
    return count


def _decode(raw: bytes | bytearray) -> str:
    text = raw.decode("utf-8", "backslashreplace")
    return text.rstrip("\r")


class _Capped:
    """An ordered, de-duplicated list that keeps at most ``limit`` items."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.items: list[str] = []
        self._seen: set[str] = set()
        self.omitted = 0

    def add(self, item: str, dedupe: bool = True) -> None:
        if dedupe and item in self._seen:
            return
        if len(self.items) >= self.limit:
            self.omitted += 1
            return
        self.items.append(item)
        if dedupe:
            self._seen.add(item)


class LogScanner:
    """Incremental scanner: ``feed`` bytes in any chunking, then ``finish``."""

    def __init__(
        self,
        summary_patterns: Sequence[str] = (),
        completion_marker: str | None = None,
        max_line: int = 64 * 1024,
    ) -> None:
        validate_patterns(summary_patterns, completion_marker)
        if max_line < 256:
            raise UsageError(f"max_line {max_line} is too small; use at least 256 bytes")
        self._max = max_line
        # (per-line pattern, block pattern with MULTILINE) pairs: see the module docstring.
        self._patterns = [(re.compile(p), re.compile(p, re.MULTILINE)) for p in summary_patterns]
        self._marker = (
            (re.compile(completion_marker), re.compile(completion_marker, re.MULTILINE))
            if completion_marker is not None
            else None
        )
        self._carry = bytearray()
        self._carry_total = 0  # full length of the partial line, kept or not
        self._lines = 0
        self._bytes = 0
        self._truncated = 0
        self._summary_lines = _Capped(MAX_SUMMARY_LINES)
        self._summary_bytes = 0
        self._stages: dict[str, Stage] = {}
        self._stages_omitted = 0
        self._problems = _Capped(MAX_PROBLEMS)
        self._completion = _Capped(MAX_COMPLETION_LINES)
        self._completion_seen = False
        self._roots = _Capped(MAX_LIST)
        self._packages = _Capped(MAX_LIST)
        self._errors = _Capped(MAX_LIST)
        self._uninstall = _Capped(MAX_LIST)
        self._result: LogScan | None = None
        self._launcher = LauncherCollector()
        #: The same collector, for the grep path's per-hit test of an open message.
        self.launcher = self._launcher

    # -- input -------------------------------------------------------------------------

    def feed(self, data: bytes | bytearray | memoryview) -> None:
        """Scan ``data``; a partial last line waits for the next call (or ``finish``)."""
        if self._result is not None:
            raise RuntimeError("LogScanner.feed() after finish()")
        if not data:
            return
        if isinstance(data, memoryview):
            data = data.tobytes()
        self._bytes += len(data)
        start = 0
        if self._carry_total:
            nl = data.find(b"\n")
            if nl < 0:
                self._keep_partial(data, 0)
                return
            self._keep_partial(data[:nl], 0)
            self._flush_carry()
            start = nl + 1
        last = data.rfind(b"\n", start)
        if last >= 0:
            self._block(data, start, last + 1)
            start = last + 1
        if start < len(data):
            self._keep_partial(data, start)

    def finish(self) -> LogScan:
        """Scan a partial last line (a log still being written may end in one)."""
        if self._result is None:
            if self._carry_total:
                self._flush_carry()
            self._result = self._build()
        return self._result

    # -- line handling -------------------------------------------------------------------

    def _keep_partial(self, data: bytes | bytearray, start: int) -> None:
        room = self._max - len(self._carry)
        if room > 0:
            self._carry += data[start : start + room]
        self._carry_total += len(data) - start

    def _flush_carry(self) -> None:
        truncated = self._carry_total > self._max
        if truncated:
            self._truncated += 1
        line = bytes(self._carry) + b"\n"
        self._carry = bytearray()
        self._carry_total = 0
        # The kept head is at most max_line bytes, so the block scan will not count it
        # as long again; ``truncated`` carries that fact to the line handlers.
        self._block(line, 0, len(line), first_truncated=truncated)

    def _block(
        self, data: bytes | bytearray, s: int, e: int, first_truncated: bool = False
    ) -> None:
        """Scan data[s:e], which holds whole lines only (it ends with a newline)."""
        base = self._lines
        if e - s > self._max:
            self._truncated += count_long_lines(data, s, e, self._max)
        m = self._max

        # Lines holding a fixed literal wholly inside their kept part (the first max_line
        # bytes): one C-level find pass per literal, Python work only at hits.
        starts: set[int] = set()
        for literal in LITERALS:
            size = len(literal)
            i = data.find(literal, s, e)
            while i >= 0:
                r = data.rfind(b"\n", s, i)
                ls = r + 1 if r >= 0 else s
                if i + size <= ls + m:
                    starts.add(ls)
                i = data.find(literal, data.find(b"\n", i, e) + 1, e)

        # Summary candidates: (line number, text, parsed numbers or None, truncated).
        found: dict[int, tuple[str, tuple[str, ...] | None, bool]] = {}
        counted_to, counted = s, base
        # Lines go to an open launcher message in order, each once (``handed``: where the
        # next unhanded line starts), then a hit line to ``on_line``: the same order as
        # the grep path (logscan_fast), which reads those lines by offset.
        handed = s
        for ls in sorted(starts):
            counted += data.count(b"\n", counted_to, ls)
            counted_to = ls
            le = data.find(b"\n", ls, e)
            long = le - ls > m or (first_truncated and ls == s)
            head = data[ls : min(le, ls + m)]
            if self._launcher.continuing:
                self._continue(data, handed, ls)
                if self._launcher.continuing:
                    self.on_continuation(head)
            summary = self.on_line(head)
            if summary is not None:
                found[counted] = (summary, None, long)
            handed = le + 1
        if self._launcher.continuing:
            self._continue(data, handed, e)
        # One newline count over the block in total (the hits above counted a prefix).
        self._lines = counted + data.count(b"\n", counted_to, e)

        if self._patterns or self._marker is not None:
            text = data[s:e].decode("utf-8", "backslashreplace")
            for line_re, block_re in self._patterns:
                for n, line, match, long in self._regex_lines(text, base, line_re, block_re):
                    groups = tuple(match.group(g) or "" for g in SUMMARY_GROUPS)
                    found[n] = (line, groups, long or (first_truncated and n == base))
            if self._marker is not None:
                for _, line, _, _ in self._regex_lines(text, base, *self._marker):
                    self._completion_seen = True
                    self._completion.add(line[:MAX_KEPT_LINE], dedupe=False)

        for n in sorted(found):
            kept, parsed, cut = found[n]
            self.on_summary(n + 1, kept, parsed, cut)

    def set_counts(self, lines: int, size: int, truncated: int) -> None:
        """Line, byte and long-line counts measured outside ``feed`` (the grep path counts
        them with ``wc`` and its own long-line pass, so it never feeds the whole log)."""
        self._lines = lines
        self._bytes = size
        self._truncated = truncated

    def _continue(self, data: bytes | bytearray, pos: int, e: int) -> None:
        """Hand the lines of data[pos:e] to the open launcher message until it closes."""
        m = self._max
        while self._launcher.continuing and pos < e:
            nl = data.find(b"\n", pos, e)
            le = nl if nl >= 0 else e
            self.on_continuation(data[pos : min(le, pos + m)])
            pos = le + 1

    @property
    def continuing(self) -> bool:
        """A launcher error message is open: the next lines may belong to it, whether or
        not they hold a literal (launcher_lines); the grep path reads them by offset."""
        return self._launcher.continuing

    def on_continuation(self, kept: bytes | bytearray) -> None:
        """One line (its kept part, no newline) after an open launcher message, in order,
        before ``on_line`` if it is a hit line too."""
        self._launcher.on_continuation(_decode(kept))

    def on_unlisted(self, kept: bytes | bytearray) -> None:
        """A line the grep path did not list, read by offset while a message is open.

        The same as ``feed`` does with it: it goes to the open message, and if it holds a
        literal (``feed`` then calls ``on_line``) the message closes. Such a line holds no
        trigger (grep would have listed it), so its literal is one of ``_UNLISTED`` (``Un-
        compressing STATIC KERNEL RUN PACKAGE``, a bare ``static kernel compilation``) and
        closing the message is all ``on_line`` does with it: nothing to do once it is shut.
        """
        launcher = self._launcher
        launcher.on_continuation(_decode(kept))
        if launcher.message is not None and any(literal in kept for literal in _UNLISTED):
            self.on_line(kept)

    def on_line(self, kept: bytes | bytearray) -> str | None:
        """The per-line handler shared by both scan paths (``feed`` and grep's candidates).

        ``kept`` is the kept part of one line (its first max_line bytes, no newline). Runs
        the fixed-literal handlers whose literal lies wholly inside it and returns the
        decoded line when it is a ``[summary]`` line (only whitespace before the tag), for
        the caller to pass to ``on_summary`` with its line number.
        """
        if kept[:1].isspace() and kept.lstrip().startswith(b"warnings.warn("):
            # The indented source line Python prints under a warning (torchair's lines
            # are warnings): it quotes the message's template, it is not a message.
            return None
        # Unrolled (no handler table): this runs once per hit, hundreds of thousands of
        # times on a log full of error messages (issue 29). Same order as before: root,
        # package, compiler error, uninstall, then the launcher table. On an ASCII line the
        # literals are looked for in the decoded text (the same characters, and ``in`` on
        # str is the cheaper test); otherwise in the bytes, where a literal must lie.
        text = kept.decode("utf-8", "backslashreplace").rstrip("\r")
        ascii_line = kept.isascii()
        hay: Any = text if ascii_line else kept
        own: tuple[Any, ...] = _OWN_STR if ascii_line else _OWN_LITERALS
        if own[1] in hay:
            self._on_root(text)
        if own[2] in hay:
            self._on_package(text)
        if own[3] in hay:
            errors = self._errors
            if len(errors.items) < errors.limit:
                errors.items.append(text[:MAX_KEPT_LINE])
            else:  # full: counted (as ``_Capped.add`` does, without the call)
                errors.omitted += 1
        if own[4] in hay:
            self._on_uninstall(text)
        for literal in _LAUNCHER_STR if ascii_line else LAUNCHER_LITERALS:
            if literal in hay:
                launcher = self._launcher
                launcher.end_message()  # a new launcher line closes an open message
                launcher.on_line(text)
                break
        if own[0] in hay and kept.lstrip().startswith(_SUMMARY):
            return text
        return None

    def _regex_lines(
        self, text: str, base: int, line_re: re.Pattern[str], block_re: re.Pattern[str]
    ) -> list[tuple[int, str, re.Match[str], bool]]:
        """Lines of ``text`` that ``line_re`` matches: (line number, line, match, long)."""
        out: list[tuple[int, str, re.Match[str], bool]] = []
        pos, counted_to, counted = 0, 0, base
        end = len(text)
        while pos < end:
            cand = block_re.search(text, pos)
            if cand is None:
                break
            r = text.rfind("\n", 0, cand.start())
            ls = r + 1 if r >= 0 else 0
            ls = max(ls, pos)
            le = text.find("\n", cand.start())
            if le < 0:
                le = end
            long = le - ls > self._max
            line = text[ls : min(le, ls + self._max)].rstrip("\r")
            match = line_re.search(line)
            if match is not None:
                counted += text.count("\n", counted_to, ls)
                counted_to = ls
                out.append((counted, line, match, long))
            pos = le + 1
        return out

    def _problem(self, message: Callable[[], str]) -> None:
        """Add a problem whose text names a line number (so it is never a duplicate).

        The text is only built when it will be kept (a contradictory log may hold
        millions of such lines).
        """
        if len(self._problems.items) >= self._problems.limit:
            self._problems.omitted += 1
        else:
            self._problems.add(message())

    def on_summary(
        self,
        lineno: int | Callable[[], int],
        line: str,
        groups: tuple[str, ...] | None,
        truncated: bool,
    ) -> None:
        """One summary line (``lineno``: its 1-based number, or a function that counts it:
        a number is only needed in a problem's text, and the anchor path of the scan
        counts lines up to a summary line only then)."""

        def number() -> int:
            return lineno() if callable(lineno) else lineno

        size = len(line)
        if self._summary_bytes + size > MAX_SUMMARY_BYTES:
            self._summary_lines.omitted += 1
        else:
            self._summary_bytes += size
            self._summary_lines.add(line, dedupe=False)
        if truncated:
            self._problem(
                lambda: (
                    f"summary line {number()} is longer than {self._max} bytes and was cut short"
                )
            )
        if groups is None:
            values = dict(_KV.get().findall(line))
            if not values:
                return  # a [summary] line in another shape: archived verbatim only
            groups = tuple(values.get(g, "") for g in SUMMARY_GROUPS)
        name, *numbers = groups
        try:
            inputs, succeeded, failed = (int(x) for x in numbers)
        except ValueError:
            self._problem(
                lambda: (
                    f"summary line {number()} names stage {name!r} but its counts are missing "
                    f"or not integers: {line[:200]!r}"
                )
            )
            return
        if not name:
            self._problem(lambda: f"summary line {number()} reports counts without a stage name")
            return
        stage = Stage(name=name, inputs=inputs, succeeded=succeeded, failed=failed)
        if min(inputs, succeeded, failed) < 0:
            self._problem(lambda: f"stage {name!r} has a negative count (line {number()})")
        elif succeeded + failed != inputs:
            self._problem(
                lambda: (
                    f"stage {name!r}: succeeded {succeeded} + failed {failed} != inputs "
                    f"{inputs} (line {number()})"
                )
            )
        before = self._stages.get(name)
        if before is None:
            if len(self._stages) >= MAX_STAGES:
                self._stages_omitted += 1
                self._problems.add(f"more than {MAX_STAGES} stages; the summary is not usable")
                return
            self._stages[name] = stage
        elif before != stage:
            first = before
            self._problem(
                lambda: (
                    f"stage {name!r} is reported twice with different numbers "
                    f"({first.inputs}/{first.succeeded}/{first.failed} then "
                    f"{inputs}/{succeeded}/{failed}, line {number()})"
                )
            )

    def _on_root(self, line: str) -> None:
        root = line.split(_ROOT.decode(), 1)[1].strip()
        if root:
            self._roots.add(root[:MAX_KEPT_LINE])

    def _on_package(self, line: str) -> None:
        for name in _PACKAGE_RE.get().findall(line):
            self._packages.add(name[:MAX_KEPT_LINE])

    def _on_uninstall(self, line: str) -> None:
        for path in (p for p in uninstall_paths(line) if "/" in p):
            self._uninstall.add(path[:MAX_KEPT_LINE])

    def _build(self) -> LogScan:
        omitted = {
            "summary_lines": self._summary_lines.omitted,
            "stages": self._stages_omitted,
            "problems": self._problems.omitted,
            "completion_lines": self._completion.omitted,
            "result_roots": self._roots.omitted,
            "packages": self._packages.omitted,
            "compiler_errors": self._errors.omitted,
            "uninstall_paths": self._uninstall.omitted,
        }
        problems = list(self._problems.items)
        if self._problems.omitted:
            problems.append(f"... and {self._problems.omitted} more problem(s)")
        return LogScan(
            summary=Summary(
                lines=tuple(self._summary_lines.items),
                stages=tuple(self._stages.values()),
                problems=tuple(problems),
            ),
            completion_seen=self._completion_seen,
            completion_lines=tuple(self._completion.items),
            result_roots=tuple(self._roots.items),
            packages=tuple(self._packages.items),
            compiler_errors=tuple(self._errors.items),
            uninstall_paths=tuple(self._uninstall.items),
            lines=self._lines,
            bytes=self._bytes,
            truncated_lines=self._truncated,
            omitted={k: v for k, v in omitted.items() if v},
            launcher=self._launcher.result(),
        )
