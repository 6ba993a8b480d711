"""Each rule's own examples through the engine: what must fire fires, look-alikes stay quiet."""

from __future__ import annotations

from dataclasses import dataclass

from trainmedic.catalogue.rules import Catalogue, Rule
from trainmedic.diagnosis.engine import diagnose_text


@dataclass(frozen=True)
class RuleResult:
    rule_id: str
    failures: tuple[str, ...]
    positives: int
    negatives: int

    @property
    def passed(self) -> bool:
        return not self.failures


def self_test(rule: Rule, within: Catalogue) -> RuleResult:
    """The rule's examples (`within`'s, the catalogue that holds it) with the rule alone; a rule
    that the rank attribution fires is run within the whole of `within`, whose collateral
    reports the attribution reads."""
    alone = Catalogue((rule,))
    if rule.attribution is not None:
        alone = within.merged(alone)
    examples = within.examples(rule.id)
    failures = []
    for index, example in enumerate(examples.match):
        fired = [f.rule_id for f in diagnose_text(example.text, alone, "<example>").findings]
        if rule.id not in fired:
            failures.append(f"match[{index}] did not fire ({example.source})")
    for index, example in enumerate(examples.no_match):
        fired = [f.rule_id for f in diagnose_text(example.text, alone, "<example>").findings]
        if rule.id in fired:
            failures.append(f"no_match[{index}] fired ({example.source})")
    return RuleResult(rule.id, tuple(failures), len(examples.match), len(examples.no_match))


def self_test_all(catalogue: Catalogue) -> list[RuleResult]:
    return [self_test(rule, catalogue) for rule in catalogue.rules]
