"""Diagnosis → the JSON contract of `trainmedic diagnose --format json` and the LSP command."""

from __future__ import annotations

import json
from typing import Any

from trainmedic.catalogue.rules import Catalogue, Rule
from trainmedic.model import Diagnosis, Finding, Plot, Unexplained
from trainmedic.render.redact import evidence_text, evidence_texts


def finding_dict(finding: Finding, rule: Rule, secrets: bool = False) -> dict[str, Any]:
    """One diagnosis of the JSON contract; evidence is redacted unless `secrets`. The fix is
    that of the cause which matched, when the rule has one for it."""
    advice = rule.advice(finding.matched)
    return {
        "rule_id": finding.rule_id,
        "title": rule.title,
        "role": finding.role.value,
        "confidence": finding.confidence,
        "rank": finding.rank,
        "evidence": [{"path": ln.path, "line": ln.number, "rank": finding.rank_of(ln),
                      "text": text}
                     for ln, text in zip(finding.evidence, evidence_texts(
                         (ln.text for ln in finding.evidence), secrets), strict=True)],
        "fix": advice.fix,
        "verify": advice.verify_command,
        "related": list(rule.related),
    }


def rule_dict(rule: Rule) -> dict[str, Any]:
    """A catalogue entry's main fields, for programs that explain a diagnosis."""
    return {"rule_id": rule.id, "title": rule.title, "category": rule.category,
            "role": rule.role.value, "summary": rule.summary, "fix": rule.fix,
            "verify": rule.verify_command, "related": list(rule.related)}


def unexplained_dict(failure: Unexplained, secrets: bool = False) -> dict[str, Any]:
    """One failure no rule explains; message and evidence are redacted unless `secrets`."""
    line = failure.line
    return {
        "exception": failure.exception,
        "message": evidence_text(failure.message, secrets),
        "rank": failure.rank,
        "evidence": {"path": line.path, "line": line.number,
                     "text": evidence_text(line.text, secrets)},
    }


def plot_dict(plot: Plot) -> dict[str, Any]:
    """One metric's series: its rank, [x, value] points (null for NaN/inf), anomalies, and the
    other ranks' points by rank."""
    return {
        "rank": plot.rank,
        "points": [[x, value] for x, value in plot.points],
        "other_ranks": {str(rank): [[x, value] for x, value in points]
                        for rank, points in plot.other_ranks},
        "anomalies": [{"detector": a.detector, "rank": a.line.rank, "path": a.line.path,
                       "line": a.line.number, "x": a.x} for a in plot.anomalies],
    }


def to_dict(diagnosis: Diagnosis, catalogue: Catalogue, secrets: bool = False) -> dict[str, Any]:
    """The JSON contract of `trainmedic diagnose --format json`."""
    return {
        "initiating_rank": diagnosis.initiating_rank,
        "initiating_basis": diagnosis.initiating_basis.value,
        "initiating_host": diagnosis.initiating_host,
        "initiating_reason": diagnosis.reason,
        "diagnoses": [finding_dict(f, catalogue.by_id[f.rule_id], secrets)
                      for f in diagnosis.findings],
        "unexplained": [unexplained_dict(u, secrets) for u in diagnosis.unexplained],
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
        "series": {plot.metric: plot_dict(plot) for plot in diagnosis.series},
    }


def render_json(diagnosis: Diagnosis, catalogue: Catalogue, secrets: bool = False,
                indent: bool = True) -> str:
    """The contract as text: indented for a person, else on one line (the standard library
    indents in Python code, ten times slower than its one-line encoder in C: a long log's
    series take 20 ms)."""
    return json.dumps(to_dict(diagnosis, catalogue, secrets), indent=2 if indent else None,
                      ensure_ascii=False)
