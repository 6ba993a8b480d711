"""JSON files' values kept in the user cache as marshal, for the bytes they were read from
(user_cache.load_json)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from trainmedic import user_cache
from trainmedic.catalogue.load import CATALOGUE_RESOURCE, DATA, bundled
from trainmedic.catalogue.rules import Rule

VALUE = {"rules": [{"id": "amp-loss-scale", "weight": 0.5, "tags": ["fp16"], "x": None}]}


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "trainmedic"


def _no_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(data: object) -> None:
        raise AssertionError("parsed again")

    monkeypatch.setattr(json, "loads", refuse)


def test_a_file_read_once_is_unmarshalled_from_its_copy_the_next_time(
        tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "catalogue.json"
    path.write_text(json.dumps(VALUE))
    assert user_cache.load_json(str(path)) == VALUE
    assert len(list(cache.glob("json-*.marshal"))) == 1
    _no_parsing(monkeypatch)
    assert user_cache.load_json(str(path)) == VALUE


def test_a_changed_file_is_parsed_again(tmp_path: Path, cache: Path) -> None:
    path = tmp_path / "catalogue.json"
    path.write_text(json.dumps(VALUE))
    user_cache.load_json(str(path))
    changed = {**VALUE, "rules": []}
    path.write_text(json.dumps(changed))
    assert user_cache.load_json(str(path)) == changed


def test_a_copy_holding_other_bytes_or_none_that_can_be_read_is_not_used(
        tmp_path: Path, cache: Path) -> None:
    path = tmp_path / "catalogue.json"
    path.write_text(json.dumps(VALUE))
    user_cache.load_json(str(path))
    (copy,) = cache.glob("json-*.marshal")
    other = json.dumps({"rules": ["other"]}).encode()
    import marshal

    copy.write_bytes(marshal.dumps((other, {"rules": ["other"]})))  # as if the names clashed
    assert user_cache.load_json(str(path)) == VALUE
    copy.write_bytes(b"\x00 damaged")
    assert user_cache.load_json(str(path)) == VALUE
    assert marshal.loads(copy.read_bytes())[1] == VALUE  # replaced


def test_a_cache_that_cannot_be_written_only_means_parsing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "catalogue.json"
    path.write_text(json.dumps(VALUE))
    blocker = tmp_path / "a file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # a file where a folder should be
    assert user_cache.load_json(str(path)) == VALUE
    assert user_cache.load_json(str(path)) == VALUE


def test_the_cache_keeps_the_copies_used_last(tmp_path: Path, cache: Path) -> None:
    cache.mkdir(parents=True)
    for n in range(user_cache.KEPT_JSON + 3):  # copies of catalogues built before
        old = cache / f"json-{n:08x}-1-old.marshal"
        old.write_bytes(b"old")
        os.utime(old, (1_000_000 + n, 1_000_000 + n))
    path = tmp_path / "catalogue.json"
    path.write_text(json.dumps(VALUE))
    user_cache.load_json(str(path))
    kept = sorted(p.name for p in cache.glob("json-*.marshal"))
    assert len(kept) == user_cache.KEPT_JSON
    newest_old = [f"json-{n:08x}-1-old.marshal" for n in range(4, user_cache.KEPT_JSON + 3)]
    assert set(newest_old) < set(kept)  # the oldest went, this file's copy stayed


def test_the_bundled_catalogue_from_its_copy_is_the_one_its_json_gives(cache: Path) -> None:
    with open(os.path.join(DATA, CATALOGUE_RESOURCE), "rb") as stored:
        data = json.loads(stored.read())
    parsed = tuple(Rule.from_dict(r, r.get("source", "")) for r in data["rules"])
    assert bundled().rules == parsed  # the first read parses and keeps a copy
    assert list(cache.glob("json-*.marshal"))
    assert bundled().rules == parsed  # the second unmarshals it
