"""The catalogue over LSP: list, explain, user rule packs, trust, reloading edited packs."""

from __future__ import annotations

from pathlib import Path

import pytest
from lsp_helpers import (
    errors,
    eventually,
    execute,
    logged,
    next_diagnostics,
    open_document,
    read,
)
from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pytest_lsp import LanguageClient

# A real Slurm message for a failure no bundled rule knows: a cluster team's own rule.
NODE_FAILURE = ("slurmstepd: error: *** JOB 1234 ON node12 CANCELLED AT "
                "2026-11-29T18:19:02 DUE TO NODE FAILURE ***\n")
RULE = """\
id: slurm-node-failure
title: {title}
category: cluster
role: root
summary: Slurm cancelled the job because a node it ran on failed.
symptoms: [The job ends with CANCELLED ... DUE TO NODE FAILURE.]
causes: [A node went down (hardware, kernel panic, network).]
fix: Resubmit the job; ask the cluster team to drain the node.
prevention: [Checkpoint often enough to lose little on a node failure.]
verify:
  command: sinfo -R
  explains: Lists the nodes that are down and why.
affected_systems: [Slurm]
fingerprints:
  - name: cancelled-node-failure
    pattern: 'CANCELLED AT \\S{{1,40}} DUE TO NODE FAILURE'
    weight: 0.95
monitor: cancelled-node-failure
examples:
  match:
    - source: slurmstepd
      text: "{line}"
  no_match:
    - source: slurmstepd
      text: "slurmstepd: error: *** JOB 1234 ON node12 CANCELLED AT 2026-11-29T18:19:02 ***"
"""


def write_pack(root: Path, title: str = "Slurm node failure") -> Path:
    rule = root / "pack" / "cluster" / "slurm-node-failure.yaml"
    rule.parent.mkdir(parents=True, exist_ok=True)
    rule.write_text(RULE.format(title=title, line=NODE_FAILURE.strip()), "utf-8")
    return rule.parent.parent


@pytest.fixture
def pack(tmp_path: Path) -> Path:
    return write_pack(tmp_path)


def trusted(pack_name: str = "pack") -> dict[str, object]:
    return {"rulePacks": [pack_name], "workspaceTrusted": True}  # relative: from the workspace


async def diagnosed_ids(client: LanguageClient, text: str, **extra: object) -> list[str]:
    result = await execute(client, "trainmedic.diagnose", {"text": text, **extra})
    return [d["rule_id"] for d in result["diagnoses"]]


@pytest.mark.asyncio
async def test_list_rules(client: LanguageClient) -> None:
    rules = {r["id"]: r for r in await execute(client, "trainmedic.listRules")}
    assert rules["amp-loss-scale"] == {"id": "amp-loss-scale", "category": "training-stability",
                                       "role": "root", "title": rules["amp-loss-scale"]["title"]}
    assert "amp-bf16-vs-fp16" in rules


@pytest.mark.asyncio
async def test_explain(client: LanguageClient) -> None:
    entry = await execute(client, "trainmedic.explain", "amp-bf16-vs-fp16")
    assert entry["id"] == "amp-bf16-vs-fp16"
    assert entry["markdown"].startswith(f"# {entry['title']}")
    with pytest.raises(JsonRpcInvalidParams):
        await execute(client, "trainmedic.explain", "no-such-rule")


@pytest.mark.asyncio
@pytest.mark.settings(trusted())
async def test_a_trusted_pack_is_loaded_and_watched(
        client: LanguageClient, pack: Path, registrations: list[types.Registration]) -> None:
    assert await diagnosed_ids(client, NODE_FAILURE) == ["slurm-node-failure"]
    listed = await execute(client, "trainmedic.listRules")
    assert await execute(client, "trainmedic.reloadRules") == {"rules": len(listed)}
    assert [r.method for r in registrations] == [types.WORKSPACE_DID_CHANGE_WATCHED_FILES]


@pytest.mark.asyncio
@pytest.mark.settings({"rulePacks": ["pack"], "workspaceTrusted": False})
async def test_an_untrusted_workspace_loads_no_pack(client: LanguageClient, pack: Path) -> None:
    assert await diagnosed_ids(client, NODE_FAILURE) == []
    assert logged(client, "not trusted")


@pytest.mark.asyncio
@pytest.mark.settings(trusted())
async def test_an_edited_rule_is_used_at_once(client: LanguageClient, pack: Path,
                                              tmp_path: Path) -> None:
    write_pack(tmp_path, title="Node failure (edited)")
    result = await execute(client, "trainmedic.diagnose", {"text": NODE_FAILURE})
    assert result["diagnoses"][0]["title"] == "Node failure (edited)"


@pytest.mark.asyncio
@pytest.mark.settings(trusted())
async def test_a_watched_change_rediagnoses_open_logs(client: LanguageClient, pack: Path,
                                                      tmp_path: Path) -> None:
    uri = (tmp_path / "slurm-1234.out").as_uri()
    open_document(client, uri, read("healthy-2ranks.log") + NODE_FAILURE)
    first = errors((await next_diagnostics(client, uri)).diagnostics)
    assert "Slurm node failure" in first[0].message

    edited = write_pack(tmp_path, title="Node failure (edited)")
    rule = edited / "cluster" / "slurm-node-failure.yaml"
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=rule.as_uri(), type=types.FileChangeType.Changed)]))
    published = await next_diagnostics(client, uri)
    assert "Node failure (edited)" in errors(published.diagnostics)[0].message


@pytest.mark.asyncio
@pytest.mark.settings(trusted())
async def test_an_invalid_pack_is_reported_and_the_bundled_rules_still_work(
        client: LanguageClient, pack: Path) -> None:
    rule = pack / "cluster" / "slurm-node-failure.yaml"
    rule.write_text(rule.read_text("utf-8").replace("weight: 0.95", "weight: 7"), "utf-8")

    assert await diagnosed_ids(client, read("bf16-unsupported.log")) == ["amp-bf16-vs-fp16"]
    await eventually(lambda: bool(client.messages))
    shown = client.messages[0]
    assert shown.type == types.MessageType.Warning
    assert "slurm-node-failure.yaml" in shown.message
    assert "weight" in shown.message


@pytest.mark.asyncio
@pytest.mark.settings({"workspaceTrusted": True})  # untrusted: tests/lsp/test_hostile_lsp.py
async def test_diagnose_with_a_rule_pack_for_one_call(client: LanguageClient, pack: Path) -> None:
    assert await diagnosed_ids(client, NODE_FAILURE, rulePacks=[str(pack)]) == \
        ["slurm-node-failure"]
    assert await diagnosed_ids(client, NODE_FAILURE) == []  # not kept for later calls
    with pytest.raises(JsonRpcInvalidParams, match="invalid rule"):
        await diagnosed_ids(client, NODE_FAILURE, rulePacks=[str(pack.parent / "missing")])
