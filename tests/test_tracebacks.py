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


def test_a_selection_that_starts_below_the_header() -> None:
    # shared corpus more/beyond/010.log (DeepSpeed cpu_adam build)
    where = "/opt/conda/lib/python3.11/site-packages/torch/utils/cpp_extension.py"
    pasted = (f'[rank2]:   File "{where}", line 2140, in _import_module_from_library\n'
              "[rank2]:     module = importlib.util.module_from_spec(spec)\n"
              "[rank2]: ImportError: /root/.cache/torch_extensions/py311_cu124/cpu_adam/"
              "cpu_adam.so: cannot open shared object file: No such file or directory\n")
    (block,) = tracebacks(pasted)
    assert (block.rank, block.first_line, block.last_line) == (2, 1, 3)
    assert block.exception == "ImportError"
    assert block.frames == (f"{where}:2140 in _import_module_from_library",)


def test_indented_text_without_frames_is_no_traceback() -> None:
    config = """\
    learning_rate: 0.0003
    warmup_steps: 100
FutureWarning: `torch.cuda.amp.GradScaler(args...)` is deprecated.
"""
    assert tracebacks(config) == []
    assert tracebacks("noise\n" * 60 + '  File "a.py", line 1, in f\nValueError: late\n') == []
