"""What a start-up hook scan reports (C6): findings with their fingerprints, and the scan
record written into ``control.json["controls"]["hooks"]``.

Each finding has a fingerprint: sha256 over (kind, path, sha256 of content), so an
approval is bound to one file's exact content.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from skgate.evidence.digest import new_sha256, sha256_bytes
from skgate.model.frozen import field, record, replace

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

SCHEMA_HOOK_SCAN = "skgate.hook-scan/1"

KIND_SITECUSTOMIZE = "sitecustomize"
KIND_USERCUSTOMIZE = "usercustomize"
KIND_PTH_IMPORT = "pth-import"
KIND_PYTHONSTARTUP = "pythonstartup"
KIND_PYTHONPATH = "pythonpath-shadow"
KIND_STARTUP_MODULE = "startup-module"
KIND_PYTHONHOME = "pythonhome"

#: ``approved_by`` of a finding the catalogue of known distribution hooks recognised.
BY_CATALOGUE = "catalogue"


@record
class Finding:
    """One start-up hook. ``fingerprint`` is what an approval names."""

    kind: str
    path: str
    content_sha256: str
    detail: str
    fingerprint: str
    approved_by: str | None = None
    catalogue_id: str | None = None  # set when the catalogue recognised it (even if strict)

    @property
    def approved(self) -> bool:
        return self.approved_by is not None

    @property
    def short(self) -> str:
        return self.fingerprint[:12]

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "path": self.path,
            "content_sha256": self.content_sha256,
            "fingerprint": self.fingerprint,
            "detail": self.detail,
            "approved": self.approved,
            "approved_by": self.approved_by,
            "catalogue_id": self.catalogue_id,
        }

    def approve(self, by: str) -> Finding:
        return replace(self, approved_by=by)


@record
class HookScan:
    """The outcome of a scan: findings, allowances, notes, and probe problems."""

    python: str | None
    interpreter: Mapping[str, Any]
    findings: tuple[Finding, ...] = ()
    allowances: tuple[Mapping[str, str], ...] = ()
    pythonpath: tuple[Mapping[str, Any], ...] = ()
    notes: tuple[str, ...] = ()
    problems: tuple[str, ...] = ()  # probe crash / timeout: blocks (never ignored)
    skipped: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)

    @property
    def unapproved(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if not f.approved)

    def blocked_reasons(self, scanned: str = "", other_way: str = "") -> list[str]:
        """One line per refusal; ``scanned`` says which interpreter was inspected and why,
        ``other_way`` any way out besides the approval, in the same line (issue 30)."""
        reasons = [f"start-up hook scan failed (C6): {p}" for p in self.problems]
        for f in self.unapproved:
            approve = f"approve it with --approve-hook {f.fingerprint}"
            out = f"remove it, {approve}, {other_way}" if other_way else f"remove it, or {approve}"
            reasons.append(
                f"unapproved start-up hook (C6): {f.kind} {f.path} ({f.detail})"
                + (f"; {scanned}" if scanned else "")
                + f"; {out}"
            )
        return reasons

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA_HOOK_SCAN,
            "python": self.python,
            "interpreter": dict(self.interpreter),
            "skipped": self.skipped,
            "findings": [f.to_dict() for f in self.findings],
            "unapproved": len(self.unapproved),
            "allowances": [dict(a) for a in self.allowances],
            "notes": list(self.notes),
            "problems": list(self.problems),
            **dict(self.extra),
        }


# --------------------------------------------------------------------------- helpers


def content_hash(path: str) -> str:
    """sha256 of a file, of a package directory's files, or of a marker when unreadable."""
    p = Path(path)
    try:
        if p.is_dir():
            h = new_sha256()  # a package directory: any size
            for sub in sorted(p.rglob("*")):
                if sub.is_file() and "__pycache__" not in sub.parts:
                    h.update(str(sub.relative_to(p)).encode() + b"\0")
                    h.update(sub.read_bytes() + b"\0")
            return h.hexdigest()
        return sha256_bytes(p.read_bytes())
    except OSError:
        return sha256_bytes(b"<unreadable>")


def fingerprint(kind: str, path: str, content_sha256: str) -> str:
    """Stable id of a finding: sha256 over (kind, path, content hash)."""
    return sha256_bytes(f"{kind}\0{path}\0{content_sha256}".encode())


def make_finding(kind: str, path: str, detail: str, content: str | None = None) -> Finding:
    digest = content if content is not None else content_hash(path)
    return Finding(kind, path, digest, detail, fingerprint(kind, path, digest))
