"""Malformed messages and frames get a JSON-RPC error and the server keeps serving; `exit`
gives the code the specification asks for.

pytest-lsp's client only sends well-formed messages, so these tests speak JSON-RPC by hand to
the same server process.
"""

from __future__ import annotations

import asyncio
import json
import random
import sys
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio
from lsp_helpers import large_log

from trainmedic.lsp import jobs

TIMEOUT = 30.0


def frame(message: dict[str, Any] | bytes, header: bytes = b"Content-Length: %d\r\n\r\n") -> bytes:
    body = message if isinstance(message, bytes) else json.dumps(message).encode()
    return (header % len(body) if b"%d" in header else header) + body


class RawConnection:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.log: list[str] = []
        self.answered: set[object] = set()  # the ids of the responses received

    def send(self, message: dict[str, Any] | bytes) -> None:
        self.send_bytes(frame(message))

    def send_bytes(self, data: bytes) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(data)

    async def receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        length = 0
        while (header := await self.process.stdout.readline()).strip():
            if header.lower().startswith(b"content-length:"):
                length = int(header.split(b":")[1])
        message: dict[str, Any] = json.loads(await self.process.stdout.readexactly(length))
        if "method" not in message:
            self.answered.add(message.get("id"))
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

    async def still_serving(self, msg_id: object = "alive") -> None:
        self.send(list_rules(msg_id))
        assert any(r["id"] == "amp-loss-scale" for r in (await self.answer(msg_id))["result"])


def list_rules(msg_id: object) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": msg_id, "method": "workspace/executeCommand",
            "params": {"command": "trainmedic.listRules", "arguments": []}}


async def started() -> RawConnection:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "trainmedic", "lsp", stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
    connection = RawConnection(process)
    connection.send({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                     "params": {"processId": None, "rootUri": None, "capabilities": {}}})
    await connection.answer(0)
    connection.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    return connection


async def exit_code(connection: RawConnection) -> int:
    connection.send({"jsonrpc": "2.0", "method": "exit"})
    process = connection.process
    try:
        return await asyncio.wait_for(process.wait(), TIMEOUT)
    finally:
        if process.returncode is None:
            process.kill()


@pytest_asyncio.fixture
async def raw() -> AsyncIterator[RawConnection]:
    connection = await started()
    yield connection
    connection.send({"jsonrpc": "2.0", "id": "bye", "method": "shutdown"})
    await connection.answer("bye")
    assert await exit_code(connection) == 0


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


# --- frames -----------------------------------------------------------------------------------

RULES = json.dumps(list_rules(45)).encode()


@pytest.mark.asyncio
@pytest.mark.parametrize("broken", [
    frame(RULES)[:-1],  # a byte short: the next frame starts where this one should have ended
    frame(RULES, b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n"),
    frame(RULES, b"Content-Length: forty\r\n\r\n"),
    frame(RULES, b"Content-Length: 1000000000000\r\n\r\n"),
    b"\x1b[2Jgarbage\r\n",
], ids=["byte-short", "no-content-length", "not-a-number", "10^12", "garbage"])
async def test_a_broken_frame_is_logged_once_and_the_next_request_answered(
        raw: RawConnection, broken: bytes) -> None:
    raw.send_bytes(broken)
    await raw.still_serving()
    complaints = [line for line in raw.log if "rejected a" in line]
    assert len(complaints) == 1, raw.log
    assert "Traceback" not in complaints[0]


@pytest.mark.asyncio
async def test_a_huge_length_is_refused_with_its_reason(raw: RawConnection) -> None:
    raw.send_bytes(frame(RULES, b"Content-Length: 1000000000000\r\n\r\n"))
    await raw.still_serving()
    assert any("over the 64 MiB limit" in line for line in raw.log), raw.log


@pytest.mark.asyncio
@pytest.mark.parametrize("header", [b"Content-Length: %d\n\n", b"content-length: %d\r\n\r\n"],
                         ids=["lf-only", "lowercase"])
async def test_a_slip_in_the_header_is_tolerated(raw: RawConnection, header: bytes) -> None:
    raw.send_bytes(frame(RULES, header))
    assert (await raw.answer(45))["result"]
    await raw.still_serving()


@pytest.mark.asyncio
async def test_requests_among_garbage_and_cut_frames_are_all_answered(
        raw: RawConnection) -> None:
    chance = random.Random(16)  # seeded: a failure replays
    ids = []
    for index in range(40):
        whole = frame(list_rules(index))
        if chance.random() < 0.3:
            raw.send_bytes(whole[: chance.randrange(len(whole))])
        elif chance.random() < 0.5:
            raw.send_bytes(bytes(chance.choice(b"ab:{}\r\n -0123456789\"\x00\xff")
                                 for _ in range(chance.randrange(80))))
        raw.send_bytes(whole)
        ids.append(index)
    for index in ids:
        assert (await raw.answer(index))["result"], index


# --- shutdown and exit ------------------------------------------------------------------------

@pytest.mark.asyncio
async def test_exit_without_shutdown_exits_1() -> None:
    connection = await started()
    await connection.still_serving()
    assert await exit_code(connection) == 1


@pytest.mark.asyncio
async def test_shutdown_while_diagnosing_answers_null_and_exits_0() -> None:
    connection = await started()
    connection.send({"jsonrpc": "2.0", "id": "work", "method": "workspace/executeCommand",
                     "params": {"command": "trainmedic.diagnose",
                                "arguments": [{"text": large_log(4 * jobs.LARGE_LINES)}]}})
    connection.send({"jsonrpc": "2.0", "id": "bye", "method": "shutdown"})
    answer = await connection.answer("bye")
    assert answer.get("error") is None, answer
    assert answer["result"] is None
    assert "work" in connection.answered  # cancelled or done, but answered
    assert await exit_code(connection) == 0
