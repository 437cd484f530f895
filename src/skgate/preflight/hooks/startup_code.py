"""Start-up code known by its exact content, and every variable it reads (C6, issue 29).

A start-up that runs code (a ``.pth`` import line) may read any variable or the working
directory and import according to it, so the hook-probe cache
(:mod:`skgate.preflight.hooks.cache`) keeps such a start-up record to where it was taken.
Code listed here by sha256 reads only :attr:`KnownStartupCode.reads`: a start-up that ran
nothing else keeps its record in any directory. Kept apart from
:mod:`skgate.preflight.hooks.catalogue` (the hooks allowed by content, re-exported there):
the cache reads this before the first probe starts, and this module imports nothing
that a run has not already loaded by then.
"""

from __future__ import annotations

from collections.abc import Mapping

from skgate.model.frozen import record

#: The variable setuptools' ``distutils-precedence.pth`` reads: its one line imports
#: ``_distutils_hack`` only when it is ``local`` (or unset, in the releases whose default
#: is ``local``). The only variable any code in :data:`KNOWN_STARTUP_CODE` reads.
DISTUTILS_VAR = "SETUPTOOLS_USE_DISTUTILS"

#: ``distutils-precedence.pth``, by the sha256 of the whole file: every distinct content
#: of the setuptools wheels on PyPI from 49.0.0 to 84.2.1 (242 releases, fetched
#: 2026-12-04; 49.0.0-49.2.1 ship none). Each is one line that reads
#: :data:`DISTUTILS_VAR` and, by its value, imports ``_distutils_hack`` and calls one
#: function of it; nothing else. Debian 12's python3-setuptools 66.1.1-1+deb12u2 ships
#: the 50.0.0/60.0.0+ bytes unchanged.
DISTUTILS_PTH_SHA256 = {
    "f1701c42efb4c8e791fbb314ed0843c7f83744e70167d2475e752889b7862d8b": (
        "setuptools 49.3.0 to 49.6.0 (unset means stdlib)"
    ),
    "7ea7ffef3fe2a117ee12c68ed6553617f0d7fd2f0590257c25c484959a3b7373": (
        "setuptools 50.1.0 to 59.8.0 (default stdlib)"
    ),
    "2638ce9e2500e572a5e0de7faed6661eb569d1b696fcba07b0dd223da5f5d224": (
        "setuptools 50.0.0 to 50.0.3 and 60.0.0 to 84.2.1 except 60.1.x (default local)"
    ),
    "da22a871960ee4f77f5a72c3e8fe48ab4255cc0c12d924451685b07100f1d33d": (
        "setuptools 60.1.0, 60.1.1 (default local, ensure_shim)"
    ),
}

#: ``_distutils_hack/__init__.py`` whose start-up part reads no variable and no
#: directory, and imports nothing: its module body imports only ``sys`` and ``os``
#: (every start-up has both), defines functions and classes, instantiates the finder
#: (no ``__init__``) and, in ``add_shim``, puts it first on ``sys.meta_path``. The finder
#: then runs code only for a few top-level names (``distutils``, ``pip``, ``setuptools``
#: in 60.6-60.8, ``test.*``), and a start-up that imported one has it in its start-up
#: record, which then holds more than the catalogued modules (``cache.known_code``).
#: Every distinct content of the setuptools wheels on PyPI from 60.4.0 to 84.2.1 (each
#: file read with :mod:`ast`: module-level statements, decorators, ``add_shim``,
#: ``insert_shim``, the finder's class body and ``find_spec``). Before 60.4.0 the module
#: body imports ``re``, ``importlib``, ``warnings`` (and ``contextlib``) at start-up: not
#: listed, so such a start-up keeps its record to the directory and variables it ran
#: with, as any other code does.
#: Debian 12's python3-setuptools 66.1.1-1+deb12u2 ships the 62.5.0 bytes unchanged.
DISTUTILS_HACK_SHA256 = {
    "e4a51d09fa11eb20b12a2861f82c5c5587ae4d3d096cf2d3246109b60991818d": "setuptools 60.4.0",
    "4513b154dbf2fa7776a1d0812e6d4396770a8e6f286000d30bf6694ff3294dd5": "setuptools 60.5.0",
    "06c27ded9e7642a2d5d5ea432989050e91987b2d00cfdc5c0477f23cffda06b4": (
        "setuptools 60.6.0 to 60.8.2"
    ),
    "228181f268b46192561e7b9a3c57ff31483e10b2584f6494e5256feb86d5e674": (
        "setuptools 60.9.0, 60.9.1"
    ),
    "026d425507ed93f30700abdf25056940cc15c7796b01b2863e1288520c1ac036": (
        "setuptools 60.9.2 to 62.4.0"
    ),
    "4d27a48545b57dd137ae35376fcf326d2064271084a487960686f8704b94de4a": (
        "setuptools 62.5.0 to 67.8.0; Debian python3-setuptools 66.1.1-1+deb12u2"
    ),
    "46849a60a7cc85189cf6b5ac62b3f135004862ce6a96540a81c95ef6fbc4dc3e": (
        "setuptools 68.0.0 to 69.0.3"
    ),
    "4bf5b0bc8f8af7ce7096e96f7167cf4f776f2cc0983f5c8f876ca780b3a67781": (
        "setuptools 69.1.0 to 70.2.0"
    ),
    "1542e30b6d07156f447ab4bcaec4a3a330feb93167d5dcaf548f6d6b2cdb852c": (
        "setuptools 70.3.0 to 72.2.0"
    ),
    "9b737c2ccce2dad2e896acfb6285c708419121078c00231a5439a7647cdd72e4": (
        "setuptools 73.0.0, 73.0.1"
    ),
    "a325c4f62f92a19daaa558088e4339afd78e14df40c20a7d51c9dc3a714dc237": (
        "setuptools 74.0.0 to 75.3.4"
    ),
    "df81e6bcba34ee3e3952f776551fb669143b9490fdd6c4caeb32609f97e985b4": (
        "setuptools 75.4.0 to 83.0.0"
    ),
    "ced72e54431ecf2d8d7dbd8a1e27724f1b171af3ca1503c304bf11c59a7fe861": (
        "setuptools 84.0.0 to 84.2.1"
    ),
}


@record
class KnownStartupCode:
    """Start-up code known by exact content, and every variable it reads (C6): where a
    start-up runs only such code, its start-up record depends on those variables alone,
    not on the working directory or any other variable (the hook-probe cache)."""

    #: ``.pth`` files with import lines: sha256 of the whole file -> where it came from.
    pth_sha256: Mapping[str, str]
    #: modules such a line imports at start-up: name -> {sha256 of its file: where from}.
    modules: Mapping[str, Mapping[str, str]]
    reads: tuple[str, ...]


KNOWN_STARTUP_CODE = KnownStartupCode(
    pth_sha256=DISTUTILS_PTH_SHA256,
    modules={"_distutils_hack": DISTUTILS_HACK_SHA256},
    reads=(DISTUTILS_VAR,),
)
