"""`trainmedic.testRuleFile`: a rule file checked as its author saves it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from lsp_helpers import execute
from pygls.exceptions import JsonRpcInvalidParams
from pytest_lsp import LanguageClient

RULE = Path(__file__).resolve().parents[2] / "rules" / "memory" / "cuda-oom.yaml"


def pack_with(tmp_path: Path, category: str, text: str) -> Path:
    path = tmp_path / "site-rules" / category / "cuda-oom.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(text, "utf-8")
    return path


@pytest.mark.asyncio
async def test_a_valid_rule_whose_examples_behave_has_no_problems(client: LanguageClient,
                                                                  tmp_path: Path) -> None:
    path = pack_with(tmp_path, "memory", RULE.read_text("utf-8"))
    result = await execute(client, "trainmedic.testRuleFile", {"path": str(path)})
    assert result == {"rule_id": "cuda-oom", "problems": []}


@pytest.mark.asyncio
async def test_a_rule_in_the_wrong_folder_names_file_line_and_field(client: LanguageClient,
                                                                    tmp_path: Path) -> None:
    path = pack_with(tmp_path, "site", RULE.read_text("utf-8"))
    (problem,) = (await execute(client, "trainmedic.testRuleFile",
                                {"path": str(path)}))["problems"]
    assert problem["path"] == str(path)
    assert problem["line"] == 3  # `category: memory`
    assert problem["message"].startswith("category: ")


@pytest.mark.asyncio
async def test_an_example_that_does_not_fire_is_a_problem(client: LanguageClient,
                                                          tmp_path: Path) -> None:
    text = RULE.read_text("utf-8")
    start = text.index("examples:")
    match = text.index("- source:", start)
    broken = text[:match] + '- text: "a line no fingerprint of this rule matches"\n' \
        "      source: written for this test\n    " + text[match:]
    path = pack_with(tmp_path, "memory", broken)
    result = await execute(client, "trainmedic.testRuleFile", {"path": str(path)})
    assert result["rule_id"] == "cuda-oom"
    assert [p["message"] for p in result["problems"]] == [
        "examples: match[0] did not fire (written for this test)"]


@pytest.mark.asyncio
async def test_a_path_that_is_not_yaml_is_invalid_params(client: LanguageClient,
                                                         tmp_path: Path) -> None:
    shutil.copy(RULE, tmp_path / "rule.txt")
    with pytest.raises(JsonRpcInvalidParams):
        await execute(client, "trainmedic.testRuleFile", {"path": str(tmp_path / "rule.txt")})
