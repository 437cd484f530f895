"""``skgate run|start [options] -- COMMAND`` parsed without argparse (issue 29: importing
``argparse`` and building the ``run`` parser, three dozen options, is a few ms of every
run's start-up before its attempt is even recorded, and of every ``start`` before it
answers).

:func:`run_args` answers only a line of the shape ``run|start OPTION... -- COMMAND``
whose every option is one of that command's own, spelt in full (``--name VALUE`` or
``--name=VALUE``), with a value that does not start with ``-`` and that the option's own
type (from :mod:`skgate.cli.args`, the functions argparse calls) and choices take. It
gives the same attributes, in the same order, as argparse's ``Namespace``. Anything else
(an abbreviation, ``-h``, a stray word, a value argparse would refuse or read
differently) gets None and goes to argparse, which parses it or says what is wrong.
tests/cli/test_quick_run.py compares both parses over many shapes.
"""

from __future__ import annotations

from skgate.cli.args import (
    DEFAULT_GRACE,
    DEFAULT_ROOT,
    DEFAULT_TIMEOUT,
    devices,
    env_item,
    jobs_value,
    positive_int,
    positive_seconds,
    seconds,
)
from skgate.cli.quick import Parsed
from skgate.cli.table import Handler
from skgate.model.modes import PackageMode, VerdictFrom

# Not ``typing.TYPE_CHECKING``: see cli/args.py.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable


def _text(value: str) -> object:
    return value


def _choice(*allowed: str) -> Callable[[str], object]:
    def check(value: str) -> object:
        if value not in allowed:
            raise ValueError(value)  # argparse says which choices there are
        return value

    return check


#: The store_true options of both (cli/args.py), by flag: their attribute.
_FLAGS = {
    "--python-cpu-count": "python_cpu_count",
    "--enforce-jobs": "enforce_jobs",
    "--strict-hooks": "strict_hooks",
    "--allow-long-paths": "allow_long_paths",
}

#: ``run``'s options with a value, by flag: (attribute, the type argparse applies, whether
#: each use appends to a list instead of replacing the value).
_VALUED: dict[str, tuple[str, Callable[[str], object], bool]] = {
    "--root": ("root", _text, False),
    "--cwd": ("cwd", _text, False),
    "--timeout": ("timeout", positive_seconds, False),
    "--grace": ("grace", seconds, False),
    "--jobs": ("jobs", jobs_value, False),
    "--outputs": ("outputs", _text, False),
    "--package": ("package", _choice(*(m.value for m in PackageMode)), False),
    "--summary-pattern": ("summary_pattern", _text, True),
    "--verdict-from": ("verdict_from", _choice(*(v.value for v in VerdictFrom)), False),
    "--completion-marker": ("completion_marker", _text, False),
    "--approve-hook": ("approve_hook", _text, True),
    "--hook-baseline": ("hook_baseline", _text, False),
    "--python": ("python", _text, False),
    "--foreign": ("foreign", _choice("wait", "refuse"), False),
    "--lease-timeout": ("lease_timeout", seconds, False),
    "--devices": ("devices", devices, False),
    "--profiler-schedule": ("profiler_schedule", _text, False),
    "--vary": ("vary", _choice("jobs"), True),
    "--env": ("env", env_item, True),
    "--unset-env": ("unset_env", _text, True),
    "--compiler-name": ("compiler_name", _text, True),
    "--job-memory-mb": ("job_memory_mb", positive_int, False),
    "--scan-interval": ("scan_interval", positive_seconds, False),
}

#: Each command's own options after the shared ones (cli/specs.py), as flags above
#: (their default False) or valued options (their default None), in the order its spec
#: adds them; then its handler.
_OWN: dict[str, tuple[dict[str, str], dict[str, tuple[str, Callable[[str], object], bool]]]] = {
    "run": (
        {"--quiet": "quiet", "--json": "json"},
        {"--events": ("events", _choice("jsonl"), False)},
    ),
    "start": ({"--json": "json"}, {}),
}
_HANDLERS = {"run": ("skgate.cli.run", "cmd_run"), "start": ("skgate.cli.agents", "cmd_start")}


def _defaults(verb: str) -> dict[str, object]:
    """argparse's ``Namespace`` for a bare ``skgate VERB``, attribute by attribute, in its
    order (the parent parser's ``command``, the options as added, then the handler)."""
    flags, valued = _OWN[verb]
    return {
        "command": verb,
        "root": DEFAULT_ROOT,
        "cwd": None,
        "timeout": DEFAULT_TIMEOUT,
        "grace": DEFAULT_GRACE,
        "jobs": None,
        "outputs": None,
        "package": PackageMode.OPTIONAL.value,
        "summary_pattern": [],
        "verdict_from": VerdictFrom.SUMMARY.value,
        "completion_marker": None,
        "approve_hook": [],
        "hook_baseline": None,
        "python_cpu_count": False,
        "enforce_jobs": False,
        "strict_hooks": False,
        "allow_long_paths": False,
        "python": None,
        "foreign": "wait",
        "lease_timeout": 600.0,
        "devices": (),
        "profiler_schedule": None,
        "vary": [],
        "env": [],
        "unset_env": [],
        "compiler_name": [],
        "job_memory_mb": None,
        "scan_interval": 1.0,
        **dict.fromkeys(flags.values(), False),
        **dict.fromkeys((name for name, _, _ in valued.values()), None),
        "stray": [],
        "handler": Handler(*_HANDLERS[verb]),
        "exit_at_once": True,
    }


def run_args(argv: list[str]) -> Parsed | None:
    """``argv`` (the words before ``--``, without the program name) parsed, when it is a
    ``run`` or ``start`` line of the shape the module doc gives; None for argparse."""
    if not argv or argv[0] not in _OWN:
        return None
    values = _defaults(argv[0])
    own_flags, own_valued = _OWN[argv[0]]
    words = iter(argv[1:])
    for word in words:
        flag, eq, inline = word.partition("=")
        if not eq and (flag in _FLAGS or flag in own_flags):
            values[_FLAGS.get(flag) or own_flags[flag]] = True
            continue
        spec = _VALUED.get(flag) or own_valued.get(flag)
        if spec is None:
            return None  # a stray word, an abbreviation, -h, a flag given a value
        value = inline if eq else next(words, None)
        if value is None or value.startswith("-"):
            return None  # no value, or one argparse may read as an option
        name, convert, appends = spec
        try:
            got = convert(value)
        except Exception:  # any refusal (ArgumentTypeError, ValueError) is argparse's to word
            return None
        if appends:
            values[name] = [*values[name], got]  # type: ignore[misc]
        else:
            values[name] = got
    return Parsed(**values)
