"""The server's pure parts: settings, log globs, where a core line is in the editor, answers."""

from __future__ import annotations

import dataclasses
import io
import json
from pathlib import Path
from typing import get_args

import pytest
from lsprotocol import types
from pygls.workspace import PositionCodec

from trainmedic.logs.reader import read_lines
from trainmedic.lsp.conversions import LineIndex, LineMap
from trainmedic.lsp.log_globs import is_log
from trainmedic.lsp.server import JsonAnswer, create_server
from trainmedic.lsp.settings import CollateralSeverity, Settings, camel_case

PACKAGE_JSON = Path(__file__).resolve().parents[2] / "extension" / "package.json"


def test_settings_defaults_equal_the_extension_defaults() -> None:
    contributed = json.loads(PACKAGE_JSON.read_text("utf-8"))["contributes"]["configuration"]
    properties = contributed["properties"]
    for field in dataclasses.fields(Settings):
        if field.name == "workspace_trusted":  # set by the client, never by the user
            continue
        entry = properties[f"trainmedic.{camel_case(field.name)}"]
        default = list(field.default) if isinstance(field.default, tuple) else field.default
        assert entry["default"] == default, field.name
    severities = properties["trainmedic.collateralSeverity"]["enum"]
    assert severities == list(get_args(CollateralSeverity))


def test_settings_update_from_camel_case() -> None:
    settings, problems = Settings().updated({
        "rulePacks": ["/packs/cluster"], "collateralSeverity": "hint", "workspaceTrusted": True,
        "interpreter": "/usr/bin/python3"})  # a client-only setting: ignored
    assert problems == []
    assert settings.rule_packs == ("/packs/cluster",)
    assert settings.collateral_severity == "hint"
    assert settings.workspace_trusted
    assert settings.log_globs == Settings().log_globs  # absent: unchanged


def test_an_invalid_setting_keeps_its_default_and_says_so() -> None:
    settings, problems = Settings(diagnose_on_open=False).updated(
        {"diagnoseOnOpen": "yes", "logGlobs": ["**/*.log", 3], "scriptChecks": False})
    assert settings.diagnose_on_open is True
    assert settings.log_globs == Settings().log_globs
    assert settings.script_checks is False
    assert len(problems) == 2
    assert any("trainmedic.diagnoseOnOpen" in p for p in problems)


@pytest.mark.parametrize(("path", "expected"), [
    ("/home/u/runs/train.log", True),
    ("/home/u/runs/slurm-1234.out", True),
    ("/home/u/runs/job.err", True),
    ("/home/u/train.py", False),
    ("/home/u/runs/notes.md", False),
    ("C:\\Users\\u\\runs\\train.log", True),
])
def test_default_log_globs(path: str, expected: bool) -> None:
    assert is_log(path, Settings().log_globs, ["/home/u"]) is expected


def test_globs_relative_to_the_workspace() -> None:
    globs = ["logs/*.txt", "{a,b}/run-?.dat", "**/[!x]*.out"]
    assert is_log("/ws/logs/run.txt", globs, ["/ws"])
    assert not is_log("/ws/other/logs/run.txt", globs, ["/ws"])
    assert is_log("/ws/b/run-1.dat", globs, ["/ws"])
    assert not is_log("/ws/c/run-1.dat", globs, ["/ws"])
    assert is_log("/anywhere/yes.out", globs, [])
    assert not is_log("/anywhere/xno.out", globs, [])


def test_line_map_follows_the_editor() -> None:
    text = "a\r\nbb\n\r10%\r100%\nlast é\n"
    lines = LineMap(text, types.Position(line=0, character=0))
    assert lines.range(1) == types.Range(start=types.Position(line=0, character=0),
                                         end=types.Position(line=0, character=1))
    # Core line 3 is "100%" after two lone CRs: the editor shows it two lines further down.
    assert lines.range(3).start.line == 4
    assert lines.range(3).end.character == 4
    assert lines.range(4).start.line == 5


def test_line_index_places_lines_as_the_line_map_does() -> None:
    text = "a\r\nbb\n\r10%\r100%\nlast é\r\n\r\r\nx\r\ry\n\rz\n"
    data = text.encode("utf-8")
    lines = list(read_lines(io.BytesIO(data), "run.log"))
    expected = LineMap(text, types.Position(line=0, character=0))
    for size in range(1, len(data) + 1):  # however the bytes arrive, CRLFs split included
        index = LineIndex()
        for start in range(0, len(data), size):
            index.feed(data[start : start + size])
        assert [index.place(line) for line in lines] == \
            [expected.range(line.number) for line in lines], size


def test_line_map_places_a_selection() -> None:
    lines = LineMap("error here\nnext\n", types.Position(line=7, character=4))
    assert lines.range(1) == types.Range(start=types.Position(line=7, character=4),
                                         end=types.Position(line=7, character=14))
    assert lines.range(2).start == types.Position(line=8, character=0)


def test_line_map_measures_in_utf16_by_default() -> None:
    lines = LineMap("loss 🔥 nan\n", types.Position(line=0, character=0))
    assert lines.range(1).end.character == len("loss  nan") + 2
    assert LineMap("🔥\n", types.Position(line=0, character=0),
                   PositionCodec(types.PositionEncodingKind.Utf32)).range(1).end.character == 1


def test_a_json_answer_is_sent_as_it_is() -> None:
    """What a command answers with JSON already is not rebuilt value by value; an lsprotocol
    object in it is still turned into JSON when the message is written."""
    protocol = create_server().protocol
    answer = JsonAnswer(findings=[{"rule_id": "cuda-oom", "ranks": [0, 1]}],
                        where=types.Position(line=3, character=0))
    message = protocol._converter.unstructure(types.ExecuteCommandResponse(id=1, result=answer))
    assert message["result"] is answer
    written = json.loads(json.dumps(message, default=protocol._serialize_message))
    assert written["result"] == {"findings": [{"rule_id": "cuda-oom", "ranks": [0, 1]}],
                                 "where": {"line": 3, "character": 0}}
