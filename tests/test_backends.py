"""Every matcher backend gives the same findings, evidence and ranks on the whole corpus."""

from __future__ import annotations

import os
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from shared_files import CORPUS

from trainmedic.catalogue.load import bundled
from trainmedic.diagnosis.engine import diagnose
from trainmedic.logs.inputs import opened
from trainmedic.logs.reader import Chunk
from trainmedic.matching import expressions
from trainmedic.matching import hyperscan as fast
from trainmedic.matching.choice import BackendError, matcher_for
from trainmedic.render.json import to_dict

ROOT = Path(__file__).resolve().parents[1]
CATALOGUE = bundled()
LOGS = [*sorted(CORPUS.glob("**/*.log")), ROOT / "examples" / "fp16-loss-scale-4ranks.log"]


def test_python_backend_is_always_there() -> None:
    assert matcher_for(CATALOGUE, "python").name == "python-re"


@pytest.mark.skipif(not fast.available(), reason="the fast extra is not installed")
@pytest.mark.parametrize("path", LOGS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_backends_agree(path: Path) -> None:
    results = []
    for backend in ("python", "hyperscan"):
        with opened([str(path)]) as streams:
            diagnosis = diagnose(streams, CATALOGUE, matcher_for(CATALOGUE, backend))
        results.append(to_dict(diagnosis, CATALOGUE))
    assert results[0] == results[1]


@pytest.mark.skipif(not fast.available(), reason="the fast extra is not installed")
def test_backends_find_the_same_hits_signals_and_lines_in_every_corpus_log() -> None:
    """What each finds in a chunk, offsets included, and not only the diagnoses built on it.
    One matcher of each for all logs: the pure one keeps what it learnt of earlier chunks."""
    python, native = (matcher_for(CATALOGUE, backend) for backend in ("python", "hyperscan"))
    for path in LOGS:
        text = path.read_text("utf-8", errors="surrogateescape")
        pure, fast_found = python.find(text), native.find(text)
        assert sorted(map(repr, pure.hits)) == sorted(map(repr, fast_found.hits)), path
        assert (pure.signals, pure.marks, pure.metric_lines) == \
            (fast_found.signals, fast_found.marks, fast_found.metric_lines), path


@pytest.mark.skipif(not fast.available(), reason="the fast extra is not installed")
def test_backends_agree_on_lines_holding_thousands_of_matches() -> None:
    """Hyperscan reports every match; those of one line share the line's start, found once
    per line (looking it up for each made a megabyte line of matches quadratic)."""
    text = ("[rank0]: " + "loss=nan " * 5000 + "\n" + "[rank1]: step 2 loss=nan\n"
            + "\n" + "RuntimeError: CUDA error: out of memory " * 300 + "\n"
            + "[rank2]: Traceback (most recent call last):\n")
    python, native = (matcher_for(CATALOGUE, backend) for backend in ("python", "hyperscan"))
    pure, fast_found = python.find(text), native.find(text)
    assert sorted(map(repr, pure.hits)) == sorted(map(repr, fast_found.hits))
    assert len(pure.hits) > 5000
    assert (pure.signals, pure.marks, pure.metric_lines) == \
        (fast_found.signals, fast_found.marks, fast_found.metric_lines)


@pytest.mark.skipif(not fast.available(), reason="the fast extra is not installed")
def test_a_line_said_again_is_matched_again_at_its_own_place() -> None:
    """Hyperscan confirms a line it has seen in the chunk once; its hits are then placed at
    each line saying it, behind characters of several bytes too (the offsets are bytes)."""
    overflow = (b"[default0]:[deepspeed] OVERFLOW! Rank 0 Skipping step. Attempted loss scale: "
                b"1.0, reducing to 1.0\n")  # deepspeed/runtime/fp16/loss_scaler.py
    odd = "h\u00e9 \u2014 ".encode()  # before it on its line: characters of 2 and 3 bytes
    data = (overflow * 3 + odd + overflow + b"step 4 loss=2.31\n" + odd + overflow) * 2
    chunk = Chunk("<test>", data, 0, len(data))
    python, native = (matcher_for(CATALOGUE, backend) for backend in ("python", "hyperscan"))
    pure, fast_found = python.find_chunk(chunk), native.find_chunk(chunk)
    assert sorted(map(repr, pure.hits)) == sorted(map(repr, fast_found.hits))
    assert len({offset for offset, _ in fast_found.hits}) == 10


@pytest.mark.skipif(not fast.available(), reason="the fast extra is not installed")
def test_one_hyperscan_matcher_scans_in_several_threads_at_once() -> None:
    """The language server shares one matcher between its event loop and worker threads."""
    matcher = matcher_for(CATALOGUE, "hyperscan")
    text = (ROOT / "examples" / "fp16-loss-scale-4ranks.log").read_text("utf-8") * 20
    expected = list(matcher.scan(text))
    with ThreadPoolExecutor(4) as threads:
        scans = [threads.submit(lambda: list(matcher.scan(text))) for _ in range(20)]
        assert all(scan.result() == expected for scan in scans)


def test_asking_for_a_missing_backend_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fast, "available", lambda: False)
    with pytest.raises(BackendError, match=r"pip install 'trainmedic\[fast\]'"):
        matcher_for(CATALOGUE, "hyperscan")
    assert matcher_for(CATALOGUE, "auto").name == "python-re"


@pytest.mark.skipif(not fast.available(), reason="the fast extra is not installed")
def test_the_compiled_database_is_cached_and_a_bad_cache_only_slows_the_start(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    text = (ROOT / "examples" / "fp16-loss-scale-4ranks.log").read_text("utf-8")

    def found(backend: str) -> tuple[list[str], frozenset[str], list[int], list[int]]:
        hits, signals, marks, metric_lines, *_ = matcher_for(CATALOGUE, backend).find(text)
        return sorted(map(repr, hits)), signals, marks, metric_lines

    expected = found("python")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert found("hyperscan") == expected
    (cached,) = (tmp_path / "trainmedic").glob("hyperscan-*.db")
    cached.write_bytes(b"not a database")  # corrupt: compiled again and replaced
    assert found("hyperscan") == expected
    assert cached.read_bytes() != b"not a database"
    monkeypatch.setenv("XDG_CACHE_HOME", str(cached))  # a file where a folder should be
    assert found("hyperscan") == expected


@pytest.mark.skipif(not fast.available(), reason="the fast extra is not installed")
def test_a_cached_database_is_used_only_for_the_patterns_it_was_compiled_from(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import hyperscan

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    fast.HyperscanMatcher(CATALOGUE)
    (cached,) = (tmp_path / "trainmedic").glob("hyperscan-*.db")
    other = fast._compiled([b"Killed"], [0])  # another catalogue's, as if its name were alike
    made_from, _, _ = cached.read_bytes().partition(b"\n")
    cached.write_bytes(made_from.replace(b"Killed", b"Kil1ed") + b"\n"
                       + hyperscan.dumpb(other))
    text = "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    hits = fast.HyperscanMatcher(CATALOGUE).find(text).hits
    assert hits
    assert hits == matcher_for(CATALOGUE, "python").find(text).hits
    assert cached.read_bytes().startswith(made_from + b"\n")  # compiled again, in its place


@pytest.mark.skipif(not fast.available(), reason="the fast extra is not installed")
def test_the_cache_keeps_the_databases_used_last(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    folder = tmp_path / "trainmedic"
    folder.mkdir()
    for n in range(fast.KEPT_DATABASES + 5):  # databases of catalogues edited before
        old = folder / f"hyperscan-{n:032x}.db"
        old.write_bytes(b"old")
        os.utime(old, (1_000_000 + n, 1_000_000 + n))
    fast.HyperscanMatcher(CATALOGUE)  # compiles this catalogue's and caches it
    kept = sorted(path.name for path in folder.glob("hyperscan-*.db"))
    assert len(kept) == fast.KEPT_DATABASES
    newest_old = [f"hyperscan-{n:032x}.db" for n in range(6, fast.KEPT_DATABASES + 5)]
    assert set(newest_old) < set(kept)  # the oldest ones went, this catalogue's stayed


@pytest.mark.skipif(not fast.available(), reason="the fast extra is not installed")
def test_both_backends_mark_traceback_lines_at_the_same_characters() -> None:
    text = ("[rank1]: naïve “quotes” 🏖️ loss=nan\n"
            "[rank1]: Traceback (most recent call last):\n"
            "[rank1]:   File \"tråin.py\", line 3, in <module>\n"
            "[rank1]: RuntimeError: ünïcode\n\n"
            "The above exception was the direct cause of the following exception:\n")
    python, native = (matcher_for(CATALOGUE, b).find(text) for b in ("python", "hyperscan"))
    assert native.marks == python.marks == [text.index("[rank1]: Traceback"),
                                            text.index("The above")]
    assert native.signals == python.signals
    assert native.metric_lines == python.metric_lines == [0]  # nan-loss's own "loss=nan"
    assert "non-finite" in python.signals
    assert "scale" not in python.signals


@pytest.mark.skipif(not fast.available(), reason="the fast extra is not installed")
@pytest.mark.parametrize(("line", "zero"), [
    ("[rank1]:step 9 loss=0.5432 lr=1e-4", False), ("[rank1]:step 9 loss=0.0000 lr=1e-4", True),
    ("{'loss': 0, 'grad_norm': 0.0}", True), ("{'loss': 0.05}", False), ("loss: 0.", True),
    ("loss =  0.0e-3", False)])
def test_both_backends_see_a_zero_loss_alike(line: str, zero: bool) -> None:
    """Where the C loops find the signal (and Hyperscan does not run it), as where it does."""
    text = "[rank1]:step 8 loss=0.7001 lr=1e-4\n" * 50 + line + "\n"
    python, native = (matcher_for(CATALOGUE, b).find(text) for b in ("python", "hyperscan"))
    assert native.signals == python.signals
    assert ("zero-loss" in python.signals) == zero


@pytest.mark.parametrize(("pattern", "runs"), [
    (r"loss scale: \d+ \|.{0,400}?skipped iterations: [1-9]", "skipped iterations: [1-9]"),
    (r"^(?!.{0,400}/dev/shm).{0,400}\[Errno 28\] No space", r"\[Errno 28\] No space"),
    (r"(?i)Error.*FlashAttention only", "(?i)FlashAttention only"),
    (r"Error.{0,40}FlashAttention only", r"Error.{0,40}FlashAttention only"),  # a short gap
    (r"Error\.{0,400}FlashAttention", r"Error\.{0,400}FlashAttention"),  # dots, not any
    (r"Error[.{0,400}]FlashAttention", r"Error[.{0,400}]FlashAttention"),  # in a class
    (r"Error[]x.{0,400}]FlashAttention", r"Error[]x.{0,400}]FlashAttention"),
    (r"(Error.{0,400}FlashAttention)", r"(Error.{0,400}FlashAttention)"),  # in a group
    (r"Error.{0,400}FlashAttention|Abort", r"Error.{0,400}FlashAttention|Abort"),
    (r"(\w+) failed.{0,400}retrying \1 again", r"(\w+) failed.{0,400}retrying \1 again"),
    (r"Assertion .{1,300}? failed", r"Assertion .{1,300}? failed"),  # " failed" is common
    (r"Error.{0,400}Flashes?", r"Error.{0,400}Flashes?"),  # "Flashe" and "s" optional
    (r"Error.{0,400}(?:ab|cd) returned status", r"(?:ab|cd) returned status"),
    (r"Error[\].{0,400}]FlashAttention only", r"Error[\].{0,400}]FlashAttention only"),
    (r"Error.{0,400}x{100000,200000}y", r"Error.{0,400}x{100000,200000}y"),  # no literal
])
def test_hyperscan_runs_only_what_follows_a_long_gap_when_it_is_rare(pattern: str,
                                                                    runs: str) -> None:
    assert expressions.prefilter(pattern) == runs


@pytest.mark.parametrize(("pattern", "runs"), [
    (r"loss scaler \d{1,3} reducing loss scale to (?P<scale>[0-9.eE+-]{1,30})",
     r"loss scaler \d{1,3} reducing loss scale to "),
    (r"Timeout at NCCL work: \d{1,12}\b", "Timeout at NCCL work: "),  # and what matches nothing
    (r"number of nan iterations:\s{1,8}(?P<n>0{0,8}[1-9]\d{0,8})",  # into the last group
     r"number of nan iterations:\s{1,8}(?P<n>0{0,8}[1-9])"),
    (r"\bGrad Scale: {0,3}(?P<s>\d{1,20}(?:\.\d{0,20})?)(?![\d.])", r"\bGrad Scale:"),
    (r"(?:reducing loss scale to|[Ss]etting loss scale to:?) (?P<s>\d{1,20})",  # each branch
     r"(?:reducing loss scale to|[Ss]etting loss scale to:?) "),
    (r"terminated with signal (?P<signal>SIGSEGV|SIGBUS)",  # ends in one place
     r"terminated with signal (?P<signal>SIGSEGV|SIGBUS)"),
    (r"Error while deserializing header: (?:HeaderTooLarge|InvalidHeader\w{0,30})",
     r"Error while deserializing header: (?:HeaderTooLarge|InvalidHeader\w{0,30})"),
    (r"status \d{1,3}", r"status \d{1,3}"),  # what would be left is too common
    (r"Killed|exit code \d{1,3} in total", r"Killed|exit code \d{1,3} in total"),
    (r"CUDA out of memory(?! at all)", r"CUDA out of memory(?! at all)"),  # nothing varies
    (r"(?:Caught|Raised) \w{1,60} error (\d{1,4})", r"(?:Caught|Raised) \w{1,60} error (\d{1,4})"),
])
def test_hyperscan_leaves_out_an_end_that_ends_in_many_places(pattern: str, runs: str) -> None:
    assert expressions.without_varying_end(pattern) == runs


def test_a_pattern_read_into_pieces_is_the_same_pattern_joined_again() -> None:
    patterns = [fp.pattern for rule in CATALOGUE.rules for fp in rule.fingerprints]
    assert all("".join(map(str, expressions._pieces(p))) == p for p in patterns)


@pytest.mark.skipif(not fast.available(), reason="the fast extra is not installed")
def test_hyperscan_reports_a_number_at_the_end_of_a_line_once() -> None:
    """apex's amp scaler prints this at every skipped step (apex/amp/scaler.py): each of the
    fingerprints it matches is reported once, not once for every digit of the scale."""
    import hyperscan

    line = b"Gradient overflow.  Skipping step, loss scaler 0 reducing loss scale to 0.00048828125"
    matcher = matcher_for(CATALOGUE, "hyperscan")
    assert isinstance(matcher, fast.HyperscanMatcher)
    reports: dict[int, int] = {}

    def found(index: int, start: int, end: int, flags: int, context: object) -> None:
        reports[index] = reports.get(index, 0) + 1

    matcher._database.scan(line, match_event_handler=found,
                           scratch=hyperscan.Scratch(matcher._database))
    fingerprints = {index: reports[index] for index in reports if index < len(matcher.patterns)}
    assert len(fingerprints) >= 2
    assert set(fingerprints.values()) == {1}
    assert sorted(hit.fingerprint for _, hit in matcher.scan(line.decode())) == \
        sorted(hit.fingerprint for _, hit in matcher_for(CATALOGUE, "python").scan(line.decode()))


def test_the_part_hyperscan_runs_matches_every_line_the_whole_does() -> None:
    """On every rule's own examples: the line of each match of the whole (where `re` confirms
    it) is a line of a match of the part."""
    shortened = 0
    for rule in CATALOGUE.rules:
        for fingerprint in rule.fingerprints:
            part = expressions.prefilter(fingerprint.pattern)
            if part == fingerprint.pattern:
                continue
            shortened += 1
            flags = fingerprint.regex.flags
            for example in CATALOGUE.examples(rule.id).match:
                for line in example.text.splitlines():
                    if fingerprint.regex.search(line):
                        assert re.search(part, line, flags), (rule.id, line)
        for metric in rule.metric_patterns:
            part = expressions.without_varying_end(metric)
            for example in CATALOGUE.examples(rule.id).match:
                for line in example.text.splitlines():
                    if re.search(metric, line):
                        assert re.search(part, line), (rule.id, line)
    assert shortened >= 40
