"""The fault grammar of the simulator, shared by the launcher, ``op_compiler`` and ``opc``.

Faults travel in the environment variable ``SKGATE_SIM_FAULTS`` so that a whole process
tree inherits them (the launcher's ``--fault SPEC`` flags are appended to it for its
children). The value is a comma-separated list of items; empty items are ignored and
repeated list items merge:

=====================  ======================================================================
item                   effect
=====================  ======================================================================
``fail=I[:I...]``      the ``opc`` for these input indexes exits 1 with error text in its log
``hang=I[:I...]``      the ``opc`` for these input indexes never finishes on its own
``quiet=S``            ``op_compiler`` prints nothing for S seconds before its summary
``ignore_sigterm``     every ``opc`` ignores SIGTERM (only SIGKILL ends it)
``escape=S``           the ``opc`` of input 0 double-forks a ``setsid`` descendant living S s
``leader_exit_early``  the launcher exits 0 while ``op_compiler`` / ``opc`` still run
``die_signal=SIG``     the launcher kills itself with SIG (``SEGV``, ``KILL``, 11...) mid-compile
``no_summary``         ``op_compiler`` prints no ``[summary]`` line
``contradict_summary`` ``op_compiler`` prints a summary that contradicts itself
``fail_with_hook``     input 0 fails when a Python start-up hook is loaded in its ``opc``
``fail_above_jobs=N``  input 0 fails when the compile jobs value in use is greater than N
``fail_seed=S``        input 0 fails when ``SKGATE_SIM_CACHE_SEED`` equals S
``lose_log=I[:I...]``  ``op_compiler`` leaves no compile log at all for these input indexes
``stop_after=N``       ``op_compiler`` compiles only the first N inputs, then exits 0
``false_summary``      ``op_compiler``'s ``[summary]`` claims every input succeeded
``install_fail``       the torchair launcher's ``.run`` install fails after a good compile:
                       it warns ``X.run install failed, msg: ...`` (torch-npu 2.14), installs
                       nothing and carries on to exit 0 (C8: never a clean success)
=====================  ======================================================================

Input indexes are 0-based positions in ``op_compiler``'s sorted input list. Durations are
seconds (floats allowed), so every scenario can finish in well under a second.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Mapping

ENV_FAULTS = "SKGATE_SIM_FAULTS"

#: Every item the grammar knows, for the one-line error on an unknown item.
KNOWN_ITEMS: tuple[str, ...] = (
    "fail=I[:I...]",
    "hang=I[:I...]",
    "quiet=S",
    "ignore_sigterm",
    "escape=S",
    "leader_exit_early",
    "die_signal=SIG",
    "no_summary",
    "contradict_summary",
    "fail_with_hook",
    "fail_above_jobs=N",
    "fail_seed=S",
    "lose_log=I[:I...]",
    "stop_after=N",
    "false_summary",
    "install_fail",
)

# Signals whose default action does not end a process cannot make the launcher "die".
_NON_FATAL = frozenset(
    {
        signal.SIGCHLD,
        signal.SIGCONT,
        signal.SIGURG,
        signal.SIGWINCH,
        signal.SIGSTOP,
        signal.SIGTSTP,
        signal.SIGTTIN,
        signal.SIGTTOU,
    }
)


class FaultSpecError(ValueError):
    """A fault specification that the grammar does not accept (one-line message)."""


class Faults:
    """The parsed fault set (immutable). The default instance injects nothing.

    A plain slotted class rather than a dataclass: every ``opc`` worker parses faults at
    start, and importing ``dataclasses`` would add ~15 ms to each of them.
    """

    __slots__ = (
        "contradict_summary",
        "die_signal",
        "escape",
        "fail",
        "fail_above_jobs",
        "fail_seed",
        "fail_with_hook",
        "false_summary",
        "hang",
        "ignore_sigterm",
        "install_fail",
        "leader_exit_early",
        "lose_log",
        "no_summary",
        "quiet",
        "stop_after",
    )

    fail: frozenset[int]
    hang: frozenset[int]
    quiet: float
    ignore_sigterm: bool
    escape: float | None
    leader_exit_early: bool
    die_signal: int | None
    no_summary: bool
    contradict_summary: bool
    fail_with_hook: bool
    fail_above_jobs: int | None
    fail_seed: str | None
    lose_log: frozenset[int]
    stop_after: int | None
    false_summary: bool
    install_fail: bool

    def __init__(
        self,
        *,
        fail: frozenset[int] = frozenset(),
        hang: frozenset[int] = frozenset(),
        quiet: float = 0.0,
        ignore_sigterm: bool = False,
        escape: float | None = None,
        leader_exit_early: bool = False,
        die_signal: int | None = None,
        no_summary: bool = False,
        contradict_summary: bool = False,
        fail_with_hook: bool = False,
        fail_above_jobs: int | None = None,
        fail_seed: str | None = None,
        lose_log: frozenset[int] = frozenset(),
        stop_after: int | None = None,
        false_summary: bool = False,
        install_fail: bool = False,
    ) -> None:
        values: dict[str, object] = {
            "fail": fail,
            "hang": hang,
            "quiet": quiet,
            "ignore_sigterm": ignore_sigterm,
            "escape": escape,
            "leader_exit_early": leader_exit_early,
            "die_signal": die_signal,
            "no_summary": no_summary,
            "contradict_summary": contradict_summary,
            "fail_with_hook": fail_with_hook,
            "fail_above_jobs": fail_above_jobs,
            "fail_seed": fail_seed,
            "lose_log": lose_log,
            "stop_after": stop_after,
            "false_summary": false_summary,
            "install_fail": install_fail,
        }
        for key, value in values.items():
            object.__setattr__(self, key, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"Faults is immutable (tried to set {name})")

    def as_dict(self) -> dict[str, object]:
        return {k: getattr(self, k) for k in sorted(self.__slots__)}

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Faults) and self.as_dict() == other.as_dict()

    def __hash__(self) -> int:
        return hash(tuple(self.as_dict().items()))

    def __repr__(self) -> str:
        changed = {k: v for k, v in self.as_dict().items() if v != _DEFAULTS.get(k)}
        return "Faults(" + ", ".join(f"{k}={v!r}" for k, v in changed.items()) + ")"

    @property
    def any(self) -> bool:
        return self != Faults()


_DEFAULTS: dict[str, object] = Faults().as_dict()


def _indexes(item: str, value: str) -> frozenset[int]:
    out: set[int] = set()
    for part in value.split(":"):
        if not part.strip().isdigit():
            raise FaultSpecError(f"fault item {item!r}: expected input indexes like 0 or 1:3")
        out.add(int(part))
    return frozenset(out)


def _seconds(item: str, value: str) -> float:
    try:
        secs = float(value)
    except ValueError:
        raise FaultSpecError(f"fault item {item!r}: expected seconds, e.g. 0.5") from None
    if not secs >= 0.0 or secs == float("inf"):
        raise FaultSpecError(f"fault item {item!r}: seconds must be finite and >= 0")
    return secs


def parse_signal(value: str) -> int:
    """``SEGV``, ``SIGSEGV`` or ``11`` -> 11; only signals whose default action ends a process."""
    text = value.strip().upper()
    num: int | None = None
    if text.isdigit():
        num = int(text)
    else:
        name = text if text.startswith("SIG") else "SIG" + text
        sig = getattr(signal.Signals, name, None) if name.isidentifier() else None
        num = int(sig) if isinstance(sig, signal.Signals) else None
    valid = {int(s) for s in signal.Signals}
    if num is None or num not in valid or num in _NON_FATAL:
        raise FaultSpecError(
            f"fault item 'die_signal={value}': expected a fatal signal name or number, e.g. SEGV"
        )
    return num


def parse(spec: str) -> Faults:
    """Parse a fault specification; raise FaultSpecError naming the first bad item."""
    fail: set[int] = set()
    hang: set[int] = set()
    lose: set[int] = set()
    values: dict[str, object] = {}
    for raw in spec.split(","):
        item = raw.strip()
        if not item:
            continue
        key, sep, value = item.partition("=")
        key = key.strip()
        value = value.strip()
        flags = (
            "ignore_sigterm",
            "leader_exit_early",
            "no_summary",
            "contradict_summary",
            "fail_with_hook",
            "false_summary",
            "install_fail",
        )
        if key in flags:
            if sep:
                raise FaultSpecError(f"fault item {item!r}: {key} takes no value")
            values[key] = True
            continue
        if not sep or not value:
            raise FaultSpecError(
                f"unknown fault item {item!r} in {ENV_FAULTS}; known items: "
                + ", ".join(KNOWN_ITEMS)
            )
        if key == "fail":
            fail |= _indexes(item, value)
        elif key == "hang":
            hang |= _indexes(item, value)
        elif key == "lose_log":
            lose |= _indexes(item, value)
        elif key in ("quiet", "escape"):
            values[key] = _seconds(item, value)
        elif key == "die_signal":
            values[key] = parse_signal(value)
        elif key in ("fail_above_jobs", "stop_after"):
            if not value.isdigit():
                raise FaultSpecError(f"fault item {item!r}: expected a whole number")
            values[key] = int(value)
        elif key == "fail_seed":
            values[key] = value
        else:
            raise FaultSpecError(
                f"unknown fault item {item!r} in {ENV_FAULTS}; known items: "
                + ", ".join(KNOWN_ITEMS)
            )
    escape = values.get("escape")
    die = values.get("die_signal")
    above = values.get("fail_above_jobs")
    seed = values.get("fail_seed")
    stop = values.get("stop_after")
    quiet = values.get("quiet", 0.0)
    return Faults(
        fail=frozenset(fail),
        hang=frozenset(hang),
        quiet=float(quiet) if isinstance(quiet, float) else 0.0,
        ignore_sigterm=values.get("ignore_sigterm") is True,
        escape=escape if isinstance(escape, float) else None,
        leader_exit_early=values.get("leader_exit_early") is True,
        die_signal=die if isinstance(die, int) else None,
        no_summary=values.get("no_summary") is True,
        contradict_summary=values.get("contradict_summary") is True,
        fail_with_hook=values.get("fail_with_hook") is True,
        fail_above_jobs=above if isinstance(above, int) else None,
        fail_seed=seed if isinstance(seed, str) else None,
        lose_log=frozenset(lose),
        stop_after=stop if isinstance(stop, int) else None,
        false_summary=values.get("false_summary") is True,
        install_fail=values.get("install_fail") is True,
    )


def from_env(env: Mapping[str, str] | None = None) -> Faults:
    """The fault set this process inherited (raises FaultSpecError on a bad value)."""
    source = os.environ if env is None else env
    return parse(source.get(ENV_FAULTS, ""))


def combine(*specs: str) -> str:
    """Join specifications (the inherited env value and ``--fault`` flags) into one value."""
    return ",".join(s.strip().strip(",") for s in specs if s.strip().strip(","))
