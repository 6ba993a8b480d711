"""`trainmedic.check`, and `trainmedic.diagnose` with `paths`: files on disk through the
server, as the editor's language-model tools call them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from lsp_helpers import FIXTURES, execute
from pygls.exceptions import JsonRpcInvalidParams
from pytest_lsp import LanguageClient

SCRIPT = FIXTURES.parent / "checks" / "TM104" / "positive-accumulation.py"
NOTEBOOK = FIXTURES.parent / "notebooks" / "finetune.ipynb"


@pytest.mark.asyncio
async def test_check_reports_each_finding_with_its_code(client: LanguageClient,
                                                        tmp_path: Path) -> None:
    shutil.copy(SCRIPT, tmp_path / "train.py")
    shutil.copy(NOTEBOOK, tmp_path / "finetune.ipynb")
    result = await execute(client, "trainmedic.check", {"paths": [str(tmp_path)]})
    assert result["files"] == 2
    assert [(f["code"], f.get("cell")) for f in result["findings"]] == [
        ("TM104", 2), ("TM110", 3), ("TM104", None)]
    assert f"{tmp_path / 'train.py'}:15:17: TM104 " in result["report"]


@pytest.mark.asyncio
async def test_diagnose_paths_reads_logs_and_notebooks(client: LanguageClient) -> None:
    result = await execute(client, "trainmedic.diagnose",
                           {"paths": [str(FIXTURES / "amp-loss-scale-3ranks.log")]})
    assert result["diagnoses"][0]["rule_id"] == "amp-loss-scale"
    assert "Mixed precision loss scale" in result["markdown"]
    result = await execute(client, "trainmedic.diagnose", {"paths": [str(NOTEBOOK)]})
    assert result["diagnoses"][0]["rule_id"] == "cuda-oom"


@pytest.mark.asyncio
@pytest.mark.parametrize(("command", "argument", "message"), [
    ("trainmedic.check", {"paths": []}, 'expects [{"paths"'),
    ("trainmedic.check", {"paths": ["/no/such/train.py"]}, "no such file or directory"),
    ("trainmedic.diagnose", "run.log", 'expects [{"text"'),
    ("trainmedic.diagnose", {"paths": ["/no/such/run.log"]}, "no such file or directory"),
])
async def test_bad_paths_are_invalid_params(client: LanguageClient, command: str,
                                            argument: object, message: str) -> None:
    with pytest.raises(JsonRpcInvalidParams, match=message.replace("[", r"\[")):
        await execute(client, command, argument)
