"""Known distribution start-up hooks, allowed by exact content (C6, issue 10 section 5).

The Debian file is the real one: ``fixtures/sitecustomize.debian-...`` holds the bytes of
``/etc/python3.11/sitecustomize.py`` from Debian 12's ``libpython3.11-minimal``
3.11.2-6+deb12u9 (``apt-get download``, ``dpkg-deb -x``). It is planted into a fake
interpreter tree: a directory laid out like a Python install (``lib/pythonX.Y`` whose
entries link to this interpreter's standard library) and a venv whose ``pyvenv.cfg``
names it as home, so the venv's ``python`` reports that tree as its ``base_prefix`` and
finds the Debian ``sitecustomize.py`` in its standard library, as on a stock host.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_hooks import BASE_PYTHON, clean_env, request_for

from skgate.preflight.hooks import catalogue
from skgate.preflight.hooks import scan as hooks
from skgate.preflight.prepare import prepare
from skgate.preflight.render import render_lines

FIXTURE = Path(__file__).with_name("fixtures") / (
    "sitecustomize.debian-libpython3.11-minimal-3.11.2-6+deb12u9"
)
DEBIAN_SHA = "43d81125d92376b1a69d53a71126a041cc9a18d8080e92dea0a2ae23be138b1e"
V = f"python{sys.version_info.major}.{sys.version_info.minor}"


def fake_debian_python(where: Path, sitecustomize: bytes, system_site: bool = True) -> Path:
    """A venv over a fake install tree whose stdlib carries ``sitecustomize``."""
    stdlib = Path(os.__file__).parent  # this interpreter's own standard library
    base = where / "base"
    lib = base / "lib" / V
    lib.mkdir(parents=True)
    for entry in stdlib.iterdir():
        if entry.name not in ("site-packages", "__pycache__", "sitecustomize.py"):
            (lib / entry.name).symlink_to(entry)
    (lib / "site-packages").mkdir()  # the tree's system site directory
    (lib / "sitecustomize.py").write_bytes(sitecustomize)
    (base / "bin").mkdir()
    real = os.path.realpath(BASE_PYTHON)
    (base / "bin" / "python3").symlink_to(real)
    venv = where / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "lib" / V / "site-packages").mkdir(parents=True)
    (venv / "bin" / "python3").symlink_to(real)
    (venv / "pyvenv.cfg").write_text(
        f"home = {base / 'bin'}\ninclude-system-site-packages = "
        f"{'true' if system_site else 'false'}\n"
    )
    return venv / "bin" / "python3"


def test_fixture_is_the_catalogued_debian_file() -> None:
    data = FIXTURE.read_bytes()
    assert hashlib.sha256(data).hexdigest() == DEBIAN_SHA
    assert b"apport_python_hook.install()" in data
    (entry,) = [h for h in catalogue.CATALOGUE if h.id == "debian-apport-sitecustomize"]
    assert DEBIAN_SHA in entry.sha256


def test_fake_tree_reports_its_base_and_the_debian_file(tmp_path: Path) -> None:
    python = fake_debian_python(tmp_path, FIXTURE.read_bytes())
    out = subprocess.run(
        [
            str(python),
            "-c",
            "import sys, sitecustomize; print(sys.base_prefix); print(sitecustomize.__file__)",
        ],
        env=clean_env(),
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.split()
    assert out == [str(tmp_path / "base"), str(tmp_path / "base" / "lib" / V / "sitecustomize.py")]


def test_debian_sitecustomize_allowed_by_catalogue_and_recorded(tmp_path: Path) -> None:
    python = fake_debian_python(tmp_path, FIXTURE.read_bytes())
    plan = prepare(request_for(python, tmp_path), tmp_path / "runs")
    assert plan.blocked == ()
    record = plan.controls["hooks"]
    (finding,) = record["findings"]
    assert finding["kind"] == "sitecustomize"
    assert finding["approved_by"] == "catalogue"
    assert finding["catalogue_id"] == "debian-apport-sitecustomize"
    (allow,) = [a for a in record["allowances"] if a["kind"] == "known-distribution-hook"]
    assert allow["path"] == str(tmp_path / "base" / "lib" / V / "sitecustomize.py")
    assert allow["fingerprint"] == finding["fingerprint"]
    assert allow["catalogue_id"] == "debian-apport-sitecustomize"
    assert allow["reason"].startswith("known distribution hook, allowed by catalogue")
    assert record["startup_probe"] == "ran"
    assert record["strict"] is False
    text = "\n".join(render_lines(plan))
    assert "[allowed by catalogue: debian-apport-sitecustomize]" in text


def test_strict_hooks_refuses_the_catalogued_file(tmp_path: Path) -> None:
    python = fake_debian_python(tmp_path, FIXTURE.read_bytes())
    plan = prepare(request_for(python, tmp_path, strict_hooks=True), tmp_path / "runs")
    (finding,) = plan.controls["hooks"]["findings"]
    assert finding["approved"] is False
    assert finding["catalogue_id"] == "debian-apport-sitecustomize"  # recognised, refused
    assert len(plan.blocked) == 1
    assert "--approve-hook " + finding["fingerprint"] in plan.blocked[0]
    # An explicit approval still works under --strict-hooks.
    approved = prepare(
        request_for(python, tmp_path, strict_hooks=True, approved_hooks=(finding["fingerprint"],)),
        tmp_path / "runs",
    )
    assert approved.blocked == ()


@pytest.mark.parametrize(
    "content",
    [
        # The Debian file with one line added, and with a changed comment.
        FIXTURE.read_bytes() + b"import myapp_patch\n",
        FIXTURE.read_bytes().replace(b"# install", b"#install"),
    ],
)
def test_any_other_content_is_an_ordinary_finding(tmp_path: Path, content: bytes) -> None:
    python = fake_debian_python(tmp_path, content)
    plan = prepare(request_for(python, tmp_path), tmp_path / "runs")
    (finding,) = plan.controls["hooks"]["findings"]
    assert finding["catalogue_id"] is None
    assert finding["approved"] is False
    assert len(plan.blocked) == 1


def test_apport_companion_allowed_only_from_a_system_site_dir(tmp_path: Path) -> None:
    """With apport installed, the Debian file imports ``apport_python_hook``: allowed
    from the interpreter's own site directory, not from a PYTHONPATH entry."""
    python = fake_debian_python(tmp_path, FIXTURE.read_bytes())
    hook = "import sys\ndef install():\n    sys.excepthook = sys.excepthook\n"
    system_site = tmp_path / "base" / "lib" / V / "site-packages"
    (system_site / "apport_python_hook.py").write_text(hook)
    result = hooks.scan(str(python), clean_env())
    assert result.unapproved == ()
    assert any(a.get("module") == "apport_python_hook" for a in result.allowances)
    (system_site / "apport_python_hook.py").unlink()
    elsewhere = tmp_path / "pp"
    elsewhere.mkdir()
    (elsewhere / "apport_python_hook.py").write_text(hook)
    result = hooks.scan(str(python), clean_env(PYTHONPATH=str(elsewhere)))
    kinds = sorted(f.kind for f in result.unapproved)
    assert kinds == ["startup-module"]
    assert "not from where the catalogue allows" in result.unapproved[0].detail


def test_real_debian_interpreter_when_this_host_has_one() -> None:
    """On a stock Debian/Ubuntu python3 the distribution's file is allowed as is."""
    path = Path(f"/usr/lib/{V}/sitecustomize.py")
    real = Path(f"/usr/bin/{V}")
    if not (path.is_file() and real.is_file()):
        pytest.skip("no Debian system interpreter of this version here")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    result = hooks.scan(str(real), clean_env())
    found = [f for f in result.findings if f.kind == "sitecustomize"]
    assert found
    assert found[0].catalogue_id == (
        "debian-apport-sitecustomize" if digest == DEBIAN_SHA else None
    )


def test_virtualenv_pth_allowed_with_its_catalogued_companion(tmp_path: Path) -> None:
    """A real virtualenv (the pinned test dependency) writes _virtualenv.pth and
    _virtualenv.py; both are known, so the scan allows them; an edited _virtualenv.py
    makes the .pth an ordinary finding again."""
    pytest.importorskip("virtualenv")
    where = tmp_path / "venv"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "virtualenv",
            "-q",
            "--no-pip",
            "--no-setuptools",
            "--no-wheel",
            "--no-periodic-update",
            str(where),
        ],
        check=True,
        timeout=120,
        env=clean_env(),
    )
    site = where / "lib" / V / "site-packages"
    assert (site / "_virtualenv.pth").is_file()
    result = hooks.scan(str(where / "bin" / "python"), clean_env())
    (finding,) = result.findings
    assert finding.kind == "pth-import"
    assert finding.approved_by == "catalogue"
    assert finding.catalogue_id == "virtualenv-pth"
    assert any(a.get("module") == "_virtualenv" for a in result.allowances)
    (site / "_virtualenv.py").write_text((site / "_virtualenv.py").read_text() + "X = 1\n")
    result = hooks.scan(str(where / "bin" / "python"), clean_env())
    assert [f.catalogue_id for f in result.unapproved] == [None]


def test_venv_of_the_debian_system_python_is_not_blocked(tmp_path: Path) -> None:
    """The README's ``python3 -m venv .venv && pip install . && skgate demo`` on a stock
    Debian python3: the venv's stdlib is the system one, with Debian's sitecustomize.py."""
    real = Path(f"/usr/bin/{V}")
    path = Path(f"/usr/lib/{V}/sitecustomize.py")
    if not (real.is_file() and path.is_file()):
        pytest.skip("no Debian system interpreter of this version here")
    if hashlib.sha256(path.read_bytes()).hexdigest() != DEBIAN_SHA:
        pytest.skip("this host's sitecustomize.py is not the catalogued Debian file")
    subprocess.run(
        [str(real), "-m", "venv", "--without-pip", str(tmp_path / "v")], check=True, timeout=60
    )
    python = tmp_path / "v" / "bin" / "python"
    plan = prepare(request_for(python, tmp_path), tmp_path / "runs")
    assert plan.blocked == ()
    found = plan.controls["hooks"]["findings"]
    assert [(f["kind"], f["catalogue_id"]) for f in found] == [
        ("sitecustomize", "debian-apport-sitecustomize")
    ]
