"""The human-readable preflight result (``skgate preflight`` prints these lines)."""

from __future__ import annotations

from collections.abc import Iterable

from skgate.model.skips import findings_of
from skgate.preflight import jobs, self_hooks, torch_npu

# Not ``typing.TYPE_CHECKING``: a run never imports ``typing`` (issue 29).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from skgate.preflight.prepare import LaunchPlan


SCHEMA_PREFLIGHT = "skgate.preflight/1"


def preflight_record(
    plan: LaunchPlan, blocked: Iterable[str] | None = None, baseline: str | None = None
) -> dict[str, Any]:
    """``skgate preflight --json`` (and the MCP tool ``preflight``)."""
    reasons = list(plan.blocked if blocked is None else blocked)
    return {
        "schema": SCHEMA_PREFLIGHT,
        "would_block": bool(reasons),
        "blocked": reasons,
        "controls": plan.controls,
        "baseline": baseline,
    }


def skip_lines(controls: Any) -> list[str]:
    """What will make the compile skip (C6), each in English then Chinese: what
    ``skgate preflight`` prints and ``skgate run`` says before it launches."""
    lines: list[str] = []
    for f in findings_of(controls if isinstance(controls, dict) else {}):
        tag = "REFUSED" if f.blocks else "warning"
        tag_zh = "拒绝" if f.blocks else "警告"
        lines.append(f"skgate: {tag}: {f.en}")
        lines.append(f"skgate: {tag_zh}：{f.zh}")
    return lines


def render_lines(plan: LaunchPlan) -> list[str]:
    """Human-readable preflight result (the CLI prints these lines)."""
    c = plan.controls
    lines: list[str] = []
    py = c.get("python", {})
    lines.append(
        f"interpreter: {py.get('path') or '-'} ({py.get('how')})"
        + (f", Python {py['version']}" if py.get("version") else "")
        + (f" flags {' '.join(py['flags'])}" if py.get("flags") else "")
    )
    tn = c.get("torch_npu")
    if isinstance(tn, dict):
        lines.extend(torch_npu.render(tn))  # issue 27: the release's static-kernel rules
    j = c.get("jobs", {})
    lines.append(f"compile jobs: {jobs.JOBS_VAR}={j.get('value')} ({j.get('rule')})")
    for note in j.get("notes", []):
        lines.append(f"  note: {note}")
    prof = c.get("profiler", {})
    lines.append(
        "profiler schedule: "
        + (f"{prof['text']} via {prof['env_var']}" if prof.get("text") else "framework default")
    )
    h = c.get("hooks", {})
    findings = h.get("findings", [])
    if h.get("skipped"):
        lines.append(
            "start-up hooks: scan skipped: " + "; ".join(str(n) for n in h.get("notes", []))
        )
    else:
        lines.append(
            f"start-up hooks: {len(findings)} finding(s), {h.get('unapproved', 0)} unapproved"
        )
    for f in findings:
        if f.get("approved_by") == "catalogue":
            state = f"allowed by catalogue: {f.get('catalogue_id')}"
        elif f.get("approved"):
            state = f"approved ({f['approved_by']})"
        else:
            state = "BLOCKS"
        lines.append(f"  [{state}] {f['kind']}: {f['path']}")
        lines.append(f"      {f['detail']}")
        lines.append(f"      fingerprint {f['fingerprint']}")
    for a in h.get("allowances", []):
        if a.get("kind") != "known-distribution-hook":  # shown with its finding above
            lines.append(f"  [allowed] {a['path']}: {a['reason']}")
    for p in h.get("problems", []):
        lines.append(f"  [probe problem] {p}")
    for note in h.get("notes", []) if not h.get("skipped") else []:
        lines.append(f"  note: {note}")
    lines.extend(self_hooks.render(c.get("skgate_self", {})))
    pp = c.get("pythonpath", [])
    if pp:
        lines.append("PYTHONPATH (in order):")
        for e in pp:
            flag = "" if e.get("exists") else "  (missing)"
            shadow = f"  shadows {', '.join(e['shadows'])}" if e.get("shadows") else ""
            lines.append(f"  {e['index']}: {e['entry']}{flag}{shadow}")
    fo = c.get("foreign", {})
    if fo.get("seen"):
        lines.append(
            f"foreign compilers seen ({fo.get('policy')}): "
            + ", ".join(f"{r['name']}[{r['pid']}]" for r in fo["seen"])
        )
    le = c.get("leases", {})
    if le.get("devices"):
        lines.append(f"device leases: {le.get('mode')} {le.get('devices')} under {le.get('root')}")
    skips = skip_lines(c)
    if skips:
        lines.append("what will make the compile skip (C6):")
        lines.extend(f"  {line}" for line in skips)
    delta = c.get("env", {}).get("delta", {})
    lines.append(
        "environment delta: "
        f"{len(delta.get('added', {}))} added, {len(delta.get('changed', {}))} changed, "
        f"{len(delta.get('removed', []))} removed"
    )
    if plan.blocked:
        lines.append("BLOCKED (nothing would be launched, exit 3):")
        lines.extend(f"  - {r}" for r in plan.blocked)
        if any("start-up hook (C6)" in r for r in plan.blocked):
            lines.append(
                "  to approve every finding at once: skgate preflight --freeze-baseline FILE, "
                "then run with --hook-baseline FILE"
            )
    elif fo.get("seen") and fo.get("policy") == "wait":
        # Issue 30: never "clean" while a run would wait (C4: foreign compilers are
        # waited for, never signalled).
        seen = fo["seen"]
        named = ", ".join(f"{r['pid']} {(r.get('argv') or [r['name']])[0]}" for r in seen)
        lines.append(
            f"preflight: a run would WAIT for {len(seen)} foreign compiler"
            f"{'s' if len(seen) != 1 else ''} (named: {named}) before launching; nothing "
            "else blocks it"
        )
    else:
        lines.append("preflight clean: the run may launch")
    return lines
