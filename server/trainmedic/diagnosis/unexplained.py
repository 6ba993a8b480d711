"""Failures no rule explains: the exceptions that ended a run, and workers that exited badly.

When the catalogue has no rule for what broke, the run still failed with something: the last
exception a rank raised, or the exit its launcher reported. Listing it answers "what happened"
where no rule can answer "why"; a healthy run, handled exceptions included, lists nothing.

An exception ended its rank's run when
  - Python did not report it as handled: it was not raised in `__del__` (printed under
    "Exception ignored in") nor in a logging handler's `emit` ("--- Logging error ---");
  - no later traceback chained from it (that one is the failure, this one its cause);
  - training did not go on after it: no metric line (loss, step, ...) of its rank, or of any
    rank when it names none, more than TRAILER_LINES below it in its file;
  - and it is its file's end (at most TRAILER_LINES lines follow: the exit's own messages, a
    tracker's sync, a shell prompt), or the launcher reports its rank's worker failing after it.
A worker's exit is a failure when its code is non-zero or a signal the launcher did not send
ended it; it is listed when nothing else says why that rank ended: no exception listed here
ended that rank's run (or a run of no known rank), and no rule names that rank through a line
of the worker's own (a rule that only reads the launcher's report says no more than the exit,
and the launcher's own traceback, ChildFailedError, is no worker's).

A failure is explained, and not listed, when a rule accounts for it:
  - a fingerprint of a rule that fired matched its exception line, a finding's evidence lies
    within the traceback (or, for a root cause, in the message lines below it), the exception
    it chained from is explained, or another rank's same exception and message is;
  - a root cause accounts for every failure from its first evidence line on (they follow from
    it) and for every worker exit (the launcher's echo of a failure): a run with a root cause
    lists only the exceptions that came before it.
Entries come first failure first, one per distinct exception and message, at most LISTED.

Annotations are evaluated, as in `model`, for the records' sake.
"""

import re
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

from trainmedic.diagnosis.attribution import before, chronological, in_time_order
from trainmedic.logs.launcher import SIGTERM, LauncherReport, WorkerExit
from trainmedic.model import Finding, Line, Role, Traceback, Unexplained

TRAILER_LINES = 50
MESSAGE_LINES = 20
LISTED = 10
_HANDLED_FRAME = re.compile(r"(?:^|[/\\])logging[/\\]__init__\.py:\d+ in emit$")
# Linux signal numbers, as launchers print them.
SIGNALS = {1: "SIGHUP", 2: "SIGINT", 4: "SIGILL", 6: "SIGABRT", 7: "SIGBUS", 8: "SIGFPE",
           9: "SIGKILL", 11: "SIGSEGV", 13: "SIGPIPE", 15: "SIGTERM"}


class Raised(NamedTuple):
    """A traceback as the log showed it: its exception line, and the rules that matched it."""

    traceback: Traceback
    line: Line
    rules: frozenset[str] = frozenset()


class Afterwards(NamedTuple):
    """What each file printed after a point: its length, and its last metric line per rank."""

    lines: Mapping[str, int]
    last_sample: Mapping[str, Mapping[int | None, int]]


def _same_rank(a: int | None, b: int | None) -> bool:
    return a is None or b is None or a == b


def _handled(traceback: Traceback) -> bool:
    frames = traceback.frames
    return bool(frames) and (frames[-1].endswith(" in __del__")
                             or any(_HANDLED_FRAME.search(frame) for frame in frames))


def _is_failure(exit_: WorkerExit, report: LauncherReport) -> bool:
    if exit_.pid is not None and exit_.pid in report.terminated_pids:
        return False
    if exit_.signal is not None:
        return exit_.signal != SIGTERM
    return exit_.exitcode not in (None, 0)


def _ended_the_run(raised: Raised, chained: set[int], failed: Sequence[WorkerExit],
                   after: Afterwards) -> bool:
    tb, line = raised.traceback, raised.line
    if _handled(tb) or id(tb) in chained:
        return False
    samples = after.last_sample.get(line.path, {})
    if any(_same_rank(rank, tb.rank) and last > line.number + TRAILER_LINES
           for rank, last in samples.items()):
        return False  # training went on
    at_end = after.lines.get(line.path, line.number) - line.number <= TRAILER_LINES
    return at_end or any(
        _same_rank(e.rank, tb.rank) and (e.line.path != line.path or e.line.number > line.number)
        for e in failed)


def _covered(raised: Raised, findings: Sequence[Finding], fired: set[str]) -> bool:
    if raised.rules & fired:
        return True
    tb, path = raised.traceback, raised.line.path
    for finding in findings:
        last = tb.last_line + (MESSAGE_LINES if finding.role is Role.ROOT else 0)
        if any(ln.path == path and tb.first_line <= ln.number <= last
               and _same_rank(ln.rank, tb.rank) for ln in finding.evidence):
            return True
    return False


def _exit_entry(exit_: WorkerExit) -> Unexplained:
    if exit_.signal is not None:
        name = SIGNALS.get(exit_.signal, f"signal {exit_.signal}")
        return Unexplained(name, f"the worker was killed by signal {exit_.signal}, as its "
                                 "launcher reports", exit_.rank, exit_.line)
    return Unexplained(f"exit code {exit_.exitcode}", "the worker exited with it, as its "
                       "launcher reports", exit_.rank, exit_.line)


def unexplained_failures(raised: Iterable[Raised], findings: Sequence[Finding],
                         report: LauncherReport, after: Afterwards,
                         order: Mapping[str, int]) -> tuple[Unexplained, ...]:
    """The failures that ended the run and that no rule explains, first failure first."""
    raised = list(raised)
    failed = [e for e in report.exits if _is_failure(e, report)]
    chained = {id(r.traceback.cause) for r in raised if r.traceback.cause is not None}
    ended = [r for r in raised if _ended_the_run(r, chained, failed, after)]

    fired = {f.rule_id for f in findings}
    explained = {id(r.traceback) for r in raised if _covered(r, findings, fired)}
    names = {(r.traceback.exception, r.traceback.message) for r in raised
             if id(r.traceback) in explained}
    for r in in_time_order(raised, lambda r: r.line, order):  # causes come before their chains
        tb = r.traceback
        if (tb.exception, tb.message) in names or (
                tb.cause is not None and id(tb.cause) in explained):
            explained.add(id(tb))

    roots = chronological([f.first for f in findings if f.role is Role.ROOT], order)
    launcher_lines = {(e.line.path, e.line.number) for e in report.exits}
    named = {rank for f in findings for rank, ln in f.first_by_rank
             if (ln.path, ln.number) not in launcher_lines}

    entries = [Unexplained(r.traceback.exception, r.traceback.message, r.traceback.rank, r.line)
               for r in ended if id(r.traceback) not in explained]
    entries += [_exit_entry(e) for e in failed if not roots
                and not any(_same_rank(u.rank, e.rank) for u in entries)
                and e.rank not in named]
    listed: dict[tuple[str, str], Unexplained] = {}
    for entry in in_time_order(entries, lambda u: u.line, order):
        if roots and not before(entry.line, roots[0], order):
            continue  # it follows from the root cause
        listed.setdefault((entry.exception, entry.message), entry)
    return tuple(listed.values())[:LISTED]
