"""Reading LSP frames: what clients get wrong is reported once and the next frame is read.

pygls 2.1.1 reads bodies as headers after any of these, forever; `FrameReader` must not.
"""

from __future__ import annotations

import asyncio
import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from trainmedic.lsp.framing import MAX_BODY, MAX_LINE, FrameError, FrameReader


def frame(body: bytes, header: bytes = b"Content-Length: %d\r\n\r\n") -> bytes:
    return header % len(body) + body if b"%d" in header else header + body


def request(msg_id: int, text: str = "") -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": "textDocument/hover",
                       "params": {"text": text}}).encode()


class Reading:
    """Everything a reader makes of `data`: bodies, and the errors it reported."""

    def __init__(self, data: bytes) -> None:
        stream = io.BytesIO(data)
        self.requested: list[int] = []

        async def read_line(limit: int) -> bytes:
            self.requested.append(limit)
            return stream.readline(limit)

        async def read_exactly(size: int) -> bytes:
            self.requested.append(size)
            return stream.read(size)

        self.reader = FrameReader(read_line, read_exactly)
        self.bodies: list[bytes] = []
        self.errors: list[str] = []
        asyncio.run(self._read())

    async def _read(self) -> None:
        while True:
            try:
                body = await self.reader.next()
            except FrameError as error:
                self.errors.append(str(error))
                continue
            if body is None:
                return
            try:
                json.loads(body)
            except ValueError:
                self.reader.broken(body)  # what the server does with a body that is not JSON
                self.errors.append("not JSON")
                continue
            self.bodies.append(body)

    def ids(self) -> list[int]:
        return [json.loads(body)["id"] for body in self.bodies]


NEXT = frame(request(2))


@pytest.mark.parametrize(("broken", "error"), [
    (frame(request(1), b"Content-Length: %d\r\n\r\n")[:-1], "not JSON"),  # a byte short
    (b"Content-Length: %d\r\n\r\n" % (len(request(1)) - 1) + request(1), "not JSON"),
    (frame(request(1), b"Content-Type: application/vscode-jsonrpc\r\n\r\n"),
     "without a Content-Length header"),
    (frame(request(1), b"Content-Length: twelve\r\n\r\n"), "not a number"),
    (frame(request(1), b"Content-Length: 1000000000000\r\n\r\n"), "over the 64 MiB limit"),
    (b"\x00garbage that is no header\r\n", "not an LSP header"),
    (b"x" * (3 * MAX_LINE), "overlong line"),
], ids=["byte-short", "length-one-less", "no-content-length", "not-a-number", "10^12",
        "garbage", "overlong"])
def test_a_broken_frame_is_reported_once_and_the_next_is_read(broken: bytes,
                                                              error: str) -> None:
    read = Reading(broken + NEXT)
    assert read.ids() == [2]
    assert len(read.errors) == 1, read.errors
    assert error in read.errors[0]


def test_a_huge_length_is_refused_without_reading_it() -> None:
    read = Reading(frame(request(1), b"Content-Length: 1000000000000\r\n\r\n") + NEXT)
    assert max(read.requested) <= MAX_BODY
    assert read.ids() == [2]


@pytest.mark.parametrize("header", [b"Content-Length: %d\n\n", b"content-length: %d\r\n\r\n",
                                    b"CONTENT-LENGTH:%d\r\n\r\n",
                                    b"Content-Length: %d\r\nContent-Type: x\r\n\r\n",
                                    b"Content-Type: x\r\nContent-Length: %d\r\n\r\n"],
                         ids=["lf-only", "lowercase", "uppercase-no-space", "then-type",
                              "type-first"])
def test_slips_in_the_header_are_tolerated(header: bytes) -> None:
    read = Reading(frame(request(1), header) + NEXT)
    assert read.ids() == [1, 2]
    assert read.errors == []


def test_a_frame_cut_short_leaves_the_next_frame_whole() -> None:
    """The cut frame's length takes the start of the next frame as its body; that next frame
    is read again from its header."""
    whole = frame(request(1, "a" * 60))
    read = Reading(whole[:40] + NEXT + frame(request(3)))
    assert read.ids() == [2, 3]


def test_the_end_of_the_stream_ends_reading() -> None:
    assert Reading(b"Content-Length: 10\r\n\r\n{}").bodies == []
    assert Reading(b"").errors == []


# Garbage a confused client could send: header-like text, JSON-like text, line ends.
GARBAGE = st.binary(max_size=80) | st.text(alphabet="ab:{}\r\n -0123456789\"", max_size=80) \
    .map(str.encode)


@st.composite
def streams(draw: st.DrawFn) -> tuple[bytes, list[int]]:
    """Valid requests, each after a random piece of garbage or a frame cut at a random byte."""
    data, ids = b"", []
    for msg_id in range(draw(st.integers(1, 6))):
        whole = frame(request(msg_id, draw(st.text(max_size=40))))
        kind = draw(st.sampled_from(["none", "garbage", "cut"]))
        if kind == "garbage":
            data += draw(GARBAGE)
        elif kind == "cut":
            data += whole[: draw(st.integers(0, len(whole) - 1))]
        data += whole
        ids.append(msg_id)
    return data, ids


@settings(max_examples=300, deadline=None)
@given(streams())
def test_every_valid_request_after_garbage_or_a_cut_frame_is_read(
        stream: tuple[bytes, list[int]]) -> None:
    data, ids = stream
    assert Reading(data).ids() == ids
