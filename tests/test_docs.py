"""The project's own docs stand alone: links resolve inside the repository, nothing cites
the spec files outside it, and docs/contract.md's C7 table says what the code says (C7)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from skgate.model.phrases import C7

ROOT = Path(__file__).resolve().parent.parent

FENCE = re.compile(r"^(```|~~~).*?^\1[ \t]*$", re.M | re.S)
CODE_SPAN = re.compile(r"(`+)(?:(?!\1).)+?\1", re.S)
INLINE_LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)"
)
REFERENCE_LINK = re.compile(r"^[ ]{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$", re.M)
HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$", re.M)

#: Citations that point outside the repository (a clone does not have them). Built from
#: parts so this file does not match itself.
FORBIDDEN = ("../" + "shared", "shared" + "/spec", "common" + ".md")


def doc_files(root: Path) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def strip_code(text: str) -> str:
    """Markdown without fenced blocks and code spans: what is there is not a link."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def links(text: str) -> list[str]:
    prose = strip_code(text)
    return INLINE_LINK.findall(prose) + REFERENCE_LINK.findall(prose)


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to '-'."""
    text = CODE_SPAN.sub(lambda m: m.group(0).strip("`"), heading)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link in a heading: its text
    text = text.strip().lower()
    text = "".join(ch for ch in text if ch.isalnum() or ch in " -_")
    return text.replace(" ", "-")


def anchors(text: str) -> set[str]:
    seen: dict[str, int] = {}
    out: set[str] = set()
    for heading in HEADING.findall(FENCE.sub("", text)):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def broken_links(doc: Path, root: Path) -> Iterator[str]:
    """Each relative link of ``doc`` that leaves ``root``, names no file, or no anchor."""
    text = doc.read_text(encoding="utf-8")
    for target in links(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target, re.I):
            continue  # http:, https:, mailto:: not a file of the repository
        path_part, _, anchor = target.partition("#")
        dest = (doc.parent / path_part).resolve() if path_part else doc.resolve()
        where = f"{doc.relative_to(root)}: link {target!r}"
        if not dest.is_relative_to(root.resolve()):
            yield f"{where} leaves the repository"
        elif not dest.is_file():
            yield f"{where} names no file"
        elif (
            anchor
            and dest.suffix == ".md"
            and anchor not in anchors(dest.read_text(encoding="utf-8"))
        ):
            yield f"{where}: no heading with that anchor in {dest.name}"


def outside_citations(root: Path) -> Iterator[str]:
    files = doc_files(root) + [
        p
        for p in sorted((root / "src").rglob("*"))
        if p.is_file()
        and p.suffix in {".py", ".md", ".json", ".toml", ".txt"}
        and not any(part.endswith(".egg-info") or part == "__pycache__" for part in p.parts)
    ]
    for path in files:
        for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for bad in FORBIDDEN:
                if bad in line:
                    yield f"{path.relative_to(root)}:{lineno}: cites {bad!r}"


def c7_table(text: str) -> dict[str, str]:
    """English -> Chinese, from the table of the C7 section of docs/contract.md."""
    section = text.split("\n## C7.", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, str] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[0] in ("situation", "") or set(cells[0]) <= {"-", " "}:
            continue
        rows[cells[1]] = cells[2]
    return rows


# ---------------------------------------------------------------------------- the repository


def test_docs_exist_and_readme_links_them() -> None:
    readme = links((ROOT / "README.md").read_text(encoding="utf-8"))
    for name in ("contract.md", "cann-static-compile.md", "architecture.md", "benchmarks.md"):
        assert (ROOT / "docs" / name).is_file()
        assert f"docs/{name}" in readme


@pytest.mark.parametrize("doc", doc_files(ROOT), ids=lambda p: p.name)
def test_every_relative_link_resolves_inside_the_repository(doc: Path) -> None:
    assert list(broken_links(doc, ROOT)) == []


def test_nothing_cites_files_outside_the_repository() -> None:
    assert list(outside_citations(ROOT)) == []


def test_contract_c7_table_is_the_code_phrase_table() -> None:
    table = c7_table((ROOT / "docs" / "contract.md").read_text(encoding="utf-8"))
    assert table == {p["en"]: p["zh"] for p in C7.values()}


# ---------------------------------------------------------------------------- the checkers
# Why: the tests above pass on a good tree whatever the checkers do; these show each one
# finds the faults it exists for.


def _tree(tmp_path: Path, readme: str, docs: dict[str, str]) -> Path:
    (tmp_path / "docs").mkdir(parents=True)
    (tmp_path / "src").mkdir()
    (tmp_path / "README.md").write_text(readme, encoding="utf-8")
    for name, text in docs.items():
        (tmp_path / "docs" / name).write_text(text, encoding="utf-8")
    return tmp_path


def test_checker_finds_each_kind_of_broken_link(tmp_path: Path) -> None:
    root = _tree(
        tmp_path / "repo",
        "[a](docs/a.md) [gone](docs/gone.md) [out](../outside.md) [web](https://x.org/y)\n"
        "`[in code](docs/gone.md)`\n\n```\n[fenced](docs/gone.md)\n```\n"
        "[ref]: docs/missing-ref.md\n",
        {
            "a.md": "# Title\n\n## Which package owns `C1`?\n\n"
            "[ok](#which-package-owns-c1) [bad](#nowhere) [b](b.md#title) [b2](b.md#nope)\n",
            "b.md": "# Title\n",
        },
    )
    (tmp_path / "outside.md").write_text("x", encoding="utf-8")
    found = sorted(m for doc in doc_files(root) for m in broken_links(doc, root))
    assert found == [
        "README.md: link '../outside.md' leaves the repository",
        "README.md: link 'docs/gone.md' names no file",
        "README.md: link 'docs/missing-ref.md' names no file",
        "docs/a.md: link '#nowhere': no heading with that anchor in a.md",
        "docs/a.md: link 'b.md#nope': no heading with that anchor in b.md",
    ]


def test_checker_finds_outside_citations(tmp_path: Path) -> None:
    root = _tree(tmp_path, "see docs/contract.md\n", {"x.md": "ok\n"})
    (root / "src" / "m.py").write_text('"""Rules: ' + FORBIDDEN[1] + '/contract.md."""\n')
    (root / "docs" / "y.md").write_text("[c](" + FORBIDDEN[0] + "/spec/contract.md)\n")
    egg = root / "src" / "pkg.egg-info"
    egg.mkdir()
    (egg / "x.txt").write_text(FORBIDDEN[0] + "\n")  # build output, not a project file
    assert sorted(outside_citations(root)) == [
        f"docs/y.md:1: cites {FORBIDDEN[0]!r}",
        f"docs/y.md:1: cites {FORBIDDEN[1]!r}",
        f"src/m.py:1: cites {FORBIDDEN[1]!r}",
    ]


def test_c7_table_reader_sees_a_changed_phrase() -> None:
    text = (ROOT / "docs" / "contract.md").read_text(encoding="utf-8")
    phrase = C7["interruption"]["zh"]
    changed = c7_table(text.replace(f"| {phrase} |", "| 顶层超时 |"))
    assert changed != {p["en"]: p["zh"] for p in C7.values()}
    assert changed[C7["interruption"]["en"]] == "顶层超时"
