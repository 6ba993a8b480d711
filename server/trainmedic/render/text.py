"""Diagnosis → what people and programs read: terminal text, the JSON contract, Markdown."""

from __future__ import annotations

import json
import math
import textwrap
from collections import Counter
from typing import Any

from trainmedic.diagnosis.attribution import chronological
from trainmedic.catalogue.rules import Catalogue, Rule
from trainmedic.metrics.detectors import DETECTORS
from trainmedic.model import Diagnosis, Finding, Line, Role
from trainmedic.render.redact import redact

TEXT_EVIDENCE = 6
TEXT_WIDTH = 160
TEXT_WRAP = 96
TIMELINE_ROWS = 12


def _shown(text: str, secrets: bool) -> str:
    return text if secrets else redact(text)


def finding_dict(finding: Finding, rule: Rule, secrets: bool = False) -> dict[str, Any]:
    """One diagnosis of the JSON contract; evidence is redacted unless `secrets`."""
    return {
        "rule_id": finding.rule_id,
        "title": rule.title,
        "role": finding.role.value,
        "confidence": finding.confidence,
        "rank": finding.rank,
        "evidence": [{"path": ln.path, "line": ln.number, "text": _shown(ln.text, secrets)}
                     for ln in finding.evidence],
        "fix": rule.fix,
        "verify": rule.verify_command,
        "related": list(rule.related),
    }


def to_dict(diagnosis: Diagnosis, catalogue: Catalogue, secrets: bool = False) -> dict[str, Any]:
    """The JSON contract of `trainmedic diagnose --format json`."""
    return {
        "initiating_rank": diagnosis.initiating_rank,
        "initiating_reason": diagnosis.reason,
        "diagnoses": [finding_dict(f, catalogue.by_id[f.rule_id], secrets)
                      for f in diagnosis.findings],
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
        "series": diagnosis.series,
    }


def render_json(diagnosis: Diagnosis, catalogue: Catalogue, secrets: bool = False) -> str:
    return json.dumps(to_dict(diagnosis, catalogue, secrets), indent=2, ensure_ascii=False)


def _clip(text: str, width: int = TEXT_WIDTH) -> str:
    text = text.rstrip()
    return text if len(text) <= width else text[: width - 1] + "…"


def _evidence_lines(lines: tuple[Line, ...], secrets: bool,
                    limit: int = TEXT_EVIDENCE) -> list[str]:
    """The first and the last lines of the evidence: how it started and how it ended."""
    def show(ln: Line) -> str:
        return f"    {ln.path}:{ln.number}: {_clip(_shown(ln.text, secrets).strip())}"

    if len(lines) <= limit:
        return [show(ln) for ln in lines]
    half = limit // 2
    return [*map(show, lines[:half]), f"    … {len(lines) - limit} more",
            *map(show, lines[-half:])]


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


SPARK = "▁▂▃▄▅▆▇█"
SPARK_WIDTH = 48


def sparkline(values: list[float | None]) -> str:
    """One character per value; log-scaled when the values span orders of magnitude."""
    finite = [v for v in values if v is not None]
    if not finite:
        return "×" * len(values)
    logarithmic = min(finite) > 0 and max(finite) / min(finite) > 100

    def level(v: float) -> float:
        return math.log10(v) if logarithmic else v

    low, high = level(min(finite)), level(max(finite))
    span = (high - low) or 1.0
    return "".join("×" if v is None else SPARK[int((level(v) - low) / span * (len(SPARK) - 1))]
                   for v in values)


def _sparklines(series: dict[str, Any]) -> list[str]:
    if not series:
        return []
    out = ["", "Metrics:"]
    for name, data in series.items():
        values = [value for _, value in data["points"]]
        step = max(1, math.ceil(len(values) / SPARK_WIDTH))
        shown = values[::step]
        last = values[-1] if values else None
        rank = f" (rank {data['rank']})" if data["rank"] is not None else ""
        out.append(f"  {name:<10} {sparkline(shown):<{SPARK_WIDTH}}  last "
                   f"{'nan/inf' if last is None else f'{last:.4g}'}{rank}")
        for anomaly in data["anomalies"][:3]:
            out.append(f"  {'':<10} ^ {anomaly['detector']} at "
                       f"{anomaly['path']}:{anomaly['line']}")
    return out


def _indent(text: str, prefix: str = "    ") -> list[str]:
    return [prefix + line if line else "" for line in text.strip().splitlines()]


def render_text(diagnosis: Diagnosis, catalogue: Catalogue, secrets: bool = False) -> str:
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
        out.extend(_evidence_lines(top.evidence, secrets))
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
            out.append(f"    {first.path}:{first.number}: "
                       f"{_clip(_shown(first.text, secrets).strip())}")
    if not roots and diagnosis.initiating_rank is not None:
        out.append("")
        out.append(f"Initiating rank: {diagnosis.initiating_rank}")
        out.extend(_wrap(f"({diagnosis.reason})", "  "))
    out.extend(_timeline(diagnosis))
    out.extend(_sparklines(diagnosis.series))
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
        "## Fix", f"```text\n{rule.fix}\n```",
        "## Prevention", bullets(rule.prevention),
        "## Verify", f"```sh\n{rule.verify_command}\n```\n{rule.verify_explains}",
        "## Affected systems", bullets(rule.affected_systems),
    ]
    parts += ["## Fingerprint to monitor", _monitor(rule)]
    if rule.related:
        parts += ["## Related", ", ".join(f"`{r}`" for r in rule.related)]
    if rule.references:
        parts += ["## References",
                  "\n".join(f"- [{r.title}]({r.url})" for r in rule.references)]
    return "\n\n".join(parts) + "\n"


def _monitor(rule: Rule) -> str:
    fingerprint = next((fp for fp in rule.fingerprints if fp.name == rule.monitor), None)
    if fingerprint is not None:
        return f"`{fingerprint.name}`: `{fingerprint.pattern}`"
    return f"`{rule.monitor}` (metric detector: {DETECTORS[rule.monitor][0]})"


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
    out += [f"  {d.name} (metric detector, weight {d.weight}"
            + "".join(f", {k}={v:g}" for k, v in d.params) + f"): {DETECTORS[d.name][0]}"
            for d in rule.detectors]
    if rule.related:
        out += ["", "Related: " + ", ".join(rule.related)]
    if rule.references:
        out += ["", "References:", *(f"  - {r.title}: {r.url}" for r in rule.references)]
    if rule.source:
        out += ["", f"Source: {rule.source}"]
    return "\n".join(out) + "\n"


def rank_of(finding: Finding, line: Line) -> int | None:
    """The rank that printed an evidence line, also when only the matched text named it."""
    if line.rank is not None:
        return line.rank
    ranks = [rank for rank, first in finding.first_by_rank if first == line]
    if ranks:
        return ranks[0]
    return finding.rank if len(finding.first_by_rank) <= 1 else None


def finding_markdown(finding: Finding, diagnosis: Diagnosis, catalogue: Catalogue) -> str:
    """One finding for a hover: what it is, why it happens, the fix, and how to prove the fix."""
    rule = catalogue.by_id[finding.rule_id]
    roots = diagnosis.root_causes
    if roots and finding is roots[0]:
        heading = "Root cause"
    elif finding.role is Role.ROOT:
        heading = "Also found"
    else:
        heading = "Collateral"
    facts = [f"`{rule.id}`", f"confidence {finding.confidence:.2f}"]
    if heading == "Root cause" and diagnosis.initiating_rank is not None:
        facts.append(f"initiating rank {diagnosis.initiating_rank}")
    per_rank = Counter(rank_of(finding, line) for line in finding.evidence)
    ordered = sorted(per_rank.items(), key=lambda item: (item[0] is None, item[0] or 0))
    counts = ", ".join(f"{'no rank' if rank is None else f'rank {rank}'}: {n}"
                       for rank, n in ordered)
    parts = [f"**{heading}: {rule.title}**", " · ".join(facts),
             f"**Why.** {rule.summary}",
             "**Fix**", f"```text\n{rule.fix}\n```",
             f"**Verify:** `{rule.verify_command}`. {rule.verify_explains}",
             f"**Evidence lines per rank:** {counts}"]
    if rule.related:
        parts.append("**Related:** " + ", ".join(f"`{r}`" for r in rule.related))
    return "\n\n".join(parts) + "\n"


def diagnosis_markdown(diagnosis: Diagnosis, catalogue: Catalogue) -> str:
    """The root cause entry for the results panel; a plain statement when there is none."""
    if not diagnosis.findings:
        return "No known failure found in this text.\n"
    top = diagnosis.findings[0]
    head = "" if diagnosis.root_causes else \
        "No root cause found: only collateral failures (another rank or layer failed without " \
        "saying why in this text).\n\n"
    rank = diagnosis.initiating_rank
    reason = f"\n**Initiating rank:** {'none' if rank is None else rank}. {diagnosis.reason}\n" \
        if diagnosis.reason else ""
    return head + finding_markdown(top, diagnosis, catalogue) + reason
