"""Traceback blocks as units, including interleaved ranks and chained exceptions."""

from __future__ import annotations

import io

from trainmedic.catalogue.rules import Catalogue
from trainmedic.diagnosis.engine import Diagnoser
from trainmedic.logs.reader import read_chunks
from trainmedic.model import Traceback


def tracebacks(text: str, chunk_bytes: int = 1 << 20) -> list[Traceback]:
    diagnoser = Diagnoser(Catalogue(()))
    for chunk in read_chunks(io.BytesIO(text.encode()), "t.log", chunk_bytes):
        diagnoser.add(chunk)
    return diagnoser.evidence.tracebacks


SIMPLE = """\
Traceback (most recent call last):
  File "train.py", line 12, in <module>
    main()
  File "train.py", line 8, in main
    loss.backward()
RuntimeError: Trying to backward through the graph a second time
"""


def test_simple_block() -> None:
    (block,) = tracebacks(SIMPLE)
    assert (block.first_line, block.last_line) == (1, 6)
    assert block.exception == "RuntimeError"
    assert block.message == "Trying to backward through the graph a second time"
    assert block.frames == ("train.py:12 in <module>", "train.py:8 in main")


def test_interleaved_ranks_stay_apart() -> None:
    text = """\
[rank0]: Traceback (most recent call last):
[rank1]: Traceback (most recent call last):
[rank0]:   File "a.py", line 1, in f
[rank1]:   File "b.py", line 2, in g
[rank1]: ValueError: one
[rank0]: torch.distributed.DistBackendError: zero
"""
    blocks = {b.rank: b for b in tracebacks(text)}
    assert blocks[1].exception == "ValueError"
    assert blocks[1].frames == ("b.py:2 in g",)
    assert blocks[0].exception == "torch.distributed.DistBackendError"
    assert blocks[0].last_line == 6


def test_chained_exception_keeps_its_cause() -> None:
    text = SIMPLE + """
The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "run.py", line 3, in <module>
torch.distributed.elastic.multiprocessing.errors.ChildFailedError: boom
"""
    first, second = tracebacks(text)
    assert second.cause == first
    assert second.exception.endswith("ChildFailedError")


def test_block_across_chunk_boundary() -> None:
    (block,) = tracebacks("noise\n" * 50 + SIMPLE, chunk_bytes=64)
    assert block.first_line == 51
    assert block.exception == "RuntimeError"
