"""``skgate status`` parsed without argparse, for the few command lines agents and
people type most (issue 29: ``argparse`` with ``gettext`` and ``locale``, and building
the status parser, are a tenth of that command's start-up).

:func:`status_args` answers only when the command line is ``status``, then at most one
target (a word not starting with ``-``), and ``--all`` or ``--json`` in any order. It gives
the same attributes argparse's ``Namespace`` would hold for it; anything else (``--watch``,
an abbreviation, ``--``, a second target, any other command) gets None and goes to
argparse, which says what is wrong. tests/cli/test_quick.py compares both parses.
"""

from __future__ import annotations

from skgate.cli.table import Handler

#: ``skgate.evidence.files.DEFAULT_ROOT``, copied as cli/args.py copies it: ``skgate CMD
#: --help`` loads no evidence module (tests/cli/test_quick.py compares the parses).
DEFAULT_ROOT = "skgate-runs"

#: The flags taken here: store_true options of ``skgate status`` (cli/specs.py).
_FLAGS = {"--all": "all", "--json": "json"}

#: ``--interval``'s default (cli/specs.py), unused without ``--watch`` but kept alike.
_INTERVAL = 2.0


class Parsed:
    """The attributes argparse's ``Namespace`` holds for a command line."""

    def __init__(self, **values: object) -> None:
        self.__dict__.update(values)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items())
        return f"Parsed({inner})"


def status_args(argv: list[str]) -> Parsed | None:
    """``argv`` (without the program name) parsed, when it is one of the simple shapes
    of ``skgate status`` (see the module doc); None for argparse to parse."""
    if not argv or argv[0] != "status":
        return None
    flags = {"all": False, "json": False}
    target: str | None = None
    for word in argv[1:]:
        if word in _FLAGS:
            flags[_FLAGS[word]] = True
        elif word.startswith("-") or target is not None:
            return None  # an option argparse knows (or refuses), or a second target
        else:
            target = word
    return Parsed(
        command="status",
        target=DEFAULT_ROOT if target is None else target,
        all=flags["all"],
        json=flags["json"],
        watch=False,
        interval=_INTERVAL,
        handler=Handler("skgate.cli.run", "cmd_status"),
    )
