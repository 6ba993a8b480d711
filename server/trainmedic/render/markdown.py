"""Diagnosis and catalogue entries → Markdown for hovers, the results panel and the reference."""

from __future__ import annotations

from collections import Counter

from trainmedic.catalogue.rules import Catalogue, Rule
from trainmedic.model import Diagnosis, Finding, Role
from trainmedic.render.entry import Section, sections
from trainmedic.render.initiating import basis_words, initiating_who
from trainmedic.render.unexplained import HEADLINE, failure_text


def _section(section: Section) -> str:
    parts = [f"## {section.heading}"]
    if section.names:
        parts.append(", ".join(f"`{name}`" for name in section.names))
    if section.code:
        parts.append(f"```{section.language}\n{section.code}\n```")
    if section.prose:
        parts.append(section.prose)
    if section.items:
        parts.append("\n".join(f"- {item}" for item in section.items))
    if section.links:
        parts.append("\n".join(f"- [{title}]({url})" for title, url in section.links))
    return "\n\n".join(parts)


def rule_markdown(rule: Rule) -> str:
    """The whole catalogue entry as Markdown (hovers, the results panel, the reference)."""
    parts = [f"# {rule.title}", f"`{rule.id}` · {rule.category} · {rule.role.value}",
             rule.summary, *map(_section, sections(rule))]
    return "\n\n".join(parts) + "\n"


def finding_markdown(finding: Finding, diagnosis: Diagnosis, catalogue: Catalogue) -> str:
    """One finding for a hover: what it is, why it happens, the fix, and how to prove the fix."""
    rule = catalogue.by_id[finding.rule_id]
    advice = rule.advice(finding.matched)
    roots = diagnosis.root_causes
    if roots and finding is roots[0]:
        heading = "Root cause"
    elif finding.role is Role.ROOT:
        heading = "Also found"
    else:
        heading = "Collateral"
    facts = [f"`{rule.id}`", f"confidence {finding.confidence:.2f}"]
    if heading == "Root cause" and diagnosis.initiating_rank is not None:
        facts.append(f"initiating rank {initiating_who(diagnosis)} ({basis_words(diagnosis)})")
    per_rank = Counter(finding.rank_of(line) for line in finding.evidence)
    ordered = sorted(per_rank.items(), key=lambda item: (item[0] is None, item[0] or 0))
    counts = ", ".join(f"{'no rank' if rank is None else f'rank {rank}'}: {n}"
                       for rank, n in ordered)
    parts = [f"**{heading}: {rule.title}**", " · ".join(facts),
             f"**Why.** {rule.summary}",
             "**Fix**", f"```text\n{advice.fix}\n```",
             f"**Verify:** `{advice.verify_command}`. {advice.verify_explains}",
             f"**Evidence lines per rank:** {counts}"]
    if rule.related:
        parts.append("**Related:** " + ", ".join(f"`{r}`" for r in rule.related))
    return "\n\n".join(parts) + "\n"


def diagnosis_markdown(diagnosis: Diagnosis, catalogue: Catalogue) -> str:
    """The root cause entry for the results panel; a plain statement when there is none."""
    who = "none" if diagnosis.initiating_rank is None else initiating_who(diagnosis)
    words = basis_words(diagnosis)
    reason = (f"\n**Initiating rank:** {who}. {words[0].upper()}{words[1:]}. "
              f"{diagnosis.reason}\n") if diagnosis.reason else ""
    failed = diagnosis.unexplained
    if not diagnosis.root_causes and failed:
        what = failure_text(failed[0]).replace("`", "'")
        collateral = finding_markdown(diagnosis.findings[0], diagnosis, catalogue) \
            if diagnosis.findings else ""
        return f"**{HEADLINE}**`{what}`\n\n" + collateral + reason
    head = ""
    anomalies = diagnosis.unexplained_anomalies
    if not diagnosis.root_causes and anomalies:
        first = anomalies[0]
        head = (f"No known root cause; unexplained metric anomaly: {first.means} "
                f"(`{first.line.path}:{first.line.number}`).\n\n")
    if not diagnosis.findings:
        return head[:-1] if head else "No known failure found in this text.\n"
    top = diagnosis.findings[0]
    if not diagnosis.root_causes:
        head += "No root cause found: only collateral failures (another rank or layer failed " \
            "without saying why in this text).\n\n"
    return head + finding_markdown(top, diagnosis, catalogue) + reason
