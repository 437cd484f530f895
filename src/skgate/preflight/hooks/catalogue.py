"""Known distribution start-up hooks, recognised by exact content (C6).

C6 blocks every unapproved start-up hook, but a stock interpreter already carries a few
that its distribution or its environment tool installs, and that implement no override:
Debian/Ubuntu's ``sitecustomize.py`` (it installs apport's exception hook when apport is
present), virtualenv's ``_virtualenv.pth`` with its ``_virtualenv.py``. Blocking those
would block every run on a stock host before anything could be learned. Each is matched
here by the sha256 of its *exact* bytes, taken from the real package named in the entry
(never by file name alone: a file with that name and any other content is an ordinary
finding and blocks). A match is recorded in ``control.json`` as "known distribution
hook, allowed by catalogue" with the catalogue id; ``--strict-hooks`` turns the
catalogue off, so even these block unless approved by fingerprint.

A catalogued hook may import one companion module at start-up (``apport_python_hook``,
``_virtualenv``); the start-up probe allows exactly that module, and only from where the
entry says it must live (a system site directory, or beside the ``.pth`` file with
catalogued content).

Also recognised, by pattern (both shipped variants of one line), since before this
catalogue: setuptools' ``distutils-precedence.pth``, which imports only setuptools' own
``_distutils_hack``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from skgate.model.frozen import record
from skgate.preflight.hooks.findings import KIND_PTH_IMPORT, KIND_SITECUSTOMIZE, Finding

ALLOWED_BY_CATALOGUE = "known distribution hook, allowed by catalogue"

#: Where a companion module may live: beside the hook file, or in a site directory of
#: the interpreter itself (not the user site, not a PYTHONPATH entry).
BESIDE = "beside"
SYSTEM_SITE = "system-site"


@record
class KnownHook:
    """One catalogued hook: a file name and the exact contents it may have."""

    id: str
    name: str
    kind: str
    file_name: str
    sha256: Mapping[str, str]  # content sha256 -> the package (and version) it came from
    companion: str | None = None
    companion_where: str = SYSTEM_SITE
    companion_sha256: Mapping[str, str] | None = None  # None: any content, by location only
    why: str = ""


#: virtualenv's ``_virtualenv.py``: each distinct content, with the versions that ship it.
#: Taken from the wheels on PyPI (``virtualenv/create/via_global_ref/_virtualenv.py``);
#: a venv made by 20.13.4, 20.17.1, 20.24.1, 20.26.6, 20.35.4 and 21.0.0 on CPython 3.11
#: was checked to hold exactly these bytes. virtualenv 21.15.11 writes no patch on 3.11.
_VIRTUALENV_PY = {
    "684b8c07932ba4a84ac2e5ae9afe49ef04e92bac3d8d4191d455cf09d093e5fc": (
        "virtualenv 20.0.35, 20.4.7, 20.10.0"
    ),
    "ce57d5e0d9b5d7356cb42da7450ba8f9359bdf693e335f4c921626943c77e64d": "virtualenv 20.13.4",
    "c9199315871b11b12df226f890a38e66e63191e1adbfb11a66e6861151b33fca": (
        "virtualenv 20.16.7, 20.17.1, 20.21.1; Debian python3-virtualenv 20.17.1+ds-1"
    ),
    "0aeb86546345c1d0fada097536e35525714d5cdbcc2d8eb3f9912a955044fcff": "virtualenv 20.24.1",
    "0f20351ea7e90039c46d3fabdef991f28b1e3ff33eb13ee6f0d5cd21ea0e8b14": (
        "virtualenv 20.26.6, 20.29.3, 20.31.2"
    ),
    "bec6155ff7bfc88f8e79e481f27fd7ee0a3b40eeca9bfeb41f4c4b997b2f8100": "virtualenv 20.35.4",
    "02943e192823d75212f206e1f2991ac572119882683a95dfbb7a1b913d7b14b5": (
        "virtualenv 20.39.1, 21.0.0"
    ),
    "0278334cdcfab4c746b4416fbd5c2b6e7da937c81e132397d62c361d404ebe0e": "virtualenv 21.7.16",
    "cfe56cafbd68fd31a0e87100f111d7d2f6b7157241096500013c07e88d80a22f": "virtualenv 21.15.11",
}

CATALOGUE: tuple[KnownHook, ...] = (
    KnownHook(
        id="debian-apport-sitecustomize",
        name="Debian/Ubuntu sitecustomize.py (installs apport's exception hook if present)",
        kind=KIND_SITECUSTOMIZE,
        file_name="sitecustomize.py",
        # /etc/python3.11/sitecustomize.py (/usr/lib/python3.11/sitecustomize.py links to
        # it) of Debian 12's libpython3.11-minimal 3.11.2-6+deb12u6, +deb12u8, +deb12u9:
        # the same 155 bytes in all three.
        sha256={
            "43d81125d92376b1a69d53a71126a041cc9a18d8080e92dea0a2ae23be138b1e": (
                "Debian libpython3.11-minimal 3.11.2-6+deb12u6/u8/u9"
            ),
        },
        companion="apport_python_hook",
        companion_where=SYSTEM_SITE,
        why="it only installs apport's crash reporter as sys.excepthook when apport is "
        "installed; it imports nothing of the application and no framework",
    ),
    KnownHook(
        id="virtualenv-pth",
        name="virtualenv _virtualenv.pth with its _virtualenv.py",
        kind=KIND_PTH_IMPORT,
        file_name="_virtualenv.pth",
        # Written by virtualenv as the 18 bytes "import _virtualenv" (no newline), in every
        # version listed in _VIRTUALENV_PY.
        sha256={
            "69ac3d8f27e679c81b94ab30b3b56e9cd138219b1ba94a1fa3606d5a76a1433d": (
                "virtualenv 20.x, 21.x"
            ),
        },
        companion="_virtualenv",
        companion_where=BESIDE,
        companion_sha256=_VIRTUALENV_PY,
        why="virtualenv's own patch of distutils/setuptools install paths for the venv; "
        "it imports nothing of the application and no framework",
    ),
)

#: setuptools' ``distutils-precedence.pth``, matched by content (both shipped variants).
DISTUTILS_PTH = re.compile(
    r"import os; var = 'SETUPTOOLS_USE_DISTUTILS'; "
    r"enabled = os\.environ\.get\(var, '(?:local|stdlib)'\) == 'local'; "
    r"enabled and __import__\('_distutils_hack'\)\.add_shim\(\); ?"
)
ALLOW_DISTUTILS = (
    "setuptools distutils-precedence.pth (packaging hook, matched by content): it imports "
    "only setuptools' _distutils_hack, nothing of the application"
)


@record
class Match:
    """A finding recognised by the catalogue, and the companion module it may load."""

    hook: KnownHook
    source: str
    companion_dirs: tuple[str, ...]  # where the companion may be loaded from

    def allowance(self, finding: Finding) -> dict[str, str]:
        return {
            "kind": "known-distribution-hook",
            "path": finding.path,
            "fingerprint": finding.fingerprint,
            "catalogue_id": self.hook.id,
            "name": self.hook.name,
            "content_from": self.source,
            "reason": f"{ALLOWED_BY_CATALOGUE}: {self.hook.name} ({self.source}); {self.hook.why}",
        }


def match(
    finding: Finding,
    *,
    system_sitedirs: tuple[str, ...],
    companion_hash: Mapping[str, str],
) -> Match | None:
    """The catalogue entry ``finding`` is, by exact content, or None.

    ``companion_hash`` maps a file path to its content sha256 (the caller hashes the
    candidate companions it found on disk: ``<dir>/<module>.py``).
    """
    for hook in CATALOGUE:
        if finding.kind != hook.kind or os.path.basename(finding.path) != hook.file_name:
            continue
        source = hook.sha256.get(finding.content_sha256)
        if source is None:
            continue
        if hook.companion is None:
            return Match(hook, source, ())
        if hook.companion_where == BESIDE:
            here = os.path.dirname(finding.path)
            beside = os.path.join(here, hook.companion + ".py")
            digest = companion_hash.get(beside)
            if hook.companion_sha256 is not None and (
                digest is None or digest not in hook.companion_sha256
            ):
                continue  # the .pth is known, but what it imports is not: not this entry
            return Match(hook, source, (here,))
        return Match(hook, source, system_sitedirs)
    return None


def companion_files(finding: Finding) -> list[str]:
    """Companion files to hash for ``match`` (those that must sit beside the hook)."""
    return [
        os.path.join(os.path.dirname(finding.path), hook.companion + ".py")
        for hook in CATALOGUE
        if hook.companion and hook.companion_where == BESIDE and hook.kind == finding.kind
    ]
