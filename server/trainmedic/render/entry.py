"""A catalogue entry's sections, in order, from the rule's own fields.

The Markdown of hovers, the panel and the reference, and the terminal text of `rules show`, are
both laid out from these sections, so an entry reads the same everywhere.

Annotations are evaluated, as in `model`, for the records' sake.
"""

from typing import NamedTuple

from trainmedic.catalogue.rules import ATTRIBUTIONS, Rule
from trainmedic.metrics.detectors.registry import DETECTORS


class Section(NamedTuple):
    heading: str
    names: tuple[str, ...] = ()  # ids and names, shown as code
    code: str = ""  # shown verbatim
    language: str = "text"
    prose: str = ""
    items: tuple[str, ...] = ()  # a bulleted list
    links: tuple[tuple[str, str], ...] = ()  # (title, url)


def _fingerprints(rule: Rule) -> tuple[str, ...]:
    return (*(f"{fp.name} (weight {fp.weight}"
              + (f", at least {fp.min_count} hits" if fp.min_count > 1 else "")
              + (f", where {fp.where.left} {fp.where.op} {fp.where.right}" if fp.where else "")
              + f"): {fp.pattern}" for fp in rule.fingerprints),
            *(f"{d.name} (metric detector, weight {d.weight}"
              + "".join(f", {k}={v:g}" for k, v in d.params) + f"): {DETECTORS[d.name].MEANS}"
              for d in rule.detectors),
            *((f"{a.when} (rank attribution, weight {a.weight}): {ATTRIBUTIONS[a.when]}",)
              if (a := rule.attribution) is not None else ()))


def _monitor(rule: Rule) -> Section:
    """The high-signal fingerprint (or detector) to alert on, and what it matches."""
    fingerprint = next((fp for fp in rule.fingerprints if fp.name == rule.monitor), None)
    if fingerprint is not None:
        return Section("Fingerprint to monitor", (fingerprint.name,), fingerprint.pattern, "regex")
    return Section("Fingerprint to monitor", (rule.monitor,),
                   prose=f"metric detector: {DETECTORS[rule.monitor].MEANS}")


def _own_fixes(rule: Rule) -> list[Section]:
    """The fix of each fingerprint or detector that has its own, shown when that part matched."""
    out = []
    for part in rule.parts:
        if part.advice is None:
            continue
        verify = "" if part.advice.verify_command == rule.verify_command else \
            f"Verify with `{part.advice.verify_command}`: {part.advice.verify_explains}"
        out.append(Section("Fix when this matched", (part.name,), part.advice.fix, prose=verify))
    return out


def sections(rule: Rule, every_fingerprint: bool = False) -> list[Section]:
    """The entry below its title and summary; `every_fingerprint` adds how the rule matches."""
    out = [
        Section("Symptoms", items=rule.symptoms),
        Section("Root causes", items=rule.causes),
        Section("Fix", code=rule.fix),
        *_own_fixes(rule),
        Section("Prevention", items=rule.prevention),
        Section("Verify", code=rule.verify_command, language="sh", prose=rule.verify_explains),
        Section("Affected systems", items=rule.affected_systems),
        _monitor(rule),
    ]
    if every_fingerprint:
        out.append(Section("Fingerprints", items=_fingerprints(rule)))
    if rule.related:
        out.append(Section("Related", rule.related))
    if rule.references:
        out.append(Section("References", links=tuple((r.title, r.url) for r in rule.references)))
    return out
