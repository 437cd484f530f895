"""docs/architecture.md cannot drift from the code (issue 22 s6).

It names every module under ``src/skgate``, and its layer diagram is the import-linter
``layers`` contract of pyproject.toml, line by line (siblings on one line).
"""

from __future__ import annotations

import importlib
import re
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "skgate"
ARCH = ROOT / "docs" / "architecture.md"

MODULE_TOKEN = re.compile(r"`([\w/]+\.py)`")
LAYER_TOKEN = re.compile(r"^[a-z_]+(?:/|\.py)$")


def modules() -> list[str]:
    """Every module path under src/skgate, relative to it; empty ``__init__.py`` files
    (bare package markers) are left out."""
    return sorted(
        str(p.relative_to(SRC))
        for p in SRC.rglob("*.py")
        if p.name != "__init__.py" or p.read_text(encoding="utf-8").strip()
    )


def named_modules(text: str) -> set[str]:
    """The module paths the page names: ``x.py`` under a ``### pkg/`` heading is
    ``pkg/x.py`` (``sub/x.py`` there is ``pkg/sub/x.py``); a heading that is not a
    package (``### runner.py and api.py``) names top-level modules."""
    found: set[str] = set()
    package = ""
    for line in text.splitlines():
        if line.startswith("### "):
            head = line[4:].strip().strip("`")
            package = head if head.endswith("/") else ""
            continue
        if line.startswith("## "):
            package = ""
        for token in MODULE_TOKEN.findall(line):
            found.add(token)  # a full path from src/skgate (or top-level) ...
            found.add(package + token)  # ... or one relative to its package's section
    return found


def diagram_layers(text: str) -> tuple[list[set[str]], list[str]]:
    """The layer lines of the diagram under ``## Layers`` (as sets of module names) and
    the names after its blank line (the packages on the side)."""
    section = text.split("## Layers", 1)[1]
    block = section.split("```", 2)[1]
    layers: list[set[str]] = []
    side: list[str] = []
    after_blank = False
    for line in block.splitlines()[1:]:
        if not line.strip():
            after_blank = bool(layers)
            continue
        if after_blank:  # a package on the side: its name, then prose
            side.append(_dotted(line.split()[0]))
        else:
            layers.append({_dotted(t) for t in line.split() if LAYER_TOKEN.match(t)})
    return layers, side


def _dotted(token: str) -> str:
    return "skgate." + token.removesuffix("/").removesuffix(".py").replace("/", ".")


def contract_layers() -> list[set[str]]:
    toml: Any = importlib.import_module("tomllib")
    data = toml.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (layers,) = [
        c["layers"] for c in data["tool"]["importlinter"]["contracts"] if c["id"] == "layers"
    ]
    return [{name.strip() for name in layer.split("|")} for layer in layers]


def test_architecture_names_every_module() -> None:
    named = named_modules(ARCH.read_text(encoding="utf-8"))
    assert [m for m in modules() if m not in named] == []


def test_the_module_check_sees_a_missing_one() -> None:
    text = "### evidence/\n\n- `load.py`: the reader.\n\n### runner.py\n\n- `runner.py`\n"
    named = named_modules(text)
    assert "evidence/load.py" in named and "runner.py" in named
    assert "evidence/seal.py" not in named


@pytest.mark.skipif(sys.version_info < (3, 11), reason="reads pyproject.toml with tomllib")
def test_the_layer_diagram_is_the_import_linter_contract() -> None:
    layers, side = diagram_layers(ARCH.read_text(encoding="utf-8"))
    assert layers == contract_layers()
    assert side == ["skgate.sim"]


def test_the_diagram_reader_sees_a_layer_out_of_place() -> None:
    text = (
        "## Layers\n\n```\n cli/  top\n runner.py  r   api.py  a\n model/  bottom\n\n"
        " sim/  aside\n```\n"
    )
    layers, side = diagram_layers(text)
    assert layers == [{"skgate.cli"}, {"skgate.runner", "skgate.api"}, {"skgate.model"}]
    assert side == ["skgate.sim"]
    assert layers != [{"skgate.cli"}, {"skgate.model"}, {"skgate.runner", "skgate.api"}]
