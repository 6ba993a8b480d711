"""The regular expressions a command compiled, kept for its next run (user_cache)."""

from __future__ import annotations

import marshal
import re
import subprocess
import sys
from pathlib import Path

import pytest

from trainmedic import user_cache

pytestmark = pytest.mark.skipif(user_cache._sre is None, reason="re's internals before 3.11")

# Patterns no other code here compiles, so each test sees `re` compile them or not.
WORDS = r"(?P<key>loss scale|grad norm)\s*[:=]\s*(?P<value>[-+]?\d+(?:\.\d+)?)(?# kept)"
BYTES = rb"(?m)^\[rank(\d{1,6})\]: kept$"


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty user cache, and `re`'s own cache emptied, then given back as it was."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(user_cache, "_loaded", {})
    monkeypatch.setattr(re, "_cache", dict(re._cache))  # type: ignore[attr-defined]
    re.purge()
    return tmp_path / "trainmedic"


def _next_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a new process starts with: nothing compiled, nothing loaded."""
    monkeypatch.setattr(re, "_cache", {})
    re.purge()
    monkeypatch.setattr(user_cache, "_loaded", {})


def _kept(cache: Path) -> set[str | bytes]:
    (path,) = cache.iterdir()
    return {source for source, _ in marshal.loads(path.read_bytes())}


def _no_compiling(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(pattern: object, flags: int = 0) -> None:
        raise AssertionError(f"compiled again: {pattern!r}")

    monkeypatch.setattr(re._compiler, "compile", refuse)  # type: ignore[attr-defined]


def test_a_pattern_compiled_in_one_run_is_built_from_the_cache_in_the_next(
        cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    compiled = re.compile(WORDS, re.MULTILINE | re.IGNORECASE), re.compile(BYTES)
    user_cache.save_regexes("diagnose")
    assert [p.name for p in cache.iterdir()] == [
        f"regexes-diagnose-{sys.implementation.cache_tag}-{sys.hexversion:x}-"
        f"{user_cache._sre.MAGIC}.marshal"]

    _next_run(monkeypatch)
    user_cache.load_regexes("diagnose")
    _no_compiling(monkeypatch)
    again = re.compile(WORDS, re.MULTILINE | re.IGNORECASE), re.compile(BYTES)
    assert again == compiled  # same flags and code
    assert again[0].groupindex == {"key": 1, "value": 2}
    match = again[0].search("iteration 10 | Loss Scale: 65536.0 |")
    assert match is not None
    assert match.group("key", "value") == ("Loss Scale", "65536.0")
    assert again[1].findall(b"x\n[rank12]: kept\n") == [b"12"]


def test_a_run_that_compiles_nothing_new_leaves_the_file_alone(
        cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    re.compile(WORDS)
    user_cache.save_regexes("check")
    (kept,) = cache.iterdir()
    kept.write_bytes(kept.read_bytes())  # the same data, a known time
    written = kept.stat().st_mtime_ns

    _next_run(monkeypatch)
    user_cache.load_regexes("check")
    re.compile(WORDS)
    user_cache.save_regexes("check")
    assert kept.stat().st_mtime_ns == written

    re.compile(BYTES)  # a new one: kept with the old
    user_cache.save_regexes("check")
    _next_run(monkeypatch)
    user_cache.load_regexes("check")
    _no_compiling(monkeypatch)
    re.compile(WORDS), re.compile(BYTES)


OTHER = r"Watchdog caught collective operation timeout: (?P<work>WorkNCCL)(?# kept)"


def test_what_runs_do_not_use_is_not_kept_for_ever(cache: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    re.compile(WORDS), re.compile(BYTES)
    user_cache.save_regexes("diagnose")
    _next_run(monkeypatch)
    user_cache.load_regexes("diagnose")
    re.compile(WORDS), re.compile(OTHER)  # one of two used, one new: kept with the two
    user_cache.save_regexes("diagnose")
    assert _kept(cache) == {WORDS, BYTES, OTHER}

    _next_run(monkeypatch)
    user_cache.load_regexes("diagnose")
    re.compile(OTHER)  # one of three used, none new: the two others go (a rule pack's, say)
    user_cache.save_regexes("diagnose")
    assert _kept(cache) == {OTHER}


def test_each_command_keeps_its_own(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    re.compile(WORDS)
    user_cache.save_regexes("diagnose")
    _next_run(monkeypatch)
    user_cache.load_regexes("lsp")
    assert not user_cache._loaded


def test_data_that_would_build_another_pattern_is_not_kept(
        cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    made = user_cache._compiled

    def wrong(pattern: str | bytes, flags: int) -> user_cache.Kept:
        final_flags, code, groups, groupindex, indexgroup = made(pattern, flags)
        if pattern == BYTES:
            code = made(rb"(?m)^\[rank(\d{1,5})\]: kept$", flags)[1]
        return final_flags, code, groups, groupindex, indexgroup

    monkeypatch.setattr(user_cache, "_compiled", wrong)
    re.compile(WORDS), re.compile(BYTES)
    user_cache.save_regexes("diagnose")
    _next_run(monkeypatch)
    user_cache.load_regexes("diagnose")
    assert {source for _, source, _ in user_cache._loaded} == {WORDS}


@pytest.mark.parametrize("content", [b"", b"not marshal data", b"\xe9\x00\x00\x00\x00"])
def test_a_damaged_cache_means_compiling_as_usual(cache: Path, monkeypatch: pytest.MonkeyPatch,
                                                  content: bytes) -> None:
    re.compile(WORDS)
    user_cache.save_regexes("diagnose")
    (kept,) = cache.iterdir()
    kept.write_bytes(content)
    _next_run(monkeypatch)
    user_cache.load_regexes("diagnose")
    assert not user_cache._loaded
    assert re.compile(WORDS).search("loss scale: 2") is not None


def test_a_cache_that_cannot_be_written_is_only_a_slower_start(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "file"))  # a file where a folder goes
    monkeypatch.setattr(user_cache, "_loaded", {})
    re.compile(WORDS)
    user_cache.save_regexes("diagnose")
    user_cache.load_regexes("diagnose")
    assert not user_cache._loaded
    assert list(tmp_path.iterdir()) == [tmp_path / "file"]


def test_the_command_keeps_its_patterns_and_answers_the_same(tmp_path: Path) -> None:
    log = Path(__file__).resolve().parents[1] / "examples" / "fp16-loss-scale-4ranks.log"
    env = {"XDG_CACHE_HOME": str(tmp_path), "PATH": ""}
    runs = [subprocess.run([sys.executable, "-m", "trainmedic", "diagnose", str(log),
                            "--format", "json"], capture_output=True, text=True, env=env,
                           check=False) for _ in range(2)]
    assert runs[0].stdout == runs[1].stdout
    assert runs[0].returncode == runs[1].returncode == 0, runs[0].stderr
    assert "amp-loss-scale" in runs[0].stdout
    (kept,) = (tmp_path / "trainmedic").glob("regexes-diagnose-*.marshal")
    assert kept.stat().st_size > 0
    nonsense = subprocess.run([sys.executable, "-m", "trainmedic", "../escape"],
                              capture_output=True, env=env, check=False)
    assert nonsense.returncode == 2
    assert not list(tmp_path.glob("**/*escape*"))
