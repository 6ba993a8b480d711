"""The reader: bytes in, editor-numbered normalised lines out, in bounded memory."""

from __future__ import annotations

import io
import platform
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from trainmedic.logs.reader import (
    MAX_LINE_BYTES,
    LineCounter,
    newlines,
    read_chunks,
    read_lines,
)


def lines(data: bytes, chunk_bytes: int | None = None) -> list[tuple[int, str]]:
    stream = io.BytesIO(data)
    if chunk_bytes is None:
        return [(ln.number, ln.text) for ln in read_lines(stream, "x.log")]
    texts = [t for chunk in read_chunks(stream, "x.log", chunk_bytes) for t in chunk.lines()]
    return list(enumerate(texts, start=1))


def test_empty_file_has_no_lines() -> None:
    assert lines(b"") == []


def test_last_line_without_newline_is_kept() -> None:
    assert lines(b"a\nb") == [(1, "a"), (2, "b")]


def test_invalid_utf8_is_replaced_not_fatal() -> None:
    assert lines(b"loss \xff\xfe ok\n") == [(1, "loss \ufffd\ufffd ok")]


def test_ansi_colour_and_cursor_codes_are_stripped() -> None:
    data = b"\x1b[31mRuntimeError\x1b[0m: boom\n\x1b]0;title\x07\x1b[2Kdone\n"
    assert lines(data) == [(1, "RuntimeError: boom"), (2, "done")]


def test_a_no_break_space_reads_as_a_space_and_other_characters_stay() -> None:
    data = "RuntimeError:\u00a0CUDA error\u00a0\u00a0x\nà\u00a0voilà\n".encode()
    assert lines(data) == [(1, "RuntimeError: CUDA error  x"), (2, "à voilà")]


def test_curly_quotes_read_as_straight_ones_and_other_punctuation_stays() -> None:
    data = "{\u2018loss\u2019: nan} \u201cok\u201d \u2026 \u2013 \u20ac 一\n".encode()
    assert lines(data) == [(1, "{'loss': nan} \"ok\" \u2026 \u2013 \u20ac 一")]


def test_carriage_return_progress_resolves_to_final_text() -> None:
    data = b" 10%|#   |\r 50%|#####|\r100%|##########|\nnext\n"
    assert lines(data) == [(1, "100%|##########|"), (2, "next")]


@given(st.lists(st.sampled_from([b"\r", b"\n", b"x", b"yz", b"\r\r", b" 50%|##|"]), max_size=60))
def test_each_line_keeps_what_follows_its_last_carriage_return(pieces: list[bytes]) -> None:
    """Whatever the mix of overwrites, line ends and `\r`s ending a line: line by line, the
    text after the last `\r` that something follows."""
    from trainmedic.logs.reader import _resolve_overwrites

    data = b"".join(pieces)
    assert _resolve_overwrites(data) == b"\n".join(
        line.rstrip(b"\r").rpartition(b"\r")[2] for line in data.split(b"\n"))


@given(st.lists(st.sampled_from([b"\n", b"x", b"line 12\n", b"\r", b"yz" * 40]), max_size=80),
       st.lists(st.integers(1, 90), min_size=1, max_size=20), st.integers(8, 64), st.booleans())
def test_chunks_do_not_depend_on_how_the_bytes_arrive(pieces: list[bytes], sizes: list[int],
                                                      chunk_bytes: int, eager: bool) -> None:
    """Fed in reads of any sizes, a source is cut into the chunks one read of it gives (eager:
    the same lines), with the same offsets."""
    from trainmedic.logs.reader import Chunker

    data = b"".join(pieces)

    def cut(reads: list[bytes]) -> list[tuple[bytes, int, int]]:
        chunker = Chunker("x.log", chunk_bytes=chunk_bytes, eager=eager)
        chunks = [chunk for read in reads for chunk in chunker.feed(read)]
        if (last := chunker.flush()) is not None:
            chunks.append(last)
        return [(c.data, c.index, c.size) for c in chunks]

    reads, position = [], 0
    while position < len(data):
        size = sizes[len(reads) % len(sizes)]
        reads.append(data[position:position + size])
        position += size
    whole, pieced = cut([data]), cut(reads)
    if eager:
        assert b"".join(c[0] for c in pieced) == b"".join(c[0] for c in whole)
    else:
        assert pieced == whole
    assert sum(c[2] for c in pieced) == len(data)


def test_crlf_is_one_line_break() -> None:
    assert lines(b"a\r\nb\r\n") == [(1, "a"), (2, "b")]


def test_lone_cr_never_splits_lines() -> None:
    # Editors number this as two lines (split on \n); the overwritten text disappears.
    assert lines(b"step 1\rstep 2\nfinal\n") == [(1, "step 2"), (2, "final")]


def test_line_numbers_survive_chunk_boundaries() -> None:
    data = b"".join(f"line {i}\n".encode() for i in range(1, 2001))
    assert lines(data, chunk_bytes=97) == [(i, f"line {i}") for i in range(1, 2001)]


def test_ten_megabyte_line_is_bounded_and_numbering_continues() -> None:
    data = b"before\n" + b"x" * (10 * 1024 * 1024) + b"\nafter\n"
    got = lines(data, chunk_bytes=1 << 16)
    assert got[0] == (1, "before")
    assert got[1][0] == 2
    assert len(got[1][1]) == MAX_LINE_BYTES
    assert got[2] == (3, "after")


def test_multibyte_characters_split_across_reads_decode_intact() -> None:
    data = ("é" * 5000 + "\n").encode()
    assert lines(data, chunk_bytes=101) == [(1, "é" * 5000)]


@given(st.lists(st.sampled_from([b"\n", b"x", b"loss=1.0 step 12 " * 3, b"\n\n\n"]),
                max_size=300), st.integers(0, 5000), st.integers(0, 5000))
def test_newlines_are_counted_in_any_span_of_any_density(pieces: list[bytes], start: int,
                                                         length: int) -> None:
    data = b"".join(pieces)
    assert newlines(data, start, start + length) == data.count(b"\n", start, start + length)


def test_line_numbers_are_right_in_whatever_order_offsets_are_asked() -> None:
    data = b"".join(b"line %d\n" % i for i in range(1000)) + b"last, unended"
    counter = LineCounter(data)
    offsets = [*range(0, len(data), 997), len(data), 5, 4000, 3999, 0, 7000, 2, len(data) - 1]
    assert [counter.at(offset) for offset in offsets] == [
        data.count(b"\n", 0, offset) for offset in offsets]


def test_line_numbers_asked_out_of_order_cost_linear_time() -> None:
    """Hits, then traceback marks between them, on a chunk of 250,000 short lines: keeping a
    line number for every offset asked made this 9 s a chunk (each one was inserted into a
    list as long as the chunk's hits). Both the bytes counted and the numbers kept are
    bounded by the chunk's length."""
    from trainmedic.logs.reader import COUNTER_STRIDE

    class Counted(bytes):
        scanned = 0

        def count(self, sub: object, start: int = 0, end: int | None = None) -> int:
            Counted.scanned += (len(self) if end is None else end) - start
            return super().count(sub, start, end)  # type: ignore[arg-type]

    data = Counted(b"x\n" * 250_000)
    counter = LineCounter(data)
    hits, marks = range(0, len(data), 4), range(2, len(data), 4)
    assert [counter.at(offset) for offset in hits] == [offset // 2 for offset in hits]
    assert [counter.at(offset) for offset in marks] == [offset // 2 for offset in marks]
    assert Counted.scanned <= len(data) + len(marks) * COUNTER_STRIDE
    assert len(counter._strides) <= len(data) // COUNTER_STRIDE + 1


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="glibc's allocator only")
def test_a_chunk_reuses_the_memory_of_the_one_before(tmp_path: Path) -> None:
    """A chunk read after the first two faults in next to no page (without keeping freed
    chunks' memory, 69 of its 256 here; see `_keep_freed_chunks`). In a fresh interpreter,
    whose allocator has not yet seen a large block freed."""
    log = tmp_path / "run.log"
    log.write_bytes(b"[rank3]: step 100 loss=0.8713 lr=3.000e-04 tokens/s=9036\n" * 150_000)
    code = ("import resource, sys; from trainmedic.logs.reader import read_part\n"
            "chunks = read_part(sys.argv[1], 0, None)\n"
            "for _ in range(2): next(chunks)\n"
            "before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt\n"
            "count = sum(1 for _ in chunks)\n"
            "print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / count)")
    done = subprocess.run([sys.executable, "-c", code, str(log)], capture_output=True,
                          text=True, check=True)
    assert float(done.stdout) < 16
