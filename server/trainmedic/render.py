"""Diagnosis → what people and programs read: terminal text, the JSON contract, Markdown."""

from __future__ import annotations

import json
import textwrap
from collections import Counter
from typing import Any

from trainmedic.attribution import chronological
from trainmedic.catalogue import Catalogue, Rule
from trainmedic.model import Diagnosis, Finding, Line, Role

TEXT_EVIDENCE = 6
TEXT_WIDTH = 160
TEXT_WRAP = 96
TIMELINE_ROWS = 12


def finding_dict(finding: Finding, rule: Rule) -> dict[str, Any]:
    return {
        "rule_id": finding.rule_id,
        "title": rule.title,
        "role": finding.role.value,
        "confidence": finding.confidence,
        "rank": finding.rank,
        "evidence": [{"path": ln.path, "line": ln.number, "text": ln.text}
                     for ln in finding.evidence],
        "fix": rule.fix,
        "verify": rule.verify_command,
    }


def to_dict(diagnosis: Diagnosis, catalogue: Catalogue) -> dict[str, Any]:
    """The JSON contract of `trainmedic diagnose --format json`."""
    return {
        "initiating_rank": diagnosis.initiating_rank,
        "initiating_reason": diagnosis.reason,
        "diagnoses": [finding_dict(f, catalogue.by_id[f.rule_id]) for f in diagnosis.findings],
        "ranks": {
            str(rank): {
                "status": report.status.value,
                "first_failure_line": (
                    {"path": report.first_failure.path, "line": report.first_failure.number}
                    if report.first_failure else None
                ),
            }
            for rank, report in diagnosis.ranks.items()
        },
    }


def render_json(diagnosis: Diagnosis, catalogue: Catalogue) -> str:
    return json.dumps(to_dict(diagnosis, catalogue), indent=2, ensure_ascii=False)


def _clip(text: str, width: int = TEXT_WIDTH) -> str:
    text = text.rstrip()
    return text if len(text) <= width else text[: width - 1] + "…"


def _evidence_lines(lines: tuple[Line, ...], limit: int = TEXT_EVIDENCE) -> list[str]:
    shown = [f"    {ln.path}:{ln.number}: {_clip(ln.text.strip())}" for ln in lines[:limit]]
    if len(lines) > limit:
        shown.append(f"    … {len(lines) - limit} more")
    return shown


def _wrap(text: str, prefix: str = "") -> list[str]:
    return textwrap.wrap(text, TEXT_WRAP, initial_indent=prefix, subsequent_indent=prefix,
                         break_on_hyphens=False, break_long_words=False) or [""]


def _timeline(diagnosis: Diagnosis) -> list[str]:
    """First failure per rank in the order they happened, with offsets from the first."""
    if not diagnosis.ranks:
        return []
    rows = [(rank, report, report.first_failure) for rank, report in diagnosis.ranks.items()
            if report.first_failure is not None]
    order = {path: i for i, path in enumerate(dict.fromkeys(line.path for _, _, line in rows))}
    position = {id(line): i for i, line in
                enumerate(chronological((line for _, _, line in rows), order))}
    rows.sort(key=lambda row: position[id(row[2])])
    start = rows[0][2].timestamp if rows else None
    out = ["", "Ranks (first failure per rank, in order):"]
    for rank, report, line in rows[:TIMELINE_ROWS]:
        offset = (f"+{line.timestamp - start:.3f}s"
                  if start is not None and line.timestamp is not None else "")
        out.append(f"  rank {rank:<5} {offset:>10}  {report.status.value:<17} "
                   f"{report.rule_id or '':<24} {line.path}:{line.number}")
    if len(rows) > TIMELINE_ROWS:
        out.append(f"  … {len(rows) - TIMELINE_ROWS} more failing ranks")
    counts = Counter(report.status.value for report in diagnosis.ranks.values())
    out.append("  " + ", ".join(f"{n} {status}" for status, n in sorted(counts.items())))
    return out


def _indent(text: str, prefix: str = "    ") -> list[str]:
    return [prefix + line if line else "" for line in text.strip().splitlines()]


def render_text(diagnosis: Diagnosis, catalogue: Catalogue) -> str:
    """What a person reads in a terminal: the root cause first, with proof and a fix."""
    roots = diagnosis.root_causes
    out: list[str] = []
    if not roots:
        out.append("No root cause found.")
        if diagnosis.findings:
            out.append("Collateral failures only (another rank or layer failed without saying "
                       "why in this input):")
    else:
        top = roots[0]
        rule = catalogue.by_id[top.rule_id]
        out.append(f"Root cause: {rule.title}  [{rule.id}, confidence {top.confidence:.2f}]")
        rank = diagnosis.initiating_rank
        out.append(f"Initiating rank: {rank if rank is not None else 'not determined'}")
        if diagnosis.reason:
            out.extend(_wrap(f"({diagnosis.reason})", "  "))
        out.append("")
        out.extend(_wrap(rule.summary))
        out.append("")
        out.append("Evidence:")
        out.extend(_evidence_lines(top.evidence))
        out.append("")
        out.append("Fix:")
        out.extend(_indent(rule.fix))
        out.append("")
        out.append(f"Verify:  {rule.verify_command}")
        out.extend(_wrap(rule.verify_explains, "    "))
    others = [f for f in diagnosis.findings if not roots or f is not roots[0]]
    if others:
        out.append("")
        out.append("Also found:")
        for finding in others:
            rule = catalogue.by_id[finding.rule_id]
            where = f"rank {finding.rank}" if finding.rank is not None else "rank ?"
            role = "collateral" if finding.role is Role.COLLATERAL else "root"
            out.append(f"  - {rule.id} ({role}, {where}, confidence {finding.confidence:.2f}): "
                       f"{rule.title}")
            first = finding.first
            out.append(f"    {first.path}:{first.number}: {_clip(first.text.strip())}")
    if not roots and diagnosis.initiating_rank is not None:
        out.append("")
        out.append(f"Initiating rank: {diagnosis.initiating_rank}")
        out.extend(_wrap(f"({diagnosis.reason})", "  "))
    out.extend(_timeline(diagnosis))
    for warning in diagnosis.warnings:
        out.append(f"warning: {warning}")
    return "\n".join(out) + "\n"


def rule_markdown(rule: Rule) -> str:
    """The whole catalogue entry as Markdown (hovers, the results panel, the reference)."""
    def bullets(items: tuple[str, ...]) -> str:
        return "\n".join(f"- {item}" for item in items)

    parts = [
        f"# {rule.title}",
        f"`{rule.id}` · {rule.category} · {rule.role.value}",
        rule.summary,
        "## Symptoms", bullets(rule.symptoms),
        "## Root causes", bullets(rule.causes),
        "## Fix", rule.fix,
        "## Prevention", bullets(rule.prevention),
        "## Verify", f"```sh\n{rule.verify_command}\n```\n{rule.verify_explains}",
        "## Affected systems", bullets(rule.affected_systems),
    ]
    monitor = next(fp for fp in rule.fingerprints if fp.name == rule.monitor)
    parts += ["## Fingerprint to monitor", f"`{monitor.name}`: `{monitor.pattern}`"]
    if rule.related:
        parts += ["## Related", ", ".join(f"`{r}`" for r in rule.related)]
    if rule.references:
        parts += ["## References",
                  "\n".join(f"- [{r.title}]({r.url})" for r in rule.references)]
    return "\n\n".join(parts) + "\n"


def rule_text(rule: Rule) -> str:
    """The whole entry for a terminal (`trainmedic rules show`)."""
    out = [f"{rule.title}", f"id: {rule.id}   category: {rule.category}   role: {rule.role.value}",
           "", *_indent(rule.summary, ""), ""]
    for heading, items in (("Symptoms", rule.symptoms), ("Root causes", rule.causes)):
        out += [f"{heading}:", *(f"  - {item}" for item in items), ""]
    out += ["Fix:", *_indent(rule.fix, "  "), ""]
    out += ["Prevention:", *(f"  - {item}" for item in rule.prevention), ""]
    out += [f"Verify: {rule.verify_command}", *_indent(rule.verify_explains, "  "), ""]
    out += ["Affected systems:", *(f"  - {s}" for s in rule.affected_systems), ""]
    out += [f"Monitor: {rule.monitor}", "Fingerprints:"]
    out += [f"  {fp.name} (weight {fp.weight}"
            + (f", at least {fp.min_count} hits" if fp.min_count > 1 else "")
            + (f", where {fp.where.left} {fp.where.op} {fp.where.right}" if fp.where else "")
            + f"): {fp.pattern}" for fp in rule.fingerprints]
    if rule.related:
        out += ["", "Related: " + ", ".join(rule.related)]
    if rule.references:
        out += ["", "References:", *(f"  - {r.title}: {r.url}" for r in rule.references)]
    if rule.source:
        out += ["", f"Source: {rule.source}"]
    return "\n".join(out) + "\n"
