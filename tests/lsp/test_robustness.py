"""Malformed messages get a JSON-RPC error and the server keeps serving.

pytest-lsp's client only sends well-formed messages, so these tests speak JSON-RPC by hand to
the same server process.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

TIMEOUT = 30.0


class RawConnection:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.log: list[str] = []

    def send(self, message: dict[str, Any] | bytes) -> None:
        body = message if isinstance(message, bytes) else json.dumps(message).encode()
        assert self.process.stdin is not None
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        length = 0
        while (header := await self.process.stdout.readline()).strip():
            if header.lower().startswith(b"content-length:"):
                length = int(header.split(b":")[1])
        message: dict[str, Any] = json.loads(await self.process.stdout.readexactly(length))
        if message.get("method") == "window/logMessage":
            self.log.append(message["params"]["message"])
        return message

    async def answer(self, msg_id: object) -> dict[str, Any]:
        """The response to `msg_id`, reading past the notifications before it."""
        async def wait() -> dict[str, Any]:
            while True:
                message = await self.receive()
                if "method" not in message and message.get("id") == msg_id:
                    return message

        return await asyncio.wait_for(wait(), TIMEOUT)

    async def still_serving(self) -> None:
        self.send({"jsonrpc": "2.0", "id": "alive", "method": "workspace/executeCommand",
                   "params": {"command": "trainmedic.listRules", "arguments": []}})
        assert any(r["id"] == "amp-loss-scale" for r in (await self.answer("alive"))["result"])


@pytest_asyncio.fixture
async def raw() -> AsyncIterator[RawConnection]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "trainmedic", "lsp", stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
    connection = RawConnection(process)
    connection.send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                     "params": {"processId": None, "rootUri": None, "capabilities": {}}})
    await connection.answer(0)
    connection.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    yield connection
    connection.send({"jsonrpc": "2.0", "id": "bye", "method": "shutdown"})
    await connection.answer("bye")
    connection.send({"jsonrpc": "2.0", "method": "exit"})
    try:
        await asyncio.wait_for(process.wait(), TIMEOUT)
    finally:
        if process.returncode is None:
            process.kill()


HOVER = "textDocument/hover"
WHERE = {"textDocument": {"uri": "file:///run.log"}}


@pytest.mark.asyncio
@pytest.mark.parametrize(("request_", "code"), [
    ({"method": HOVER, "params": {**WHERE, "position": {"line": "x", "character": 0}}}, -32602),
    ({"method": HOVER, "params": {**WHERE}}, -32602),
    ({"method": HOVER}, -32602),
    ({"method": "workspace/executeCommand", "params": {"command": 7}}, -32602),
    ({"method": "workspace/executeCommand", "params": {"command": "trainmedic.explain",
                                                       "arguments": [1, 2]}}, -32602),
    ({"method": "trainmedic/noSuchMethod", "params": {}}, -32601),
], ids=["wrong-type", "missing-field", "no-params", "bad-command", "bad-arguments",
        "unknown-method"])
async def test_a_malformed_request_gets_an_error(raw: RawConnection, request_: dict[str, Any],
                                                 code: int) -> None:
    raw.send({"jsonrpc": "2.0", "id": 41, **request_})
    assert (await raw.answer(41))["error"]["code"] == code
    await raw.still_serving()


@pytest.mark.asyncio
async def test_the_error_says_what_is_wrong(raw: RawConnection) -> None:
    raw.send({"jsonrpc": "2.0", "id": 42, "method": HOVER,
              "params": {**WHERE, "position": {"line": "x", "character": 0}}})
    assert "position.line" in (await raw.answer(42))["error"]["message"]


@pytest.mark.asyncio
async def test_a_message_that_is_not_json_rpc_gets_an_error(raw: RawConnection) -> None:
    raw.send({"id": 43, "method": HOVER, "params": {}})
    assert (await raw.answer(43))["error"]["code"] == -32600
    await raw.still_serving()


@pytest.mark.asyncio
async def test_a_body_that_is_not_json_gets_a_parse_error(raw: RawConnection) -> None:
    raw.send(b'{"jsonrpc": "2.0", "id": 44, "method": ')
    assert (await raw.answer(None))["error"]["code"] == -32700
    await raw.still_serving()


@pytest.mark.asyncio
async def test_a_malformed_notification_is_logged(raw: RawConnection) -> None:
    raw.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"nothing": 1}})
    await raw.still_serving()
    assert any("Invalid Params" in line for line in raw.log)
