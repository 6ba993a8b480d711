"""Many `trainmedic.diagnose` requests at once, half of them cancelled: every answer is right,
none hangs, and once they are over the server's memory is back where it was."""

from __future__ import annotations

import asyncio
import gc
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from lsp_helpers import eventually, execute, large_log, read
from lsprotocol import types
from pygls.exceptions import JsonRpcRequestCancelled
from pytest_lsp import LanguageClient

from trainmedic.lsp import jobs, memory
from trainmedic.lsp.server import create_server

REQUESTS = 200
GROWTH = 1.2  # the most the server's resident memory may grow over two rounds
ROUND_TIMEOUT = 120.0  # generous: a round takes about a second

# What the requests send, in turn, and the rule each diagnosis must lead with. The large text
# is diagnosed in a worker thread with progress, the small ones in place.
TEXTS = [
    (large_log(2 * jobs.LARGE_LINES), "amp-loss-scale"),
    (read("amp-loss-scale-3ranks.log"), "amp-loss-scale"),
    (read("bf16-unsupported.log"), "amp-bf16-vs-fp16"),
]


async def resident_kib(pid: int) -> int:
    """The server's resident size once it has given back what its last diagnoses freed."""
    await asyncio.sleep(2 * memory.IDLE_SECONDS)
    status = Path(f"/proc/{pid}/status").read_text("utf-8")
    match = re.search(r"^VmRSS:\s+(\d+) kB", status, re.MULTILINE)
    assert match is not None, status
    return int(match[1])


async def diagnose_round(client: LanguageClient, name: str) -> Counter[str]:
    """Send `REQUESTS` diagnoses at once and cancel every other one, some at once and some a
    little later, so that a cancel finds its request queued, running or answered. Check every
    answer."""

    async def one(index: int) -> str:
        text, rule = TEXTS[index % len(TEXTS)]
        msg_id = f"{name}-{index}"
        answer = asyncio.wrap_future(client.protocol.send_request(  # sent before it returns
            types.WORKSPACE_EXECUTE_COMMAND,
            types.ExecuteCommandParams(command="trainmedic.diagnose",
                                       arguments=[{"text": text}]),
            msg_id=msg_id))
        cancelled = index % 2 == 1
        if cancelled:
            if index % 4 == 3:
                await asyncio.sleep(index / REQUESTS / 4)
            client.cancel_request(types.CancelParams(id=msg_id))
        try:
            result: dict[str, Any] = await answer
        except JsonRpcRequestCancelled:
            assert cancelled, msg_id
            return "cancelled"
        assert result["diagnoses"][0]["rule_id"] == rule, msg_id
        return "answered after a cancel" if cancelled else "answered"

    outcomes = await asyncio.wait_for(asyncio.gather(*map(one, range(REQUESTS))), ROUND_TIMEOUT)
    await settle(client)
    return Counter(outcomes)


async def settle(client: LanguageClient) -> None:
    """Wait until no diagnosis is running: a cancelled request is answered at once, but its
    worker stops only at the engine's next read.

    The server starts its requests in order, and a large one asks for its progress before
    anything else, so once a later request is answered every large one has its progress; each
    ends its progress when its worker is done.
    """
    result = await execute(client, "trainmedic.diagnose", {"text": read("bf16-unsupported.log")})
    assert result["diagnoses"][0]["rule_id"] == "amp-bf16-vs-fp16"
    await eventually(lambda: all(
        reports and isinstance(reports[-1], types.WorkDoneProgressEnd)
        for reports in client.progress_reports.values()))


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/<pid>/status")
@pytest.mark.asyncio
async def test_concurrent_cancelled_diagnoses_leave_no_memory_behind(
        client: LanguageClient) -> None:
    server = client._server  # the `python -m trainmedic lsp` process the client started
    assert server is not None
    await diagnose_round(client, "warm-up")  # imports, caches, worker threads, a grown heap
    before = await resident_kib(server.pid)
    rounds = [await diagnose_round(client, "first"), await diagnose_round(client, "second")]
    after = await resident_kib(server.pid)

    print(f"\nserver RSS before {before} KiB, after {after} KiB, ratio {after / before:.3f}; "
          f"rounds {[dict(outcomes) for outcomes in rounds]}")
    for outcomes in rounds:
        assert outcomes["answered"] == REQUESTS // 2
        assert outcomes["cancelled"] > 0
    assert after <= GROWTH * before


@pytest.mark.asyncio
async def test_nothing_outlives_a_diagnosis() -> None:
    """What a leak too small to show in the resident size would be made of, looked for inside
    a server: the future of a finished handler, or a cancelled worker's text stream held in a
    reference cycle. The collector is off, so only what is freed at once is gone."""
    ls = create_server()
    answered: set[int] = set()

    class Client:
        """Where the server writes; it notes which requests have their answer."""

        def write(self, data: bytes) -> None:
            message = json.loads(data)
            if "method" not in message:
                answered.add(message["id"])

        def close(self) -> None:
            pass

    def receive(method: str, params: Any, msg_id: int | None = None) -> None:
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        if msg_id is not None:
            message["id"] = msg_id
        ls.protocol.handle_message(ls.protocol.structure_message(message))

    def diagnose(msg_id: int, text: str) -> None:
        receive(types.WORKSPACE_EXECUTE_COMMAND,
                {"command": "trainmedic.diagnose", "arguments": [{"text": text}]}, msg_id)

    ls.protocol.set_writer(Client(), include_headers=False)
    gc.disable()
    try:
        receive(types.INITIALIZE, {"processId": None, "rootUri": None, "capabilities": {}}, 0)
        for msg_id in range(1, 21):
            diagnose(msg_id, TEXTS[0][0])
            if msg_id % 2:
                await asyncio.sleep(0.01)  # the worker is diagnosing
                receive(types.CANCEL_REQUEST, {"id": msg_id})
        await eventually(lambda: len(answered) == 21)
        await eventually(lambda: all(f.done() for f in ls.protocol._request_futures.values()))
        diagnose(21, TEXTS[2][0])
        await eventually(lambda: 21 in answered)

        # The last handler's future stays until the next message drops the finished ones.
        assert len(ls.protocol._request_futures) <= 1
        assert not [o for o in gc.get_objects() if isinstance(o, jobs._Watched)]
    finally:
        gc.enable()
        ls.jobs.shutdown()


@pytest.mark.asyncio
async def test_memory_is_given_back_once_no_diagnosis_runs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    trims: list[None] = []
    monkeypatch.setattr(memory, "_malloc_trim", lambda: lambda: trims.append(None))
    monkeypatch.setattr(memory, "IDLE_SECONDS", 0.01)
    idle = memory.IdleTrim()

    with idle.diagnosing():
        with idle.diagnosing():
            pass
        await asyncio.sleep(0.05)
        assert not trims  # one is still running
    with idle.diagnosing():  # the next one comes before the server was idle for long
        pass
    await asyncio.sleep(0.05)
    assert len(trims) == 1
