"""Options and argument types shared by the commands that take run controls.

``skgate run`` and ``skgate preflight`` take the same control options, so a command line
can be checked with ``preflight`` before it is run.

Each turns bad input into argparse's one-line usage error (exit 2), never a traceback.

Light on purpose: the specs (:mod:`skgate.cli.specs`) build every parser from here, so
``skgate CMD --help`` imports no command code (issue 22 s5). The defaults shown in help
are copies of the model's values; tests/cli/test_specs.py keeps them equal. Nor does it
import ``argparse`` itself (only the functions argparse calls need it, and it is loaded
by then): ``skgate run``'s quick parse (:mod:`skgate.cli.quick_run`) uses these types,
defaults and :func:`request_from_args` without argparse (issue 29).
"""

from __future__ import annotations

import math
import os

from skgate.model.errors import UsageError
from skgate.model.modes import PackageMode, VerdictFrom

# Not ``typing.TYPE_CHECKING``: ``skgate status`` never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse

    from skgate.model.request import RunRequest

#: ``skgate.evidence.files.DEFAULT_ROOT``: the evidence root when none is given.
DEFAULT_ROOT = "skgate-runs"
#: ``skgate.model.request.DEFAULT_TIMEOUT`` and ``DEFAULT_GRACE`` (seconds).
DEFAULT_TIMEOUT = 3 * 3600.0
DEFAULT_GRACE = 30.0


def _bad(message: str) -> Exception:
    """argparse's type error, which it turns into a one-line usage error (exit 2)."""
    from argparse import ArgumentTypeError  # noqa: PLC0415 - see the module doc

    return ArgumentTypeError(message)


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise _bad(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value < 0:
        raise _bad(f"{text!r} must be a finite, non-negative number")
    return value


def positive_seconds(text: str) -> float:
    value = seconds(text)
    if value == 0:
        raise _bad("must be more than 0 seconds")
    return value


def jobs_value(text: str) -> str:
    if text == "auto" or (text.isdigit() and int(text) > 0):
        return text
    raise _bad(f"--jobs {text}: use a positive integer or 'auto'")


def env_item(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise _bad(f"{text!r}: use NAME=VALUE")
    return name, value


def devices(text: str) -> tuple[int, ...]:
    try:
        ids = tuple(sorted({int(x) for x in text.split(",") if x.strip()}))
    except ValueError:
        raise _bad(f"{text!r}: use device ids like 0,1") from None
    if not ids or min(ids) < 0:
        raise _bad(f"{text!r}: use device ids like 0,1")
    return ids


def positive_int(text: str) -> int:
    if text.isdigit() and int(text) > 0:
        return int(text)
    raise _bad(f"{text!r}: use a positive integer")


def add_hook_options(p: argparse.ArgumentParser) -> None:
    """Start-up hook approvals (C6), shared by run, preflight and demo."""
    p.add_argument(
        "--approve-hook",
        action="append",
        default=[],
        metavar="FINGERPRINT",
        help="approve one start-up hook finding by its full fingerprint (repeatable; C6)",
    )
    p.add_argument(
        "--hook-baseline",
        default=None,
        metavar="FILE",
        help="approve the findings of a baseline frozen by 'skgate preflight "
        "--freeze-baseline' (C6)",
    )
    p.add_argument(
        "--python-cpu-count",
        action="store_true",
        help="also set PYTHON_CPU_COUNT to the frozen jobs value, so a launcher that passes "
        "-j $(os.cpu_count()) uses it (Python >= 3.13 only; changes os.cpu_count() for the "
        "whole launcher; recorded in control.json) (C5)",
    )
    p.add_argument(
        "--enforce-jobs",
        action="store_true",
        help="put skgate's op_compiler shim (a POSIX sh script) first on the command's PATH: "
        "it runs the real op_compiler with -j set to the frozen jobs value; both argvs go "
        "into the stage record, the shim's path and sha256 into control.json (C5)",
    )
    p.add_argument(
        "--strict-hooks",
        action="store_true",
        help="refuse even the known distribution hooks the catalogue allows by content "
        "(Debian's sitecustomize.py, virtualenv's _virtualenv.pth) unless approved (C6)",
    )
    p.add_argument(
        "--allow-long-paths",
        action="store_true",
        help="launch even when the working directory is too deep for CANN's derived file "
        "names (NAME_MAX, ENAMETOOLONG); recorded in control.json (C6)",
    )


def add_run_options(p: argparse.ArgumentParser) -> None:
    """Options that freeze an attempt's controls (shared by run and regress)."""
    p.add_argument("--root", default=str(DEFAULT_ROOT), help="evidence root (default %(default)s)")
    p.add_argument("--cwd", default=None, help="working directory of the command (default: .)")
    p.add_argument(
        "--timeout",
        type=positive_seconds,
        default=DEFAULT_TIMEOUT,
        help="frozen top-level timeout in seconds (default %(default)s)",
    )
    p.add_argument(
        "--grace",
        type=seconds,
        default=DEFAULT_GRACE,
        help="seconds between SIGTERM and SIGKILL to the own group (default %(default)s)",
    )
    p.add_argument(
        "--jobs", type=jobs_value, default=None, help="compile concurrency: N or auto (C5)"
    )
    p.add_argument("--outputs", default=None, help="outputs dir to count (C3)")
    add_package_option(p, "whether a .run package is required (C8)")
    p.add_argument(
        "--summary-pattern",
        action="append",
        default=[],
        metavar="REGEX",
        help="also archive run-log lines matching REGEX as final summary lines, besides "
        "[summary] (repeatable; C3)",
    )
    p.add_argument(
        "--verdict-from",
        choices=[v.value for v in VerdictFrom],
        default=VerdictFrom.SUMMARY.value,
        help="where the verdict comes from: 'summary' (a compile's [summary] lines, "
        "--summary-pattern or op_compiler census; exit 0 alone is unknown) or 'exit-status' "
        "(a command that is not a compile: exit 0 succeeded, non-zero failed; an observed "
        "op_compiler still decides by its stages) (frozen in control.json; C2; default "
        "%(default)s)",
    )
    p.add_argument(
        "--completion-marker",
        default=None,
        metavar="REGEX",
        help="run-log line that shows inference reached its normal completion point "
        "(recorded; regress --health requires it, C6)",
    )
    add_hook_options(p)
    p.add_argument("--python", default=None, metavar="PATH", help="interpreter to scan (C6)")
    p.add_argument(
        "--foreign",
        choices=["wait", "refuse"],
        default="wait",
        help="a compiler this attempt does not own is running: wait for it (up to "
        "--lease-timeout) or refuse to launch; it is never signalled (C4; default "
        "%(default)s)",
    )
    p.add_argument(
        "--lease-timeout",
        type=seconds,
        default=600.0,
        metavar="S",
        help="how long to wait for foreign compilers and device leases before the run "
        "is blocked (seconds, default %(default)s)",
    )
    p.add_argument(
        "--devices",
        type=devices,
        default=(),
        metavar="IDS",
        help="device ids to lease for this attempt, e.g. 0,1 (other skgate runs wait for them; C4)",
    )
    p.add_argument(
        "--profiler-schedule",
        default=None,
        metavar="SPEC",
        help="profiler schedule wait=N,warmup=N,active=N[,repeat=N][,skip_first=N], "
        "recorded and handed to the launcher in SKGATE_PROFILER_SCHEDULE (C6)",
    )
    p.add_argument(
        "--vary",
        action="append",
        default=[],
        choices=["jobs"],
        help="declare that this attempt changes the compile jobs on purpose, so it is not "
        "blocked for differing from earlier attempts of the root (C5)",
    )
    p.add_argument(
        "--env",
        action="append",
        type=env_item,
        default=[],
        metavar="NAME=VALUE",
        help="set a variable for the command, recorded in the environment delta (repeatable)",
    )
    p.add_argument(
        "--unset-env",
        action="append",
        default=[],
        metavar="NAME",
        help="remove a variable from the command's environment, recorded in the delta (repeatable)",
    )
    p.add_argument(
        "--compiler-name",
        action="append",
        default=[],
        metavar="NAME",
        help="a compiler process name for the foreign-compiler check (repeatable; "
        "default opc, op_compiler)",
    )
    p.add_argument(
        "--job-memory-mb",
        type=positive_int,
        default=None,
        metavar="MIB",
        help="memory budget per compile job for --jobs auto (C5)",
    )
    from argparse import SUPPRESS  # noqa: PLC0415 - see the module doc

    p.add_argument("--scan-interval", type=positive_seconds, default=1.0, help=SUPPRESS)


def request_from_args(args: argparse.Namespace, command: list[str]) -> RunRequest:
    from pathlib import Path  # noqa: PLC0415 - a handler's helper, not a spec's (issue 22 s5)

    from skgate.model.request import RunRequest  # noqa: PLC0415

    return RunRequest(
        argv=tuple(command),
        cwd=str(Path(args.cwd or os.getcwd()).absolute()),
        root=str(Path(args.root).absolute()),
        timeout=args.timeout,
        grace=args.grace,
        outputs=args.outputs,
        package_mode=PackageMode(args.package),
        summary_patterns=tuple(args.summary_pattern),
        completion_marker=args.completion_marker,
        jobs=args.jobs,
        env=dict(args.env),
        unset_env=tuple(args.unset_env),
        python=args.python,
        approved_hooks=tuple(args.approve_hook),
        hook_baseline=args.hook_baseline,
        strict_hooks=bool(args.strict_hooks),
        python_cpu_count=bool(args.python_cpu_count),
        enforce_jobs=bool(args.enforce_jobs),
        foreign_policy=args.foreign,
        lease_timeout=args.lease_timeout,
        devices=tuple(args.devices),
        profiler_schedule=args.profiler_schedule,
        vary=tuple(args.vary),
        quiet=bool(getattr(args, "quiet", False)),
        scan_interval=args.scan_interval,
        compiler_names=tuple(args.compiler_name),
        job_memory_mb=args.job_memory_mb,
        verdict_from=VerdictFrom(args.verdict_from),
        allow_long_paths=bool(getattr(args, "allow_long_paths", False)),
    )


def command_after_dashes(args: argparse.Namespace, verb: str) -> list[str]:
    command: list[str] | None = getattr(args, "command_argv", None)
    if command is None or getattr(args, "stray", None):
        raise UsageError(f"missing '--' before the command: skgate {verb} [options] -- COMMAND...")
    if not command:
        raise UsageError(f"no command after '--': skgate {verb} [options] -- COMMAND...")
    return command


def add_package_option(p: argparse.ArgumentParser, help_text: str) -> None:
    """``--package required|optional`` (C8), for ``run`` and ``check-outputs`` alike."""
    p.add_argument(
        "--package",
        choices=[m.value for m in PackageMode],
        default=PackageMode.OPTIONAL.value,
        help=help_text,
    )
