"""`trainmedic mcp`: the agents' tools as plain functions first, then the real server process
(`python -m trainmedic mcp`) driven by the MCP SDK's own client over stdio."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp")

from mcp import ClientSession, StdioServerParameters, stdio_client, types

from trainmedic.agents import tools
from trainmedic.catalogue.load import load
from trainmedic.cli import EXIT_USAGE, main
from trainmedic.matching.choice import matcher_for

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "fp16-loss-scale-4ranks.log"
BF16 = ROOT / "tests" / "fixtures" / "lsp" / "bf16-unsupported.log"  # real-b/006.log, verbatim
TM104 = ROOT / "tests" / "fixtures" / "checks" / "TM104" / "positive-optimizer-loop.py"
CLEAN = ROOT / "tests" / "fixtures" / "checks" / "TM104" / "negative-optimizer-loop.py"


@pytest.fixture(scope="module")
def rules() -> tools.Rules:
    catalogue = load()
    return tools.Rules(catalogue, matcher_for(catalogue))


# --- the tools as functions ---------------------------------------------------------------------

def test_diagnose_text_names_the_rule_with_the_cli_contract(rules: tools.Rules) -> None:
    answer = tools.run_diagnose(rules, {"text": BF16.read_text("utf-8")})
    assert answer.data["diagnoses"][0]["rule_id"] == "amp-bf16-vs-fp16"
    assert {"initiating_rank", "initiating_reason", "diagnoses", "ranks", "series"} <= \
        answer.data.keys()
    assert "Your setup doesn't support bf16/gpu." in answer.data["diagnoses"][0]["evidence"][0][
        "text"]
    assert answer.report.startswith("**Root cause:")


@pytest.mark.parametrize("path", [EXAMPLE, ROOT / "tests" / "fixtures" / "torchrun-logdir"])
def test_diagnose_paths_answers_what_the_cli_prints(rules: tools.Rules, path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    answer = tools.run_diagnose(rules, {"paths": [str(path)]})
    assert main(["diagnose", str(path), "--format", "json"]) == 0
    assert answer.data == json.loads(capsys.readouterr().out)
    assert answer.data["initiating_rank"] in (1, 2)  # rank 1 in the folder, 2 in the example


def test_evidence_is_redacted(rules: tools.Rules) -> None:
    token = "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"
    text = ("[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered "
            f"({token})\n")
    answer = tools.run_diagnose(rules, {"text": text})
    assert answer.data["diagnoses"], "the CUDA error is not diagnosed, so nothing is shown"
    assert token not in json.dumps(answer.data) + answer.report
    assert "[REDACTED]" in json.dumps(answer.data)


def test_check_gives_the_cli_json_and_lines(rules: tools.Rules) -> None:
    answer = tools.run_check(rules, {"paths": [str(TM104)]})
    assert [f["code"] for f in answer.data["findings"]] == ["TM104"]
    assert answer.data["findings"][0]["rule_id"] == "amp-loss-scale"
    assert f"{TM104}:14:17: TM104 " in answer.report  # as in its .findings.txt
    assert answer.data["findings"][0]["range"]["start"] == {"line": 13, "character": 16}
    assert tools.run_check(rules, {"paths": [str(CLEAN)]}).data["findings"] == []


def test_explain_gives_the_catalogue_entry(rules: tools.Rules) -> None:
    answer = tools.run_explain(rules, {"rule_id": "amp-loss-scale"})
    rule = rules.catalogue.by_id["amp-loss-scale"]
    assert answer.report.startswith(f"# {rule.title}")
    assert answer.data["verify"] == rule.verify_command == "trainmedic probe amp"


@pytest.mark.parametrize(("tool", "arguments", "says"), [
    ("diagnose", {}, "exactly one of text"),
    ("diagnose", {"text": "x", "paths": ["a.log"]}, "not both"),
    ("diagnose", {"paths": ["/no/such/run.log"]}, "/no/such/run.log: no such file or directory"),
    ("diagnose", {"paths": []}, "non-empty list"),
    ("diagnose", {"paths": "run.log"}, "non-empty list"),
    ("diagnose", {"paths": ["-"]}, "standard input"),
    ("diagnose", {"text": 42}, "text must be a string"),
    ("diagnose", {"path": "run.log"}, "unknown argument 'path'"),
    ("check", {"paths": ["/no/such/train.py"]}, "no such file or directory"),
    ("check", {"paths": [str(EXAMPLE)]}, "not a file trainmedic checks"),
    ("explain", {"rule_id": "amp-loss-scal"}, "did you mean: amp-loss-scale"),
    ("explain", {"rule_id": "TM104"}, "its catalogue entry is amp-loss-scale"),
    ("explain", {"rule_id": ""}, "rule_id must be"),
])
def test_bad_arguments_say_what_to_change(rules: tools.Rules, tool: str,
                                          arguments: dict[str, Any], says: str) -> None:
    run = {t.name: t.run for t in tools.TOOLS}[tool]
    with pytest.raises(tools.ToolInputError) as raised:
        run(rules, arguments)
    assert says in str(raised.value)


def test_a_named_script_that_does_not_parse_is_refused(rules: tools.Rules,
                                                       tmp_path: Path) -> None:
    broken = tmp_path / "train.py"
    broken.write_text("def train(:\n    pass\n")
    with pytest.raises(tools.ToolInputError, match=r"train\.py: cannot check"):
        tools.run_check(rules, {"paths": [str(broken)]})


def test_text_over_the_limit_is_refused_and_one_just_under_is_read(
        rules: tools.Rules, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tools, "MAX_TEXT_BYTES", 1 << 10)
    line = "[rank0]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
    with pytest.raises(tools.ToolInputError, match=r"over the .* limit.*paths"):
        tools.run_diagnose(rules, {"text": line * 20})
    assert tools.run_diagnose(rules, {"text": line * 10}).data["diagnoses"]
    with pytest.raises(tools.ToolInputError):  # the limit counts bytes, not characters
        tools.run_diagnose(rules, {"text": "é" * 600})


def test_every_tool_describes_itself_for_a_model() -> None:
    for tool in tools.TOOLS:
        assert "Call it" in tool.description
        assert "nothing is uploaded" in tool.description
        assert tool.input_schema["type"] == "object"
        assert tool.input_schema["additionalProperties"] is False
        assert all(p.get("description") for p in tool.input_schema["properties"].values())


def test_without_the_extra_the_command_says_how_to_install_it(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "mcp" else real(name, *a))
    assert main(["mcp"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "pip install 'trainmedic[mcp]'" in err


def test_diagnose_never_imports_the_sdk() -> None:
    import subprocess

    code = ("import sys; from trainmedic.cli import main; main(['diagnose', sys.argv[1]]); "
            "print(sorted(m for m in sys.modules if m == 'mcp' or m.startswith('mcp.')))")
    done = subprocess.run([sys.executable, "-c", code, str(EXAMPLE)], capture_output=True,
                          text=True, timeout=120, check=True)
    assert done.stdout.rstrip().endswith("[]")


# --- the server process, through the SDK's client -----------------------------------------------

@asynccontextmanager
async def connected() -> AsyncIterator[tuple[ClientSession, types.InitializeResult]]:
    server = StdioServerParameters(command=sys.executable, args=["-m", "trainmedic", "mcp"],
                                   cwd=ROOT)
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        yield session, await session.initialize()


async def call(session: ClientSession, tool: str,
               arguments: dict[str, Any]) -> types.CallToolResult:
    result = await session.call_tool(tool, arguments)
    assert isinstance(result, types.CallToolResult)
    return result


def structured(result: types.CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def text_of(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


@pytest.mark.asyncio
async def test_initialize_names_the_server_and_lists_three_tools() -> None:
    async with connected() as (session, initialized):
        assert initialized.server_info.name == "trainmedic"
        assert initialized.capabilities.tools is not None
        assert "diagnose" in (initialized.instructions or "")
        listed = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert set(listed) == {"diagnose", "check", "explain"}
    assert set(listed["diagnose"].input_schema["properties"]) == {"text", "paths"}
    assert listed["check"].input_schema["required"] == ["paths"]
    assert listed["explain"].input_schema["required"] == ["rule_id"]
    for tool in listed.values():
        assert "nothing is uploaded" in (tool.description or "")
        assert (tool.output_schema or {}).get("type") == "object"
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint


@pytest.mark.asyncio
async def test_diagnose_text_and_paths_over_stdio() -> None:
    async with connected() as (session, _):
        by_text = await call(session, "diagnose", {"text": BF16.read_text("utf-8")})
        by_path = await call(session, "diagnose", {"paths": [str(EXAMPLE)]})
    assert structured(by_text)["diagnoses"][0]["rule_id"] == "amp-bf16-vs-fp16"
    assert "Root cause" in text_of(by_text)
    result = structured(by_path)
    assert result["initiating_rank"] == 2
    assert (result["diagnoses"][0]["rule_id"], result["diagnoses"][0]["rank"]) == \
        ("amp-loss-scale", 2)
    assert result["diagnoses"][0]["evidence"][0]["path"] == str(EXAMPLE)
    assert "**Initiating rank:** 2." in text_of(by_path)


@pytest.mark.asyncio
async def test_check_and_explain_over_stdio() -> None:
    async with connected() as (session, _):
        checked = await call(session, "check", {"paths": [str(TM104)]})
        explained = await call(session, "explain", {"rule_id": "amp-loss-scale"})
    assert [f["code"] for f in structured(checked)["findings"]] == ["TM104"]
    assert "TM104" in text_of(checked)
    assert structured(explained)["rule_id"] == "amp-loss-scale"
    assert "## " in text_of(explained)


@pytest.mark.asyncio
async def test_bad_arguments_are_error_results_and_the_server_keeps_answering() -> None:
    async with connected() as (session, _):
        calls = [("diagnose", {"paths": [str(ROOT / "no-such.log")]}),
                 ("diagnose", {"text": "x", "paths": [str(EXAMPLE)]}),
                 ("diagnose", {}),
                 ("explain", {"rule_id": "nccl-timout"}),
                 ("fix", {"paths": [str(TM104)]})]
        failed = [await call(session, name, arguments) for name, arguments in calls]
        after = await call(session, "diagnose", {"paths": [str(EXAMPLE)]})
    assert all(result.is_error for result in failed)
    messages = [text_of(result) for result in failed]
    assert "no-such.log: no such file or directory" in messages[0]
    assert "not both" in messages[1]
    assert "exactly one of text" in messages[2]
    assert "did you mean: nccl-timeout" in messages[3]
    assert "the tools are diagnose, check, explain" in messages[4]
    assert structured(after)["initiating_rank"] == 2
