"""The ASCII words a Chinese render may keep (issue 30: "Chinese all through").

A zh report, HTML page or demo output is Chinese except for what is not a word of a
language: paths, argv and code (backticks, code blocks, ``<code>``/``<pre>``), file and
op names, process and program names, signal and rule ids, environment variable names,
units and numbers. :func:`english_words` returns any other ASCII word left in a text.
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

#: Names that stay as they are in any language: programs, processes and kernel terms
#: the contract itself names (C1-C8), record and file kinds, units.
NAMES = frozenset(
    [
        "skgate",
        "opc",
        "op_compiler",
        "pid",
        "pgid",
        "sid",
        "argv",
        "cgroup",
        "fork",
        "exec",
        "events",
        "scan",
        "summary",
        "error",
        "succ",
        "run",
        "Python",
        "PYTHONPATH",
        "PATH",
        "CPU",
        "CPUs",
        "NPU",
        "CANN",
        "torchair",
        "SuperKernel",
        "shebang",
        "kernel",
        "s",
        "ms",
        "MiB",
        "KiB",
        "GiB",
        "setsid",
        "pth",
        "sys",
        "path",
        "sitecustomize",
        "usercustomize",
        "setuptools",
        "ppid",
        "_distutils_hack",
        "opp",
        "Linux",
        "HTML",
        "JSON",
        "Markdown",
        "UTC",
    ]
)

_CODE = re.compile(
    r"```.*?```|`[^`\n]*`|<code[^>]*>.*?</code>|<pre[^>]*>.*?</pre>|<script.*?</script>"
    r"|<style.*?</style>|<title>.*?</title>|<td class=\"v\">.*?</td>|「[^」]*」",
    re.S,
)
_TAG = re.compile(r"<[^>]+>")
_SENTENCE = re.compile(r"(?<![\w/.-])[a-z]{2,}(?: [a-z]{2,}){2,}(?![\w/.-])")
#: Paths and file names (anything with a slash, or a dotted name like seal.json), URLs.
_PATHLIKE = re.compile(
    r"\S*/\S*|\b[\w.-]+\.(?:json|jsonl|log|run|py|pth|html|sh|o)\b|(?<!\w)\.(?:run|o|pth|py)\b"
)
_WORD = re.compile(r"[A-Za-z][A-Za-z_'-]*[A-Za-z]|[A-Za-z]")
#: Rule ids (C2.5), signals (SIGKILL), environment names (ASCEND_OPP_PATH), identifiers
#: (kernel_meta, op types such as HcPre or GroupedMatmul), hex digests.
_KEPT = re.compile(r"^(C\d(\.\d)?|SIG[A-Z]+|[A-Z][A-Z0-9_]{2,}|\w+_\w+|[A-Z][a-z]+[A-Z]\w*)$")


def english_words(text: str, names: frozenset[str] = frozenset()) -> list[str]:
    """ASCII words of a zh render that are not names, code, paths or ids (should be []).

    ``names``: further names from the evidence (process and op names)."""
    # Code, paths and quotes are data, unless one holds a sentence (three English words
    # in a row): a note recorded in English is still English when shown as a value.
    sentences = [
        m.group(0)
        for m in _CODE.finditer(text)
        if not m.group(0).startswith("「") and _SENTENCE.search(_TAG.sub(" ", m.group(0)))
    ]
    text = _CODE.sub(" ", text) + " " + " ".join(_TAG.sub(" ", x) for x in sentences)
    text = html.unescape(_TAG.sub(" ", text))
    text = re.sub(r"(?<![\w-])--?[A-Za-z][\w-]*", " ", text)  # options, as typed
    text = _PATHLIKE.sub(" ", text)
    text = re.sub(r"\b\w*\d\w*\b", " ", text)  # numbers, ids, digests, timestamps
    found = []
    for word in _WORD.findall(text):
        if word in NAMES or word in names or _KEPT.match(word):
            continue
        found.append(word)
    return found


def evidence_names(attempts: list[Path]) -> frozenset[str]:
    """Process names and op names the attempts' evidence holds (they stay as they are)."""
    names: set[str] = set()
    for attempt in attempts:
        for record in ("ownership.json", "stages.json", "census.json"):
            path = attempt / record
            if path.is_file():
                names.update(_WORD.findall(path.read_text(encoding="utf-8", errors="replace")))
        verdict = attempt / "verdict.json"
        if verdict.is_file():  # the stage names of the [summary] lines, as printed
            summary = json.loads(verdict.read_text(encoding="utf-8")).get("summary") or {}
            names.update(str(s.get("name")) for s in summary.get("stages", []))
    return frozenset(names)
