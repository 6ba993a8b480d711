"""Events → findings → diagnosis: which rules the evidence supports, in what order, on which rank.

Evidence is accumulated in bounded memory (counts, and the first lines of each fingerprint), so
a log of any length gives the same answer as its failing part.
"""

from __future__ import annotations

import re
from collections import Counter, deque
from collections.abc import Callable, Iterable
from functools import cache
from typing import BinaryIO

from trainmedic.catalogue.rules import WAITED_FOR, Catalogue, Rule
from trainmedic.diagnosis.attribution import (
    LAUNCHER_SUMMARIES,
    Attribution,
    attribute_ranks,
    chronological,
)
from trainmedic.diagnosis.unexplained import (
    TRAILER_LINES,
    Afterwards,
    Raised,
    unexplained_failures,
)
from trainmedic.events.extract import EventExtractor
from trainmedic.events.parallel import Submit, scans
from trainmedic.events.scan import ChunkScan, Scanner, SourceStart
from trainmedic.logs.formats import Source
from trainmedic.logs.launcher import LAUNCHER, REPEATED, LauncherReport, read_report
from trainmedic.logs.prefixes import local_only_rank, rank_of_path
from trainmedic.logs.reader import Chunk
from trainmedic.matching.python import Matcher
from trainmedic.metrics.series import MetricSeries, detector_key
from trainmedic.model import Diagnosis, Event, Finding, Hit, Line, Role, Traceback, Unexplained

EVIDENCE_PER_FINGERPRINT = 8
TRACEBACKS_KEPT = 64  # the first ones: where a multi-rank failure starts
TRACEBACKS_RECENT = 16  # and the latest ones: where a long run ended
LAUNCHER_FACTS_KEPT = 100_000
# A finding this sure stays above a rule that outranks it, unless that rule's own confidence is
# within OUTRANK_MARGIN of it: "more specific" is worth little when its evidence is weak.
NEAR_CERTAIN = 0.95
OUTRANK_MARGIN = 0.1


class _RuleEvidence:
    __slots__ = ("counts", "first_by_rank", "last_by_rank", "lines")

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.lines: dict[str, list[Line]] = {}
        self.first_by_rank: dict[int, Line] = {}
        # Each line rank's latest line (keyed as metric lines are: by the line's own rank).
        self.last_by_rank: dict[int | None, Line] = {}


class Evidence:
    """What a whole input said, accumulated in bounded memory."""

    __slots__ = ("last_sample", "launcher", "line_counts", "metrics", "paths", "raised",
                 "ranks_seen", "recent", "repeated", "rules")

    def __init__(self, metrics: MetricSeries) -> None:
        self.rules: dict[str, _RuleEvidence] = {}
        self.raised: list[Raised] = []
        self.recent: deque[Raised] = deque(maxlen=TRACEBACKS_RECENT)
        self.ranks_seen: set[int] = set()
        self.paths: list[str] = []
        self.launcher: list[tuple[Line, Hit]] = []
        self.repeated: set[tuple[str, tuple[tuple[str, str], ...], int | None]] = set()
        self.metrics = metrics
        self.line_counts: dict[str, int] = {}
        self.last_sample: dict[str, dict[int | None, int]] = {}

    @property
    def tracebacks(self) -> list[Traceback]:
        """The first tracebacks, in the order they ended."""
        return [r.traceback for r in self.raised]

    def add(self, event: Event) -> None:
        line = event.line
        if line.rank is not None:
            self.ranks_seen.add(line.rank)
        if event.traceback is not None:
            raised = Raised(event.traceback, line,
                            frozenset(h.rule_id for h in event.hits if h.rule_id != LAUNCHER))
            (self.raised if len(self.raised) < TRACEBACKS_KEPT else self.recent).append(raised)
        for hit in event.hits:
            if hit.rule_id == LAUNCHER:
                self._add_launcher_fact(line, hit)
                continue
            found = self.rules.get(hit.rule_id)
            if found is None:  # not setdefault: that would build one for every hit
                found = self.rules[hit.rule_id] = _RuleEvidence()
            kept = found.lines.get(hit.fingerprint)
            if kept is None:
                kept = found.lines[hit.fingerprint] = []
            if kept and kept[-1] is line:
                continue  # min_count counts lines, not several hits on one line
            found.counts[hit.fingerprint] += 1
            if len(kept) < EVIDENCE_PER_FINGERPRINT:
                kept.append(line)
            found.last_by_rank[line.rank] = line
            rank_text = hit.group("rank")
            rank = int(rank_text) if rank_text and rank_text.isdigit() else line.rank
            if rank is not None:
                self.ranks_seen.add(rank)
                if rank not in found.first_by_rank:
                    found.first_by_rank[rank] = line

    def _add_launcher_fact(self, line: Line, hit: Hit) -> None:
        """Keep a launcher's line, once only for facts that repeat on every line."""
        if len(self.launcher) >= LAUNCHER_FACTS_KEPT:
            return
        if hit.fingerprint in REPEATED:
            key = (hit.fingerprint, hit.groups, line.rank)
            if key in self.repeated:
                return
            self.repeated.add(key)
        self.launcher.append((line, hit))


def metric_series(catalogue: Catalogue) -> MetricSeries:
    """An empty series running every detector configuration the catalogue's rules name."""
    return MetricSeries.for_keys(
        detector_key(d.name, dict(d.params)) for rule in catalogue.rules for d in rule.detectors)


def scanner_for(catalogue: Catalogue, matcher: Matcher | None = None) -> Scanner:
    """A scanner with the catalogue's fingerprints and its rules' own metric patterns."""
    return Scanner(matcher or Matcher(catalogue),
                   (re.compile(p) for rule in catalogue.rules for p in rule.metric_patterns))


def _confidence(rule: Rule, found: _RuleEvidence,
                metrics: MetricSeries) -> tuple[float, list[tuple[str, list[Line]]]]:
    """The combined confidence, and each counted fingerprint or detector with its lines."""
    miss, counted = 1.0, list[tuple[str, list[Line]]]()
    for fp in rule.fingerprints:
        if found.counts[fp.name] >= fp.min_count:
            miss *= 1.0 - fp.weight
            counted.append((fp.name, found.lines.get(fp.name, [])))
    for ref in rule.detectors:
        fired = metrics.fired(detector_key(ref.name, dict(ref.params)))
        if fired:
            miss *= 1.0 - ref.weight
            counted.append((ref.name, fired))
            for line in fired:
                current = found.first_by_rank.get(line.rank) if line.rank is not None else None
                if line.rank is not None and (current is None or (
                        current.path == line.path and line.number < current.number)):
                    found.first_by_rank[line.rank] = line
    return round(1.0 - miss, 3), counted


def _still_running(evidence: Evidence, catalogue: Catalogue,
                   local_only: Callable[[str], int | None]) -> dict[tuple[str, int], int]:
    """Each global rank's last collateral report (a timeout, a lost peer) per file: a rank that
    waited for the others was still training then. Ranks read from a local-rank prefix alone
    are left out: several processes print under one."""
    latest: dict[tuple[str, int], int] = {}
    for rule_id, found in evidence.rules.items():
        rule = catalogue.get(rule_id)
        if rule is None or rule.role is not Role.COLLATERAL:
            continue
        for rank, line in found.last_by_rank.items():
            if rank is not None and local_only(line.text) is None:
                key = (line.path, rank)
                latest[key] = max(latest.get(key, 0), line.number)
    return latest


def _went_on(lines: Iterable[Line], evidence: Evidence, running: dict[tuple[str, int], int],
             local_only: Callable[[str], int | None]) -> tuple[bool, tuple[int, ...]]:
    """Every rank that printed these lines went on after its last one: more than TRAILER_LINES
    on (not its failure's last words, nor a step line its stdout printed late) it printed
    metric lines (steps, losses) or, for a global rank, a collateral report of its own (it was
    still in the collectives). So this did not end the run. Also the ranks that went on."""
    last: dict[tuple[str, int | None], Line] = {}
    for line in lines:
        key = (line.path, line.rank)
        if key not in last or last[key].number < line.number:
            last[key] = line

    def trained_after(line: Line) -> bool:
        samples = evidence.last_sample.get(line.path, {})
        if line.rank is None:  # other processes may print steps after it: who printed it?
            return samples.get(None, 0) > line.number + TRAILER_LINES
        latest = samples.get(line.rank, 0)
        if rank_of_path(line.path) == line.rank:
            latest = max(latest, samples.get(None, 0))  # one rank's own file
        if local_only(line.text) is None:
            latest = max(latest, running.get((line.path, line.rank), 0))
        return latest > line.number + TRAILER_LINES

    went_on = {key: trained_after(line) for key, line in last.items()}
    return bool(went_on) and all(went_on.values()), tuple(sorted(
        {rank for (_, rank), on in went_on.items() if rank is not None and on}
        - {rank for (_, rank), on in went_on.items() if not on}))


def _in_evidence_order(counted: list[tuple[str, list[Line]]],
                       lines: list[Line]) -> tuple[str, ...]:
    """The counted parts' names by their first line in the evidence (ties: as declared)."""
    position = {line: index for index, line in enumerate(lines)}
    first: dict[str, int] = {}
    for name, part in counted:
        at = min((position[line] for line in part), default=len(lines))
        first[name] = min(at, first.get(name, at))
    return tuple(sorted(first, key=first.__getitem__))


def score(evidence: Evidence, catalogue: Catalogue,
          local_only: Callable[[str], int | None]) -> list[Finding]:
    """Findings whose confidence reaches their rule's threshold, most likely root cause first;
    `local_only` is `local_only_rank`, cached for one diagnosis."""
    order = {path: index for index, path in enumerate(evidence.paths)}
    findings = []
    with_detectors = {r.id: _RuleEvidence() for r in catalogue.rules if r.detectors}
    running = _still_running(evidence, catalogue, local_only)
    for rule_id, found in {**with_detectors, **evidence.rules}.items():
        rule = catalogue.get(rule_id)
        if rule is None:
            continue
        confidence, counted = _confidence(rule, found, evidence.metrics)
        if confidence < rule.threshold or not any(part for _, part in counted):
            continue
        lines = chronological({line for _, part in counted for line in part}, order)
        by_rank = sorted(found.first_by_rank.items())
        earliest = chronological([line for _, line in by_rank], order)
        rank = next((r for r, line in by_rank if earliest and line is earliest[0]), None)
        fired = [line for ref in rule.detectors for name, part in counted if name == ref.name
                 for line in part]
        went_on, ranks_went_on = _went_on([*found.last_by_rank.values(), *fired], evidence,
                                          running, local_only)
        findings.append(Finding(rule.id, rule.role, rank, confidence, tuple(lines),
                                tuple(by_rank), _in_evidence_order(counted, lines), went_on,
                                ranks_went_on))
    return _ordered(findings, catalogue, order)


def _goes_before(finding: Finding, other: Finding, catalogue: Catalogue) -> bool:
    """Whether `finding`'s rule, being more specific, is listed before `other` whatever the
    confidences: yes when its rule outranks `other`'s (same role), unless `other` is
    near-certain and `finding`'s own evidence is clearly weaker (more than OUTRANK_MARGIN
    below). A weak specific guess must not bury a generic failure that is almost sure."""
    if other.rule_id not in catalogue.by_id[finding.rule_id].outranks or \
            other.role is not finding.role or finding.went_on > other.went_on:
        return False
    return other.confidence < NEAR_CERTAIN or \
        finding.confidence >= other.confidence - OUTRANK_MARGIN


def _ordered(findings: list[Finding], catalogue: Catalogue,
             order: dict[str, int]) -> list[Finding]:
    """Roots first, those the run went on after last, then by confidence, then by time; then
    a more specific rule goes before the rules it outranks (see `_goes_before`)."""
    timeline = chronological([f.first for f in findings], order)
    sequence = {id(line): i for i, line in enumerate(timeline)}
    findings.sort(key=lambda f: (f.role is not Role.ROOT, f.went_on, -f.confidence,
                                 sequence[id(f.first)]))
    changed = True
    while changed:
        changed = False
        for index, finding in enumerate(findings):
            for earlier in range(index):
                if _goes_before(finding, findings[earlier], catalogue):
                    findings.insert(earlier, findings.pop(index))
                    changed = True
                    break
            if changed:
                break
    return findings


def attributed(catalogue: Catalogue, attribution: Attribution,
               findings: list[Finding]) -> list[Finding]:
    """Findings of the rules fired by the rank attribution itself (`attribution` in a rule):
    when no root-cause rule fired and the attribution found the rank the others waited for."""
    if attribution.rank is None or not attribution.waited_for or \
            any(f.role is Role.ROOT for f in findings):
        return []
    rank, lines = attribution.rank, attribution.waited_for
    own = next(((rank, line) for line in lines if line.rank == rank), None)
    return [Finding(rule.id, rule.role, rank, rule.attribution.weight, lines,
                    (own,) if own else ())
            for rule in catalogue.rules
            if rule.attribution is not None and rule.attribution.when == WAITED_FOR
            and rule.attribution.weight >= rule.threshold]


def unranked_reports(evidence: Evidence, catalogue: Catalogue) -> list[Line]:
    """Lines in which a rank reports a failure elsewhere (a collateral rule's fingerprint
    matched them, whether or not the rule fired) but names no rank: a watchdog's "taking the
    entire process down" may be any rank's. The launcher's summaries are not a rank's."""
    return [line for rule_id, found in evidence.rules.items()
            if (rule := catalogue.get(rule_id)) is not None and rule.role is Role.COLLATERAL
            and rule_id not in LAUNCHER_SUMMARIES and not found.first_by_rank
            for lines in found.lines.values() for line in lines if line.rank is None]


def diagnose_evidence(evidence: Evidence, catalogue: Catalogue) -> Diagnosis:
    order = {p: i for i, p in enumerate(evidence.paths)}
    # `local_only_rank` of the same lines, asked by every rule and by the attribution: a
    # 4096-rank job's last lines are read once, not 16,000 times (50 ms)
    local_only = cache(local_only_rank)
    findings = score(evidence, catalogue, local_only)
    report = read_report(evidence.launcher)
    failures = _unexplained(evidence, findings, report, order)
    attribution = attribute_ranks(findings, evidence.ranks_seen, report, order, local_only,
                                  failures, unranked_reports(evidence, catalogue))
    fired = attributed(catalogue, attribution, findings)
    if fired:
        findings = _ordered([*fired, *findings], catalogue, order)
        failures = _unexplained(evidence, findings, report, order)
    return Diagnosis(tuple(findings), attribution.rank, attribution.ranks,
                     reason=attribution.reason, initiating_basis=attribution.basis,
                     initiating_host=attribution.host,
                     tracebacks=tuple(evidence.tracebacks),
                     series=evidence.metrics.plots(attribution.rank),
                     failure_order=attribution.failure_order, unexplained=failures)


def _unexplained(evidence: Evidence, findings: list[Finding], report: LauncherReport,
                 order: dict[str, int]) -> tuple[Unexplained, ...]:
    return unexplained_failures([*evidence.raised, *evidence.recent], findings, report,
                                Afterwards(evidence.line_counts, evidence.last_sample), order)


class Diagnoser:
    """One run's diagnosis built up chunk by chunk: ask for the answer at any point.

    `diagnose` feeds it the scans of whole inputs in order (from other processes for big ones),
    and `trainmedic watch` what a growing log appends.
    """

    def __init__(self, catalogue: Catalogue, matcher: Matcher | None = None,
                 progress: Callable[[int], None] | None = None) -> None:
        self.catalogue, self.progress = catalogue, progress
        self.bytes_read = 0
        self.scanner = scanner_for(catalogue, matcher)
        self.extractor = EventExtractor()
        self.census: set[int] = set()
        self.evidence = Evidence(metrics=metric_series(catalogue))
        self.times: dict[str, float] = {}
        self.next_line: dict[str, int] = {}

    def start(self, path: str, timestamp: float | None = None) -> None:
        """Announce a source (in the order sources should be read) and its file-wide time."""
        if path not in self.evidence.paths:
            self.evidence.paths.append(path)
            if (rank := rank_of_path(path)) is not None:
                self.census.add(rank)
        if timestamp is not None:
            self.times[path] = timestamp

    def restart(self, path: str) -> None:
        """The source was rewritten: what comes next is its first line again."""
        self.next_line.pop(path, None)
        self.evidence.last_sample.pop(path, None)
        self.extractor.sources.pop(path, None)

    def read(self, source: Source) -> None:
        """A whole source, start to end."""
        for item in self.scanner.scan_source(source):
            self.feed(item)

    def feed(self, item: SourceStart | ChunkScan) -> None:
        """The next item of the ordered scans: a source's start, or its next chunk's scan."""
        if isinstance(item, SourceStart):
            self.start(item.path, item.timestamp)
        else:
            self.fold(item)

    def add(self, chunk: Chunk) -> None:
        self.fold(self.scanner.scan(chunk))

    def fold(self, scan: ChunkScan) -> None:
        """The next scan of its source, in order."""
        first = self.next_line.get(scan.path, 1)
        self.next_line[scan.path] = first + scan.lines
        self.evidence.line_counts[scan.path] = first + scan.lines - 1
        self.census |= scan.ranks
        last_sample = self.evidence.last_sample.setdefault(scan.path, {})
        # A metric line without a rank prefix in a per-rank file (rank3.log) is that rank's:
        # each rank's series and detectors stay its own, as its events do.
        file_rank = rank_of_path(scan.path)
        for sample, number_in_chunk, text, line_rank in scan.samples:
            number = first + number_in_chunk
            rank = file_rank if line_rank is None else line_rank
            self.evidence.metrics.feed(sample, Line(scan.path, number, text, rank))
            last_sample[rank] = number
        for event in self.extractor.extract(scan, first, self.times.get(scan.path)):
            self.evidence.add(event)
        self.bytes_read += scan.size
        if self.progress is not None:
            self.progress(self.bytes_read)

    def diagnosis(self) -> Diagnosis:
        self.evidence.ranks_seen |= self.census | self.evidence.metrics.ranks
        return diagnose_evidence(self.evidence, self.catalogue)


def diagnose(inputs: Iterable[tuple[str, BinaryIO]], catalogue: Catalogue,
             matcher: Matcher | None = None, jobs: int = 1,
             progress: Callable[[int], None] | None = None,
             submit: Submit | None = None, total_bytes: int | None = None) -> Diagnosis:
    """Read every input once and diagnose them together as one run, in up to `jobs` processes
    (kept by the caller when it gives `submit`; `total_bytes`, what the inputs hold, tells
    which: see `scans`); `progress` hears how many bytes are done."""
    diagnoser = Diagnoser(catalogue, matcher, progress)
    for item in scans(diagnoser.scanner, inputs, jobs, submit, total_bytes):
        diagnoser.feed(item)
    return diagnoser.diagnosis()


def diagnose_text(text: str, catalogue: Catalogue, path: str = "<text>",
                  matcher: Matcher | None = None) -> Diagnosis:
    """Diagnose text already in memory (an editor selection, a terminal's output)."""
    import io

    return diagnose([(path, io.BytesIO(text.encode("utf-8", errors="replace")))], catalogue,
                    matcher)
