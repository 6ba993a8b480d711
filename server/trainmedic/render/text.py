"""Diagnosis and catalogue entries → what a person reads in a terminal."""

from __future__ import annotations

import textwrap
from collections import Counter

from trainmedic.catalogue.rules import Catalogue, Rule
from trainmedic.model import Basis, Diagnosis, Line, Role, Unexplained
from trainmedic.render.entry import Section, sections
from trainmedic.render.initiating import basis_words, initiating_who
from trainmedic.render.redact import evidence_text, evidence_texts
from trainmedic.render.sparkline import sparkline_rows
from trainmedic.render.unexplained import HEADLINE, failure_text

TEXT_EVIDENCE = 6
TEXT_WIDTH = 160
TEXT_WRAP = 96
TIMELINE_ROWS = 12


def _clip(text: str, width: int = TEXT_WIDTH) -> str:
    text = text.rstrip()
    return text if len(text) <= width else text[: width - 1] + "…"


def _evidence_lines(lines: tuple[Line, ...], secrets: bool,
                    limit: int = TEXT_EVIDENCE) -> list[str]:
    """The first and the last lines of the evidence: how it started and how it ended."""
    texts = evidence_texts((ln.text for ln in lines), secrets)
    shown = [f"    {ln.path}:{ln.number}: {_clip(text.strip())}"
             for ln, text in zip(lines, texts, strict=True)]
    if len(shown) <= limit:
        return shown
    half = limit // 2
    return [*shown[:half], f"    … {len(lines) - limit} more", *shown[-half:]]


def _wrap(text: str, prefix: str = "") -> list[str]:
    return textwrap.wrap(text, TEXT_WRAP, initial_indent=prefix, subsequent_indent=prefix,
                         break_on_hyphens=False, break_long_words=False) or [""]


def _timeline(diagnosis: Diagnosis) -> list[str]:
    """First failure per rank in the order they happened, with offsets from the first."""
    if not diagnosis.ranks:
        return []
    rows = [(rank, report, line) for rank in diagnosis.failure_order
            if (line := (report := diagnosis.ranks[rank]).first_failure) is not None]
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


def _failures(failures: tuple[Unexplained, ...], lead: str, secrets: bool) -> list[str]:
    """Failures no rule explains, each with its line."""
    out = []
    for failure in failures:
        out.append(lead + failure_text(failure, secrets))
        out.extend(_evidence_lines((failure.line,), secrets))
    return out


def _initiating(diagnosis: Diagnosis) -> list[str]:
    """The initiating rank and its host, how it was chosen in words, and the evidence for it."""
    head = f"Initiating rank: {initiating_who(diagnosis)}"
    if diagnosis.initiating_rank is not None or diagnosis.ranks or \
            diagnosis.initiating_basis is not Basis.UNDETERMINED:
        head += f" ({basis_words(diagnosis)})"
    out = _wrap(head)
    if diagnosis.reason:
        out.extend(_wrap(f"({diagnosis.reason})", "  "))
    return out


def _indent(text: str, prefix: str = "    ") -> list[str]:
    return [prefix + line if line else "" for line in text.strip().splitlines()]


def _root_cause(diagnosis: Diagnosis, catalogue: Catalogue, secrets: bool) -> list[str]:
    """The first root cause: what it is, the initiating rank, proof, fix and verification."""
    top = diagnosis.root_causes[0]
    rule = catalogue.by_id[top.rule_id]
    advice = rule.advice(top.matched)
    out = [f"Root cause: {rule.title}  [{rule.id}, confidence {top.confidence:.2f}]",
           *_initiating(diagnosis)]
    return [*out, "", *_wrap(rule.summary), "", "Evidence:",
            *_evidence_lines(top.evidence, secrets), "", "Fix:", *_indent(advice.fix), "",
            f"Verify:  {advice.verify_command}", *_wrap(advice.verify_explains, "    ")]


def _no_root_cause(diagnosis: Diagnosis, secrets: bool) -> list[str]:
    """The headline without a root cause: the first failure or metric anomaly no rule explains."""
    if diagnosis.unexplained:
        return _failures(diagnosis.unexplained[:1], HEADLINE, secrets)
    anomalies = diagnosis.unexplained_anomalies
    if anomalies:
        out = [f"No known root cause; unexplained metric anomaly: {anomalies[0].means} "
               f"({anomalies[0].line.path}:{anomalies[0].line.number})"]
    else:
        out = ["No root cause found."]
    if diagnosis.findings:
        out.append("Collateral failures only (another rank or layer failed without saying "
                   "why in this input):")
    return out


def render_text(diagnosis: Diagnosis, catalogue: Catalogue, secrets: bool = False) -> str:
    """What a person reads in a terminal: the root cause first, with proof and a fix."""
    roots = diagnosis.root_causes
    out = _root_cause(diagnosis, catalogue, secrets) if roots else \
        _no_root_cause(diagnosis, secrets)
    failures = diagnosis.unexplained if roots else diagnosis.unexplained[1:]
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
                       f"{_clip(evidence_text(first.text, secrets).strip())}")
    if failures:
        out.extend(["", "Also failed, with nothing in the catalogue to explain it:",
                    *_failures(failures, "  - ", secrets)])
    if not roots and diagnosis.initiating_rank is not None:
        out.append("")
        out.extend(_initiating(diagnosis))
    out.extend(_timeline(diagnosis))
    out.extend(sparkline_rows(diagnosis.series,
                              {a.detector for a in diagnosis.unexplained_anomalies}))
    for warning in diagnosis.warnings:
        out.append(f"warning: {warning}")
    return "\n".join(out) + "\n"


def _section(section: Section) -> list[str]:
    inline = ", ".join(section.names) or (section.code if "\n" not in section.code else "")
    out = [f"{section.heading}:" + (f" {inline}" if inline else "")]
    if section.code and section.code != inline:
        out += _indent(section.code, "  ")
    if section.prose:
        out += _indent(section.prose, "  ")
    out += [f"  - {item}" for item in section.items]
    out += [f"  - {title}: {url}" for title, url in section.links]
    return [*out, ""]


def rule_text(rule: Rule) -> str:
    """The whole entry for a terminal (`trainmedic rules show`), with how it matches."""
    out = [f"{rule.title}", f"id: {rule.id}   category: {rule.category}   role: {rule.role.value}",
           "", *_indent(rule.summary, ""), ""]
    for section in sections(rule, every_fingerprint=True):
        out += _section(section)
    if rule.source:
        out.append(f"Source: {rule.source}")
    return "\n".join(out).rstrip("\n") + "\n"
